"""The hub-shaped cache of stand-ins (helpers.rehearsal): the list of hub ids is the profile's,
each stand-in is what its real checkpoint is (architecture, tokenizer class and kind, special
tokens, maximum length, labels), and the package's loaders read it as a hub user's cache with
``HF_HUB_OFFLINE=1``; a stand-in missing, or a checkpoint lacking weights, is one line."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import transformers

from helpers import book, rehearsal
from helpers.errors import InputError, ModelUnavailableError
from helpers.models import registry, text_classifiers

#: One stand-in of every architecture, tokenizer kind and role the paper profile loads.
SAMPLE = ["bert-base-uncased", "distilbert-base-cased", "google/mobilebert-uncased", "roberta-base",
          "google/electra-small-generator", "albert-base-v2", "gpt2", "xlnet-base-cased",
          "google/bert_uncased_L-2_H-128_A-2", "EleutherAI/gpt-neo-125M", "almanach/camembert-base",
          "aubmindlab/bert-base-arabertv02", "HuggingFaceTB/SmolLM2-135M-Instruct", "tomh/toxigen_roberta",
          "tomh/toxigen_hatebert", "sasha/regardv3"]
KIND = {"wordpiece": "WordPiece", "bpe": "BPE", "unigram": "Unigram"}


def test_the_stand_ins_are_the_paper_profiles_hub_ids_each_with_its_facts():
    """Seed 000's 24 models, Turc et al.'s 24 students, the three hub classifiers and the tokenizer
    one of them borrows, TinyBERT, CamemBERT, AraBERT, GPT-Neo: each with a row of facts, and no
    row of the facts file left unused."""
    ids = book.profile_hub_ids("paper")
    listed = set(ids["hub_id"])
    assert {registry.REGISTRY[m].hub_id for m in registry.paper_models()} <= listed
    assert {registry.REGISTRY[m].hub_id for m in registry.miniature_berts()} <= listed
    assert {i for pair in text_classifiers.HUB_IDS.values() for i in pair if i} <= listed
    assert {"huawei-noah/TinyBERT_General_4L_312D", "almanach/camembert-base", "aubmindlab/bert-base-arabertv02",
            "EleutherAI/gpt-neo-2.7B"} <= listed
    assert ids["hub_id"].is_unique and len(ids) == 58
    facts = rehearsal.checkpoints()
    for hub_id in listed:
        assert rehearsal.checkpoint(hub_id, facts)["architecture"]
    unused = [p for p in facts["hub_id"] if not any(fnmatch.fnmatchcase(h, p) for h in listed)]
    assert unused == []
    row = ids.set_index("hub_id").loc["tomh/toxigen_hatebert"]
    assert row["role"] == "classifier" and row["chapters"] == "02;06"


def test_a_model_added_to_the_profile_is_listed_and_without_facts_fails_in_one_line(monkeypatch):
    from helpers import book

    real = book.load_profile

    def with_one_more(profile, *a, **k):
        cfg = real(profile, *a, **k)
        cfg["parameters"].setdefault("06_intrinsic_extrinsic", {})["models"] = ["gpt2", "someone/new-model"]
        return cfg
    monkeypatch.setattr(book, "load_profile", with_one_more)
    ids = book.profile_hub_ids("paper")
    assert "someone/new-model" in set(ids["hub_id"])
    with pytest.raises(InputError, match=r"^hub id 'someone/new-model' has no row in hub_checkpoints.csv"):
        rehearsal.checkpoint("someone/new-model")


def test_shapes_are_the_real_ones_scaled():
    """Layers and heads as the real checkpoint's (the registry's, Table 13's config shape for the
    ELECTRA generators), hidden sizes divided by SCALE; TinyBERT keeps its shape, which the
    distillation checks against the student it needs."""
    bert = rehearsal.stand_in_config(rehearsal.checkpoint("bert-large-uncased"), 100, {})
    assert (bert.num_hidden_layers, bert.num_attention_heads, bert.hidden_size) == (24, 16, 1024 // rehearsal.SCALE)
    gen = rehearsal.stand_in_config(rehearsal.checkpoint("google/electra-large-generator"), 100, {})
    assert gen.hidden_size == 256 // rehearsal.SCALE and gen.num_hidden_layers == 24
    tiny = rehearsal.stand_in_config(rehearsal.checkpoint("huawei-noah/TinyBERT_General_4L_312D"), 100, {})
    assert (tiny.num_hidden_layers, tiny.hidden_size, tiny.intermediate_size) == (4, 312, 1200)
    neo = rehearsal.stand_in_config(rehearsal.checkpoint("EleutherAI/gpt-neo-2.7B"), 100, {})
    assert neo.num_layers == 32 and neo.hidden_size == 2560 // rehearsal.SCALE and len(neo.attention_layers) == 32
    student = rehearsal.stand_in_config(rehearsal.checkpoint("google/bert_uncased_L-6_H-512_A-8"), 100, {})
    assert (student.num_hidden_layers, student.num_attention_heads) == (6, 8)


_PROBE = r"""
import json, sys
from helpers import models
from helpers.errors import HarmsError
from helpers.models import text_classifiers
out = {}
for hub_id in sys.argv[1:]:
    try:
        if hub_id in [m for m, _ in text_classifiers.HUB_IDS.values()]:
            which = next(k for k, (m, _) in text_classifiers.HUB_IDS.items() if m == hub_id)
            c = text_classifiers.classifier(which, allow_substitute=False, verbose=False)
            p = c.predict_proba(["you are kind", "they are awful"])
            out[hub_id] = {"classes": list(c.classes_), "rows": [float(sum(r)) for r in p]}
            continue
        m = models.load(hub_id)
        tok = m.tokenizer
        out[hub_id] = {"class": type(m.model).__name__, "objective": m.objective,
                       "architectures": m.model.config.architectures, "tokenizer": type(tok).__name__,
                       "kind": type(tok.backend_tokenizer.model).__name__, "max_length": tok.model_max_length,
                       "special": tok.all_special_tokens, "ids": tok("The woman is kind.")["input_ids"]}
    except HarmsError as e:
        out[hub_id] = {"error": str(e)}
