"""A Hugging Face hub cache of random-weight stand-ins, to rehearse a profile offline.

The ``paper`` profile loads about 60 hub checkpoints (seed 000's 24 models, Turc et al.'s 24
miniature BERTs, GPT-Neo, CamemBERT, AraBERT, TinyBERT, the ToxiGen and regard classifiers).
:func:`build_cache` writes, under every hub id the profile names (:func:`helpers.book.profile_hub_ids`), a
stand-in of the real checkpoint's architecture class, tokenizer class and vocabulary kind
(WordPiece, byte-level BPE or a SentencePiece-style unigram, trained here), special tokens,
maximum length and, for a classifier, label names, in the cache layout ``hf_hub_download``
writes (``HF_HOME/hub/models--<org>--<name>/snapshots/<commit>/``, ``refs/main``). Read with
``HF_HUB_OFFLINE=1``, every loader takes the path a hub user takes. The weights are random and
the shapes scaled down (hidden sizes divided by :data:`SCALE`, layers and heads as the real
model's), so no number computed from a stand-in is a result.

The facts of each real checkpoint are data: ``helpers/models/hub_checkpoints.csv`` (one row per
hub id or ``fnmatch`` pattern; shapes of registry models come from the registry). The way
transformers tests its code against tiny random checkpoints (``hf-internal-testing``) is the
model; this builds them offline.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
from functools import cache
from pathlib import Path

import pandas as pd

from helpers import tables
from helpers.errors import InputError
from helpers.models import registry
from helpers.progress import plural

CHECKPOINTS_CSV = Path(__file__).parent / "models" / "hub_checkpoints.csv"
#: Hidden sizes of a stand-in are the real checkpoint's divided by this (layers and heads kept).
SCALE = 16
#: Subword pieces each trained vocabulary holds (besides its special tokens and alphabet).
VOCABULARY_SIZE = 600
#: Each vocabulary's kind, special tokens (in id order) and case folding, as the real tokenizer's.
VOCABULARIES = {
    "bert-uncased": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], True),
    "bert-cased": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], False),
    "arabert": ("wordpiece", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], False),
    "roberta": ("bpe", ["<s>", "<pad>", "</s>", "<unk>", "<mask>"], False),
    "gpt2": ("bpe", ["<|endoftext|>"], False),
    "smollm2": ("bpe", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], False),
    "albert": ("unigram", ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"], True),
    "xlnet": ("unigram", ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"], False),
    "camembert": ("unigram", ["<s>NOTUSED", "<pad>", "</s>NOTUSED", "<unk>", "<unk>NOTUSED", "<s>", "</s>", "<mask>"],
                  False),
}
#: Special tokens each tokenizer class is given (the rest are its class defaults).
_TOKENS = {"GPT2Tokenizer": {"smollm2": dict(bos_token="<|im_start|>", eos_token="<|im_end|>",
                                               unk_token="<|endoftext|>", pad_token="<|im_end|>")}}
_ALPHABET = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()-/&%$#@*+=<>[]_ "
             "àâäçéèêëîïôöùûüÿœæÀÂÇÉÈÊÎÔÙÛŒ"
             "ءآأؤإئابةتثجحخدذرزسشصضطظعغفقكلمنهوىي")
_WORDS = ("the a an and or but of to in on at for with from by is are was were be been being have has had do "
          "does did not no yes he she they we you it his her their our your man woman men women people person "
          "group black white asian jewish muslim christian gay lesbian trans disabled mexican chinese latino "
          "native american immigrant refugee old young rich poor good bad kind smart lazy violent dangerous "
          "criminal nurse doctor engineer teacher worker mother father girl boy is was should can will would "
          "le la les un une des et est sont il elle ils pas homme femme gens "
          "هو هي هم رجل امرأة الناس في من على").split()


def checkpoints(path: Path = CHECKPOINTS_CSV) -> pd.DataFrame:
    """The hub checkpoints' facts (one row per hub id or ``fnmatch`` pattern), checked."""
    df = tables.read_csv_checked(path, ["hub_id", "architecture", "tokenizer_class", "vocabulary", "max_length",
                                        "labels", "tokenizer_from", "layers", "hidden", "heads", "keep_shape"],
                                 "hub checkpoints")
    unknown = sorted(set(df["vocabulary"]) - set(VOCABULARIES))
    if unknown:
        raise InputError(f"hub checkpoints file {path}: unknown vocabulary {', '.join(unknown)}; known: "
                         f"{', '.join(VOCABULARIES)}")
    return df


