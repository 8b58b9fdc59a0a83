"""A killed or interrupted ``harms score`` run resumes from its stored chunks (issue #10).

Deterministic, with no timing: the child process (``python -m helpers score ...``) pauses
after each stored chunk until the test writes a ``go-N`` file, so SIGKILL / SIGINT / SIGTERM arrive
while the child is provably blocked after chunk k. The only clock is a generous safety
timeout against hangs, never an assertion about speed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from conftest import SENTENCES

REPO = Path(__file__).resolve().parent.parent
SAFETY_TIMEOUT = 600          # seconds; only so that a broken child cannot hang the suite

# ``python -m helpers score ...`` whose chunk writer pauses after each stored chunk: it
# touches CONTROL/stored-N and waits for CONTROL/go-N. The time budget per chunk is made
# unreachable, so every chunk holds exactly HARMS_CACHE_CHUNK_SIZE sentences however
# slowly the child runs. Ctrl-C is made to raise KeyboardInterrupt as in a terminal: a test run
# started in the background by a non-interactive shell (nohup, CI) inherits SIGINT ignored, and
# Python then keeps it ignored, so the child would wait for go-k forever.
_PAUSING_RUN = """
import os, runpy, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)
import helpers.cache as c
c.SAVE_EVERY_SECONDS = 1e12
control = Path(os.environ["HARMS_TEST_CONTROL"])
write, stored = c._write_chunk, [0]
def paused(*a, **k):
    path = write(*a, **k)
    stored[0] += 1
    (control / f"stored-{stored[0]}").touch()
    while not (control / f"go-{stored[0]}").exists():
        time.sleep(0.01)
    return path
c._write_chunk = paused
sys.argv = ["helpers", *sys.argv[1:]]
runpy.run_module("helpers", run_name="__main__", alter_sys=True)
"""


def _input(tmp_path, n) -> tuple[Path, pd.DataFrame]:
    df = pd.DataFrame({"id": range(n), "text": [SENTENCES[i % len(SENTENCES)] + f" {i}" for i in range(n)]})
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return path, df


def _reference(model_dir, texts):
    """Scores computed directly (no cache, no CLI) for comparison."""
    from helpers import models
    from helpers.lm import scoring

    return scoring.sentence_scores(models.load(str(model_dir)), texts, progress=False)


def _chunks(cache_root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (cache_root / "scores").glob("*/chunk-*.json")}


def _rows(files) -> set[str]:
    return {h for f in files for h in json.loads(Path(f).read_text())["rows"]}


def _run_until(cmd, env, control: Path, k: int, sig) -> tuple[int, str]:
    """Run ``cmd``, let it store k chunks, then send ``sig`` while it waits after chunk k."""
    control.mkdir()
    proc = subprocess.Popen(cmd, env=dict(env, HARMS_TEST_CONTROL=str(control)), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + SAFETY_TIMEOUT
    try:
        for i in range(1, k + 1):
            while not (control / f"stored-{i}").exists():
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "safety timeout: the child never stored a chunk"
                time.sleep(0.02)
            if i < k:
                (control / f"go-{i}").touch()
        assert proc.poll() is None
        proc.send_signal(sig)                 # the child is blocked waiting for go-k
        _, err = proc.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


def _pausing_score(tmp_path, model, n: int, chunk: int):
    """``harms score`` of ``n`` sentences in a child that pauses after each saved chunk of ``chunk``:
    (input file, its rows, output file, cache root, environment, command)."""
    inp, df = _input(tmp_path, n)
    out = tmp_path / "out.csv"
    cache_root = tmp_path / "cache"
    env = dict(os.environ, HARMS_CACHE_DIR=str(cache_root), HARMS_CACHE_CHUNK_SIZE=str(chunk),
               PYTHONPATH=str(REPO), TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1",
               HARMS_PROGRESS="lines")
    cmd = [sys.executable, "-c", _PAUSING_RUN, "score", "--model", str(model), "--input", str(inp),
           "--output", str(out)]
    return inp, df, out, cache_root, env, cmd


def test_killed_and_interrupted_cli_runs_resume_from_their_chunks(tmp_path, tiny_gpt2, monkeypatch):
    n, chunk = 30, 2
    inp, df, out, cache_root, env, cmd = _pausing_score(tmp_path, tiny_gpt2, n, chunk)

    code, _ = _run_until(cmd, env, tmp_path / "run1", 3, signal.SIGKILL)          # kill -9 after chunk 3
    assert code == -signal.SIGKILL and not out.exists()
    after_kill = _chunks(cache_root)
    assert len(after_kill) == 3 and len(_rows(after_kill)) == 3 * chunk

    code, err = _run_until(cmd, env, tmp_path / "run2", 2, signal.SIGINT)         # Ctrl-C after 2 more
    assert code == 130, err
    assert "Traceback" not in err
    after_int = _chunks(cache_root)
    saved = _rows(after_int)
    assert len(after_int) == 5 and len(saved) == 5 * chunk
    said = re.search(r"harms: interrupted: (\d+) of (\d+) sentences are saved in the score cache \((.+?)\); "
                     r"rerun the same command to resume", err)
    assert said, err
    assert (int(said[1]), int(said[2])) == (len(saved), n)                       # exactly what is on disk
    assert Path(said[3]) == next(iter(after_int)).parent
    assert all(after_int[p] == t for p, t in after_kill.items())                 # earlier chunks untouched
    assert not out.exists()

    monkeypatch.setenv("HARMS_CACHE_DIR", str(cache_root))
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", str(chunk))
    from helpers import cache
    from helpers.cli import main

    computed = []
    real_write = cache._write_chunk
    monkeypatch.setattr(cache, "_write_chunk", lambda d, rows: computed.extend(rows) or real_write(d, rows))
    assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(out)]) == 0
    final = _chunks(cache_root)
    assert all(final[p] == t for p, t in after_int.items())                      # reused, not rewritten
    assert len(computed) == n - len(saved) and set(computed).isdisjoint(saved)   # only the rest computed
    assert _rows(final) == {cache.text_hash(t) for t in df["text"]}
    got = pd.read_csv(out)
    ref = _reference(tiny_gpt2, df["text"].tolist())
    assert got["n_tokens"].tolist() == ref["n_tokens"].tolist()
    np.testing.assert_allclose(got["log_likelihood"], ref["log_likelihood"], rtol=1e-5)


def test_sigterm_says_what_was_saved_as_ctrl_c_does(tmp_path, tiny_gpt2):
    """``kill`` (a batch scheduler, ``docker stop``) while scoring: the saved count, exit 143."""
    n, chunk = 12, 2
    _, _, out, cache_root, env, cmd = _pausing_score(tmp_path, tiny_gpt2, n, chunk)
    code, err = _run_until(cmd, env, tmp_path / "run", 2, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err
    assert "Traceback" not in err and not out.exists()
    saved = _rows(_chunks(cache_root))
    said = re.search(r"harms: interrupted: (\d+) of (\d+) sentences are saved in the score cache", err)
    assert said, err
    assert (int(said[1]), int(said[2])) == (len(saved), n) == (2 * chunk, n)
