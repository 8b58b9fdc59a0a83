"""Where a cold book build spends its time (issue 38): per chapter and per kind of work.

    pip install py-spy                       # a sampling profiler; not a dependency of the book
    .venv/bin/python benchmarks/profile_book.py --profile default
    .venv/bin/python benchmarks/profile_book.py --stacks stacks.txt [more.txt ...]   # summarise only
    .venv/bin/python benchmarks/profile_book.py --suite     # `make test`'s pytest run instead

The build (``python -m helpers book --profile P``, empty cache and results directories) runs
under ``py-spy record --subprocesses --format raw`` at 20 samples a second, so every notebook
kernel is sampled too. A sample counts for the chapter whose module (``helpers/chapters/chNN_*``)
is on its stack, for ``zoo`` when ``helpers/training/zoo.py`` is, and for the first kind of work
of :data:`KINDS` one of its frames matches. Idle threads are not sampled: the table is CPU time,
the wall times come from ``results/book_timings.csv``. A section is appended to
benchmarks/RESULTS.md.

``--suite`` profiles ``make test``'s pytest command instead (the environment already made): a
sample counts for the test function on its stack (``tests/test_x.py::test_y``; a fixture's work
counts for the test that first asked for it), a notebook kernel's for its chapter, another
subprocess's for ``subprocess``; wall seconds per test (setup, call and teardown) come from
pytest's JUnit XML.
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
    ("bootstrap / permutation", r"^(?!(Thread\.)?_bootstrap).*(bootstrap|permutation_test|_resample|paired_difference)"),
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


_TEST = re.compile(r"^(test_\w+) \((?:.*/)?(test_\w+)\.py")
_IN_TESTS = re.compile(r"^([\w.<>]+) \((?:.*/)?(conftest|test_\w+)\.py")
_PROCESS = re.compile(r'^process \d+:"(.*)"$', re.S)


def where_in_suite(frames) -> str:
    """The test on the stack (outermost), else a fixture in the tests, else a kernel's or a
    prefill's chapter, else another process: the test whose temporary directory its command
    names (pytest names it after the test), or the command itself."""
    for f in frames:
        m = _TEST.search(f)
        if m:
            return f"{m.group(2)}::{m.group(1)}"
    for f in frames:                        # a fixture's body (conftest or a test file), outermost
        m = _IN_TESTS.search(f)
        if m:
            return f"{m.group(2)}::{m.group(1)} (fixture)"
    place = where(frames)
    if place.startswith("ch"):
        return f"book {place} (kernels and prefills)"
    commands = [m.group(1) for m in map(_PROCESS.match, frames) if m and m.group(1)]
    if not commands:
        return "pytest (collection, fixtures)" if any("_pytest/" in f for f in frames) else "other"
    test = re.search(r"/pytest-\d+/(test_\w+?)\d*/", commands[-1])
    if test:
        return f"subprocesses of {test.group(1)}*"
    if "ipykernel" in commands[-1]:
        return "notebook kernels (outside the chapters' code)"
    return "subprocess: " + re.sub(r"\S*/(python[\d.]*)\b", r"\1", commands[-1])[:60]


#: A thread other than the main one with none of the package's code on its stack: in a notebook
#: kernel its channels and pollers waiting (py-spy samples them as running).
WAITING = "helper threads (kernel channels, pollers)"


def kind(frames) -> str:
    if any(re.match(r"(Thread\.)?_bootstrap \(", f) for f in frames) and not any("helpers/" in f for f in frames):
        return WAITING
    return next((name for name, pattern in KINDS if any(re.search(pattern, f) for f in frames)), "other")


def table(paths, place=None) -> pd.DataFrame:
    """Seconds of CPU per (where, kind), a row per place, a column per kind, and the total."""
    place = place or where
    seconds = collections.Counter()
    for frames, n in samples(paths):
        seconds[place(frames), kind(frames)] += n / RATE
    df = pd.Series(seconds).unstack(fill_value=0.0)
    df = df[[k for k, _ in KINDS if k in df.columns] + [c for c in df.columns if c not in dict(KINDS)]]
    df["total"] = df.sum(axis=1)
    return df.sort_index().round(0)


_HELPERS = re.compile(r"^(\S+) \((?:.*/)?helpers/(\S+?)\.py")


def by_function(paths, top: int = 8) -> str:
    """Per chapter, the CPU seconds of its heaviest calls: the chapter's function the notebook
    called, and the innermost function of the package below it (e.g. ``measure -> generations@bold``)."""
    seconds = collections.Counter()
    for frames, n in samples(paths):
        place = where(frames)
        mine = [m for m in map(_HELPERS.match, frames) if m]
        outer = next((m.group(1) for m in mine if m.group(2).startswith("chapters/")), "-")
        inner = next((f"{m.group(1)}@{m.group(2).rpartition('/')[2]}" for m in reversed(mine)
                      if not m.group(2).startswith(("chapters/", "cache", "runner", "progress"))), "-")
        seconds[place, f"{outer} -> {inner}"] += n / RATE
    lines = []
    for place in sorted({p for p, _ in seconds}):
        calls = sorted(((c, v) for (p, c), v in seconds.items() if p == place), key=lambda cv: -cv[1])[:top]
        lines.append(f"- {place}: " + "; ".join(f"{c} {v:.0f} s" for c, v in calls))
    return "\n".join(lines) + "\n"


def shares(row: pd.Series, at_least: float) -> str:
    """A place's kinds of work as shares of its ``total``, largest first, those under ``at_least`` left out."""
    parts = sorted(((k, v) for k, v in row.drop("total").items() if v >= at_least * row["total"]), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {100 * v / row['total']:.0f} %" for k, v in parts)


def markdown(df: pd.DataFrame) -> str:
    """Per place the total and each kind's share of it (kinds under 2 % of the place left out)."""
    lines = ["| where | CPU s | what it spends it on |", "|---|---|---|"]
    for place, row in df.iterrows():
        lines.append(f"| {place} | {row['total']:.0f} | {shares(row, 0.02)} |")
    total = df.drop(columns="total").sum()
    lines.append(f"| all | {total.sum():.0f} | "
                 + ", ".join(f"{k} {100 * v / total.sum():.0f} %" for k, v in total.sort_values(ascending=False).items()
                             if v >= 0.01 * total.sum()) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--stacks", nargs="+", type=Path, help="summarise these raw stack files instead of building")
    ap.add_argument("--suite", action="store_true", help="profile `make test`'s pytest run instead of a build")
    ap.add_argument("--junit", type=Path, help="with --stacks --suite: the run's JUnit XML, for wall seconds")
    ap.add_argument("--by-function", action="store_true", help="with --stacks: each chapter's heaviest calls too")
    args = ap.parse_args()
    if args.stacks:
        if args.suite:
            print(suite_markdown(table(args.stacks, where_in_suite), args.junit))
        else:
            print(markdown(table(args.stacks)))
        if args.by_function:
            print(by_function(args.stacks))
        return
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not installed: pip install py-spy")
    if args.suite:
        return profile_suite(spy)
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


def wall_seconds_per_test(junit: Path) -> pd.Series:
    """Wall seconds per test (setup + call + teardown) from pytest's JUnit XML."""
    import xml.etree.ElementTree as ET

    rows = {}
    for case in ET.parse(junit).iter("testcase"):
        module = case.get("classname", "").rpartition(".")[2] or case.get("classname", "")
        rows[f"{module}::{case.get('name')}"] = float(case.get("time", 0))
    return pd.Series(rows, dtype=float).sort_values(ascending=False)


def suite_markdown(cpu: pd.DataFrame, junit: Path | None, top: int = 20) -> str:
    """The slowest tests by wall time with what their CPU went to, then CPU per test file."""
    out = []
    if junit is not None:
        walls = wall_seconds_per_test(junit)
        out += [f"Tests: {len(walls)}, wall {walls.sum():.0f} s summed over tests.\n",
                "| test | wall s | CPU s | what the CPU went to |", "|---|---|---|---|"]
        for name, wall in walls.head(top).items():
            # parametrised ids share their function's samples
            base = name.split("[")[0]
            rows = cpu[cpu.index == base]
            if rows.empty:
                out.append(f"| {name} | {wall:.0f} | – | – |")
                continue
            row = rows.iloc[0]
            if row["total"] <= 0:
                out.append(f"| {name} | {wall:.0f} | 0 | (its processes, below) |")
                continue
            out.append(f"| {name} | {wall:.0f} | {row['total']:.0f} | {shares(row, 0.05)} |")
        out.append("")
    by_file = cpu.groupby(lambda i: i.split("::")[0]).sum().sort_values("total", ascending=False)
    out.append("CPU per test file (and the book kernels and subprocesses the tests start):\n")
    out.append(markdown(by_file.head(25)))
    return "\n".join(out)


def profile_suite(spy: str) -> None:
    """`make test`'s pytest command under py-spy, with JUnit XML for wall times."""
    work = Path(tempfile.mkdtemp(prefix="harms-profile-suite-"))
    stacks, junit = work / "stacks.txt", work / "junit.xml"
    cmd = [spy, "record", "--subprocesses", "--format", "raw", "-r", str(RATE), "-o", str(stacks), "--",
           sys.executable, "-m", "pytest", "-m", "not slow", "--durations=20", f"--junitxml={junit}"]
    shared = ROOT.parent / "shared" / "data"
    env = os.environ | {                    # what the Makefile exports for `make test`
        "HARMS_CACHE_DIR": os.environ.get("HARMS_CACHE_DIR", str(ROOT / ".cache" / "harms")),
        "HARMS_PEER_PYTHON": str(ROOT / ".venv-peers" / "bin" / "python"),
        "MPLBACKEND": "Agg", "TOKENIZERS_PARALLELISM": "false", "THP_MEM_ALLOC_ENABLE": "1"}
    if shared.is_dir():
        env.setdefault("HARMS_DATA_DIR", str(shared))
    start = dt.datetime.now()
    code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    minutes = (dt.datetime.now() - start).total_seconds() / 60
    text = (f"\n## Where `make test` spends its time ({start:%Y-%m-%d %H:%M})\n\n"
            f"Command: `.venv/bin/python benchmarks/profile_book.py --suite` (pytest exit code {code}); "
            f"{minutes:.1f} min wall under the profiler. Machine: {os.cpu_count()} CPUs; load average at end "
            f"{os.getloadavg()[0]:.1f}. Stacks and JUnit XML: {work}.\n\n"
            + suite_markdown(table([stacks], where_in_suite), junit))
    print(text)
    with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
