"""The one text-classifier contract of the package, scikit-learn's: ``fit`` and ``predict_proba``.

Every classifier the book trains or uses follows it, whatever it is underneath:

- pretrained classifiers of generated text (:mod:`helpers.models.text_classifiers`: the hub's regard and
  toxicity classifiers and their offline stand-ins VADER, HateSonar, alt-profanity-check), which
  refuse ``fit``;
- :class:`helpers.training.classifier.TfidfLogistic` (TF-IDF + logistic regression, seed 002's
  probe), :class:`~helpers.training.classifier.FineTuned` (an encoder fine-tuned with a
  sequence-classification head; TinyBERT's distilled students load as one) and
  :class:`~helpers.training.classifier.EmbeddingProbe` (a logistic regression on a model's frozen
  sentence embeddings, seed 001's probe).

    >>> clf.fit(texts, labels)                 # returns clf
    >>> clf.predict_proba(texts)               # [n, len(clf.classes_)], rows sum to 1
    >>> clf.predict(texts)                     # clf.classes_[argmax]

``fit`` needs non-empty texts; ``predict_proba`` takes any string, an empty one too (a generated
continuation may be empty, and it is scored as the classifier scores ""), and refuses only what
is no string, except an embedding probe, whose sentence embeddings need a text.
"""

from __future__ import annotations

import numpy as np

from helpers.errors import InputError

__all__ = ["TextClassifier", "check_texts_and_labels"]


class TextClassifier:
    """Base of every classifier: ``name``, ``classes_`` (the labels, in the columns' order of
    :meth:`predict_proba`), ``fit(texts, labels) -> self``, ``predict_proba(texts)`` and
    ``predict(texts)``. A subclass implements :meth:`predict_proba` (and :meth:`fit` when it can
    be trained)."""

    name: str
    classes_: list

    def fit(self, texts, labels) -> "TextClassifier":
        raise InputError(f"{self.name} is pretrained: it cannot be fitted here")

    def predict_proba(self, texts) -> np.ndarray:
        raise NotImplementedError

    def predict(self, texts) -> np.ndarray:
        """The most probable class of each text (the first of equally probable ones)."""
        return np.asarray(self.classes_, dtype=object)[self.predict_proba(texts).argmax(axis=1)]


def check_texts_and_labels(texts, labels=None, *, what: str = "training data",
                           min_classes: int = 2, allow_empty: bool = False) -> tuple[list[str], list | None]:
    """``texts`` as a list of non-empty strings (and ``labels`` of the same length, none missing,
    at least ``min_classes`` classes: a validation split may hold one): one :class:`InputError`
    naming the first problem. ``allow_empty``: an empty string is a text too (a generated
    continuation may be empty: a model that stops at once), never a missing value."""
    if isinstance(texts, str):
        raise InputError(f"{what}: texts must be a list of strings, not one string")
    texts = list(texts)
    bad = next((i for i, t in enumerate(texts)
                if not (isinstance(t, str) and (allow_empty or t.strip()))), None)
    if bad is not None:
        raise InputError(f"{what}: row {bad} has " + ("no text" if allow_empty else "an empty text"))
    if labels is None:
        return texts, None
    labels = list(labels)
    if len(labels) != len(texts):
        raise InputError(f"{what}: {len(texts)} texts but {len(labels)} labels")
    missing = next((i for i, y in enumerate(labels) if y is None or y != y), None)
    if missing is not None:
        raise InputError(f"{what}: row {missing} has no label")
    if len(set(labels)) < min_classes:
        raise InputError(f"{what}: one class only ({labels[0]!r}); a classifier needs two or more")
    return texts, labels
