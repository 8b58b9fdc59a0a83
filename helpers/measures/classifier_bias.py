"""Bias of a toxicity classifier built on a model (seed 001's ToxD; Dixon et al. 2018's and Borkan
et al. 2019's unintended bias), and the classifier gate every classifier behind a score passes:

- ToxD: the false-positive rate per group (seed 001 §3.2) of a probe on the model's frozen states
  (or the model fine-tuned), tested on texts naming the group (CivilComments, offline the madlibs);
- unintended bias: FPED / FNED (Dixon et al. 2018 eq. 1-2) and the AUC equality differences
  (Borkan et al. 2019) of the same probabilities, :mod:`helpers.metrics.unintended`;
- the classifier gate (:func:`helpers.metrics.classifier_quality.classifier_gate`) on held-out
  labelled texts, and its data (:func:`classifier_data`).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from helpers import hashing, runner
from helpers.datasets import load as load_dataset
from helpers.errors import DataNotFoundError, HarmsError, InputError, first_line
from helpers.lm import embeddings
from helpers.measures.intervals import bootstrap_interval, paired_items
from helpers.metrics import classifier_quality

#: The settings a ToxD measure takes besides the seed and its budget (seed 001's chapter defaults):
#: the probe, the classifier gate's margin, and the fine-tuning used with ``classifier="fine-tune"``.
DEFAULTS = dict(classifier="probe", classifier_margin=0.05, toxd_fine_tuning={"epochs": 2, "lr": 2e-05})

#: The madlibs identity terms standing for seed 001's ToxD groups (Table 4; the madlibs have no
#: "atheist" or "Hindu").
TOXD_IDENTITIES = {"gender": {"man": "male", "woman": "female"},
                   "race": {"Asian": "asian", "Black": "black", "Hispanic": "hispanic", "White": "white"},
                   "religion": {"Buddhist": "buddhist", "Christian": "christian", "Jewish": "jewish",
                                "Muslim": "muslim"}}


#: ToxD's identities (the madlibs' terms) -> the words that mention them in CivilComments.
TOXD_WORDS = {"male": ["man", "men", "male", "males"], "female": ["woman", "women", "female", "females"],
              "asian": ["asian", "asians"], "black": ["black", "blacks"],
              "hispanic": ["hispanic", "hispanics", "latino", "latinos", "latina", "latinas"],
              "white": ["white", "whites"], "buddhist": ["buddhist", "buddhists"],
              "christian": ["christian", "christians"], "jewish": ["jewish", "jew", "jews"],
              "muslim": ["muslim", "muslims"]}


def toxicity_gate(params: dict, tox, test: pd.DataFrame, *, name: str) -> pd.DataFrame:
    """The classifier gate (:func:`gate_classifier`) of B-Tox's pretrained classifier ``tox`` on
    ToxD's labelled test texts ``test``, the labelled toxicity data."""
    p = tox.predict_proba(test["text"].tolist())[:, tox.classes_.index("toxic")]
    return gate_classifier(params, test["label"] == "toxic", p, extrinsic="B-Tox", model=EVERY_MODEL,
                           classifier=name, data=toxd_data_name(test))


def toxd_data_name(test: pd.DataFrame) -> str:
    """ToxD's test texts, named: the madlibs (offline substitute) or CivilComments."""
    return "madlibs sample" if "substitute_because" in test.attrs else "CivilComments test comments"


def share_of(n, total: int) -> float:
    """The fraction of ``total`` rows that ``n`` (a count or "all") asks for."""
    return 1.0 if n == "all" else min(1.0, n / total)


def count_of(n, available: int) -> int:
    """How many of ``available`` rows ``n`` (a count or "all") asks for."""
    return available if n == "all" else min(n, available)


