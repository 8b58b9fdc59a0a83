"""The zoo's default recipe (students pruned from a teacher and healed) on a tiny Llama teacher,
against independent recomputations; bad zoo configurations give one clear line."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from helpers import models, runner
from helpers.datasets.corpus import load_corpus
from helpers.lm.conventions import pack_blocks
from helpers.errors import HarmsError, InputError
from helpers.metrics import quality
from helpers.training import prune, students, zoo


@pytest.fixture(scope="module")
def tiny_llama(tiny_gpt2, tmp_path_factory):
    """LlamaForCausalLM (4 layers, 6 heads in 2 key-value groups, 32 MLP channels) with the tiny
    GPT-2 tokenizer: a teacher with the structure of SmolLM2, small enough to prune in seconds."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=24, num_hidden_layers=4, num_attention_heads=6,
                      num_key_value_heads=2, intermediate_size=32, max_position_embeddings=128,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    path = tmp_path_factory.mktemp("tiny_llama")
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _kw(teacher, **more):
    return dict(causal_teacher=str(teacher), families=("causal",), causal_students=("L3", "L2-I16"),
                causal_distilled=("L3",), heal_steps=2, heal_batch_size=2, calibration_blocks=2, eval_blocks=2,
                corpus="gensim-lee") | more


def test_pruned_zoo_against_independent_recomputation_and_reuse(tiny_llama, tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path))
    cache_dir = str(tmp_path / "cache")
    monkeypatch.setenv("HARMS_CACHE_DIR", cache_dir)
    names = zoo.ensure_default_zoo("ci", progress=False, **_kw(tiny_llama))
    prefix = tiny_llama.name.split("-")[0].lower()              # zoo-<teacher>-<shape>-<healing>
    assert names == [f"zoo-{prefix}-L3-lm", f"zoo-{prefix}-L2-I16-lm", f"zoo-{prefix}-L3-kd"]
    teacher = models.load(str(tiny_llama))
    train, held_lines = load_corpus("gensim-lee")
    blocks = pack_blocks(train, teacher.tokenizer, block_size=128, objective="causal")
    held = pack_blocks(held_lines, teacher.tokenizer, block_size=128, objective="causal")[:2]
    g = torch.Generator().manual_seed(0)
    calib = blocks[torch.randperm(blocks.shape[0], generator=g)[:2]]
    keep = prune.layers_to_keep(prune.block_importance(teacher.model, calib), 3)
    unigram = quality.unigram_perplexity(quality.unigram_log_probs(blocks.flatten(), len(teacher.tokenizer)),
                                         held[:, 1:].flatten())
    for name in names:
        m = zoo.manifest(name)
        student = models.load(name).model
        assert m["params"] == sum(p.numel() for p in student.parameters())
        assert (m["layers"], m["intermediate"]) == (student.config.num_hidden_layers, student.config.intermediate_size)
        assert m["heldout_perplexity"] == pytest.approx(quality.heldout_perplexity(student, held, objective="causal"),
                                                        rel=1e-5)
        assert m["unigram_perplexity"] == pytest.approx(unigram, rel=1e-9)
        assert m["perplexity_ratio"] == pytest.approx(unigram / m["heldout_perplexity"], rel=1e-9)
        assert m["usable"] is (m["perplexity_ratio"] >= 2) and m["recipe"] == "pruned"
    assert zoo.manifest(names[0])["kept_layers"] == keep
    # the zoo hands each gate measurement to the chapters' cache: reused without loading weights,
    # and equal to the chapters' own measurement in an empty cache
    for name in [names[0], str(tiny_llama)]:
        handle = models.lazy(name)
        reused = runner.language_model_quality(handle, corpus="gensim-lee", blocks=2)
        assert handle.loaded is None
        monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / f"empty-cache-{len(name)}"))
        fresh = runner.language_model_quality(models.lazy(name), corpus="gensim-lee", blocks=2)
        assert reused["heldout_perplexity"] == pytest.approx(fresh["heldout_perplexity"], rel=1e-5)
        for k in ("unigram_perplexity", "heldout_tokens", "train_tokens", "block_size", "objective"):
            assert reused[k] == pytest.approx(fresh[k], rel=1e-9) if isinstance(fresh[k], float) else reused[k] == fresh[k]
        monkeypatch.setenv("HARMS_CACHE_DIR", cache_dir)
    lm, kd = zoo.manifest(names[0]), zoo.manifest(names[2])
    assert lm["perplexity_pruned"] == kd["perplexity_pruned"]          # the same pruned network, healed two ways
    bi, act = prune.block_importance(teacher.model, calib), prune.activation_importance(teacher.model, calib)
    pruned = students.build(teacher.model, students.parse("L3"), block_importance=bi, activation_importance=act)
    assert lm["perplexity_pruned"] == pytest.approx(quality.heldout_perplexity(pruned, held, objective="causal"),
                                                    rel=1e-5)
    assert (lm["family"], kd["family"]) == ("zoo-pruned-lm", "zoo-pruned-kd")
    stamp = (tmp_path / names[0] / "model.safetensors").stat().st_mtime_ns
    assert zoo.ensure_default_zoo("ci", progress=False, **_kw(tiny_llama)) == names     # reused
    assert (tmp_path / names[0] / "model.safetensors").stat().st_mtime_ns == stamp
    assert set(zoo.manifests()["name"]) == set(names)
    assert not list((tmp_path / "_checkpoints").glob("zoo-*.pt"))       # healing checkpoints removed