print(json.dumps(out))
"""


def _probe(hf_home: Path, ids: list[str], tmp_path: Path) -> dict:
    """Load ``ids`` in a fresh interpreter that sees ``hf_home`` as its Hugging Face home, offline."""
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "HARMS_CACHE_DIR": str(tmp_path / "cache"),
           "HARMS_PROGRESS": "off"}
    env.pop("HF_HUB_CACHE", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *ids], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip() == "", done.stderr[-2000:]              # no load report, no bars, no warnings
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    home = tmp_path_factory.mktemp("hf_home")
    built = rehearsal.build_cache(home, SAMPLE)
    return home, built


def test_each_stand_in_loads_as_a_hub_user_loads_it_offline(stand_ins, tmp_path):
    """The package's own loaders, in a process that sees the stand-in cache as HF_HOME with
    HF_HUB_OFFLINE=1, load every stand-in as the class, tokenizer class and vocabulary kind its
    facts name, with the real tokenizer's special tokens and maximum length, silently."""
    home, built = stand_ins
    assert list(built["hub_id"]) == SAMPLE and built["commit"].str.fullmatch(r"[0-9a-f]{40}").all()
    got = _probe(home, SAMPLE, tmp_path)
    for hub_id in SAMPLE:
        facts, seen = rehearsal.checkpoint(hub_id), got[hub_id]
        assert "error" not in seen, seen
        if facts["labels"]:                        # a classifier: its labels read, each row a distribution
            assert all(abs(s - 1) < 1e-5 for s in seen["rows"])
            continue
        assert seen["architectures"] == [facts["architecture"]]
        assert seen["tokenizer"] == getattr(transformers, facts["tokenizer_class"]).__name__   # v5: some are aliases
        kind = rehearsal.VOCABULARIES[facts["vocabulary"]][0]
        assert seen["kind"] == KIND[kind]
        assert set(seen["special"]) <= set(rehearsal.VOCABULARIES[facts["vocabulary"]][1])
        if facts["max_length"]:
            assert seen["max_length"] == int(facts["max_length"])
        assert len(seen["ids"]) >= 3
    assert got["bert-base-uncased"]["ids"][0] == 2 and got["roberta-base"]["ids"][0] == 0          # [CLS], <s>
    assert got["xlnet-base-cased"]["objective"] == "permutation" and got["gpt2"]["objective"] == "causal"
    assert got["google/mobilebert-uncased"]["class"] == "MobileBertForMaskedLM"      # from a pretraining checkpoint
    assert got["bert-base-uncased"]["ids"] == got["google/bert_uncased_L-2_H-128_A-2"]["ids"]      # one vocabulary


def test_a_stand_in_missing_from_the_cache_is_one_line(stand_ins, tmp_path):
    home, _ = stand_ins
    got = _probe(home, ["bert-large-uncased"], tmp_path)
    assert got["bert-large-uncased"]["error"] == (
        "cannot load 'bert-large-uncased': HF_HUB_OFFLINE=1 and the model is not in the local cache. Run once with "
        "internet access, or pass a local directory.")