def checkpoint(hub_id: str, table: pd.DataFrame | None = None) -> dict:
    """The facts of ``hub_id``: its own row, else the first pattern row it matches; one
    :class:`InputError` line when none does."""
    table = checkpoints() if table is None else table
    exact = table[table["hub_id"] == hub_id]
    rows = exact if len(exact) else table[[fnmatch.fnmatchcase(hub_id, p) for p in table["hub_id"]]]
    if rows.empty:
        raise InputError(f"hub id {hub_id!r} has no row in {CHECKPOINTS_CSV.name} (its architecture, tokenizer "
                         "and vocabulary are needed to build its stand-in)")
    return {**rows.iloc[0].to_dict(), "hub_id": hub_id}


# --------------------------------------------------------------------------- tokenizers

def _corpus() -> list[str]:
    """A small deterministic training text: every alphabet character, and the words in sentences."""
    lines = [" ".join(_WORDS[i:i + 9]) for i in range(0, len(_WORDS), 3)]
    return lines * 3 + [" ".join(_ALPHABET)]


@cache
def _trained(vocabulary: str) -> str:
    """The trained ``tokenizers`` model of one vocabulary, as JSON (deterministic)."""
    from tokenizers import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer
    from tokenizers.implementations import BertWordPieceTokenizer

    kind, special, lower = VOCABULARIES[vocabulary]
    alphabet = sorted(set(_ALPHABET.lower() if lower else _ALPHABET) - {" "})
    size = VOCABULARY_SIZE + len(special) + 2 * len(alphabet)
    if kind == "wordpiece":
        tok = BertWordPieceTokenizer(lowercase=lower, strip_accents=False if not lower else None)
        tok.train_from_iterator(_corpus(), vocab_size=size, special_tokens=special, initial_alphabet=alphabet,
                                limit_alphabet=len(alphabet), min_frequency=1, show_progress=False)
    elif kind == "bpe":
        tok = ByteLevelBPETokenizer(add_prefix_space=vocabulary == "roberta")
        tok.train_from_iterator(_corpus(), vocab_size=size + 256, special_tokens=special, min_frequency=1,
                                show_progress=False)
    else:
        tok = SentencePieceUnigramTokenizer()
        tok.train_from_iterator([t.lower() for t in _corpus()] if lower else _corpus(), vocab_size=size,
                                special_tokens=special, unk_token="<unk>", show_progress=False)
    return tok.to_str()


def build_tokenizer(vocabulary: str, tokenizer_class: str, max_length: int | None, folder: Path):
    """A ``tokenizer_class`` (transformers) over the trained ``vocabulary``, saved in ``folder``."""
    import tempfile

    import transformers

    kind, special, lower = VOCABULARIES[vocabulary]
    model = json.loads(_trained(vocabulary))["model"]
    cls = getattr(transformers, tokenizer_class)
    kw = {"model_max_length": max_length} if max_length else {}
    kw.update(_TOKENS.get(tokenizer_class, {}).get(vocabulary, {}))
    if kind == "wordpiece":
        with tempfile.TemporaryDirectory() as tmp:
            vocab = Path(tmp) / "vocab.txt"
            vocab.write_text("\n".join(sorted(model["vocab"], key=model["vocab"].get)) + "\n", encoding="utf-8")
            tok = cls(vocab=str(vocab), do_lower_case=lower, **kw)
    elif kind == "bpe":
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        tok = cls(vocab=model["vocab"], merges=merges, **kw)
    else:
        pieces = [(p, float(s)) for p, s in model["vocab"]]
        if tokenizer_class == "XLNetTokenizer":
            kw["unk_id"] = [p for p, _ in pieces].index("<unk>")
        if tokenizer_class == "AlbertTokenizer":
            kw["do_lower_case"] = lower
        tok = cls(vocab=pieces, **kw)
    tok.save_pretrained(folder)
    return tok


# --------------------------------------------------------------------------- models

def _shape(row: dict) -> tuple[int, int, int]:
    """(layers, hidden, heads) of the real checkpoint: the CSV's, else the registry's (a model's
    config shape where the registry keeps Table 13's)."""
    if row["layers"]:
        return int(row["layers"]), int(row["hidden"]), int(row["heads"])
    spec = registry.BY_HUB_ID.get(row["hub_id"])
    if spec is None:
        raise InputError(f"hub id {row['hub_id']!r}: no shape in {CHECKPOINTS_CSV.name} and not in the registry")
    shape = spec.extra.get("config_shape") or {"layers": spec.layers, "heads": spec.heads, "hidden": spec.hidden}
    return int(shape["layers"]), int(shape["hidden"]), int(shape["heads"])


