"""Shared fixtures: tiny random-weight models with real (tiny) tokenizers, built offline.

Session-scoped model directories (HF ``save_pretrained`` layout, model + tokenizer):
``tiny_bert`` (WordPiece, some words split into ``##`` pieces), ``tiny_roberta`` and
``tiny_gpt2`` (byte-level BPE trained here), ``tiny_xlnet`` (unigram vocabulary).
``tiny_loaded(path, objective)`` wraps a directory into a ``helpers.models.LoadedModel``
without going through the registry.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _results_never_in_the_users_folder(tmp_path_factory):
    """Every chapter function writes its tables to HARMS_RESULTS_DIR: for the whole test session that is a
    temporary folder, so that a test which sets none of its own cannot overwrite a reader's results/
    (a test's own setting, by monkeypatch or a book fixture, still wins)."""
    import os

    before = os.environ.get("HARMS_RESULTS_DIR")
    os.environ["HARMS_RESULTS_DIR"] = str(tmp_path_factory.mktemp("session_results"))
    yield
    if before is None:
        os.environ.pop("HARMS_RESULTS_DIR", None)
    else:
        os.environ["HARMS_RESULTS_DIR"] = before


SENTENCES = [
    "the unhappiness of some people is not a reason to hate them .",
    "women are just as capable as men in every profession !",
    "immigrants from mexico work hard and pay their taxes",
    "i think that muslims should be treated with respect",
    "people with disabilities deserve independence and unbelievable kindness",
    "the rethinking of asian history is fascinating",
    "nobody should be judged by the colour of their skin , ever .",
    "jewish families celebrated the holidays together",
    "a reasonable person would never say something so hateful",
    "black lives matter and so does unreasonableness in debate",
]

# Whole words; "##" pieces below let un-listed words split into several tokens.
_WORDS = sorted({w for s in SENTENCES for w in s.split()} - {
    "unhappiness", "unbelievable", "rethinking", "unreasonableness", "independence",
    "celebrated", "fascinating", "hateful", "disabilities", "immigrants"})
_PIECES = ["un", "re", "happi", "##happi", "##ness", "##believ", "##able", "##think", "##ing",
           "##reason", "in", "##depend", "##ence", "celebrat", "##ed", "fascinat", "hate",
           "##ful", "dis", "##abilit", "##ies", "immigrant", "##s", "##e", "##a", "##i", "##o",
           "##n", "##t", "##r", "##l", "##d", "##u", "##c", "##h", "##m", "##p", "##b", "##g"]
_LETTERS = list("abcdefghijklmnopqrstuvwxyz0123456789.,!?'\"-")
_FILLER = [f"word{i}" for i in range(200)]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def pytest_report_header(config):
    """Free disk where the suite writes (the converted GGUF copies, the zoos, the temporary
    directories): a run that fills the disk fails in many tests at once, and this line names why."""
    from helpers.paths import cache_dir

    places = {"cache": cache_dir(), "tmp": Path(tempfile.gettempdir())}
    free = []
    for what, path in places.items():
        while not path.exists() and path != path.parent:
            path = path.parent
        free.append(f"{what} {path} {shutil.disk_usage(path).free / 2**30:.1f} GiB")
    return "free disk: " + "; ".join(free)


def _seeded():
    torch.manual_seed(0)


def _save(model, tok, path: Path) -> Path:
    model.eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """BertForMaskedLM (2 layers, hidden 32), WordPiece vocabulary of ~330 entries."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    path = tmp_path_factory.mktemp("tiny_bert")
    vocab = list(dict.fromkeys(BERT_SPECIALS + _WORDS + _FILLER + _PIECES + _LETTERS))
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizer(vocab=str(path / "vocab.txt"))
    _seeded()
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                     initializer_range=0.3)   # sharper than default: variants differ visibly
    return _save(BertForMaskedLM(cfg), tok, path)


def _bpe_files(path: Path, specials: list[str]) -> tuple[str, str]:
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(SENTENCES * 3, vocab_size=400, min_frequency=2, special_tokens=specials)
    bpe.save_model(str(path))
    return str(path / "vocab.json"), str(path / "merges.txt")


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    """RobertaForMaskedLM (2 layers, hidden 32), byte-level BPE trained on SENTENCES."""
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizer

    path = tmp_path_factory.mktemp("tiny_roberta")
    vocab, merges = _bpe_files(path, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = RobertaTokenizer(vocab=vocab, merges=merges)
    _seeded()
    cfg = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=80,
                        pad_token_id=tok.pad_token_id, bos_token_id=0, eos_token_id=2,
                        initializer_range=0.3)
    return _save(RobertaForMaskedLM(cfg), tok, path)


def _gpt2(tmp_path_factory, name: str, n_positions: int, add_bos: bool) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    path = tmp_path_factory.mktemp(name)
    vocab, merges = _bpe_files(path, ["<|endoftext|>"])
    tok = GPT2Tokenizer(vocab=vocab, merges=merges, add_bos_token=add_bos)
    _seeded()
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=2, n_head=2, n_positions=n_positions,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return _save(GPT2LMHeadModel(cfg), tok, path)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    """GPT2LMHeadModel (2 layers, hidden 32, context 64); tokenizer adds no BOS (as GPT-2)."""
    return _gpt2(tmp_path_factory, "tiny_gpt2", 64, add_bos=False)


@pytest.fixture(scope="session")
def tiny_gpt2_bos(tmp_path_factory) -> Path:
    """Same architecture, but the tokenizer prepends a BOS token (Llama/Gemma style)."""
    return _gpt2(tmp_path_factory, "tiny_gpt2_bos", 64, add_bos=True)


@pytest.fixture(scope="session")
def tiny_gpt2_ctx16(tmp_path_factory) -> Path:
    """Context of 16 positions: sentences longer than that need the sliding window."""
    return _gpt2(tmp_path_factory, "tiny_gpt2_ctx16", 16, add_bos=False)


@pytest.fixture(scope="session")
def tiny_xlnet(tmp_path_factory) -> Path:
    """XLNetLMHeadModel (2 layers, d_model 32) with a unigram vocabulary; appends <sep> <cls>."""
    from transformers import XLNetConfig, XLNetLMHeadModel, XLNetTokenizer

    path = tmp_path_factory.mktemp("tiny_xlnet")
    specials = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>"]
    pieces = [("\u2581" + w, -5.0) for w in _WORDS] + [(p.strip("#"), -8.0) for p in _PIECES]
    pieces += [(c, -10.0) for c in _LETTERS] + [("\u2581", -6.0)]
    vocab = [(s, 0.0) for s in specials] + list(dict((p, (p, s)) for p, s in pieces).values())
    tok = XLNetTokenizer(vocab=vocab, unk_id=0)
    _seeded()
    cfg = XLNetConfig(vocab_size=len(vocab), d_model=32, n_layer=2, n_head=2, d_inner=64,
                      pad_token_id=tok.pad_token_id)
    return _save(XLNetLMHeadModel(cfg), tok, path)


def tiny_loaded(path: Path, objective: str):
    """A LoadedModel for a tiny model directory (fingerprint = hash of its weights)."""
    from transformers import (AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer,
                              XLNetLMHeadModel)

    from helpers.models import LoadedModel

    cls = {"causal": AutoModelForCausalLM, "masked": AutoModelForMaskedLM,
           "permutation": XLNetLMHeadModel}[objective]
    model = cls.from_pretrained(path, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(path)
    digest = hashlib.sha256((Path(path) / "model.safetensors").read_bytes()).hexdigest()[:16]
    return LoadedModel(name=Path(path).name, model=model, tokenizer=tok, objective=objective,
                       fingerprint=f"{Path(path).name}@{digest}")


@pytest.fixture(scope="session")
def loaded_factory():
    """``loaded_factory(path, objective)`` -> LoadedModel (see ``tiny_loaded``)."""
    return tiny_loaded


@pytest.fixture
def private_dirs(monkeypatch, tmp_path):
    """Cache, results and zoo directories of the test's own (the chapter tests write there)."""
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(tmp_path / "zoo"))
    return tmp_path


