"""Where a cold book build spends its time (issue 38): per chapter and per kind of work.

    pip install py-spy                       # a sampling profiler; not a dependency of the book
    .venv/bin/python benchmarks/profile_book.py --profile default
    .venv/bin/python benchmarks/profile_book.py --stacks stacks.txt [more.txt ...]   # summarise only

The build (``python -m helpers book --profile P``, empty cache and results directories) runs
under ``py-spy record --subprocesses --format raw`` at 20 samples a second, so every notebook
kernel is sampled too. A sample counts for the chapter whose module (``helpers/chapters/chNN_*``)
is on its stack, for ``zoo`` when ``helpers/training/zoo.py`` is, and for the first kind of work
of :data:`KINDS` one of its frames matches. Idle threads are not sampled: the table is CPU time,
the wall times come from ``results/book_timings.csv``. A section is appended to
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
RATE = 20                                   # samples per second

#: Kinds of work, first match wins (a frame of the sample matches the pattern).
KINDS = [
    ("import", r"_find_and_load|<module> \(.*site-packages"),
    ("checkpoint writes", r"_atomic_save"),
    ("GGUF conversion", r"_load_gguf|gguf|convert"),
    ("model load", r"from_pretrained|load_state_dict|safetensors"),
    ("generation", r"generate \(|GenerationMixin"),
    ("training", r"backward|optimizer|fine_tune|distill|heal \("),
    ("bootstrap / permutation", r"bootstrap|permutation_test|_resample|paired_difference"),
    ("plotting", r"matplotlib|seaborn"),
    ("tokenization", r"tokeniz|encode_batch|_batch_encode|convert_ids_to_tokens|word_starts|continuations"),
    ("forward passes and log-probabilities",
     r"forward \(.*(transformers|torch/nn)|cross_entropy|log_softmax|softmax|heldout_nll|_continue"),
    ("pandas", r"pandas/"),
]
_CHAPTER = re.compile(r"helpers/chapters/(ch\d\d)_")


def samples(paths):
    """``(frames, count)`` of py-spy's raw (collapsed) stacks."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                stack, _, n = line.rstrip("\n").rpartition(" ")
                if stack and n.isdigit():
                    yield stack.split(";"), int(n)


def where(frames) -> str:
    for f in frames:
        m = _CHAPTER.search(f)
        if m:
            return m.group(1)
    return "zoo" if any("helpers/training/zoo.py" in f for f in frames) else "other"


def kind(frames) -> str:
    return next((name for name, pattern in KINDS if any(re.search(pattern, f) for f in frames)), "other")


def table(paths) -> pd.DataFrame:
    """Seconds of CPU per (where, kind), a row per place, a column per kind, and the total."""
    seconds = collections.Counter()
    for frames, n in samples(paths):
        seconds[where(frames), kind(frames)] += n / RATE
    df = pd.Series(seconds).unstack(fill_value=0.0)
    df = df[[k for k, _ in KINDS if k in df.columns] + [c for c in df.columns if c not in dict(KINDS)]]
    df["total"] = df.sum(axis=1)
    return df.sort_index().round(0)


def markdown(df: pd.DataFrame) -> str:
    """Per place the total and each kind's share of it (kinds under 2 % of the place left out)."""
    lines = ["| where | CPU s | what it spends it on |", "|---|---|---|"]
    for place, row in df.iterrows():
        parts = [(k, v) for k, v in row.drop("total").items() if v >= 0.02 * row["total"]]
        parts.sort(key=lambda kv: -kv[1])
        lines.append(f"| {place} | {row['total']:.0f} | "
                     + ", ".join(f"{k} {100 * v / row['total']:.0f} %" for k, v in parts) + " |")
    total = df.drop(columns="total").sum()
    lines.append(f"| all | {total.sum():.0f} | "
                 + ", ".join(f"{k} {100 * v / total.sum():.0f} %" for k, v in total.sort_values(ascending=False).items()
                             if v >= 0.01 * total.sum()) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--stacks", nargs="+", type=Path, help="summarise these raw stack files instead of building")
    args = ap.parse_args()
    if args.stacks:
        print(markdown(table(args.stacks)))
        return
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not installed: pip install py-spy")
    work = Path(tempfile.mkdtemp(prefix="harms-profile-"))
    env = os.environ | {"HARMS_CACHE_DIR": str(work / "cache"), "HARMS_RESULTS_DIR": str(work / "results")}
    env.pop("HARMS_ZOO_DIR", None)
    stacks = work / "stacks.txt"
    cmd = [spy, "record", "--subprocesses", "--format", "raw", "-r", str(RATE), "-o", str(stacks), "--",
           sys.executable, "-m", "helpers", "book", "--profile", args.profile]
    if subprocess.run(cmd, cwd=ROOT, env=env).returncode != 0:
        raise SystemExit(f"the build failed; run `python -m helpers book --profile {args.profile}` to see why")
    wall = pd.read_csv(work / "results" / "book_timings.csv").set_index("step")["seconds"]
    text = (f"\n## Where a cold `{args.profile}` build spends its time ({dt.datetime.now():%Y-%m-%d %H:%M})\n\n"
            f"Command: `.venv/bin/python benchmarks/profile_book.py --profile {args.profile}`. Machine: "
            f"{os.cpu_count()} CPUs, {platform.processor() or platform.machine()}; load average at end "
            f"{os.getloadavg()[0]:.1f}. Wall seconds per step: "
            + ", ".join(f"{k} {v:.0f}" for k, v in wall.items()) + f" (all {wall.sum():.0f}).\n\n"
            + markdown(table([stacks])))
    print(text)
    with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
