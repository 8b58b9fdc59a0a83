"""helpers.parallel: 2 CPU processes under ``accelerate launch`` give the same scores as one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers import models
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