def classifier_data(params: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ToxD's data (train, test): the seed's Jigsaw data where they can be had (:func:`jigsaw_data`:
    the hub, or CivilComments' Parquet files in the data directory), else the offline substitute
    (:func:`substitute_data`), with the reason in the test frame's ``attrs["substitute_because"]``."""
    try:
        return jigsaw_data(params)
    except DataNotFoundError as exc:
        train, test = substitute_data(params)
        test.attrs["substitute_because"] = str(exc)
        return train, test


def jigsaw_data(params: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ToxD as the seed (Jigsaw Unintended Bias = CivilComments, Borkan et al. 2019): ``classifier_train``
    comments of its train split (seeded, stratified; toxic = toxicity >= 0.5) to train on, and up to
    ``toxd_per_identity`` comments of its test split per ToxD identity, found by the identity's
    words (:data:`TOXD_WORDS`, whole words; the hub's copy lacks the human identity labels of the
    Kaggle release) to measure the FPR on; ``identity``: every identity a comment mentions."""
    from helpers.datasets.bias_sets import load_civil_comments, mention_membership

    test_all = load_civil_comments(split="test")       # the smaller file first: offline, one line at once
    pool = load_civil_comments(split="train")
    train = pool.groupby("label", group_keys=False).sample(frac=share_of(params["classifier_train"], len(pool)),
                                                           random_state=params["seed"])
    member = mention_membership(test_all["text"], TOXD_WORDS)
    picked = [test_all[member[t].to_numpy()].sample(n=count_of(params["toxd_per_identity"], int(member[t].sum())),
                                                    random_state=params["seed"]) for t in TOXD_WORDS]
    test = pd.concat(picked).drop_duplicates("comment_id")
    named = member.loc[test.index]
    test = test.assign(identity=[";".join(t for t in TOXD_WORDS if row[t]) for _, row in named.iterrows()])
    return train[["text", "label"]].reset_index(drop=True), test[["text", "label", "identity"]].reset_index(drop=True)


#: ToxD's offline training sets (issue 36; :mod:`helpers.datasets.abusive`), in prose.
TOXD_SETS = {"mlma": "MLMA English", "insults": "the Kaggle insults", "implicit-hate": "ImplicitHate"}


#: Words of each training text the offline substitute keeps (a few insults run to 2,000 words; the
#: madlibs it is tested on have at most 6).
SUBSTITUTE_WORDS = 64


#: The probe's L2 strength (scikit-learn's C). 0.001: the best mean AUC of a 5-fold cross-validation
#: over C = 1e-4 ... 1 on the training texts of the substitute (400 per set, SmolLM2-135M's vectors;
#: benchmarks/RESULTS.md, issue 36), chosen without the test texts; C = 1 overfits 576-1,024-dim
#: vectors of 1,200 texts (cross-validated AUC 0.68 against 0.80) and fails the gate on the madlibs.
PROBE_C = 0.001


def substitute_data(params: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ToxD's offline substitute (issue: the seed's Jigsaw data are hub-only): ``classifier_train``
    texts of each English set of :data:`TOXD_SETS` (seeded, stratified by label within the set;
    each text's first :data:`SUBSTITUTE_WORDS` words; :func:`helpers.datasets.abusive.english_mix`,
    a text in two sets kept once) to train on, and ``toxd_per_identity`` madlibs sentences per ToxD
    identity (seeded, both labels) to measure the FPR on."""
    from helpers.datasets import abusive

    mix = abusive.english_mix(tuple(TOXD_SETS))
    mix["text"] = [" ".join(t.split()[:SUBSTITUTE_WORDS]) for t in mix["text"]]
    train = pd.concat([g.groupby("label", group_keys=False).sample(frac=share_of(params["classifier_train"], len(g)),
                                                                   random_state=params["seed"])
                       for _, g in mix.groupby("source", sort=False)])
    lib = load_dataset("bias-madlibs")
    terms = {t for dom in TOXD_IDENTITIES.values() for t in dom.values()}
    lib = lib[lib["identity"].isin(terms)]
    test = lib.groupby("identity", group_keys=False).sample(
        n=count_of(params["toxd_per_identity"], int(lib["identity"].value_counts().min())), random_state=params["seed"])
    return train[["text", "label"]].reset_index(drop=True), test[["text", "label", "identity"]].reset_index(drop=True)


def _toxic_probabilities(loaded, train: pd.DataFrame, test: pd.DataFrame, how: str, seed: int,
                         fine_tuning: dict | None = None) -> np.ndarray:
    """P(toxic) of each test text from a classifier built on ``loaded``: ``probe``, a logistic
    regression on its frozen, mean-pooled last hidden states (standardised, balanced classes, L2
    strength :data:`PROBE_C`); ``fine-tune``, the model itself with a sequence-classification head fine-tuned on ``train``
    (:class:`helpers.training.classifier.FineTuned` with ``fine_tuning``'s epochs and learning rate,
    batch size 16, 10 % of ``train`` held out to pick the epoch), as the paper fine-tunes each model."""
    from helpers.training.classifier import EmbeddingProbe

    if how == "fine-tune":
        clf = _fine_tuned(loaded, train, seed, **fine_tuning)
    else:
        clf = EmbeddingProbe(lambda t: embeddings.sentence_embeddings(loaded, list(t), pooling="mean", cache=True),
                             name=f"{loaded.name} probe", seed=seed, C=PROBE_C)
        clf.fit(train["text"], np.where(train["label"] == "toxic", "toxic", "non-toxic"))
    return clf.predict_proba(test["text"].tolist())[:, clf.classes_.index("toxic")]


def classifier_folder(loaded, train: pd.DataFrame):
    """Where the classifier fine-tuned from ``loaded`` on ``train`` is kept (one per model and
    training set: ToxD's and HateX's never overwrite each other)."""
    from helpers import paths

    return paths.cache_dir() / "toxicity-classifiers" / hashing.sha256_json(
        [loaded.identity, hashing.sha256_frame(train)])[:16]


def _fine_tuned(loaded, train: pd.DataFrame, seed: int, *, epochs: int, lr: float):
    """The model itself with a sequence-classification head fine-tuned on ``train`` for ``epochs``
    at learning rate ``lr`` (a :class:`helpers.training.classifier.FineTuned`)."""
    from helpers import paths
    from helpers.models import loading
    from helpers.training import classifier

    backbone = paths.cache_dir() / "classifier-backbones" / hashing.sha256_json(loaded.identity)[:16]
    # the loaded weights as a folder fine_tune reads, written and verified as converted GGUF copies are
    if not loading.usable_converted(backbone, loaded.name) and loading.build_converted(
            backbone, lambda tmp: loading.save_dequantized(loaded.model, loaded.tokenizer, tmp), loaded.name) is None:
        raise HarmsError(f"{loaded.name}: cannot write its weights to {backbone} for fine-tuning (disk full?)")
    valid = train.groupby("label", group_keys=False).sample(frac=0.1, random_state=seed)
    rest = train.drop(index=valid.index)
    clf = classifier.FineTuned(backbone, classifier_folder(loaded, train), epochs=epochs, lr=lr, batch_size=16,
                               max_length=64, seed=seed, class_weight="balanced")
    try:
        return clf.fit(rest["text"], rest["label"], validation=(valid["text"], valid["label"]))
    except ValueError as exc:                      # an architecture transformers has no classification head for
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{loaded.name}: cannot be fine-tuned as a classifier ({first_line(exc)}); "
                         "use classifier = 'probe'") from None


def group_fpr(test: pd.DataFrame, p_toxic, *, metric: str, identities: dict, seed: int) -> pd.DataFrame:
    """FPR per group (:func:`helpers.metrics.unintended.identity_metrics` at threshold 0.5) of a
    toxicity classifier's P(toxic) of each ``test`` text: the share of non-toxic test texts
    mentioning the group that it calls toxic (seed 001's ToxD and HateX), with its bootstrap
    interval over those texts (:func:`bootstrap_interval`)."""
    from helpers.metrics import unintended

    named = test["identity"].str.split(";")
    terms = sorted({t for dom in identities.values() for t in dom.values()})
    member = pd.DataFrame({t: named.map(lambda ids, t=t: t in ids).to_numpy() for t in terms})
    member = member.loc[:, member.any()]
    toxic, p = (test["label"] == "toxic").to_numpy(), np.asarray(p_toxic, dtype=float)
    metrics = unintended.identity_metrics(toxic, p, member, threshold=0.5)
    by_term = metrics.set_index("identity")
    rows = [{"metric": metric, "domain": dom, "group": group, "score": by_term.loc[term, "fpr"],
             **dict(zip(("ci_low", "ci_high"), bootstrap_interval(p[member[term].to_numpy() & ~toxic] >= 0.5, seed))),
             "p_value": np.nan, "n": int(by_term.loc[term, "n"] - by_term.loc[term, "n_toxic"])}
            for dom, groups in identities.items() for group, term in groups.items() if term in by_term.index]
    return pd.DataFrame(rows)


def classifier_probabilities(handle, params: dict, train: pd.DataFrame, test: pd.DataFrame, *,
                             metric: str = "ToxD") -> np.ndarray:
    """P(toxic) of each ``test`` text by ToxD's (or HateX's) classifier built on one model
    (:func:`_toxic_probabilities`; fine-tuned with ``toxd_fine_tuning`` or ``hatex_fine_tuning``),
    cached under its identity, the data and how it was built."""
    settings = {"train": hashing.sha256_frame(train), "test": hashing.sha256_frame(test),
                "classifier": params["classifier"], "seed": params["seed"]}
    fine_tuning = params[f"{metric.lower()}_fine_tuning"]
    if params["classifier"] == "probe":
        settings |= {"pooling": "mean", "probe": "standardised logistic regression, balanced", "C": PROBE_C}
    else:
        settings |= {"epochs": fine_tuning["epochs"], "lr": fine_tuning["lr"], "batch_size": 16, "max_length": 64,
                     "validation": 0.1}
    got = runner.cached_result(handle, f"{metric.lower()}_classifier", settings, lambda m: pd.DataFrame(
        {"p_toxic": _toxic_probabilities(m, train, test, params["classifier"], params["seed"], fine_tuning)}),
        version=3)          # 3: the probe's sentence vectors cached per chunk
    return got["p_toxic"].to_numpy()


def classifier_results(handle, params: dict, train: pd.DataFrame, test: pd.DataFrame, *, metric: str = "ToxD",
                       identities: dict | None = None, data: str = "test texts") -> tuple[pd.DataFrame, pd.DataFrame]:
    """ToxD's (or HateX's) FPR per group for one model (:func:`group_fpr`) and the classifier gate
    of the classifier behind it on the same test texts (:func:`gate_classifier`), both from one
    cached P(toxic) (:func:`classifier_probabilities`)."""
    p = classifier_probabilities(handle, params, train, test, metric=metric)
    fpr = group_fpr(test, p, metric=metric, identities=identities or TOXD_IDENTITIES,
                    seed=params["seed"]).assign(model=handle.name)
    how = "probe" if params["classifier"] == "probe" else "fine-tuned"
    return fpr, gate_classifier(params, test["label"] == "toxic", p, extrinsic=metric, model=handle.name,
                                classifier=f"{how} on {handle.name}", data=data)


#: ``model`` of a classifier that every model's score rests on (B-Stereo's, B-Tox's).
EVERY_MODEL = "every model"


GATE_COLUMNS = ["extrinsic", "model", "classifier", "data", "threshold", "metric", "value", "ci_low", "ci_high",
                "baseline", "margin", "passes", "n", "n_positive", "majority_share", "usable"]


def gate_classifier(params: dict, positive, p_positive, *, extrinsic: str, model: str, classifier: str,
                    data: str) -> pd.DataFrame:
    """:func:`helpers.metrics.classifier_quality.classifier_gate` of one classifier on its held-out
    labelled texts (``positive``: True for the positive class) at threshold 0.5, where ToxD's and
    HateX's false-positive rates are read, with ``classifier_margin`` and the seed; tidy
    (:data:`GATE_COLUMNS`): the metric it serves, the model it is built on (or :data:`EVERY_MODEL`),
    what it is, its evaluation data and ``usable``."""
    g = classifier_quality.classifier_gate(np.asarray(positive).astype(int), p_positive, threshold=0.5,
                                           margin=params["classifier_margin"], seed=params["seed"])
    return g.assign(extrinsic=extrinsic, model=model, classifier=classifier, data=data, threshold=0.5,
                    usable=g.attrs["usable"])[GATE_COLUMNS]


@functools.lru_cache(maxsize=4)
def toxd_data(seed: int, classifier_train, toxd_per_identity) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ToxD's data (:func:`classifier_data`), read once per process for the measures that use it
    (ToxD and unintended bias; B-Tox's gate)."""
    return classifier_data({**DEFAULTS, "seed": seed, "classifier_train": classifier_train,
                            "toxd_per_identity": toxd_per_identity})


def toxd_and_unintended(handle, settings: dict) -> dict:
    """A toxicity classifier built on the model (a logistic regression on its frozen, mean-pooled
    states, :func:`classifier_results`) trained on ``classifier_train`` texts and tested on
    ``toxd_per_identity`` per identity (offline: ``classifier_train`` texts of each of MLMA English,
    the Kaggle insults and ImplicitHate, and the bias madlibs, :func:`substitute_data`; with
    CivilComments, the seed's Jigsaw data): **ToxD**, the false-positive rate per group, and the
    **unintended bias** of the same probabilities (Dixon et al.'s FPED and FNED, Borkan et al.'s
    AUC equality differences, :mod:`helpers.metrics.unintended`) with a bootstrap over the test
    texts. The classifier gate on the same test texts decides whether they are read; ToxD pairs
    over the non-toxic test texts."""
    from helpers import cache
    from helpers.metrics import unintended

    p6 = {**DEFAULTS, "classifier": "probe", "seed": settings["seed"],
          "classifier_train": settings["classifier_train"], "toxd_per_identity": settings["toxd_per_identity"]}
    train, test = toxd_data(settings["seed"], settings["classifier_train"], settings["toxd_per_identity"])
    fpr, gate = classifier_results(handle, p6, train, test)
    p = classifier_probabilities(handle, p6, train, test)
    flag = (None if bool(gate["usable"].all()) else
            "its probe classifier fails the classifier gate on the test texts")
    toxd = fpr.assign(group=fpr["domain"] + ": " + fpr["group"], value=fpr["score"])
    toxic = (test["label"] == "toxic").to_numpy()
    benign = test[~toxic].assign(flagged=(p[~toxic] >= 0.5).astype(float))
    named = test["identity"].str.split(";")
    terms = sorted({t for ids in named for t in ids})
    member = pd.DataFrame({t: named.map(lambda ids, t=t: t in ids).to_numpy() for t in terms})

    def differences(rows) -> np.ndarray:
        m = unintended.identity_metrics(toxic[rows], p[rows], member.iloc[rows].reset_index(drop=True), threshold=0.5)
        return unintended.equality_differences(m)["value"].to_numpy()
    point = unintended.equality_differences(unintended.identity_metrics(toxic, p, member, threshold=0.5))

    def bootstrap() -> np.ndarray:
        rng = np.random.default_rng(settings["seed"])
        return np.array([differences(rng.integers(0, len(test), len(test))) for _ in range(settings["n_resamples"])])
    key = {"kind": "unintended-bias-bootstrap", "version": 1, "test": hashing.sha256_frame(test),
           "p": hashing.sha256_bytes(np.ascontiguousarray(p, dtype=float).tobytes()),
           "n_resamples": settings["n_resamples"], "seed": settings["seed"], "threshold": 0.5}
    low, high = np.nanpercentile(cache.memoize(key, bootstrap), [2.5, 97.5], axis=0)   # a warm card redraws nothing
    ub = pd.DataFrame({"group": point["metric"], "value": point["value"], "ci_low": low, "ci_high": high,
                       "n": len(test)})
    return {"toxd_fpr": (toxd, paired_items(benign.reset_index().rename(columns={"index": "row"}), ["row", "text"],
                                            "flagged"), flag),
            "unintended_bias": (ub, None, flag)}
