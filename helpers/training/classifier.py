"""Text classifiers for chapters 05–07: an encoder fine-tuned with a sequence-classification head,
and TF-IDF + logistic regression (seed 002's toxicity probe), with one interface and the
metrics of scikit-learn.

- :func:`fine_tune` — any transformers encoder (or LM with a classification head class), seeded
  (weights of the new head, data order, dropout), evaluated on the validation split after every
  epoch, early stopping after ``patience`` epochs without improvement, the best epoch kept. A
  checkpoint (model, optimizer, scheduler, RNG states, epoch, step) is written atomically every
  ``checkpoint_every`` steps and at each epoch's end; a killed run resumes from it and ends
  identical to an uninterrupted one. The finished directory holds ``save_pretrained`` files and
  ``manifest.json`` (inputs' hashes, settings, per-epoch metrics); it is reused only when both
  match.
- :class:`TfidfLogistic` — ``TfidfVectorizer`` + ``LogisticRegression`` (scikit-learn), seeded.
- :func:`predict_proba` and :func:`classification_metrics` (accuracy, precision, recall, F1,
  macro and weighted F1 from ``sklearn.metrics``).
"""

from __future__ import annotations

import json
import pickle
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import hashing, tables
from helpers.classifiers import TextClassifier, check_texts_and_labels
from helpers.errors import InputError
from helpers.training import adamw, adamw_name

__all__ = ["fine_tune", "encoder_identity", "predict_proba", "classification_metrics", "TfidfLogistic", "FineTuned",
           "EmbeddingProbe", "check_split"]

CHECKPOINT = "_checkpoint.pt"


def check_split(df: pd.DataFrame, *, text: str, label: str, what: str) -> pd.DataFrame:
    """The split with its text and label columns checked: one clear line per problem."""
    for col in (text, label):
        if col not in df.columns:
            raise InputError(f"{what}: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    if len(df) == 0:
        raise InputError(f"{what}: no rows")
    bad = [i for i, t in enumerate(df[text].tolist()) if not (isinstance(t, str) and t.strip())]
    if bad:
        raise InputError(f"{what}: row {bad[0]} has an empty text")
    if df[label].isna().any():
        raise InputError(f"{what}: row {int(np.flatnonzero(df[label].isna().to_numpy())[0])} has no label")
    return df


def encoder_identity(encoder) -> str | dict:
    """What identifies ``encoder`` in a cache key: a hub id as given (its revision is the hub's
    business), a local folder by the fingerprints of its weights and tokenizer files, so a folder
    whose model was replaced is never mistaken for the old one."""
    from helpers.models.loading import tokenizer_fingerprint, weights_fingerprint

    folder = Path(str(encoder))
    if not folder.is_dir():
        return str(encoder)
    return {"weights": weights_fingerprint(folder), "tokenizer": tokenizer_fingerprint(folder)}


def _labels(train: pd.DataFrame, validation: pd.DataFrame, label: str) -> list:
    names = sorted(train[label].unique().tolist(), key=str)
    if len(names) < 2:
        raise InputError(f"training split: one class only ({names[0]!r}); a classifier needs two or more")
    unseen = sorted(set(validation[label].unique().tolist()) - set(names), key=str)
    if unseen:
        raise InputError(f"validation split: label(s) {unseen} do not occur in the training split")
    return names


def classification_metrics(y_true, y_pred, *, labels=None) -> pd.DataFrame:
    """Tidy ``metric, value``: accuracy, precision / recall / F1 (binary: of the positive second
    label; else macro), macro F1 and weighted F1 (scikit-learn)."""
    from sklearn import metrics

    labels = sorted(set(np.asarray(y_true).tolist()) | set(np.asarray(y_pred).tolist()), key=str) \
        if labels is None else list(labels)
    binary = len(labels) == 2
    avg = dict(average="binary", pos_label=labels[1]) if binary else dict(average="macro")
    rows = {"accuracy": metrics.accuracy_score(y_true, y_pred),
            "precision": metrics.precision_score(y_true, y_pred, labels=labels, zero_division=0, **avg),
            "recall": metrics.recall_score(y_true, y_pred, labels=labels, zero_division=0, **avg),
            "f1": metrics.f1_score(y_true, y_pred, labels=labels, zero_division=0, **avg),
            "f1_macro": metrics.f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0),
            "f1_weighted": metrics.f1_score(y_true, y_pred, labels=labels, average="weighted", zero_division=0)}
    return pd.DataFrame({"metric": list(rows), "value": [float(v) for v in rows.values()]})


