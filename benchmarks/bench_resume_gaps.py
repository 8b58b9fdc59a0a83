"""How much work a killed report card can lose (issue 26: "a killed report resumes, losing at most
seconds"): the longest stretch of a cold ``harms report`` during which nothing new reached the cache.

    .venv/bin/python benchmarks/bench_resume_gaps.py [--model smollm2-135m] [--budget quick]
                                                     [--peer-commit COMMIT] [--no-append]

A cold card (empty score and result caches; the model's converted copy prepared beforehand, as
after any first use) runs in its own process while this script lists the cache directory every
0.25 s and records when each stored file (chunk, step, result; not temporaries) first appears.
A Ctrl-C or a kill at any moment loses the work since the last stored file, so the longest gap
between two stores is the most a killed card can lose; each gap is named by the measurement that
was running (the card's own progress lines). With ``--peer-commit`` the same card of another
commit (a ``git worktree`` of it) is measured in the same invocation, for the ratio.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import ROOT, parser, publish  # noqa: E402

KEPT = ("gguf", "package-models", "fingerprints.json")      # what a first use leaves: the converted model


def watch(cache: Path, seen: dict[str, float], stop: threading.Event, start: float) -> None:
    while not stop.is_set():
        for dirpath, _, files in os.walk(cache):
            for f in files:
                if ".harms-tmp-" in f or f.endswith((".pid", "key.json")):
                    continue
                path = os.path.join(dirpath, f)
                if path not in seen:
                    seen[path] = time.perf_counter() - start
        stop.wait(0.25)


def card_gaps(root: Path, model: str, budget: str, tmp: Path, threads: int) -> dict:
    """Wall time, store times and progress lines of one cold card of the code in ``root``."""
    cache = tmp / "cache"
    env = {**os.environ, "HARMS_CACHE_DIR": str(cache), "HARMS_PROGRESS": "lines", "OMP_NUM_THREADS": str(threads),
           "PYTHONPATH": str(root)}
    warm_up = tmp / "one.csv"
    warm_up.write_text("id,text\n0,warm up\n")
    subprocess.run([sys.executable, "-m", "helpers", "score", "--model", model, "--input", str(warm_up), "--output",
                    str(tmp / "one.out.csv"), "--overwrite"], cwd=root, env=env, capture_output=True, check=True)
    for p in cache.iterdir():
        if p.name not in KEPT:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    seen: dict[str, float] = {}
    stop = threading.Event()
    start = time.perf_counter()
    for p in cache.rglob("*"):
        seen[str(p)] = 0.0                               # the model's copy: there before the card
    watcher = threading.Thread(target=watch, args=(cache, seen, stop, start), daemon=True)
    watcher.start()
    proc = subprocess.Popen([sys.executable, "-m", "helpers", "report", "--model", model, "--budget", budget,
                             "--output", str(tmp / "card"), "--overwrite", "--threads", str(threads)],
                            cwd=root, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = [(time.perf_counter() - start, line.strip()) for line in proc.stderr]
    proc.wait()
    wall = time.perf_counter() - start
    stop.set()
    watcher.join()
    if proc.returncode:
        raise SystemExit(f"the card failed ({root}): {lines[-1:]}")
    stores = sorted(t for t in seen.values() if t > 0)
    marks = [0.0, *stores, wall]
    gaps = sorted(((b - a, a, b) for a, b in zip(marks, marks[1:])), reverse=True)
    done = [(t, line.split(": ", 1)[1].split(" in ")[0]) for t, line in lines if line.startswith("card ")]

    def running(end: float) -> str:
        return next((what for t, what in done if t >= end - 0.5), "writing the card's files")
    return {"wall": wall, "stores": len(stores), "gaps": [(g, a, running(b)) for g, a, b in gaps[:6]]}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--peer-commit", default=None, help="measure the same card at this commit too (git worktree)")
    a = ap.parse_args()
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-gaps-") as tmp:
        tmp = Path(tmp)
        roots = {"this commit": ROOT}
        if a.peer_commit:
            peer = tmp / "peer"
            subprocess.run(["git", "worktree", "add", "--detach", str(peer), a.peer_commit], cwd=ROOT,
                           capture_output=True, check=True)
            roots[f"commit {a.peer_commit[:7]}"] = peer
        try:
            for name, root in roots.items():
                (tmp / name).mkdir()
                runs[name] = card_gaps(root, a.model, a.budget, tmp / name, a.threads)
        finally:
            if a.peer_commit:
                subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "peer")], cwd=ROOT, capture_output=True)
    lines = ["", f"Cold `harms report --model {a.model} --budget {a.budget}` (the converted model prepared before); "
             "the cache listed every 0.25 s. A gap = seconds between two stored files (from the start of the "
             "process: imports and model load count): what a kill at the worst moment loses.", "",
             "| code | wall s | files stored | longest gap s | while | 2nd | 3rd |", "|---|---:|---:|---:|---|---|---|"]
    for name, r in runs.items():
        g = r["gaps"]
        lines.append(f"| {name} | {r['wall']:.0f} | {r['stores']} | {g[0][0]:.1f} | {g[0][2]} | "
                     f"{g[1][0]:.1f} s, {g[1][2]} | {g[2][0]:.1f} s, {g[2][2]} |")
    if len(runs) == 2:
        (n1, r1), (n2, r2) = runs.items()
        lines += ["", f"- Longest gap, {n1} / {n2}: {r1['gaps'][0][0] / r2['gaps'][0][0]:.2f}"]
    publish(f"What a killed report card loses (issue 26), {a.model} {a.budget}", lines, threads=a.threads,
            append=not a.no_append)


if __name__ == "__main__":
    main()
