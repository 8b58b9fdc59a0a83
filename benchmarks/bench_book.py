"""Cold vs warm build of the book, and a build killed during scoring (issues 3 and 38).

    .venv/bin/python benchmarks/bench_book.py --profile default
    .venv/bin/python benchmarks/bench_book.py --profile ci --kill-during-scoring

A cold build starts from an empty cache directory (no zoo, no scores, no converted GGUF
weights); the warm build repeats it on the same cache (a chapter whose inputs did not change is
not executed again: ``helpers.book.chapter_inputs``), and a third build with ``--rerun`` executes
every chapter on that cache (what a change to the package costs: everything read from the cache).
With ``--kill-during-scoring`` the cold build is killed (SIGKILL to its process group) once the
score cache holds some chunks, then started again: the script checks that every chunk written
before the kill is still there and was not rewritten (nothing already scored is lost or recomputed).
Per-step times come from ``results/book_timings.csv``; a section is appended to
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def chunk_files(cache: Path) -> dict[Path, int]:
    """Score-cache chunk files with their modification times (ns)."""
    return {p: p.stat().st_mtime_ns for p in (cache / "scores").glob("*/chunk-*.json")}


def build(profile: str, env: dict, *, kill_when=None, rerun: bool = False) -> tuple[float, bool]:
    """Run ``python -m helpers book`` (``--rerun``: every chapter executed); with ``kill_when`` kill
    it once that returns True."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "helpers", "book", "--profile", profile, *(["--rerun"] * rerun)],
                            cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while proc.poll() is None:
        if kill_when is not None and kill_when():
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return time.perf_counter() - t0, True
        time.sleep(2)
    if proc.returncode != 0:
        raise SystemExit(f"book build failed (exit {proc.returncode}); run `python -m helpers book "
                         f"--profile {profile}` to see why")
    return time.perf_counter() - t0, False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="default")
    ap.add_argument("--kill-during-scoring", action="store_true")
    ap.add_argument("--min-chunks", type=int, default=3, help="kill once this many score chunks exist")
    args = ap.parse_args()

    cache = Path(tempfile.mkdtemp(prefix="harms-bench-cache-"))
    results = Path(tempfile.mkdtemp(prefix="harms-bench-results-"))
    env = os.environ | {"HARMS_CACHE_DIR": str(cache), "HARMS_RESULTS_DIR": str(results),
                        "HARMS_CACHE_CHUNK_SIZE": "32"}   # small chunks: a kill loses little
    env.pop("HARMS_ZOO_DIR", None)
    lines = []
    killed_note = ""
    cold_seconds = 0.0
    if args.kill_during_scoring:
        first, killed = build(args.profile, env, kill_when=lambda: len(chunk_files(cache)) >= args.min_chunks)
        before = chunk_files(cache)
        rows_before = len(before)
        cold_seconds += first
        second, _ = build(args.profile, env)
        cold_seconds += second
        after = chunk_files(cache)
        kept = [p for p, m in before.items() if after.get(p) == m]
        lost = [p for p in before if p not in after]
        # the cache compacts many small chunks into one file; what matters is that no row is lost
        killed_note = (f"- Killed after {first:.0f} s (SIGKILL to the whole process group) with {rows_before} "
                       f"score chunk(s) written; restarted: {len(kept)} of them reused untouched, "
                       f"{len(lost)} merged by compaction, none rewritten. Cold time below = both parts.\n")
        if len(kept) + len(lost) != rows_before or any(after.get(p, m) != m for p, m in before.items()):
            raise SystemExit("a chunk written before the kill was rewritten: something was recomputed")
    else:
        cold_seconds, _ = build(args.profile, env)
    warm_seconds, _ = build(args.profile, env)
    rerun_seconds, _ = build(args.profile, env, rerun=True)

    timings = pd.read_csv(results / "book_timings.csv")
    runs = list(dict.fromkeys(timings["started"]))
    cold = timings[timings["started"].isin(runs[:-2])].groupby("step", sort=False)["seconds"].sum()
    warm = timings[timings["started"] == runs[-2]].set_index("step")["seconds"]
    rerun = timings[timings["started"] == runs[-1]].set_index("step")["seconds"]
    table = pd.DataFrame({"cold (s)": cold, "warm (s)": warm, "warm, --rerun (s)": rerun}).round(1)

    lines.append(f"\n## Book build, profile `{args.profile}`: cold vs warm cache "
                 f"({dt.datetime.now():%Y-%m-%d %H:%M})\n")
    lines.append(f"Command: `.venv/bin/python benchmarks/bench_book.py --profile {args.profile}"
                 f"{' --kill-during-scoring' if args.kill_during_scoring else ''}` "
                 f"(each build: `python -m helpers book --profile {args.profile}`).\n")
    lines.append(f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
                 f"{platform.platform()}; load average at end {os.getloadavg()[0]:.1f}.\n\n")
    lines.append(killed_note)
    lines.append(f"- cold build (empty cache: zoo trained, every sentence scored): **{cold_seconds:.0f} s**\n")
    lines.append(f"- warm rebuild (same cache, nothing changed): **{warm_seconds:.0f} s**\n")
    lines.append(f"- warm rebuild executing every chapter (`--rerun`, as after a change to the package): "
                 f"**{rerun_seconds:.0f} s**\n")
    lines.append(f"- ratio cold / warm: **{cold_seconds / warm_seconds:.1f}x** (goal >= 10x)\n\n")
    lines.append("| step | cold (s) | warm (s) | warm, --rerun (s) |\n|---|---|---|---|\n")
    for step, row in table.iterrows():
        lines.append(f"| {step} | {row['cold (s)']} | {row['warm (s)']} | {row['warm, --rerun (s)']} |\n")
    text = "".join(lines)
    print(text)
    with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
