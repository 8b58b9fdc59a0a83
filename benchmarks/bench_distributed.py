"""One process vs two "machines" on this host (issue 27): equality, resumption, and what the exchange costs.

    .venv/bin/python benchmarks/bench_distributed.py [--n 128] [--threads 2] [--no-append]

Runs ``harms score --model smollm2-135m`` on the first ``--n`` SafeNLP ToxiGen sentences, each run
a subprocess of the CLI as a user would start it, all on one fresh score cache:
  1. one process, cold (nothing cached), then warm (everything cached);
  2. two machines on 127.0.0.1 (two launchers, machine ranks 0 and 1, one process each, gloo),
     cold, then warm;
  3. two machines again after machine 1 was killed halfway through a cold run: the rerun scores
     only what was not stored.
It reports wall times (the slower launcher for two machines), the largest difference between the
two runs' log-likelihoods, the chunks each run stored, and what the launchers print about their
exchanges (seconds inside the collectives, "sending", and waiting for the other process), from
which the communication cost per chunk. On one host the two machines share the same cores: each
gets half of ``--threads`` (``HARMS_NUM_THREADS``), as two real machines each have their own.
Without that each "machine" (a host name of its own, HARMS_HOST_ID) takes every core, and the
oversubscribed threads made scoring about 6x slower here. No speed-up is expected on one host: the
point is equality, resumption, and the overhead.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import load_texts, parser, publish  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m"
EXCHANGE = re.compile(r"harms: 2 processes exchanged (\d+) times over ([\d,]+) texts to score: "
                      r"([\d.]+) s sending, ([\d.]+) s waiting for the others")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _harms(argv: list[str], env: dict, rank: int | None = None, port: int = 0) -> subprocess.Popen:
    cluster = [] if rank is None else ["--machines", "2", "--machine-rank", str(rank), "--main-ip", "127.0.0.1",
                                       "--main-port", str(port)]
    if rank is not None:     # each "machine" its half of the cores, as two real machines have their own
        env = {**env, "HARMS_NUM_THREADS": str(max(1, int(env["OMP_NUM_THREADS"]) // 2))}
    return subprocess.Popen([sys.executable, "-m", "helpers", *argv, *cluster],
                            env={**env, "HARMS_HOST_ID": f"host{rank or 0}"}, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(proc: subprocess.Popen) -> str:
    _, err = proc.communicate()
    if proc.returncode:
        sys.exit(f"benchmark run failed ({proc.returncode}): {err.strip().splitlines()[-1:]}")
    return err


def one_process(argv: list[str], env: dict) -> dict:
    began = time.perf_counter()
    _finish(_harms(argv, env))
    return {"seconds": time.perf_counter() - began}


def two_machines(argv: list[str], env: dict, *, kill_after_chunks: int | None = None, cache: Path | None = None) -> dict:
    """Both launchers; with ``kill_after_chunks``, machine 1 (its launcher and every process under
    it) is killed once that many chunks are stored (then both runs are waited for and their failure is expected)."""
    port = _port()
    began = time.perf_counter()
    procs = [_harms(argv, env, r, port) for r in (0, 1)]
    if kill_after_chunks is not None:
        while len(_chunks(cache)) < kill_after_chunks and procs[1].poll() is None:
            time.sleep(0.2)
        import psutil            # accelerate's own dependency

        workers = psutil.Process(procs[1].pid).children(recursive=True)   # the workers have their own session
        for p in [*workers, psutil.Process(procs[1].pid)]:
            p.send_signal(signal.SIGKILL)
        said = [p.communicate()[1] for p in procs][0]
        line = next((x for x in said.splitlines() if x.startswith("harms: error")), "(no error line)")
        return {"seconds": time.perf_counter() - began, "chunks_before": len(_chunks(cache)), "said": line}
    errs = [_finish(p) for p in procs]
    seconds = time.perf_counter() - began
    exchanges = [m.groups() for e in errs for m in [EXCHANGE.search(e)] if m]
    rounds, texts, sending, waiting = max(exchanges, key=lambda g: float(g[2]) + float(g[3]))
    return {"seconds": seconds, "rounds": int(rounds), "texts": int(texts.replace(",", "")),
            "sending": float(sending), "waiting": float(waiting)}


def _chunks(cache: Path) -> list[Path]:
    return sorted(cache.glob("scores/*/chunk-*.json"))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=128, help="ToxiGen sentences to score")
    ap.add_argument("--chunk", type=int, default=8, help="sentences per stored chunk (HARMS_CACHE_CHUNK_SIZE)")
    a = ap.parse_args()
    texts = load_texts(a.n)
    with tempfile.TemporaryDirectory(prefix="bench_distributed_") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HARMS_CACHE_DIR": str(cache), "HARMS_PROGRESS": "off",
               "OMP_NUM_THREADS": str(a.threads), "TOKENIZERS_PARALLELISM": "false",
               "HARMS_CACHE_CHUNK_SIZE": str(a.chunk), "HARMS_DEAD_AFTER": "10"}
        pd.DataFrame({"id": range(len(texts)), "text": texts}).to_csv(tmp / "in.csv", index=False)
        pd.DataFrame({"id": [0], "text": ["warm up"]}).to_csv(tmp / "warm.csv", index=False)

        def argv(out: str, inp: str = "in.csv") -> list[str]:
            return ["score", "--model", MODEL, "--input", str(tmp / inp), "--output", str(tmp / out), "--overwrite"]

        one_process(argv("warm.out.csv", "warm.csv"), env)         # the model's converted copy, made once
        shutil.rmtree(cache / "scores")
        single = one_process(argv("one.csv"), env)
        chunks_single = len(_chunks(cache))
        single_warm = one_process(argv("one.csv"), env)
        shutil.rmtree(cache / "scores")
        two = two_machines(argv("two.csv"), env)
        chunks_two = len(_chunks(cache))
        two_warm = two_machines(argv("two.csv"), env)
        shutil.rmtree(cache / "scores")
        killed = two_machines(argv("two.csv"), env, kill_after_chunks=max(1, chunks_two // 4), cache=cache)
        resumed = two_machines(argv("resumed.csv"), env)
        chunks_resumed = len(_chunks(cache))
        one, both, again = (pd.read_csv(tmp / f) for f in ("one.csv", "two.csv", "resumed.csv"))
    diff = max((one["log_likelihood"] - both["log_likelihood"]).abs().max(),
               (one["log_likelihood"] - again["log_likelihood"]).abs().max())
    same_tokens = one["n_tokens"].tolist() == both["n_tokens"].tolist() == again["n_tokens"].tolist()
    lines = ["", f"`harms score --model {MODEL}` on the first {a.n} ToxiGen sentences, chunks of {a.chunk}; every run a "
             "fresh CLI process (model load included); two machines = two launchers on 127.0.0.1, machine ranks 0 and 1, "
             f"one process each with {max(1, a.threads // 2)} thread(s) (one process: {a.threads}), gloo, one shared "
             "score cache.", "",
             "| run | wall s | chunks stored | exchanges | sending s | waiting s |", "|---|---|---|---|---|---|",
             f"| one process, cold | {single['seconds']:.1f} | {chunks_single} | | | |",
             f"| one process, warm | {single_warm['seconds']:.1f} | 0 | | | |",
             f"| two machines, cold | {two['seconds']:.1f} | {chunks_two} | {two['rounds']} | {two['sending']:.3f} "
             f"| {two['waiting']:.1f} |",
             f"| two machines, warm | {two_warm['seconds']:.1f} | 0 | {two_warm['rounds']} | {two_warm['sending']:.3f} "
             f"| {two_warm['waiting']:.1f} |",
             f"| two machines, machine 1 killed after {killed['chunks_before']} chunks | {killed['seconds']:.1f} "
             f"| {killed['chunks_before']} | | | |",
             f"| two machines, rerun of the killed run | {resumed['seconds']:.1f} "
             f"| {chunks_resumed - killed['chunks_before']} more | {resumed['rounds']} | {resumed['sending']:.3f} "
             f"| {resumed['waiting']:.1f} |", "",
             f"- Machine 0's line when machine 1 was killed (HARMS_DEAD_AFTER=10): `{killed['said']}`",
             f"- Two machines / one process, cold: {two['seconds'] / single['seconds']:.2f}x the wall time; warm: "
             f"{two_warm['seconds'] / single_warm['seconds']:.2f}x (launch, rendezvous, two model loads).",
             f"- Equal: same token counts {same_tokens}; largest |log-likelihood difference| between one process and "
             f"two machines (also after the kill and rerun): {diff:.2e} nats.",
             f"- Resumed: the rerun stored {chunks_resumed - killed['chunks_before']} chunks, the "
             f"{killed['chunks_before']} stored before the kill were read, not rescored "
             f"(total {chunks_resumed} vs {chunks_two} in the uninterrupted run; chunk boundaries follow the "
             "shares, so the counts may differ by the number of processes).",
             f"- Communication: {two['rounds']} collectives moved the job ({two['texts']:,} texts) and the rows in "
             f"{two['sending']:.3f} s, {two['sending'] / max(chunks_two, 1) * 1000:.1f} ms per stored chunk "
             f"({two['sending'] / max(two['seconds'], 1e-9):.2%} of the wall time); the rest of the difference is "
             "the launch (accelerate, torchrun, the rendezvous, a model load per machine; the warm row) (waiting "
             f"{two['waiting']:.1f} s for the slower share)."]
    publish("One process vs two machines on one host (issue 27)", lines, threads=a.threads, append=not a.no_append)


if __name__ == "__main__":
    main()
