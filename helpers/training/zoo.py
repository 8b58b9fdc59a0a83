"""The book's own model zoo: pre-trained and distilled students (seed 000, section 4.7).

    >>> from helpers.training import zoo
    >>> zoo.ensure_default_zoo("default")     # trains what is missing, reuses the rest
    ['zoo-gpt2-L1-H64', ..., 'zoo-bert-teacher', 'zoo-bert-L1-H64', ...]
    >>> zoo.manifests()                       # one row per zoo model (layers, hidden, perplexity...)

Offline, the causal students (GPT-2 architecture, the SmolLM2 tokenizer) are distilled from
SmolLM2-135M; the masked students (BERT architecture, a byte-level BPE tokenizer trained on the
corpus) from a masked teacher the zoo pre-trains itself (the largest grid point, trained
longer; it takes that grid cell, as GPT-2 does in the paper's Table 7). With the hub, ``causal_teacher="gpt2"``, ``masked_teacher="bert-large-uncased"`` and
``corpus="wikitext-103"`` / ``"openwebtext"`` follow the paper. Each model is saved under
``paths.zoo_dir()/<name>/`` (save_pretrained weights + tokenizer + ``manifest.json``).
A model is reused when its manifest exists with the same configuration; otherwise it is
(re)trained, resuming from its checkpoints (``paths.zoo_dir()/_checkpoints``) if a previous run
was interrupted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from helpers import paths, tables
from helpers.progress import progress_bars_of_libraries
from helpers.datasets.corpus import CORPORA, load_corpus  # noqa: F401  (re-exported)
from helpers.training import distill
from helpers.errors import InputError

def train_subword_tokenizer(lines: list[str], *, vocab_size: int = 8000):
    """A lower-cased byte-level BPE tokenizer (RoBERTa-style word-start marker) trained on
    ``lines`` with the tokenizers library, wrapped as a transformers fast tokenizer with BERT's
    special tokens [PAD] [UNK] [CLS] [SEP] [MASK] and ``[CLS] text [SEP]``.

    Byte-level BPE rather than WordPiece because its training is deterministic: the
    WordPiece (and any BPE with a ``##`` prefix or ``</w>`` suffix) trainer numbers the
    continuation pieces in hash-map order, so two runs gave different vocabularies (405 ids and
    one token differed) and hence differently trained students.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if vocab_size < len(specials) + len(alphabet):
        raise InputError(f"vocabulary size {vocab_size} is below the byte alphabet plus specials "
                         f"({len(specials) + len(alphabet)})")
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                       initial_alphabet=alphabet))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=512)


# --------------------------------------------------------------------------- configuration
@dataclass
class ZooConfig:
    """Everything that defines a zoo; every student shares the hyper-parameters."""

    profile: str = "default"
    corpus: str = "gensim"
    causal_layers: tuple = (1, 2, 4)
    causal_hidden: tuple = (64, 128)
    masked_layers: tuple = (1, 2, 4)
    masked_hidden: tuple = (64, 128)
    causal_teacher: str = "smollm2-135m"
    masked_teacher: str = "zoo-bert-teacher"   # trained here; or a hub name, e.g. bert-large-uncased
    teacher_shape: tuple | None = None         # (layers, hidden) of zoo-bert-teacher; None = largest grid point
    pretrain_steps: int = 40
    distill_steps: int = 20
    teacher_steps: int = 400                   # pre-training steps of zoo-bert-teacher
    masked_pretrain_steps: int | None = 80     # override for the masked students (8k byte-level BPE)
    masked_distill_steps: int | None = 80
    causal_pretrain_steps: int | None = 50     # override for the (49k-vocabulary) causal students
    causal_distill_steps: int | None = 30      # (teacher SmolLM2 runs ~400 tokens/s on 2 cores)
    batch_size: int = 8
    masked_batch_size: int | None = 16         # override for the masked family (at 4 x 128 the teacher
                                               # stayed at unigram level)
    mask_prob: float = 0.4                     # masked family: 40 % of tokens masked in training (Wettig et
                                               # al. 2023; more signal per step than BERT's 15 %)
    block_size: int = 128                      # also the students' context (ToxiGen sentences fit)
    lr: float = 2e-3
    warmup: float = 0.1
    weight_decay: float = 0.01
    temperature: float = 1.0                   # at T = 2 SmolLM2's top 64 hold only ~22 % of its mass
    alpha: float = 0.0
    top_k: int | None = 64                     # causal teacher: top-k approximation (None = full KL)
    masked_vocab: int = 8000
    dropout: float = 0.0
    eval_blocks: int = 16
    seed: int = 0
    checkpoint_every: int = 20
    families: tuple = ("causal", "masked")

    def key(self, *fields: str, **values) -> str:
        d = dataclasses.asdict(self)
        return hashlib.sha256(json.dumps({f: d[f] for f in fields} | values, sort_keys=True, default=list)
                              .encode()).hexdigest()[:12]


