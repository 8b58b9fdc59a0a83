"""TinyBERT task distillation of a fine-tuned classifier (Jiao et al. 2020, Findings of EMNLP).

A student of TinyBERT's shape (4 layers, hidden 312, 12 heads, intermediate 1,200:
:data:`TINYBERT_SHAPE`) learns from a fine-tuned BERT-family teacher in two stages, as in the
paper's task-specific distillation:

1. *intermediate layers* (eqs. 7-10): MSE between the student's embedding-layer output and the
   teacher's, and between each student layer's hidden states and those of its mapped teacher
   layer, both through one learned projection ``W`` (student width -> teacher width: TinyBERT's
   ``fit_dense``), plus MSE between their attention matrices head by head. The attention
   matrices are the *unnormalised* scores ``QK^T / sqrt(d)`` with masked key positions set to 0,
   as the TinyBERT code does (``attention="scores"``), or the softmax probabilities
   (``attention="probabilities"``, for teachers whose attention has no query/key modules);
2. *prediction layer* (eq. 11): soft cross-entropy between the teacher's and the student's
   logits at temperature ``t``, with no hard-label term (the TinyBERT code).

Initialisation (``init``): a folder or hub id of a general-distilled student (with the hub:
``huawei-noah/TinyBERT_General_4L_312D``, what the seed started from); ``"pruned"`` (default)
cuts the teacher to the student's shape
(:func:`pruned_student`: Minitron-style width pruning of the residual channels, head dimensions
and MLP channels by activation importance, and the mapped layers), the offline stand-in for
the general-distilled ``TinyBERT_General_4L_312D`` the seed started from; ``"random"`` starts
from scratch (a student trained here from random weights learns little in the book's budget).

Layer mapping: student layer m (1..M) learns from teacher layer ``ceil(m * N / M)`` of N; for
BERT-base (N = 12, M = 4) that is TinyBERT's uniform mapping 3, 6, 9, 12; for MiniLM-L6 (N = 6)
2, 3, 5, 6. ``general_texts``: the student first learns the intermediate objective from the
teacher on unlabelled text (a short stand-in for TinyBERT's general distillation on Wikipedia,
which the hub's ``TinyBERT_General_4L_312D`` already carries).

Data augmentation (``augment``, off by default): TinyBERT's Algorithm 1 (masked-LM and GloVe
word replacement, :mod:`helpers.training.augment`) adds ``N_a`` changed copies of every training
text, with the text's label, to the training data of both task-distillation stages
(intermediate layers and prediction layer), as the paper does for task-specific distillation;
the validation split and the importance measurement of ``init="pruned"`` use the original texts.
``augment=True`` takes the paper's N_a = 20, p_t = 0.4, K = 15; a dict overrides them (keys
``n_aug``, ``p_t``, ``k``, ``seed`` (default: the training seed), ``mlm`` (the masked LM for
single-piece words; none: GloVe for every word), ``vectors``). The settings, with the MLM's
identity and the vectors' fingerprint, are part of the manifest key.

Training is seeded and resumable like :func:`helpers.training.classifier.fine_tune` (atomic
checkpoints; a finished directory is reused only when its manifest key matches the teacher,
the data and every setting); the best prediction-stage epoch on the validation split is kept.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from helpers import hashing
from helpers.errors import InputError
from helpers.hub import hub_unusable_reason
from helpers.lm.batching import check_texts
from helpers.training import adamw, adamw_name
from helpers.training import augment as augmentation
from helpers.training import classifier as clf

__all__ = ["TINYBERT_SHAPE", "student_config", "layer_map", "intermediate_loss", "prediction_loss",
           "pruned_student", "distill_classifier"]

TINYBERT_SHAPE = {"num_hidden_layers": 4, "hidden_size": 312, "num_attention_heads": 12, "intermediate_size": 1200}


def student_config(teacher_config, **shape):
    """A ``BertConfig`` of the student: the teacher's vocabulary, positions, labels and
    dropout with :data:`TINYBERT_SHAPE` (or ``shape``)."""
    from transformers import BertConfig

    shape = {**TINYBERT_SHAPE, **shape}
    if shape["hidden_size"] % shape["num_attention_heads"]:
        raise InputError(f"student hidden size {shape['hidden_size']} is not a multiple of its "
                         f"{shape['num_attention_heads']} heads")
    t = teacher_config
    return BertConfig(vocab_size=t.vocab_size, max_position_embeddings=t.max_position_embeddings,
                      type_vocab_size=getattr(t, "type_vocab_size", 2), pad_token_id=t.pad_token_id,
                      num_labels=t.num_labels, id2label=dict(t.id2label), label2id=dict(t.label2id),
                      hidden_dropout_prob=getattr(t, "hidden_dropout_prob", 0.1),
                      attention_probs_dropout_prob=getattr(t, "attention_probs_dropout_prob", 0.1),
                      **shape)


def layer_map(teacher_layers: int, student_layers: int) -> list[int]:
    """Teacher layer (1-based) that each student layer 1..M learns from (module docstring)."""
    if not 1 <= student_layers <= teacher_layers:
        raise InputError(f"a student of {student_layers} layers cannot map onto a teacher of {teacher_layers}")
    return [math.ceil(m * teacher_layers / student_layers) for m in range(1, student_layers + 1)]


def _attention_modules(model) -> list:
    base = getattr(model, model.base_model_prefix, model)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    found = [getattr(getattr(layer, "attention", None), "self", None) for layer in (layers or [])]
    if not found or any(m is None or not hasattr(m, "query") or not hasattr(m, "key") for m in found):
        raise InputError(f"{type(model).__name__}: no BERT-style query/key modules; use attention='probabilities'")
    return found


@contextmanager
def _captured_scores(model, attention_mask, store: list):
    """Append each layer's attention scores ``[batch, heads, n, n]`` (masked keys set to 0) to
    ``store`` during a forward pass, from hooks on the query and key projections."""
    heads = model.config.num_attention_heads
    pending: dict = {}

    def hook(index: int, part: str):
        def grab(_module, _inputs, output):
            pending[(index, part)] = output
            if (index, "q") in pending and (index, "k") in pending:
                q, k = pending.pop((index, "q")), pending.pop((index, "k"))
                b, n, width = q.shape
                q = q.view(b, n, heads, width // heads).transpose(1, 2)
                k = k.view(b, n, heads, width // heads).transpose(1, 2)
                scores = q @ k.transpose(-1, -2) / math.sqrt(width // heads)
                store.append(scores.masked_fill(attention_mask[:, None, None, :] == 0, 0.0))
        return grab

    handles = []
    for i, attn in enumerate(_attention_modules(model)):
        handles += [attn.query.register_forward_hook(hook(i, "q")), attn.key.register_forward_hook(hook(i, "k"))]
    try:
        yield store
    finally:
        for h in handles:
            h.remove()


def _forward(model, enc, attention: str, *, logits_only: bool = False):
    """``(logits, hidden_states, attentions)`` of one batch; attentions per layer."""
    if logits_only:
        return model(**enc).logits, None, None
    if attention == "scores":
        store: list = []
        with _captured_scores(model, enc["attention_mask"], store):
            out = model(**enc, output_hidden_states=True)
        return out.logits, out.hidden_states, store
    out = model(**enc, output_hidden_states=True, output_attentions=True)
    return out.logits, out.hidden_states, list(out.attentions)


def intermediate_loss(student_hidden, teacher_hidden, student_attn, teacher_attn, projection, mapping) -> tuple:
    """TinyBERT's eqs. 7-10 summed: embedding + hidden-state MSE through ``projection`` and
    attention MSE over the mapped layers (``mapping`` 1-based teacher layers). Returns
    ``(loss, {"embedding": ..., "hidden": ..., "attention": ...})``."""
    import torch.nn.functional as F

    emb = F.mse_loss(projection(student_hidden[0]), teacher_hidden[0])
    hidden = sum(F.mse_loss(projection(student_hidden[m]), teacher_hidden[t]) for m, t in enumerate(mapping, 1))
    attn = sum(F.mse_loss(student_attn[m - 1], teacher_attn[t - 1]) for m, t in enumerate(mapping, 1))
    return emb + hidden + attn, {"embedding": emb.item(), "hidden": hidden.item(), "attention": attn.item()}


def prediction_loss(student_logits, teacher_logits, temperature: float = 1.0):
    """Soft cross-entropy ``-sum softmax(z_T / t) * log_softmax(z_S / t)``, batch mean (eq. 11)."""
    import torch

    target = torch.softmax(teacher_logits / temperature, dim=-1)
    return -(target * torch.log_softmax(student_logits / temperature, dim=-1)).sum(-1).mean()


def pruned_student(teacher_model, cfg, tokenizer, texts, mapping: list[int], *, max_length: int = 128,
                   blocks: int = 32):
    """The teacher cut to the student's shape, the student's starting point under
    ``init="pruned"`` (the offline stand-in for TinyBERT's general-distilled initialisation):
    residual channels and head dimensions by :func:`helpers.training.prune.hidden_importance`,
    the layers of ``mapping``, MLP channels by activation importance, all measured on ``blocks``
    blocks of ``texts``' tokens."""
    import torch

    from helpers.training import prune

    if cfg.num_attention_heads != teacher_model.config.num_attention_heads:
        raise InputError(f"init='pruned' keeps the teacher's {teacher_model.config.num_attention_heads} heads; the "
                         f"student asks for {cfg.num_attention_heads} (use init='random')")
    length = min(max_length, teacher_model.config.max_position_embeddings)
    # cut into blocks of ``length`` tokens below: no text reaches the model longer than it takes, so
    # the tokenizer's warning about a sequence longer than the model's maximum does not apply
    ids = [i for t in texts for i in tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"]]
    n = min(blocks, len(ids) // length)
    if n < 1:
        raise InputError(f"init='pruned' needs at least {length} tokens of training text to measure importance")
    calibration = torch.tensor(ids[:n * length]).reshape(n, length)
    wide = prune.prune_hidden(teacher_model, prune.hidden_importance(teacher_model, calibration), cfg.hidden_size)
    return prune.prune(wide, keep_layers=[m - 1 for m in mapping], intermediate=cfg.intermediate_size,
                       importance=prune.activation_importance(wide, calibration))


def _general_student(init: str, cfg):
    """A general-distilled student (e.g. ``huawei-noah/TinyBERT_General_4L_312D``) with a new
    classification head; its shape must be the student's and its vocabulary the teacher's."""
    from transformers import BertForSequenceClassification

    if not Path(init).is_dir():
        reason = hub_unusable_reason(init)
        if reason:
            raise InputError(f"student init {init!r} is not in the local Hugging Face cache and needs the hub: "
                             f"{reason}")
    try:
        student = BertForSequenceClassification.from_pretrained(
            init, num_labels=cfg.num_labels, id2label=cfg.id2label, label2id=cfg.label2id)
    except (OSError, ValueError) as exc:
        raise InputError(f"student init {init!r}: cannot load ({' '.join(str(exc).split())[:160]})") from None
    got = {k: getattr(student.config, k) for k in (*TINYBERT_SHAPE, "vocab_size")}
    want = {k: getattr(cfg, k) for k in got}
    if got != want:
        raise InputError(f"student init {init!r} has shape {got}, the student needs {want}")
    return student


def _teacher_key(teacher: Path) -> str:
    manifest = teacher / "manifest.json"
    if manifest.is_file():
        key = json.loads(manifest.read_text()).get("key")
        if key:
            return key
    weights = sorted(teacher.glob("*.safetensors")) or sorted(teacher.glob("*.bin"))
    if not weights:
        raise InputError(f"{teacher}: no model weights (a fine-tuned classifier directory is needed)")
    return hashing.sha256_json([hashing.sha256_file(w) for w in weights])


def distill_classifier(teacher, train: pd.DataFrame, validation: pd.DataFrame, *, out_dir, text: str = "text",
                       label: str = "label", shape: dict | None = None, intermediate_epochs: int = 1,
                       prediction_epochs: int = 2, general_texts=None, general_epochs: int = 1, lr: float = 5e-5,
                       batch_size: int = 16, max_length: int = 128, temperature: float = 1.0,
                       attention: str = "scores", init: str = "pruned", seed: int = 0, checkpoint_every: int = 50,
                       stop_after_steps: int | None = None, augment=None, metric: str = "f1_weighted") -> Path | None:
    """Distil the fine-tuned classifier in directory ``teacher`` into a TinyBERT-shaped student
    (module docstring); the best prediction-stage epoch by ``metric`` on ``validation`` (weighted
    F1 by default; ``"f1_macro"`` on skewed data, where weighted F1 rewards the majority class) is
    saved in ``out_dir`` with the teacher's tokenizer and a manifest. ``stop_after_steps`` ends the call
    after that many optimizer steps with a checkpoint on disk (returns None; the next call
    resumes). ``augment``: None / False (default) trains on ``train`` as it is; True or a dict of
    settings adds TinyBERT's augmented copies to the training texts of the intermediate and
    prediction stages (module docstring; :func:`helpers.training.augment.resolve`). Returns
    ``out_dir``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertForSequenceClassification

    teacher = Path(teacher)
    if not (teacher / "config.json").is_file():
        raise InputError(f"{teacher}: no fine-tuned classifier (config.json) there")
    if not isinstance(init, str) or not init.strip():
        raise InputError(f"init must be 'pruned', 'random' or a model folder / hub id, got {init!r}")
    if attention not in ("scores", "probabilities"):
        raise InputError(f"attention must be 'scores' or 'probabilities', got {attention!r}")
    for name, value in (("intermediate_epochs", intermediate_epochs), ("prediction_epochs", prediction_epochs),
                        ("general_epochs", general_epochs)):
        if not isinstance(value, int) or value < 0:
            raise InputError(f"distill_classifier: {name} = {value!r} is not a sensible value")
    if not (isinstance(temperature, (int, float)) and temperature > 0):
        raise InputError(f"temperature must be positive, got {temperature!r}")
    if metric not in clf.SELECTION_METRICS:
        raise InputError(f"distill_classifier: unknown metric {metric!r}; one of {', '.join(clf.SELECTION_METRICS)}")
    clf.check_split(train, text=text, label=label, what="training split")
    clf.check_split(validation, text=text, label=label, what="validation split")
    general = check_texts(general_texts, "general text") if general_texts is not None else []
    augmented = augmentation.resolve(augment, seed=seed)
    tok = AutoTokenizer.from_pretrained(teacher)
    t_model = AutoModelForSequenceClassification.from_pretrained(teacher, attn_implementation="eager").eval()
    for p in t_model.parameters():
        p.requires_grad_(False)
    names = [t_model.config.id2label[i] for i in range(t_model.config.num_labels)]
    unknown = sorted({str(v) for v in pd.concat([train[label], validation[label]])} - set(names))
    if unknown:
        raise InputError(f"label(s) {unknown} are not among the teacher's labels {names}")
    cfg = student_config(t_model.config, **(shape or {}))
    mapping = layer_map(t_model.config.num_hidden_layers, cfg.num_hidden_layers)
    settings = dict(teacher=_teacher_key(teacher), shape={k: getattr(cfg, k) for k in TINYBERT_SHAPE},
                    intermediate_epochs=intermediate_epochs, prediction_epochs=prediction_epochs,
                    general_epochs=general_epochs if general else 0, lr=lr, batch_size=batch_size,
                    max_length=max_length, temperature=temperature, attention=attention, init=init, seed=seed,
                    optimizer=adamw_name(),
                    mapping=mapping, train=hashing.sha256_frame(train[[text, label]]),
                    validation=hashing.sha256_frame(validation[[text, label]]),
                    general=hashing.sha256_json(general) if general else None)
    if augmented is not None:                       # absent when off: the keys of earlier students stay valid
        settings["augment"] = augmentation.settings_key(augmented)
    if metric != "f1_weighted":                     # likewise
        settings["metric"] = metric
    key = hashing.sha256_json(settings)
    out = Path(out_dir)
    if (out / "manifest.json").is_file() and json.loads((out / "manifest.json").read_text()).get("key") == key:
        return out
    texts = train[text].tolist()
    if augmented is not None:                       # before seeding: loading an MLM may draw random numbers
        texts = augmentation.augment_frame(train[[text, label]], text=text, label=label, **augmented)[text].tolist()
    work = out.parent / f".{out.name}.distilling-{key[:16]}"
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    student = BertForSequenceClassification(cfg)
    if init == "pruned":
        student.load_state_dict(pruned_student(t_model, cfg, tok, train[text].tolist(), mapping,
                                               max_length=max_length).state_dict())
    elif init != "random":
        student = _general_student(init, cfg)
    student.config._attn_implementation = "eager"
    projection = torch.nn.Linear(cfg.hidden_size, t_model.config.hidden_size)
    params = list(student.parameters()) + list(projection.parameters())
    opt = adamw(params, lr=lr)
    stages = [("general", general, general_epochs if general else 0),
              ("intermediate", texts, intermediate_epochs),
              ("prediction", texts, prediction_epochs)]
    state = {"stage": 0, "epoch": 0, "step": 0, "history": [], "best": None}
    ckpt = work / clf.CHECKPOINT
    parts = {"model": student, "projection": projection, "optimizer": opt}
    state = clf.load_checkpoint(ckpt, parts) or state
    started, done = time.time(), 0
    index = {n: i for i, n in enumerate(names)}
    while state["stage"] < len(stages):
        stage, texts, epochs = stages[state["stage"]]
        steps = -(-len(texts) // batch_size)
        while state["epoch"] < epochs:
            order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(
                seed + 1000 * state["stage"] + state["epoch"]))
            student.train()
            for b in range(state["step"], steps):
                batch = [texts[i] for i in order[b * batch_size:(b + 1) * batch_size].tolist()]
                enc = tok(batch, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                with torch.no_grad():
                    t_logits, t_hidden, t_attn = _forward(t_model, enc, attention, logits_only=stage == "prediction")
                s_logits, s_hidden, s_attn = _forward(student, enc, attention, logits_only=stage == "prediction")
                if stage == "prediction":
                    loss = prediction_loss(s_logits, t_logits, temperature)
                else:
                    loss, _ = intermediate_loss(s_hidden, t_hidden, s_attn, t_attn, projection, mapping)
                loss.backward()
                opt.step()
                opt.zero_grad()
                state["step"], done = b + 1, done + 1
                if state["step"] % checkpoint_every == 0 or (stop_after_steps and done >= stop_after_steps):
                    clf.save_checkpoint_file(ckpt, parts, state)
                if stop_after_steps and done >= stop_after_steps:
                    return None
            if stage == "prediction":
                pred = clf.predict_proba((student, tok), validation[text].tolist(), max_length=max_length).argmax(1)
                scores = clf.classification_metrics(validation[label].astype(str).map(index).to_numpy(), pred,
                                                    labels=list(range(len(names))))
                value = float(scores.set_index("metric").loc[metric, "value"])
                state["history"].append({"stage": stage, "epoch": state["epoch"] + 1,
                                         **dict(zip(scores["metric"], scores["value"]))})
                if state["best"] is None or value > state["best"]:
                    state["best"] = value
                    student.save_pretrained(work / "best")
                    tok.save_pretrained(work / "best")
            state["epoch"], state["step"] = state["epoch"] + 1, 0
            clf.save_checkpoint_file(ckpt, parts, state)
        state["stage"], state["epoch"] = state["stage"] + 1, 0
        clf.save_checkpoint_file(ckpt, parts, state)
    if state["best"] is None:                       # no prediction epoch asked for: keep the last student
        student.save_pretrained(work / "best")
        tok.save_pretrained(work / "best")
    n_params = {"teacher": sum(p.numel() for p in t_model.parameters()),
                "student": sum(p.numel() for p in student.parameters())}
    extra = {"training_texts": len(texts)} if augmented is not None else {}
    return clf.promote(work, out, {"key": key, **settings, **extra, "history": state["history"],
                                   f"best_{metric}": state["best"], "parameters": n_params,
                                   "seconds_last_call": round(time.time() - started, 2)})