@pytest.mark.parametrize("shape,message", [
    ("L9", "layers"), ("L3-A5", "heads 5"), ("L3-I999", "999"), ("L0", "layers"), ("24 layers", "expected L<layers>"),
])
def test_bad_student_shapes_are_one_line_before_any_training(tiny_llama, tmp_path, monkeypatch, shape, message):
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path))
    with pytest.raises(InputError, match=message) as e:
        zoo.ensure_default_zoo("ci", progress=False, **_kw(tiny_llama, causal_students=(shape,), causal_distilled=()))
    assert "\n" not in str(e.value)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("zoo-")]


def test_a_teacher_without_tokenizer_is_one_line(tiny_llama, tmp_path, monkeypatch):
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in ("config.json", "model.safetensors"):
        shutil.copy(tiny_llama / f, bare / f)
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    with pytest.raises(HarmsError) as e:
        zoo.ensure_default_zoo("ci", progress=False, **_kw(bare))
    assert "tokenizer" in str(e.value) and "\n" not in str(e.value)


def test_unknown_recipe_and_family_are_one_line():
    with pytest.raises(InputError, match="recipe 'distilled'"):
        zoo.zoo_config("ci", recipe="distilled")
    with pytest.raises(InputError, match="families"):
        zoo.zoo_config("ci", families=("causal", "seq2seq"))


def test_student_shape_labels_round_trip():
    for text in ("L24", "L24-I768", "L18-I1152-A6"):
        assert students.parse(text).label == text
    assert students.parse("L24-I768") == students.StudentSpec(24, 768, None)


def test_manifest_json_is_plain_json(tiny_llama, tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path))
    names = zoo.ensure_default_zoo("ci", progress=False, **_kw(tiny_llama, causal_students=("L2",),
                                                                 causal_distilled=()))
    m = json.loads((tmp_path / names[0] / "manifest.json").read_text())
    assert m["steps"] == {"heal": 2} and m["healing"] == "lm" and m["teacher"] == str(tiny_llama)


def test_a_teacher_loaded_from_gguf_gives_students_that_can_be_saved(tiny_llama, tmp_path, monkeypatch):
    """A GGUF-loaded teacher (SmolLM2 on a cold cache) carries transformers' GGUF quantizer
    state; the first zoo build on a fresh machine failed in save_pretrained ("quantized with
    gguf and is not serializable") because every student copied it."""
    from transformers.quantizers.quantizer_gguf import GgufHfQuantizer
    from transformers.utils.quantization_config import GgufConfig

    real_load = models.load

    def gguf_like(name, **kw):
        handle = real_load(name, **kw)
        handle.model.hf_quantizer = GgufHfQuantizer(GgufConfig(compute_dtype=torch.float32))
        handle.model.is_quantized = True
        return handle

    monkeypatch.setattr(models, "load", gguf_like)
    with pytest.raises(ValueError, match="not serializable"):       # what the old code ran into
        gguf_like(str(tiny_llama)).model.save_pretrained(tmp_path / "plain")
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    names = zoo.ensure_default_zoo("ci", progress=False, **_kw(tiny_llama, causal_students=("L2",),
                                                                 causal_distilled=()))
    assert (tmp_path / "zoo" / names[0] / "model.safetensors").is_file()