PROFILES: dict[str, dict] = {
    # ~10 minutes on 2 shared cores (measured: see the report in benchmarks/RESULTS.md "Training")
    "default": {},
    # CI: a handful of steps on a tiny grid, block 32: under ~2 minutes incl. loading SmolLM2
    "ci": dict(causal_layers=(1, 2), causal_hidden=(64,), masked_layers=(1, 2), masked_hidden=(64,),
               pretrain_steps=4, distill_steps=3, teacher_steps=8, causal_pretrain_steps=4, causal_distill_steps=3,
               masked_pretrain_steps=4, masked_distill_steps=3, block_size=128, batch_size=1, masked_batch_size=1,
               eval_blocks=2, masked_vocab=2000, corpus="gensim-lee", checkpoint_every=4),
}
PROFILES["paper"] = PROFILES["default"]   # the paper profile evaluates hub models; zoo as default

_FAMILY = {"gpt2": "zoo-distilled-gpt2", "bert": "zoo-distilled-bert"}
_TRAIN_FIELDS = ("corpus", "batch_size", "block_size", "lr", "warmup", "weight_decay", "dropout", "seed")


def zoo_config(profile: str = "default", **overrides) -> ZooConfig:
    if profile not in PROFILES:
        raise InputError(f"unknown zoo profile {profile!r}; known: {', '.join(PROFILES)}")
    kw = {**PROFILES[profile], **overrides}
    unknown = set(kw) - {f.name for f in dataclasses.fields(ZooConfig)}
    if unknown:
        raise InputError(f"unknown zoo parameter(s) {sorted(unknown)}")
    return ZooConfig(profile=profile, **kw)


def model_name(arch: str, shape: distill.StudentShape) -> str:
    return f"zoo-{arch}-L{shape.layers}-H{shape.hidden}"


# --------------------------------------------------------------------------- manifests
def manifest(name: str) -> dict | None:
    f = paths.zoo_dir() / name / "manifest.json"
    return json.loads(f.read_text()) if f.is_file() else None


def manifests(names: list[str] | None = None) -> pd.DataFrame:
    """One row per zoo model (flattened manifest): name, family, objective, layers, heads, hidden,
    params, teacher, corpus, steps, losses, held-out perplexity, training seconds..."""
    root = paths.zoo_dir()
    if names is None:
        names = sorted(d.name for d in root.iterdir() if (d / "manifest.json").is_file()) if root.is_dir() else []
    rows = []
    for n in names:
        m = manifest(n)
        if m is None:
            continue
        flat = {k: v for k, v in m.items() if not isinstance(v, dict)}
        for sect in ("steps", "final_loss"):
            flat |= {f"{sect}_{k}": v for k, v in (m.get(sect) or {}).items()}
        rows.append(flat)
    return pd.DataFrame(rows)


def _write_model(name: str, model, tokenizer, man: dict) -> Path:
    """save_pretrained + tokenizer + manifest into a temporary dir, then rename it into place."""
    root = paths.zoo_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = root / name
    tmp = tables.temporary_path(final)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2, default=str))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _load_info() -> dict:
    try:
        return {"loadavg_1min": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(),
                "torch_threads": torch.get_num_threads()}
    except OSError:
        return {}