# --------------------------------------------------------------------------- TF-IDF + logistic regression

class TfidfLogistic(TextClassifier):
    """TF-IDF features + logistic regression (scikit-learn): seed 002's toxicity probe.
    ``class_weight="balanced"`` weighs classes by ``n / (classes * count)`` (for skewed data such
    as MLMA, 88 % toxic in English, where the unweighted probe calls everything toxic)."""

    name = "TF-IDF + logistic regression"

    def __init__(self, *, ngram_range=(1, 2), min_df: int = 1, C: float = 1.0, max_iter: int = 1000, seed: int = 0,
                 class_weight: str | None = None):
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        if class_weight not in (None, "balanced"):
            raise InputError(f"class_weight must be None or 'balanced', got {class_weight!r}")
        self.settings = dict(ngram_range=list(ngram_range), min_df=min_df, C=C, max_iter=max_iter, seed=seed,
                             class_weight=class_weight)
        self.pipeline = make_pipeline(TfidfVectorizer(ngram_range=tuple(ngram_range), min_df=min_df),
                                      LogisticRegression(C=C, max_iter=max_iter, random_state=seed,
                                                         class_weight=class_weight))
        self.classes_ = []

    def fit(self, texts, labels) -> "TfidfLogistic":
        texts, labels = check_texts_and_labels(texts, labels, what="training split")
        self.pipeline.fit(texts, labels)
        self.classes_ = list(self.pipeline.classes_)
        return self

    def predict_proba(self, texts) -> np.ndarray:
        return self.pipeline.predict_proba(check_texts_and_labels(texts, what=self.name, allow_empty=True)[0])

    def save(self, path) -> Path:
        """Pickle + ``manifest.json`` (settings, labels), each written atomically."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        tables.atomic_write(path / "model.pkl", pickle.dumps(self))
        tables.atomic_write(path / "manifest.json", json.dumps({"kind": "tfidf-logistic", **self.settings,
                                                                "labels": [str(x) for x in self.classes_]}, indent=2))
        return path

    @staticmethod
    def load(path) -> "TfidfLogistic":
        f = Path(path) / "model.pkl"
        if not f.is_file():
            raise InputError(f"{path}: no saved TF-IDF classifier (model.pkl)")
        return pickle.loads(f.read_bytes())


# --------------------------------------------------------------------------- fine-tuned encoders

#: What a training run may choose its best epoch by (columns of :func:`classification_metrics`).
SELECTION_METRICS = ("accuracy", "precision", "recall", "f1", "f1_macro", "f1_weighted")


def fine_tune(encoder, train: pd.DataFrame, validation: pd.DataFrame, *, out_dir, text: str = "text",
              label: str = "label", epochs: int = 3, lr: float = 2e-5, batch_size: int = 16, max_length: int = 128,
              seed: int = 0, patience: int = 2, metric: str = "f1_weighted", checkpoint_every: int = 50,
              class_weight: str | None = None, stop_after_steps: int | None = None) -> Path | None:
    """Fine-tune ``encoder`` (a directory or hub id) on ``train``; the best epoch by ``metric``
    on ``validation`` is saved in ``out_dir`` (see the module). ``stop_after_steps`` stops the
    run after that many optimizer steps, as a kill would (for tests and time budgets): the
    checkpoint is on disk, None is returned and the next call resumes. ``class_weight="balanced"``
    weighs the cross-entropy of each class by ``n / (classes * count)`` (scikit-learn's
    convention), for skewed data such as MLMA (88 % toxic). Returns ``out_dir``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    from helpers.progress import transformers_errors_only

    for name, value, ok in (("epochs", epochs, isinstance(epochs, int) and epochs >= 1),
                            ("lr", lr, isinstance(lr, (int, float)) and 0 < lr < 1),
                            ("batch_size", batch_size, isinstance(batch_size, int) and batch_size >= 1),
                            ("patience", patience, isinstance(patience, int) and patience >= 1)):
        if not ok:
            raise InputError(f"fine_tune: {name} = {value!r} is not a sensible value")
    if metric not in SELECTION_METRICS:
        raise InputError(f"fine_tune: unknown metric {metric!r}; one of {', '.join(SELECTION_METRICS)}")
    if class_weight not in (None, "balanced"):
        raise InputError(f"fine_tune: class_weight must be None or 'balanced', got {class_weight!r}")
    check_split(train, text=text, label=label, what="training split")
    check_split(validation, text=text, label=label, what="validation split")
    names = _labels(train, validation, label)
    out = Path(out_dir)
    settings = dict(encoder=encoder_identity(encoder), epochs=epochs, lr=lr, batch_size=batch_size, max_length=max_length,
                         seed=seed, patience=patience, metric=metric, labels=[str(n) for n in names],
                         optimizer=adamw_name(),
                         **({"class_weight": class_weight} if class_weight else {}),
                         train=hashing.sha256_frame(train[[text, label]]),
                         validation=hashing.sha256_frame(validation[[text, label]]))
    key = hashing.sha256_json(settings)
    manifest = out / "manifest.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("key") == key:
        return out
    work = out.parent / f".{out.name}.training-{key[:16]}"
    work.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(encoder)
    if tok.pad_token is None:                   # a causal LM's tokenizer (GPT-2, Llama): pad with its end token
        tok.pad_token = tok.eos_token or tok.unk_token
    index = {n: i for i, n in enumerate(names)}
    torch.manual_seed(seed)
    with transformers_errors_only():                  # "score.weight newly initialized": the head we train
        model = AutoModelForSequenceClassification.from_pretrained(
            encoder, num_labels=len(names), id2label={i: str(n) for i, n in enumerate(names)},
            label2id={str(n): i for i, n in enumerate(names)}, pad_token_id=tok.pad_token_id)
    texts, y = train[text].tolist(), torch.as_tensor([index[v] for v in train[label]])
    weight = balanced_weights(y.numpy(), len(names)) if class_weight else None
    steps_per_epoch = -(-len(texts) // batch_size)
    opt = adamw(model.parameters(), lr=lr)
    sched = get_linear_schedule_with_warmup(opt, int(0.1 * steps_per_epoch * epochs), steps_per_epoch * epochs)
    state = {"epoch": 0, "step": 0, "history": [], "best": None, "since_best": 0}
    ckpt = work / CHECKPOINT
    parts = {"model": model, "optimizer": opt, "scheduler": sched}
    state = load_checkpoint(ckpt, parts) or state

    def save_checkpoint():
        save_checkpoint_file(ckpt, parts, state)

    started, done_steps = time.time(), 0
    while state["epoch"] < epochs and state["since_best"] < patience:
        order = torch.randperm(len(texts), generator=torch.Generator().manual_seed(seed + state["epoch"]))
        model.train()
        for b in range(state["step"], steps_per_epoch):
            idx = order[b * batch_size:(b + 1) * batch_size].tolist()
            enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            logits = model(**enc).logits
            loss = torch.nn.functional.cross_entropy(logits, y[idx], weight=weight)
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            state["step"], done_steps = b + 1, done_steps + 1
            if state["step"] % checkpoint_every == 0 or (stop_after_steps and done_steps >= stop_after_steps):
                save_checkpoint()
            if stop_after_steps and done_steps >= stop_after_steps:
                return None
        scores = classification_metrics(validation[label].map(index).to_numpy(),
                                        predict_proba((model, tok), validation[text].tolist(),
                                                      max_length=max_length).argmax(1),
                                        labels=list(range(len(names))))
        value = float(scores.set_index("metric").loc[metric, "value"])
        state["history"].append({"epoch": state["epoch"] + 1, **dict(zip(scores["metric"], scores["value"]))})
        if state["best"] is None or value > state["best"]:
            state["best"], state["since_best"] = value, 0
            model.save_pretrained(work / "best")
            tok.save_pretrained(work / "best")
        else:
            state["since_best"] += 1
        state["epoch"], state["step"] = state["epoch"] + 1, 0
        save_checkpoint()
    return promote(work, out, {"key": key, **settings, "history": state["history"], "best_" + metric: state["best"],
                               "seconds_last_call": round(time.time() - started, 2)})


def balanced_weights(y, n_classes: int):
    """Class weights ``n / (n_classes * count)`` as a float tensor (a class absent from ``y``
    gets weight 0)."""
    import torch

    counts = np.bincount(np.asarray(y), minlength=n_classes).astype(float)
    return torch.as_tensor(np.where(counts > 0, len(y) / (n_classes * np.maximum(counts, 1)), 0.0), dtype=torch.float32)


def save_checkpoint_file(path: Path, parts: dict, state: dict) -> None:
    """Write the state dicts of ``parts`` (model, optimizer, scheduler, ...), torch's RNG state
    and ``state`` to ``path`` atomically: a kill leaves the previous checkpoint whole."""
    import torch

    with tables.atomic_path(path) as tmp:
        torch.save({**{k: v.state_dict() for k, v in parts.items()}, "rng": torch.get_rng_state(), "state": state}, tmp)


def load_checkpoint(path: Path, parts: dict) -> dict | None:
    """Restore ``parts`` and torch's RNG state from a :func:`save_checkpoint_file` file; its
    ``state``, or None when there is no checkpoint."""
    import torch

    if not path.is_file():
        return None
    saved = torch.load(path, weights_only=False)
    for k, v in parts.items():
        v.load_state_dict(saved[k])
    torch.set_rng_state(saved["rng"])
    return saved["state"]


def promote(work: Path, out: Path, manifest: dict) -> Path:
    """Finish a training run: ``work/best`` gets ``manifest.json`` and replaces ``out``; the
    work directory (checkpoints) is removed."""
    best = work / "best"
    tables.atomic_write(best / "manifest.json", json.dumps(manifest, indent=2))
    with tables.atomic_path(out, replace_directory=True) as tmp:
        best.rename(tmp)
    shutil.rmtree(work, ignore_errors=True)
    return out


def predict_proba(classifier, texts, *, batch_size: int = 32, max_length: int = 128) -> np.ndarray:
    """Class probabilities ``[n, classes]`` of a fine-tuned classifier (a directory, or a
    ``(model, tokenizer)`` pair), batched; padding does not change a row."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if isinstance(classifier, (str, Path)):
        if not (Path(classifier) / "config.json").is_file():
            raise InputError(f"{classifier}: no fine-tuned classifier (config.json) there")
        model = AutoModelForSequenceClassification.from_pretrained(classifier)
        tok = AutoTokenizer.from_pretrained(classifier)
    else:
        model, tok = classifier
    texts = list(texts)
    was_training = model.training
    model.eval()
    out = []
    with torch.inference_mode():
        for a in range(0, len(texts), batch_size):
            enc = tok(texts[a:a + batch_size], padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
            out.append(torch.softmax(model(**enc).logits.double(), -1).numpy())
    model.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, model.config.num_labels))


def _frame(texts, labels, what: str, min_classes: int = 2) -> pd.DataFrame:
    """``text, label`` checked, keeping the index of pandas input (part of :func:`fine_tune`'s key)."""
    checked, y = check_texts_and_labels(texts, labels, what=what, min_classes=min_classes)
    return pd.DataFrame({"text": checked, "label": y}, index=getattr(texts, "index", None))


def read_manifest(model_dir) -> dict:
    """The ``manifest.json`` of a trained model folder (what trained it: its ``key``, settings, metrics)."""
    return json.loads((Path(model_dir) / "manifest.json").read_text())


class FineTuned(TextClassifier):
    """An encoder fine-tuned with a sequence-classification head (:func:`fine_tune`), behind the
    package's contract: ``fit(texts, labels, validation=(texts, labels))`` trains into ``out_dir``
    (reused when the same data and settings trained it before), ``predict_proba`` reads that
    folder. :meth:`load` wraps a folder :func:`fine_tune` or TinyBERT's distillation wrote.
    ``settings`` go to :func:`fine_tune` (epochs, lr, batch_size, max_length, seed, class_weight,
    ...)."""

    def __init__(self, encoder, out_dir, **settings):
        self.encoder, self.out_dir, self.settings = encoder, Path(out_dir), settings
        self.max_length = settings.get("max_length", 128)
        self.name = f"{Path(str(encoder)).name} fine-tuned"
        self.folder: Path | None = None
        self.classes_ = []

    def fit(self, texts, labels, *, validation=None) -> "FineTuned":
        """Train on ``texts``/``labels``; the best epoch on ``validation`` (a ``(texts, labels)``
        pair; default the training data) is kept."""
        train = _frame(texts, labels, "training split")
        valid = train if validation is None else _frame(*validation, "validation split", min_classes=1)
        folder = fine_tune(self.encoder, train, valid, out_dir=self.out_dir, **self.settings)
        if folder is None:
            raise InputError(f"{self.name}: training stopped before its end (stop_after_steps); fit again to resume")
        return self._read(folder)

    @classmethod
    def load(cls, folder, *, max_length: int = 128) -> "FineTuned":
        """A classifier already fine-tuned in ``folder`` (its config's labels are ``classes_``)."""
        clf = cls(folder, folder, max_length=max_length)
        return clf._read(Path(folder))

    def _read(self, folder: Path) -> "FineTuned":
        config = folder / "config.json"
        if not config.is_file():
            raise InputError(f"{folder}: no fine-tuned classifier (config.json) there")
        id2label = json.loads(config.read_text()).get("id2label") or {}
        self.folder, self.classes_ = folder, [id2label[k] for k in sorted(id2label, key=int)]
        return self

    def predict_proba(self, texts) -> np.ndarray:
        if self.folder is None:
            raise InputError(f"{self.name}: not fitted yet")
        texts, _ = check_texts_and_labels(texts, what=self.name, allow_empty=True)
        return predict_proba(self.folder, texts, max_length=self.max_length)

    def cached_predict_proba(self, texts) -> np.ndarray:
        """:meth:`predict_proba` memoised on disk under what trained the folder (its manifest's
        key), the texts and ``max_length``: a rebuild reads the probabilities, loading no model."""
        from helpers import cache

        if self.folder is None:
            raise InputError(f"{self.name}: not fitted yet")
        texts = list(texts)
        key = {"kind": "classifier-predict", "version": 1, "model": read_manifest(self.folder)["key"],
               "texts": hashing.sha256_json(texts), "max_length": self.max_length}
        return cache.memoize(key, lambda: self.predict_proba(texts))


class EmbeddingProbe(TextClassifier):
    """A logistic regression on a model's frozen sentence embeddings (standardised; classes
    balanced): seed 001's probe of a model's representations (chapter 06's ``classifier =
    "probe"``). ``embed(texts) -> [n, dim]`` gives the vectors (e.g.
    ``lambda t: helpers.lm.sentence_embeddings(model, t)``)."""

    def __init__(self, embed, *, name: str = "embedding probe", C: float = 1.0, max_iter: int = 2000, seed: int = 0):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.embed, self.name, self.classes_ = embed, name, []
        self.pipeline = make_pipeline(StandardScaler(), LogisticRegression(C=C, class_weight="balanced",
                                                                           max_iter=max_iter, random_state=seed))

    def fit(self, texts, labels) -> "EmbeddingProbe":
        texts, labels = check_texts_and_labels(texts, labels, what="training split")
        self.pipeline.fit(np.asarray(self.embed(texts)), labels)
        self.classes_ = list(self.pipeline.classes_)
        return self

    def predict_proba(self, texts) -> np.ndarray:
        return self.pipeline.predict_proba(np.asarray(self.embed(check_texts_and_labels(texts, what=self.name)[0])))
