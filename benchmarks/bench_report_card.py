"""What a report card costs (issue 26): ``harms report`` for SmolLM2-135M and MiniLM-L6 on this
machine, per budget, cold (an empty cache: the model prepared, every metric computed) and warm
(the same command again), with the time of every metric from the card's own provenance, and the
share of a cold card that the book's cached scores remove (the card run in a copy of a cache
that a ``make book`` filled).

    .venv/bin/python benchmarks/bench_report_card.py [--budgets quick,standard] [--book-cache DIR]
                                                     [--models smollm2-135m,minilm-l6] [--no-append]

Each run is its own process (``python -m helpers report``), so cold includes importing the
package and loading the weights, as a user's first command does. The peer of every number is
the cold run of the same model and budget measured here in the same invocation (ratios).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import ROOT, parser, publish  # noqa: E402


def run_card(model: str, budget: str, cache: Path, out: Path, threads: int) -> tuple[float, dict]:
    """Wall seconds of one ``harms report`` in its own process, and its per-metric seconds."""
    env = {**os.environ, "HARMS_CACHE_DIR": str(cache), "OMP_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-m", "helpers", "report", "--model", model, "--budget", budget, "--output", str(out),
           "--overwrite", "--threads", str(threads)]
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return seconds, json.loads((out / "report.json").read_text())["provenance"]["seconds"]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--budgets", default="quick,standard")
    ap.add_argument("--models", default="smollm2-135m,minilm-l6")
    ap.add_argument("--book-cache", default=None, help="a cache a `make book` filled (copied, never written)")
    a = ap.parse_args()
    rows, per_metric = [], []
    with tempfile.TemporaryDirectory(prefix="bench-card-") as tmp:
        tmp = Path(tmp)
        for model in a.models.split(","):
            for budget in a.budgets.split(","):
                cache = tmp / f"cache-{model}-{budget}"
                cold, seconds = run_card(model, budget, cache, tmp / "out", a.threads)
                warm, _ = run_card(model, budget, cache, tmp / "out", a.threads)
                row = {"model": model, "budget": budget, "cold": cold, "warm": warm}
                per_metric += [(model, budget, k.split(": ", 1)[1], v) for k, v in seconds.items()]
                if a.book_cache:
                    book = tmp / "book-cache"
                    shutil.rmtree(book, ignore_errors=True)
                    src = Path(a.book_cache)             # the zoo's students are not read by these cards
                    shutil.copytree(src, book, ignore=lambda d, names: ["zoo"] if Path(d) == src else [])
                    row["after book"], _ = run_card(model, budget, book, tmp / "out", a.threads)
                    shutil.rmtree(book)
                rows.append(row)
                shutil.rmtree(cache)
    lines = ["", "| model | budget | cold (s) | warm (s) | warm / cold |"
             + (" after `make book` (s) | share of cold removed by the book's cache |" if a.book_cache else ""),
             "|---|---|---:|---:|---:|" + ("---:|---:|" if a.book_cache else "")]
    for r in rows:
        line = f"| {r['model']} | {r['budget']} | {r['cold']:.0f} | {r['warm']:.1f} | {r['warm'] / r['cold']:.3f} |"
        if a.book_cache:
            line += f" {r['after book']:.0f} | {1 - r['after book'] / r['cold']:.0%} |"
        lines.append(line)
    lines += ["", "Time per metric of the cold runs (seconds, from each card's provenance):", "",
              "| model | budget | metric | seconds |", "|---|---|---|---:|"]
    lines += [f"| {m} | {b} | {k} | {v:.1f} |" for m, b, k, v in per_metric]
    publish("Report card: cold, warm and after the book", lines, threads=a.threads, append=not a.no_append)


if __name__ == "__main__":
    main()