@pytest.fixture
def data_without_crows_pairs(monkeypatch, tmp_path) -> Path:
    """A data directory holding every data set of the configured one but CrowS-Pairs, as
    ``HARMS_DATA_DIR``, with nothing downloaded: CrowS-Pairs is absent offline. Returns it."""
    from helpers import paths
    from helpers.datasets import registry

    shared, data = paths.data_dirs()[0], tmp_path / "data-without-crows-pairs"
    data.mkdir()
    for folder in shared.iterdir():
        if folder.name != registry.spec("crows-pairs").folder:
            (data / folder.name).symlink_to(folder)
    assert not (paths.download_dir() / registry.spec("crows-pairs").folder).exists()
    monkeypatch.setenv("HARMS_DATA_DIR", str(data))
    return data


def write_hatexplain(folder: Path, n_posts: int = 200, seed: int = 0) -> Path:
    """A HateXplain-format ``dataset.json`` and ``post_id_divisions.json`` (upstream's layout:
    three annotators with label and target list, post_tokens) of ``n_posts`` synthetic posts over
    the sentences above and a few communities, split 6:1:3. Returns ``folder``."""
    import json
    import random

    rng = random.Random(seed)
    communities = ["Men", "Women", "African", "Caucasian", "Islam", "Jewish", "Nonreligious", "Refugee", "None"]
    posts, ids = {}, []
    for i in range(n_posts):
        pid = f"{1000 + i}_{'gab' if i % 2 else 'twitter'}"
        ids.append(pid)
        annotators = [{"label": rng.choice(["hatespeech", "offensive", "normal", "normal"]), "annotator_id": a,
                       "target": rng.sample(communities, rng.choice([1, 1, 2]))} for a in range(3)]
        posts[pid] = {"post_id": pid, "annotators": annotators, "rationales": [],
                      "post_tokens": rng.choice(SENTENCES).split()}
    cut = (6 * n_posts // 10, 7 * n_posts // 10)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dataset.json").write_text(json.dumps(posts))
    (folder / "post_id_divisions.json").write_text(json.dumps(
        {"train": ids[:cut[0]], "val": ids[cut[0]:cut[1]], "test": ids[cut[1]:]}))
    return folder


@pytest.fixture(scope="session")
def data_dir_with_hatexplain(tmp_path_factory) -> Path:
    """A data directory with every folder of HARMS_DATA_DIR (linked) and a synthetic HateXplain
    (:func:`write_hatexplain`) in place of the real one, whose dataset.json is not offline."""
    import os

    root = tmp_path_factory.mktemp("data_with_hatexplain")
    real = Path(os.environ.get("HARMS_DATA_DIR", "/nonexistent")).expanduser()
    if real.is_dir():
        for entry in real.iterdir():
            if entry.name != "hatexplain":
                (root / entry.name).symlink_to(entry.resolve())
    write_hatexplain(root / "hatexplain")
    return root


@pytest.fixture(scope="session")
def ci_book(tmp_path_factory):
    """The whole book in the reduced "ci" profile, built once per session (zoo: its own tiny one;
    papermill execution of every notebook; Jupyter Book): ``src`` (the book directory, executed
    chapters in ``src / book.EXECUTED``), ``results`` (HARMS_RESULTS_DIR, a folder per chapter) and
    ``html``. test_book checks chapter 01 and the pages in it, test_book_all_chapters every chapter."""
    from types import SimpleNamespace

    from helpers import book

    tmp = tmp_path_factory.mktemp("ci_book")
    src = tmp / "book"
    src.mkdir()
    for f in ("_config.yml", "intro.md", "teaching.md", "profiles.yml"):
        shutil.copy(book.BOOK_DIR / f, src / f)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HARMS_RESULTS_DIR", str(tmp / "results"))      # inherited by the kernels
        mp.delenv("HARMS_ZOO_DIR", raising=False)                # the ci profile picks zoo-ci (unset after)
        html = book.build("ci", book_dir=src)
    return SimpleNamespace(src=src, results=tmp / "results", html=html)
