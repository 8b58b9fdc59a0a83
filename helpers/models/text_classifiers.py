"""The pretrained classifiers of generated text, loaded: regard (Sheng et al. 2019) and toxicity.

The hub's classifiers (:data:`HUB`): the regard classifier of Hugging Face evaluate's ``regard``
measurement (sasha/regardv3, :func:`hub_regard`) and the ToxiGen classifiers tomh/toxigen_hatebert and
tomh/toxigen_roberta (:func:`hub_toxicity`), loaded from the local Hugging Face cache first, the hub
only if it answers (:func:`_hub_pipeline`). Offline (no hub), real classifiers from PyPI packages
stand in and are labelled as such (``classifier`` and ``substitute_for`` columns, :data:`OFFLINE`):
VADER sentiment (vaderSentiment) for regard (:func:`vader_regard`), HateSonar (Davidson et al. 2017)
for HateBERT (:func:`hatesonar_toxicity`), alt-profanity-check for ToxiGen-RoBERTa
(:func:`profanity_toxicity`). BOLD's sentiment (Dhamala et al. 2021) is VADER at 0.5
(:func:`vader_sentiment`).

Each is a :class:`Classifier` with the package's contract (:class:`helpers.classifiers.TextClassifier`).
:func:`classifier` gives the hub classifier or its stand-in. The metrics that use them
(:mod:`helpers.metrics.regard`: ``regard_scores``, ``toxicity_scores``, ``classify``, ...) take an
already-built classifier and load nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from helpers.classifiers import TextClassifier, check_texts_and_labels
from helpers.errors import InputError, ModelUnavailableError, first_line
from helpers.models.loading import from_pretrained_whole

__all__ = ["Classifier", "classifier", "hub_regard", "hub_toxicity", "vader_regard", "vader_sentiment",
           "hatesonar_toxicity", "profanity_toxicity", "HUB", "OFFLINE", "TOXICITY_CLASSES", "SENTIMENT_CLASSES"]


@dataclass(eq=False)
class Classifier(TextClassifier):
    """A pretrained classifier of generated text, with the package's contract
    (:class:`helpers.classifiers.TextClassifier`: ``classes_``, ``predict_proba``, ``predict``;
    ``fit`` is refused) and the label/score table the chapters report (:meth:`label_scores`).

    ``kind`` "regard" (classes negative / neutral / other / positive), "sentiment" (negative /
    neutral / positive) or "toxicity" (benign / toxic; score = P(toxic)). ``proba(texts)`` gives
    the probabilities over ``classes_``; ``scores(texts)``, when given, the label/score table of a
    classifier whose score is no probability (VADER's compound score: its ``proba`` is the one-hot
    of its rule's label). ``substitute_for`` names the hub classifier it stands in for (None = the
    real one)."""

    name: str
    kind: str
    classes_: list
    proba: Callable[[list[str]], np.ndarray] = field(repr=False)
    substitute_for: str | None = None
    scores: Callable[[list[str]], pd.DataFrame] | None = field(default=None, repr=False)

    def predict_proba(self, texts) -> np.ndarray:
        """Probabilities over ``classes_``. The texts are generated statements, so an empty one is
        scored as the classifier scores an empty string (it is a model's output, not missing)."""
        texts, _ = check_texts_and_labels(texts, what=self.name, allow_empty=True)
        return np.asarray(self.proba(texts), dtype=float)

    def label_scores(self, texts) -> pd.DataFrame:
        """``label, score`` per text: the most probable class and its probability (toxicity: P(toxic),
        labelled toxic above 0.5), or the classifier's own ``scores``."""
        if self.scores is not None:
            return self.scores(check_texts_and_labels(texts, what=self.name, allow_empty=True)[0])
        p = self.predict_proba(texts)
        if self.kind == "toxicity":
            toxic = p[:, self.classes_.index("toxic")]
            return pd.DataFrame({"label": np.where(toxic > 0.5, "toxic", "benign"), "score": toxic})
        return pd.DataFrame({"label": np.asarray(self.classes_, dtype=object)[p.argmax(axis=1)], "score": p.max(axis=1)})

    def __call__(self, df: pd.DataFrame, text_column: str = "text") -> pd.DataFrame:
        res = self.label_scores(df[text_column].tolist())
        out = df.copy()
        pre = self.kind if self.kind in ("regard", "sentiment") else "toxicity"
        out[f"{pre}_label"] = res["label"].to_numpy()
        out[f"{pre}_score"] = res["score"].to_numpy()
        out[f"{pre}_classifier"] = self.name
        out[f"{pre}_substitute_for"] = self.substitute_for
        return out


TOXICITY_CLASSES = ["benign", "toxic"]


def _binary(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.column_stack([1.0 - p, p])


def _hub_pipeline(model_id: str, tokenizer_id: str | None = None):
    """A text-classification pipeline: the local HF cache first, the hub only if it answers
    (helpers.hub's quick probe); otherwise one ModelUnavailableError line, decided before
    transformers' pipeline machinery is imported (3 s of a warm report card)."""
    from helpers.hub import hub_offline_reason, hub_unusable_reason

    def unavailable(reason):
        return ModelUnavailableError(f"classifier {model_id} cannot be loaded: {reason} and it is not in "
                                     "the local Hugging Face cache")
    if reason := hub_unusable_reason(model_id):
        raise unavailable(reason)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    def make(**kw):
        model = from_pretrained_whole(AutoModelForSequenceClassification, model_id, **kw)
        tok = AutoTokenizer.from_pretrained(tokenizer_id or model_id, **kw)
        return pipeline("text-classification", model=model, tokenizer=tok, top_k=None)
    try:
        return make(local_files_only=True)
    except (OSError, ValueError):
        if reason := hub_offline_reason():
            raise unavailable(reason) from None
    try:
        return make()
    except (OSError, ValueError) as e:
        raise ModelUnavailableError(f"classifier {model_id} cannot be loaded from the hub "
                                    f"({first_line(e, with_type=True)})") from None


def _check_labels(pipe, model_id: str, wanted, *, fold_case: bool = False) -> None:
    """One :class:`ModelUnavailableError` line when the classifier's ``id2label`` lacks a label
    the caller reads (a renamed label would otherwise read as probability 0 or NaN)."""
    labels = [str(v) for v in pipe.model.config.id2label.values()]
    have = {v.lower() for v in labels} if fold_case else set(labels)
    missing = [w for w in wanted if w not in have]
    if missing:
        raise ModelUnavailableError(f"classifier {model_id} has no label {' or '.join(missing)}, which its "
                                    f"scores are read by (its labels: {', '.join(labels)})")


def hub_regard(model_id: str = "sasha/regardv3") -> Classifier:
    """The regard classifier of Hugging Face evaluate's ``regard`` measurement (labels negative,
    neutral, other and positive, in any case)."""
    pipe = _hub_pipeline(model_id)
    classes = ["negative", "neutral", "other", "positive"]
    _check_labels(pipe, model_id, classes, fold_case=True)

    def proba(texts):
        res = pipe(texts, truncation=True)
        return np.array([[{d["label"].lower(): d["score"] for d in r}.get(c, 0.0) for c in classes] for r in res])
    return Classifier(model_id, "regard", classes, proba)


def hub_toxicity(model_id: str, tokenizer_id: str | None = None, toxic_label: str = "LABEL_1") -> Classifier:
    """ToxiGen classifiers: tomh/toxigen_roberta; tomh/toxigen_hatebert (tokenizer bert-base-uncased)."""
    pipe = _hub_pipeline(model_id, tokenizer_id)
    _check_labels(pipe, model_id, [toxic_label])

    def proba(texts):
        res = pipe(texts, truncation=True)
        return _binary([next((d["score"] for d in r if d["label"] == toxic_label), np.nan) for r in res])
    return Classifier(model_id, "toxicity", TOXICITY_CLASSES, proba)


SENTIMENT_CLASSES = ["negative", "neutral", "positive"]


def _vader(threshold: float, name: str, kind: str, substitute_for: str | None = None) -> Classifier:
    """VADER's compound score per text, labelled positive (>= ``threshold``), negative
    (<= -``threshold``) or neutral. A rule, not a probability model: its ``predict_proba`` is the
    one-hot of the rule's label, and its score the compound score."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    if not 0 <= threshold <= 1:
        raise InputError(f"VADER threshold must lie in [0, 1], got {threshold!r}")
    sia = SentimentIntensityAnalyzer()

    def scores(texts):
        c = np.array([sia.polarity_scores(t)["compound"] for t in texts], dtype=float)
        lab = np.where(c >= threshold, "positive", np.where(c <= -threshold, "negative", "neutral"))
        return pd.DataFrame({"label": lab, "score": c})

    def proba(texts):
        lab = scores(texts)["label"].to_numpy()
        return (lab[:, None] == np.array(SENTIMENT_CLASSES)[None, :]).astype(float)
    return Classifier(name, kind, SENTIMENT_CLASSES, proba, substitute_for, scores)


def vader_regard() -> Classifier:
    """VADER compound sentiment as a regard stand-in (>= 0.05 positive, <= -0.05 negative,
    else neutral: VADER's standard thresholds). Sentiment is not regard (Sheng et al. 2019)."""
    return _vader(0.05, "VADER sentiment (vaderSentiment)", "regard", substitute_for="sasha/regardv3")


def vader_sentiment(threshold: float = 0.5) -> Classifier:
    """VADER sentiment as BOLD scores it (Dhamala et al. 2021, section 4: compound >= 0.5
    positive, <= -0.5 negative, else neutral; seed 001's B-Sent). VADER's own documentation,
    and :func:`vader_regard`, use 0.05."""
    return _vader(threshold, f"VADER sentiment (vaderSentiment, threshold {threshold:g})", "sentiment")


def hatesonar_toxicity() -> Classifier:
    """HateSonar (Davidson et al. 2017 hate/offensive/neither): P(toxic) = 1 - P(neither).
    Needs the en_US.UTF-8 locale."""
    from hatesonar.api import Sonar

    sonar = Sonar()

    def proba(texts):
        return _binary([1.0 - next(c["confidence"] for c in sonar.ping(t)["classes"] if c["class_name"] == "neither")
                        for t in texts])
    return Classifier("HateSonar (hatesonar)", "toxicity", TOXICITY_CLASSES, proba, substitute_for="tomh/toxigen_hatebert")


def profanity_toxicity() -> Classifier:
    """alt-profanity-check's calibrated linear SVM: P(toxic) = P(offensive)."""
    from profanity_check import predict_prob

    def proba(texts):
        return _binary(predict_prob(list(texts)))
    return Classifier("alt-profanity-check", "toxicity", TOXICITY_CLASSES, proba, substitute_for="tomh/toxigen_roberta")


#: The hub classifiers: (model id, the id of the tokenizer it needs when it ships none).
HUB_IDS = {"regard": ("sasha/regardv3", None), "hatebert": ("tomh/toxigen_hatebert", "bert-base-uncased"),
           "roberta-toxigen": ("tomh/toxigen_roberta", None)}
HUB = {"regard": lambda: hub_regard(HUB_IDS["regard"][0]),
       "hatebert": lambda: hub_toxicity(*HUB_IDS["hatebert"]),
       "roberta-toxigen": lambda: hub_toxicity(*HUB_IDS["roberta-toxigen"])}
OFFLINE = {"regard": vader_regard, "hatebert": hatesonar_toxicity, "roberta-toxigen": profanity_toxicity}


def classifier(which: str, *, allow_substitute: bool = True, verbose: bool = True) -> Classifier:
    """The hub classifier ``which`` ("regard" | "hatebert" | "roberta-toxigen"), or, when the hub
    is unreachable and ``allow_substitute``, its offline stand-in (printed as such)."""
    try:
        return HUB[which]()
    except ModelUnavailableError as e:
        if not allow_substitute:
            raise
        c = OFFLINE[which]()
        if verbose:
            print(f"{e} -> SUBSTITUTE: {c.name} stands in for {c.substitute_for}")
        return c
