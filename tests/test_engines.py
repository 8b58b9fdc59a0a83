"""helpers.lm.engines: vLLM's prompt log-probabilities summed over the tokens transformers scores,
behind a parity gate. vLLM needs a CUDA GPU, so its ``LLM`` is stood in for by an object with the
same ``generate`` contract whose prompt log-probabilities come from a brute-force per-sentence
forward pass of the same tiny model (independent of the batched scorer); a perturbed one stands
for the upstream pitfalls the gate must catch."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from helpers import models
from helpers.cli import main
from helpers.errors import HarmsError, InputError
from helpers.lm import engines, scoring

from conftest import SENTENCES


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))


@dataclass
class Logprob:                     # vllm.sequence.Logprob's shape
    logprob: float
    rank: int | None = None


@dataclass
class Output:                      # vllm.outputs.RequestOutput's field we read
    prompt_logprobs: list


class FakeLLM:
    """vLLM's ``LLM.generate`` contract: ``prompt_logprobs[t]`` maps the prompt's token t to its
    log-probability given tokens < t (None at t = 0). ``shift`` is added at position ``at``
    of every prompt; ``drop_first`` scores the prompt without its first token (a lost BOS)."""

    def __init__(self, model, *, shift: float = 0.0, at: int = 1, drop_first: bool = False):
        self.model, self.shift, self.at, self.drop_first, self.calls = model, shift, at, drop_first, 0

    def generate(self, prompts, params, use_tqdm=True):
        self.calls += 1
        outs = []
        for p in prompts:
            ids = p["prompt_token_ids"][1:] if self.drop_first else p["prompt_token_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(self.model(torch.tensor([ids])).logits[0].double(), -1)
            entries = [None] + [{ids[t]: Logprob(float(logp[t - 1, ids[t]]) + (self.shift if t == self.at else 0))}
                                for t in range(1, len(ids))]
            outs.append(Output(entries))
        return outs


def _engine(fake, **kw) -> engines.VllmEngine:
    return engines.VllmEngine(make_llm=lambda source, max_len: fake, sampling_params=object(), version="test", **kw)


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_gpt2_bos"])
def test_vllm_scores_are_the_transformers_scores_of_the_same_tokens(fixture, request, capsys):
    loaded = models.load(str(request.getfixturevalue(fixture)))
    fake = FakeLLM(loaded.model)
    reference = scoring.score(loaded, SENTENCES, cache=False, progress=False)
    with engines.using(_engine(fake, sample=4)) as engine:
        out = scoring.score(loaded, SENTENCES, cache=False, progress=False)
    assert fake.calls >= 2                                     # the gate's sample, then the sentences
    assert out["n_tokens"].tolist() == reference["n_tokens"].tolist()   # BOS handled the same way
    np.testing.assert_allclose(out["log_likelihood"], reference["log_likelihood"], rtol=0, atol=1e-5)
    assert len(engine.parity[loaded.name]) == 4
    assert "vLLM parity gate" in capsys.readouterr().err


def test_the_gate_refuses_a_difference_beyond_the_tolerance(tiny_gpt2):
    loaded = models.load(str(tiny_gpt2))
    with engines.using(_engine(FakeLLM(loaded.model, shift=0.3), tolerance=0.05)):
        with pytest.raises(HarmsError, match=r"differ by up to 0\.3000 nats \(> tolerance 0\.05\)"):
            scoring.score(loaded, SENTENCES, cache=False, progress=False)
    with engines.using(_engine(FakeLLM(loaded.model, shift=0.3), tolerance=0.5)):   # within a looser tolerance
        out = scoring.score(loaded, SENTENCES, cache=False, progress=False)
    assert len(out) == len(SENTENCES)


def test_the_gate_refuses_a_lost_bos(tiny_gpt2_bos):
    loaded = models.load(str(tiny_gpt2_bos))
    with engines.using(_engine(FakeLLM(loaded.model, drop_first=True))):
        with pytest.raises(HarmsError, match="prompt log-probabilities for"):
            scoring.score(loaded, SENTENCES, cache=False, progress=False)


def test_parity_gate_against_a_hand_made_table():
    import pandas as pd

    ref = pd.DataFrame({"n_tokens": [3, 4], "log_likelihood": [-10.0, -12.0]})
    same = engines.parity_gate(ref, ref.assign(log_likelihood=[-10.01, -11.98]), ["a", "b"], model="m")
    assert same.attrs["max_abs_difference"] == pytest.approx(0.02)
    with pytest.raises(HarmsError, match="scored 5 tokens of a sentence where transformers scores 4"):
        engines.parity_gate(ref, ref.assign(n_tokens=[3, 5]), ["a", "b"], model="m")


def test_vllm_scores_are_cached_apart_from_transformers(tiny_gpt2):
    loaded = models.load(str(tiny_gpt2))
    scoring.score(loaded, SENTENCES, progress=False)                       # transformers, cached
    fake = FakeLLM(loaded.model)
    with engines.using(_engine(fake, sample=2)):
        scoring.score(loaded, SENTENCES, progress=False)
    assert fake.calls >= 2                                                  # not served from transformers' rows
    again = FakeLLM(loaded.model)
    with engines.using(_engine(again, sample=2)) as engine:
        scoring.score(loaded, SENTENCES, progress=False)                    # now cached under vLLM's key
    assert again.calls == 0 and engine.parity == {}


def test_masked_models_stay_on_transformers_with_one_note(tiny_bert, capsys):
    loaded = models.load(str(tiny_bert))
    reference = scoring.score(loaded, SENTENCES, cache=False, progress=False)
    with engines.using(_engine(FakeLLM(None))):
        out = scoring.score(loaded, SENTENCES, cache=False, progress=False)
        scoring.score(loaded, SENTENCES[:2], cache=False, progress=False)
    np.testing.assert_allclose(out["log_likelihood"], reference["log_likelihood"], rtol=0, atol=1e-6)
    notes = [line for line in capsys.readouterr().err.splitlines() if "causal models only" in line]
    assert len(notes) == 1 and "(masked) is scored with transformers" in notes[0]


def test_a_sentence_longer_than_the_context_is_one_line(tiny_gpt2_ctx16):
    loaded = models.load(str(tiny_gpt2_ctx16))
    long = " ".join(["word"] * 40)
    with engines.using(_engine(FakeLLM(loaded.model), sample=1)):
        with pytest.raises(InputError, match="more than the model's 16; --engine vllm scores one window"):
            scoring.score(loaded, [long], cache=False, progress=False)


def test_engine_vllm_without_vllm_or_a_gpu_is_one_line(tiny_gpt2, tmp_path, capsys):
    import pandas as pd

    inp = tmp_path / "in.csv"
    pd.DataFrame({"text": SENTENCES[:3]}).to_csv(inp, index=False)
    code = main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(tmp_path / "o.csv"),
                 "--engine", "vllm"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--engine vllm needs vLLM" in err[0] or "--engine vllm runs on a CUDA GPU" in err[0]
    assert not (tmp_path / "o.csv").exists()


def test_engine_vllm_with_several_processes_is_one_line(tmp_path, capsys):
    import pandas as pd

    inp = tmp_path / "in.csv"
    pd.DataFrame({"text": SENTENCES[:3]}).to_csv(inp, index=False)
    code = main(["score", "--model", "m", "--input", str(inp), "--output", str(tmp_path / "o.csv"),
                 "--engine", "vllm", "--processes", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "use --processes 1" in err[0]
    assert not (tmp_path / "cache" / "parallel").exists()               # refused before any launch