def stand_in_config(row: dict, vocab_size: int, special_ids: dict):
    """The config of ``row``'s stand-in: its architecture's model type, the real layers and heads,
    hidden sizes divided by :data:`SCALE` (unless ``keep_shape``), the stand-in vocabulary."""
    import transformers

    layers, hidden, heads = _shape(row)
    if str(row["keep_shape"]).lower() != "true":
        hidden //= SCALE
    if hidden % heads:
        raise InputError(f"hub id {row['hub_id']!r}: scaled hidden size {hidden} is not a multiple of {heads} heads")
    arch = getattr(transformers, row["architecture"])
    model_type = arch.config_class.model_type
    positions = int(row["max_length"]) if row["max_length"] else 512
    ff = 4 * hidden if str(row["keep_shape"]).lower() != "true" else {312: 1200}.get(hidden, 4 * hidden)
    common = dict(vocab_size=vocab_size, **special_ids)
    per_type = {
        "bert": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ff,
                     max_position_embeddings=positions),
        "distilbert": dict(dim=hidden, n_layers=layers, n_heads=heads, hidden_dim=ff, max_position_embeddings=positions),
        "mobilebert": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                           intermediate_size=hidden, embedding_size=hidden // 4, intra_bottleneck_size=hidden // 4,
                           true_hidden_size=hidden // 4, max_position_embeddings=positions),
        "roberta": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ff,
                        max_position_embeddings=positions + 2, type_vocab_size=1),
        "camembert": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                          intermediate_size=ff, max_position_embeddings=positions + 2, type_vocab_size=1),
        "electra": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ff,
                        embedding_size=max(hidden // 2, heads), max_position_embeddings=positions),
        "albert": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=ff,
                       embedding_size=max(hidden // 8, 8), max_position_embeddings=positions),
        "gpt2": dict(n_embd=hidden, n_layer=layers, n_head=heads, n_positions=positions),
        "gpt_neo": dict(hidden_size=hidden, num_layers=layers, num_heads=heads, max_position_embeddings=positions,
                        attention_types=[[["global", "local"], layers // 2]], window_size=256),
        "xlnet": dict(d_model=hidden, n_layer=layers, n_head=heads, d_inner=ff),
        "llama": dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=next(k for k in (3, 1) if heads % k == 0), intermediate_size=ff,
                      max_position_embeddings=positions, tie_word_embeddings=True),
    }
    if model_type not in per_type:
        raise InputError(f"hub id {row['hub_id']!r}: no stand-in shape for model type {model_type!r}")
    kw = {**common, **per_type[model_type], "architectures": [row["architecture"]]}
    if row["labels"]:
        labels = row["labels"].split(";")
        kw.update(id2label=dict(enumerate(labels)), label2id={v: i for i, v in enumerate(labels)})
    return transformers.AutoConfig.for_model(model_type, **kw)


def _seed(hub_id: str) -> int:
    return int.from_bytes(hashlib.sha256(hub_id.encode()).digest()[:4], "little")


def _commit(folder: Path) -> str:
    """A 40-hex commit for a snapshot: the SHA-1 of its files' names and bytes (a stand-in's
    commit never equals a real one's, and changes when any file does)."""
    h = hashlib.sha1()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def repo_folder(hub_cache: Path, hub_id: str) -> Path:
    """``models--<org>--<name>`` of ``hub_id`` in a hub cache (huggingface_hub's layout)."""
    return Path(hub_cache) / ("models--" + hub_id.replace("/", "--"))


def write_snapshot(hub_cache: Path, hub_id: str, fill) -> Path:
    """A snapshot of ``hub_id`` in ``hub_cache``: ``fill(folder)`` writes its files, which are
    moved to ``snapshots/<commit>/`` and ``refs/main`` set to the commit last (a reader sees
    the old snapshot or the new one)."""
    repo = repo_folder(hub_cache, hub_id)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    with tables.atomic_path(repo / "snapshots" / "incoming", replace_directory=True) as tmp:
        tmp.mkdir(parents=True)
        fill(tmp)
        commit = _commit(tmp)
    target = repo / "snapshots" / commit
    if target.exists():
        shutil.rmtree(target)
    (repo / "snapshots" / "incoming").rename(target)
    tables.atomic_write(repo / "refs" / "main", commit, durable=False)
    return target


def build_stand_in(hub_cache: Path, hub_id: str, table: pd.DataFrame | None = None) -> dict:
    """Write ``hub_id``'s stand-in (random weights, its real tokenizer's kind) into ``hub_cache``;
    its facts as a row of :func:`build_cache`'s table."""
    import torch
    import transformers

    row = checkpoint(hub_id, table)

    def fill(folder: Path):
        if row["tokenizer_class"]:
            tok = build_tokenizer(row["vocabulary"], row["tokenizer_class"],
                                  int(row["max_length"]) if row["max_length"] else None, folder)
        else:                                     # the checkpoint ships no tokenizer (tokenizer_from)
            tok = build_tokenizer(row["vocabulary"], "BertTokenizer", None, Path(folder) / ".tokenizer")
            shutil.rmtree(Path(folder) / ".tokenizer")
        ids = {k: getattr(tok, k, None) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
        config = stand_in_config(row, len(tok), {k: v for k, v in ids.items() if v is not None})
        torch.manual_seed(_seed(hub_id))
        model = getattr(transformers, row["architecture"])._from_config(config)
        model.save_pretrained(folder)

    snapshot = write_snapshot(hub_cache, hub_id, fill)
    return {"hub_id": hub_id, "architecture": row["architecture"], "tokenizer_class": row["tokenizer_class"],
            "vocabulary": row["vocabulary"], "commit": snapshot.name, "megabytes":
            round(sum(f.stat().st_size for f in snapshot.rglob("*") if f.is_file()) / 2**20, 2)}


def build_cache(hf_home: Path, hub_ids: list[str]) -> pd.DataFrame:
    """Stand-ins of ``hub_ids`` (a profile's: :func:`helpers.book.profile_hub_ids`) under
    ``hf_home/hub``; one row per stand-in (hub id, architecture, tokenizer class, vocabulary,
    commit, size)."""
    from helpers.progress import progress_bars_of_libraries

    ids = list(hub_ids)
    table = checkpoints()
    hub_cache = Path(hf_home) / "hub"
    with progress_bars_of_libraries(False):
        return pd.DataFrame([build_stand_in(hub_cache, h, table) for h in ids])


def check_checkpoints(hub_ids: list[str], profile: str) -> None:
    """Before a profile that needs the hub runs: every checkpoint of ``hub_ids`` in the local
    Hugging Face cache (or the hub reachable), and every cached one of the architecture and
    tokenizer class its facts name; else one :class:`InputError` line naming them."""
    import transformers

    from helpers.hub import cached_hub_file, hub_offline_reason

    table, missing, wrong = checkpoints(), [], []
    for hub_id in hub_ids:
        config = cached_hub_file(hub_id)
        if config is None:
            missing.append(hub_id)
            continue
        facts = checkpoint(hub_id, table)
        found = (json.loads(Path(config).read_text()).get("architectures") or ["none"])[0]
        if found != facts["architecture"]:
            wrong.append(f"{hub_id} is {found}, not {facts['architecture']}")
        tok = cached_hub_file(hub_id, "tokenizer_config.json")
        named = json.loads(Path(tok).read_text()).get("tokenizer_class") if tok and facts["tokenizer_class"] else None
        if named:
            have = getattr(transformers, named, None)
            if have is None or have.__name__ != getattr(transformers, facts["tokenizer_class"]).__name__:
                wrong.append(f"{hub_id}'s tokenizer is {named}, not {facts['tokenizer_class']}")
    if wrong:
        few = "; ".join(wrong[:3]) + ("; ..." if len(wrong) > 3 else "")
        raise InputError(f"profile {profile!r}: {len(wrong)} cached {plural('checkpoint', len(wrong))} not the "
                         f"model its facts name ({few}; helpers/models/{CHECKPOINTS_CSV.name})")
    reason = hub_offline_reason() if missing else None
    if reason:
        few = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise InputError(f"profile {profile!r} loads {len(missing)} hub {plural('checkpoint', len(missing))} not in "
                         f"the local Hugging Face cache ({few}) and {reason}: run it where the hub answers, or "
                         "rehearse it with `harms stand-ins`")