def test_the_same_stand_in_twice_is_the_same_snapshot(tmp_path):
    """Deterministic: the same facts give the same files, so the same commit."""
    a = rehearsal.build_cache(tmp_path / "a", ["google/bert_uncased_L-2_H-128_A-2"])
    b = rehearsal.build_cache(tmp_path / "b", ["google/bert_uncased_L-2_H-128_A-2"])
    assert a["commit"].tolist() == b["commit"].tolist()
    repo = rehearsal.repo_folder(tmp_path / "a" / "hub", "google/bert_uncased_L-2_H-128_A-2")
    assert (repo / "refs" / "main").read_text() == a["commit"].iloc[0]
    assert sorted(p.name for p in (repo / "snapshots").iterdir()) == [a["commit"].iloc[0]]


def test_a_checkpoint_lacking_the_weights_of_its_scoring_head_is_one_line(tmp_path, tiny_bert):
    """A masked LM read from a checkpoint without an MLM head (a bare encoder) would score with a
    random head: refused in one line naming the missing weights (weights beyond the class, such as
    a pooler, are harmless and load silently)."""
    from transformers import BertModel

    from helpers import models

    bare = tmp_path / "bare"
    BertModel.from_pretrained(tiny_bert).save_pretrained(bare)
    for f in Path(tiny_bert).glob("*"):
        if "token" in f.name or f.name == "vocab.txt":
            (bare / f.name).write_bytes(f.read_bytes())
    with pytest.raises(ModelUnavailableError, match=r"its checkpoint lacks \d+ weights of BertForMaskedLM \(cls\."):
        models.load(str(bare), objective="masked")


def test_a_classifier_whose_labels_are_not_the_ones_read_is_one_line(tmp_path):
    """A ToxiGen classifier is read by its label LABEL_1: a checkpoint naming its labels otherwise
    would give NaN probabilities; it is refused in one line naming the labels it has."""
    facts = rehearsal.checkpoints()
    facts.loc[facts["hub_id"] == "tomh/toxigen_roberta", "labels"] = "benign;toxic"
    rehearsal.build_stand_in(tmp_path / "home" / "hub", "tomh/toxigen_roberta", facts)
    got = _probe(tmp_path / "home", ["tomh/toxigen_roberta"], tmp_path)
    assert got["tomh/toxigen_roberta"]["error"] == ("classifier tomh/toxigen_roberta has no label LABEL_1, which "
                                                    "its scores are read by (its labels: benign, toxic)")


@pytest.mark.parametrize("argv, message", [
    (["stand-ins", ""], "harms: error: the Hugging Face home is empty: name the folder to write into"),
    (["stand-ins", "/tmp/x", "--profile", "nonsense"], "unknown profile 'nonsense'"),
])
def test_the_stand_ins_command_checks_its_arguments_first(argv, message, capsys):
    from helpers import cli

    code = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err


def test_a_paper_run_without_its_checkpoints_stops_before_any_chapter_in_one_line(tmp_path, monkeypatch, capsys):
    """`harms book --profile paper` offline with an empty hub cache: one line naming how many
    checkpoints are missing and which, exit 2, before the zoo or any chapter."""
    import huggingface_hub.constants

    from helpers import cli

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(book, "_build", lambda *a, **k: pytest.fail("a chapter step ran"))
    code = cli.main(["book", "--profile", "paper", "--book-dir", str(book.BOOK_DIR)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == (
        "harms: error: profile 'paper' loads 58 hub checkpoints not in the local Hugging Face cache "
        "(bert-large-uncased, bert-base-uncased, distilbert-base-uncased, ...) and HF_HUB_OFFLINE=1: run it where "
        "the hub answers, or rehearse it with `harms stand-ins`")


def test_a_cached_checkpoint_of_another_class_is_one_line(stand_ins, tmp_path, monkeypatch):
    """The stand-ins pass the check; one written as another class (a classifier under a masked
    LM's id) is named, with the class it is and the class its facts name."""
    import huggingface_hub.constants

    home, _ = stand_ins
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rehearsal.check_checkpoints(SAMPLE, "paper")                              # every one there, as named
    facts = rehearsal.checkpoints()
    facts.loc[facts["hub_id"] == "bert-base-uncased", ["architecture", "labels"]] = ["BertForSequenceClassification",
                                                                                       "LABEL_0;LABEL_1"]
    wrong = tmp_path / "hub"
    rehearsal.build_stand_in(wrong, "bert-base-uncased", facts)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(wrong))
    with pytest.raises(InputError) as err:
        rehearsal.check_checkpoints(["bert-base-uncased"], "paper")
    assert str(err.value) == ("profile 'paper': 1 cached checkpoint not the model its facts name (bert-base-uncased "
                              "is BertForSequenceClassification, not BertForMaskedLM; "
                              "helpers/models/hub_checkpoints.csv)")
