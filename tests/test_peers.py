"""Our pseudo-log-likelihood against minicons' MaskedLMScorer (Misra 2022), run in the peer env.

minicons needs transformers < 5, so it runs in its own virtual environment
(``HARMS_PEER_PYTHON``, built by ``make peers``) on the tiny models saved by conftest.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import SENTENCES, tiny_loaded
from helpers.lm import scoring

PEER_PYTHON = Path(os.environ.get("HARMS_PEER_PYTHON", "/work/main/.venv-peers/bin/python"))

MINICONS_SCRIPT = r"""
import json, sys
import torch
torch.set_num_threads(1)
from minicons import scorer
path = sys.argv[1]
sentences = json.load(sys.stdin)
mlm = scorer.MaskedLMScorer(path, "cpu")
res = {}
for metric in ("original", "within_word_l2r"):
    # sum of natural-log token probabilities per sentence (minicons' default reduction is the mean)
    out = mlm.sequence_score(sentences, reduction=lambda x: x.sum(0).item(), PLL_metric=metric)
    ntok = [len(s) for s in mlm.compute_stats(mlm.prepare_text(sentences, PLL_metric=metric))]
    res[metric] = {"scores": out, "n": ntok}
print(json.dumps(res))
"""
_RESULTS: dict[Path, dict] = {}


def minicons_scores(path: Path, metric: str, sentences: list[str]) -> dict:
    """minicons' per-sentence sums (both PLL metrics computed in one subprocess per model)."""
    if not PEER_PYTHON.exists():
        pytest.skip(f"peer environment missing ({PEER_PYTHON}); build it with `make peers`")
    if path in _RESULTS:
        return _RESULTS[path][metric]
    proc = subprocess.run([str(PEER_PYTHON), "-c", MINICONS_SCRIPT, str(path)],
                          input=json.dumps(sentences), capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    _RESULTS[path] = json.loads(proc.stdout.strip().splitlines()[-1])
    return _RESULTS[path][metric]


@pytest.mark.parametrize("which", ["tiny_bert", "tiny_roberta"])
@pytest.mark.parametrize("pll,metric", [("original", "original"), ("word-l2r", "within_word_l2r")])
def test_pll_equals_minicons(which, pll, metric, request):
    path = request.getfixturevalue(which)
    ref = minicons_scores(path, metric, SENTENCES)
    ours = scoring.sentence_scores(tiny_loaded(path, "masked"), SENTENCES, pll=pll, progress=False)
    assert ours.n_tokens.tolist() == ref["n"]
    np.testing.assert_allclose(ours.log_likelihood, ref["scores"], rtol=0, atol=1e-4)
