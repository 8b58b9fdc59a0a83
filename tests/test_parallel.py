"""helpers.parallel: 2 CPU processes under ``accelerate launch`` give the same scores as one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import models, tables
from helpers.lm import parallel, scoring
from helpers.cli import main
from helpers.errors import ModelUnavailableError

from conftest import SENTENCES

TEXTS = [f"{s} {i}" for i, s in enumerate(SENTENCES * 2)][:15]      # odd count: uneven shards


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))


def test_two_cpu_processes_equal_one(tiny_gpt2):
    single = scoring.score(models.load(str(tiny_gpt2)), TEXTS, cache=False, progress=False)
    both = parallel.score_parallel(str(tiny_gpt2), TEXTS, num_processes=2, cache=False, progress=False)
    assert both.attrs["num_processes"] == 2                    # really ran as two Accelerate workers
    assert list(both.columns) == ["n_tokens", "log_likelihood", "perplexity"]
    assert both["n_tokens"].tolist() == single["n_tokens"].tolist()
    np.testing.assert_allclose(both["log_likelihood"], single["log_likelihood"], rtol=1e-5)
    np.testing.assert_allclose(both["perplexity"], single["perplexity"], rtol=1e-5)


def test_launch_command_uses_accelerate():
    cmd = parallel.launch_command("JOB", 2, "cpu")
    assert cmd[1:3] == ["-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--num_processes") + 1] == "2"
    assert cmd[-3:] == ["-m", "helpers.lm.parallel", "JOB"]


def test_worker_error_is_reraised_and_cli_prints_one_line(tmp_path, capsys, monkeypatch):
    raised = []
    real = parallel.score_parallel

    def spy(*a, **k):
        try:
            return real(*a, **k)
        except Exception as exc:
            raised.append(exc)
            raise

    monkeypatch.setattr(parallel, "score_parallel", spy)
    inp = tmp_path / "in.csv"
    pd.DataFrame({"text": TEXTS[:4]}).to_csv(inp, index=False)
    code = main(["score", "--model", "no-such-model-xyz", "--input", str(inp), "--output",
                 str(tmp_path / "o.csv"), "--processes", "2"])
    assert code == 2
    assert len(raised) == 1 and isinstance(raised[0], ModelUnavailableError)   # came from the workers
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("harms: error: ") and "no-such-model-xyz" in err[0]


# ---------------------------------------------------------------- job directories of killed runs

_BLOCKED_LAUNCH = """
import sys, time
from pathlib import Path
from helpers.lm import parallel
def launcher_that_hangs(cmd, **kw):      # stands for accelerate launch, still running at kill -9
    Path(sys.argv[1]).touch()
    time.sleep(3600)
parallel.subprocess.run = launcher_that_hangs
parallel.score_parallel("any-model", ["a text"], num_processes=2, progress=False)
"""


def _fake_workers(cmd, **kw):
    """What the Accelerate workers leave in the job directory on success (no real launch)."""
    import json
    import subprocess
    from pathlib import Path

    job = Path(cmd[-1])
    texts = json.loads((job / "job.json").read_text())["texts"]
    pd.DataFrame({"n_tokens": [len(t.split()) for t in texts], "log_likelihood": [-1.0] * len(texts),
                  "perplexity": [1.0] * len(texts)}).to_parquet(job / "scores.parquet")
    (job / "meta.json").write_text(json.dumps({"num_processes": 2}))
    return subprocess.CompletedProcess(cmd, 0, "", "")


def test_job_directory_of_a_killed_run_is_removed_by_the_next_run(tmp_path, monkeypatch):
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from helpers import paths

    root = paths.cache_dir() / "parallel"
    ready = tmp_path / "launched"
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKED_LAUNCH, str(ready)],
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)))
    deadline = time.monotonic() + 600                  # safety only: the child never reached the launch
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)                   # the job directory is in use: kill -9
    proc.wait()
    [left] = list(root.iterdir())                      # in the cache, not in /tmp; named with the dead pid
    assert left.name.startswith(".job.harms-tmp-") and f"-{proc.pid}@{tables.host_id()}-" in left.name
    assert (left / "job.json").exists()

    monkeypatch.setattr(parallel.subprocess, "run", _fake_workers)
    out = parallel.score_parallel("any-model", TEXTS[:3], num_processes=2, progress=False)
    assert out["n_tokens"].tolist() == [len(t.split()) for t in TEXTS[:3]]
    assert list(root.iterdir()) == []                  # the leftover and this run's own job are gone