# --------------------------------------------------------------------------- training
def _train_one(name: str, arch: str, shape, tokenizer, blocks, held, cfg: ZooConfig, *, objective: str, batch_size: int,
               family: str, pretrain_steps: int, distill_steps: int, teacher_name: str | None,
               teacher_fn, ckpt_dir: Path, progress: bool, extra: dict) -> dict:
    t0 = time.time()
    load0 = _load_info()
    model = distill.build_student(arch, shape, tokenizer, block_size=cfg.block_size,
                                  dropout=cfg.dropout, seed=cfg.seed)
    base = dict(batch_size=batch_size, mask_prob=cfg.mask_prob, lr=cfg.lr, warmup=cfg.warmup, weight_decay=cfg.weight_decay,
                temperature=cfg.temperature, alpha=cfg.alpha, seed=cfg.seed,
                checkpoint_every=cfg.checkpoint_every)
    phase = "teacher" if family == "zoo-teacher-bert" else "pretrain"
    pre = distill.train(model, blocks, distill.TrainConfig(steps=pretrain_steps, **base), arch=arch,
                        tokenizer=tokenizer, phase=phase, checkpoint=ckpt_dir / f"{phase}.pt",
                        progress=progress)
    dis = None
    if distill_steps:
        dis = distill.train(model, blocks, distill.TrainConfig(steps=distill_steps, **base), arch=arch,
                            tokenizer=tokenizer, phase="distill", teacher=teacher_fn,
                            checkpoint=ckpt_dir / "distill.pt", progress=progress)
    ppl = distill.heldout_perplexity(model, held, arch=arch, tokenizer=tokenizer, batch_size=batch_size,
                                     seed=cfg.seed)
    import transformers

    man = {
        "name": name, "family": family, "objective": objective, "architecture_class": type(model).__name__,
        "layers": shape.layers, "heads": shape.heads, "hidden": shape.hidden,
        "params": int(model.num_parameters()),
        "architecture": {"layers": shape.layers, "heads": shape.heads, "hidden": shape.hidden,
                         "params": int(model.num_parameters()), "vocab_size": len(tokenizer),
                         "block_size": cfg.block_size},
        "teacher": teacher_name, "corpus": cfg.corpus, "corpus_description": CORPORA[cfg.corpus],
        "steps": {"pretrain": pretrain_steps, "distill": distill_steps},
        "batch_size": batch_size,
        "tokens": {"pretrain": pretrain_steps * batch_size * cfg.block_size,
                   "distill": distill_steps * batch_size * cfg.block_size},
        "final_loss": {"pretrain": pre["final_loss"], "distill": dis["final_loss"] if dis else None},
        "loss_kind": {"pretrain": "LM cross-entropy (nats/token)",
                      "distill": f"T^2 KL(teacher||student), T={cfg.temperature}, alpha={cfg.alpha}"
                                 + (f", teacher top-{cfg.top_k} + tail bucket" if objective == "causal" and cfg.top_k
                                    else "")},
        "heldout_perplexity": ppl,
        "perplexity_kind": ("exp mean next-token NLL on held-out blocks" if objective == "causal" else
                            "masked-token perplexity: exp mean NLL at 15% positions masked 80/10/10 "
                            "(fixed seed) on held-out blocks"),
        "heldout_tokens": int(held.numel()),
        "temperature": cfg.temperature if distill_steps else None, "alpha": cfg.alpha if distill_steps else None,
        "seed": cfg.seed, "profile": cfg.profile,
        "training_seconds": round(pre["seconds"] + (dis["seconds"] if dis else 0.0), 2),
        "wall_seconds": round(time.time() - t0, 2),
        "hyperparameters": {k: v for k, v in dataclasses.asdict(cfg).items()
                            if k in _TRAIN_FIELDS + ("temperature", "alpha", "top_k", "masked_vocab", "masked_batch_size",
                                     "mask_prob")},
        "config_key": extra.pop("config_key"),
        "machine": {**load0, "loadavg_1min_end": _load_info().get("loadavg_1min"), "python": sys.version.split()[0],
                    "torch": torch.__version__, "transformers": transformers.__version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **extra,
    }
    _write_model(name, model, tokenizer, man)
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    return man


def _fresh(name: str, key: str) -> bool:
    m = manifest(name)
    return m is not None and m.get("config_key") == key


def _teacher_cache(path: Path) -> dict:
    return torch.load(path, weights_only=False) if path.is_file() else {}


def ensure_default_zoo(profile: str = "default", progress: bool = True, **overrides) -> list[str]:
    """Train the zoo models of ``profile`` that are missing; reuse those whose manifest exists
    with the same configuration. Returns the registry names (teacher first within a family).

    Also records the zoo (names, configuration, teacher perplexities) in
    ``paths.zoo_dir()/_zoo.json``. Temporaries left by a killed run (model folders, checkpoints,
    JSON files named by :func:`helpers.tables.temporary_path`) are removed first. Progress: a
    bar per training phase in a terminal, one line per phase in a log (:mod:`helpers.progress`).
    """
    root = paths.zoo_dir()
    for folder in (root, root / "_checkpoints", *sorted((root / "_checkpoints").glob("*/"))):
        tables.remove_stale_temporaries(folder)
    with progress_bars_of_libraries(progress):
        return _ensure_default_zoo(profile, progress, **overrides)


def _ensure_default_zoo(profile: str, progress: bool, **overrides) -> list[str]:
    cfg = zoo_config(profile, **overrides)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    root = paths.zoo_dir()
    names: list[str] = []
    summary = {"profile": profile, "config": dataclasses.asdict(cfg), "teachers": {}}
    lines = None

    def corpus():
        nonlocal lines
        if lines is None:
            lines = load_corpus(cfg.corpus)
        return lines

    if "causal" in cfg.families:
        shapes = distill.grid(cfg.causal_layers, cfg.causal_hidden)
        ps = cfg.causal_pretrain_steps or cfg.pretrain_steps
        ds = cfg.causal_distill_steps if cfg.causal_distill_steps is not None else cfg.distill_steps
        key = cfg.key(*_TRAIN_FIELDS, "causal_teacher", "temperature", "alpha", "top_k",
                      "pretrain_steps", "distill_steps", "causal_pretrain_steps", "causal_distill_steps",
                      "eval_blocks", kd_targets="top-k+tail")
        todo = [s for s in shapes if not _fresh(model_name("gpt2", s), key)]
        names_c = [model_name("gpt2", s) for s in shapes]
        if todo:
            from helpers import models

            teacher = models.load(cfg.causal_teacher)
            tok = teacher.tokenizer
            train_lines, held_lines = corpus()
            blocks = distill.pack_blocks(train_lines, tok, block_size=cfg.block_size, arch="gpt2")
            held = distill.pack_blocks(held_lines, tok, block_size=cfg.block_size, arch="gpt2")[: cfg.eval_blocks]
            cache_file = root / "_checkpoints" / f"teacher-{key}.pt"
            cache = _teacher_cache(cache_file)
            fn = distill.teacher_targets(teacher.model, arch="gpt2", top_k=cfg.top_k, temperature=cfg.temperature,
                                         cache=cache)
            tppl_file = root / "_checkpoints" / f"teacher-ppl-{key}.json"
            if not tppl_file.is_file():
                tppl = distill.heldout_perplexity(teacher.model, held, arch="gpt2", batch_size=cfg.batch_size)
                tables.atomic_write(tppl_file, json.dumps({"name": cfg.causal_teacher, "heldout_perplexity": tppl}))
            for s in todo:
                n = model_name("gpt2", s)
                _train_one(n, "gpt2", s, tok, blocks, held, cfg, objective="causal", batch_size=cfg.batch_size,
                           family=_FAMILY["gpt2"],
                           pretrain_steps=ps, distill_steps=ds, teacher_name=cfg.causal_teacher, teacher_fn=fn,
                           ckpt_dir=root / "_checkpoints" / f"{n}-{key}", progress=progress,
                           extra={"config_key": key, "top_k": cfg.top_k, "tokenizer": f"{cfg.causal_teacher} "
                                  f"({len(tok)} tokens)"})
                distill._atomic_save(cache, cache_file)
            del teacher
        tfile = root / "_checkpoints" / f"teacher-ppl-{key}.json"
        if tfile.is_file():
            summary["teachers"]["causal"] = json.loads(tfile.read_text())
        names += names_c

    if "masked" in cfg.families:
        tshape = distill.student_shape(*(cfg.teacher_shape or (max(cfg.masked_layers), max(cfg.masked_hidden))))
        own_teacher = cfg.masked_teacher == "zoo-bert-teacher"
        # as in seed 000 Table 7 (23 students + the teacher GPT-2 on the 24th cell), the grid cell of
        # the zoo's own teacher holds the teacher, not a student distilled from a copy of its shape
        shapes = [s for s in distill.grid(cfg.masked_layers, cfg.masked_hidden)
                  if not (own_teacher and (s.layers, s.hidden) == (tshape.layers, tshape.hidden))]
        mbs = cfg.masked_batch_size or cfg.batch_size
        tkey = cfg.key(*_TRAIN_FIELDS, "masked_vocab", "teacher_shape", "teacher_steps", "masked_layers",
                       "masked_hidden", "eval_blocks", "mask_prob", masked_batch_size=mbs, tokenizer="byte-bpe")
        mps = cfg.masked_pretrain_steps or cfg.pretrain_steps
        mds = cfg.masked_distill_steps if cfg.masked_distill_steps is not None else cfg.distill_steps
        key = cfg.key(*_TRAIN_FIELDS, "masked_vocab", "masked_teacher", "teacher_shape", "teacher_steps",
                      "temperature", "alpha", "eval_blocks", "mask_prob", masked_pretrain_steps=mps, tokenizer="byte-bpe",
                      masked_distill_steps=mds,
                      masked_batch_size=mbs)
        todo = [s for s in shapes if not _fresh(model_name("bert", s), key)]
        need_teacher = own_teacher and not _fresh("zoo-bert-teacher", tkey)
        if todo or need_teacher:
            train_lines, held_lines = corpus()
            if own_teacher:
                tok_dir = root / "_checkpoints" / f"tokenizer-{tkey}"
                if (tok_dir / "tokenizer.json").is_file():
                    from transformers import PreTrainedTokenizerFast

                    tok = PreTrainedTokenizerFast.from_pretrained(tok_dir)
                else:
                    tok = train_subword_tokenizer(train_lines, vocab_size=cfg.masked_vocab)
                    tmp = tables.temporary_path(tok_dir)      # all files or none: tokenizer.json is the marker
                    tok.save_pretrained(tmp)
                    shutil.rmtree(tok_dir, ignore_errors=True)
                    os.replace(tmp, tok_dir)
            else:
                from helpers import models

                hub_teacher = models.load(cfg.masked_teacher)
                tok = hub_teacher.tokenizer
            blocks = distill.pack_blocks(train_lines, tok, block_size=cfg.block_size, arch="bert")
            held = distill.pack_blocks(held_lines, tok, block_size=cfg.block_size, arch="bert")[: cfg.eval_blocks]
            if need_teacher:
                _train_one("zoo-bert-teacher", "bert", tshape, tok, blocks, held, cfg, objective="masked", batch_size=mbs,
                           family="zoo-teacher-bert", pretrain_steps=cfg.teacher_steps, distill_steps=0,
                           teacher_name=None, teacher_fn=None,
                           ckpt_dir=root / "_checkpoints" / f"zoo-bert-teacher-{tkey}", progress=progress,
                           extra={"config_key": tkey, "tokenizer": f"byte-level BPE trained on {cfg.corpus} "
                                  f"({len(tok)} tokens)", "is_teacher": True})
            if todo:
                if own_teacher:
                    from transformers import BertForMaskedLM

                    tmodel = BertForMaskedLM.from_pretrained(root / "zoo-bert-teacher").eval()
                else:
                    tmodel = hub_teacher.model
                fn = distill.teacher_targets(tmodel, arch="bert", top_k=None, cache={})
                for s in todo:
                    n = model_name("bert", s)
                    _train_one(n, "bert", s, tok, blocks, held, cfg, objective="masked", batch_size=mbs,
                               family=_FAMILY["bert"],
                               pretrain_steps=mps, distill_steps=mds,
                               teacher_name=cfg.masked_teacher, teacher_fn=fn,
                               ckpt_dir=root / "_checkpoints" / f"{n}-{key}", progress=progress,
                               extra={"config_key": key, "tokenizer": f"{'byte-level BPE trained on ' + cfg.corpus if own_teacher else cfg.masked_teacher} ({len(tok)} tokens)"})
        if own_teacher:
            names.append("zoo-bert-teacher")
        names += [model_name("bert", s) for s in shapes]

    summary["names"] = names
    tables.atomic_write(root / "_zoo.json", json.dumps(summary, indent=2, default=list))
    return names


def current() -> dict:
    """The last zoo ensured (``_zoo.json``): profile, configuration, names, teacher perplexities."""
    f = paths.zoo_dir() / "_zoo.json"
    return json.loads(f.read_text()) if f.is_file() else {}
