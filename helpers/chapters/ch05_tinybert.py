"""Chapter 05: does a distilled student amplify its teacher's bias? The TinyBERT bias suite.

Seed 003 (Potala et al., a student project) fine-tuned a BERT-base teacher and distilled a
TinyBERT-4L-312D student on two tasks (MLMA hate speech, IMDB sentiment) and ran six bias tests
on both. This chapter reruns them properly:

- classifiers: the teacher is a real pretrained encoder fine-tuned per task
  (:func:`helpers.training.classifier.fine_tune`; offline MiniLM-L6, with the hub BERT-base), the
  student TinyBERT-shaped and distilled from it (:func:`helpers.training.tinybert.distill_classifier`),
  with TinyBERT's data augmentation when ``augment`` is set (:mod:`helpers.training.augment`);
- the tests on classifiers: unintended bias on the madlibs (:mod:`helpers.metrics.unintended`),
  gender-swapped IMDB reviews (:mod:`helpers.metrics.gender_swap`), SEAT on each classifier's
  encoder (:mod:`helpers.metrics.association`);
- the tests on language models (the seed's log-probability bias, categorical bias and StereoSet
  tests ran on its classifiers loaded with a *random* masked-LM head, see
  docs/UPSTREAM.md): a teacher language model and students distilled from it —
  offline SmolLM2-135M and the zoo's students distilled from it (chapter 04), each through the
  language-model quality gate (:mod:`helpers.metrics.quality`);
- every comparison of student with teacher is a statistic with an interval
  (:func:`helpers.stats.bootstrap_difference`) and a verdict (:func:`helpers.stats.verdict`); the
  conclusion counts only the verdicts that survive Holm's correction over the interpreted measures
  (:func:`familywise`), and a measure resting on a model that fails its gate (language-model or
  classifier, SEAT included) is shown, never counted; StereoSet's verdict is on SS (|SS - 50|),
  its LMS difference reported apart, since ICAT also falls with the LMS alone.

Each section function writes its tables under ``results/05_tinybert_bias_suite/`` and returns
what the notebook shows, a :class:`helpers.chapters.common.Section` whose ``data`` holds what later
sections need (``data["verdicts"]``: the section's student - teacher verdict rows).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import cache, hashing, models, paths, published, report, runner, stats
from helpers.chapters import common
from helpers.chapters.common import Section, Var, call
from helpers.datasets import load as load_dataset
from helpers.errors import InputError
from helpers.measures.associations import bec_pro_associations, cb_log_probs, sample_rows as _sample
from helpers.measures.stereotypes import stereoset_scored, stereoset_tasks
from helpers.metrics import classifier_quality
from helpers.training import augment as augmentation
from helpers.training import classifier, tinybert

CHAPTER = "05_tinybert_bias_suite"
TASKS = ("hate", "sentiment")
PARAMETERS = ("teacher", "student_init", "lm_models", "n_train", "n_validation", "n_test", "epochs",
              "distill_epochs", "max_length", "madlibs_sample", "threshold", "identity_match", "swap_sample",
              "bec_pro_sample", "cb_sample", "stereoset_clusters_per_target", "n_resamples", "seed", "device",
              "min_ratio", "augment", "classifier_margin")
DEFAULTS = dict(teacher="minilm-l6", student_init="pruned", lm_models="zoo-distilled", n_train=1000,
                n_validation=200, n_test=400, epochs=3, distill_epochs=(1, 1), max_length=64, madlibs_sample=2000,
                threshold="equal-error", identity_match="word", swap_sample=200, bec_pro_sample=540, cb_sample=(5, 4),
                stereoset_clusters_per_target=1, n_resamples=1000, seed=0, device="cpu", min_ratio=2.0,
                augment=False, classifier_margin=0.05)
#: Training settings the chapter does not expose (the seed's TinyBERT recipe, scaled to CPU).
#: Epochs are chosen by macro F1 on the validation split: on MLMA (88 % toxic) weighted F1 ranks
#: the epoch closest to the majority class first (MiniLM-L6 on 1,000 tweets: macro F1 0.505 chosen
#: by weighted F1, 0.536 by macro F1; benchmarks/RESULTS.md, "MLMA English").
TRAINING = dict(batch_size=16, lr=1e-4, distill_lr=1e-4, select_by="f1_macro")
VERDICT_COLUMNS = ["test", "measure", "interpreted", "teacher", "student", "difference", "ci_low", "ci_high", "n",
                   "verdict"]
#: The student's shape (TinyBERT-4L-312D; tests use a smaller one with their tiny teachers).
STUDENT_SHAPE = dict(tinybert.TINYBERT_SHAPE)
#: Resamples of Table 4's bootstrap: every resample recomputes 50 identities x 5 rates and AUCs.
TABLE4_RESAMPLES = 200
LABELS = {"hate": ("non-toxic", "toxic"), "sentiment": ("negative", "positive")}
POSITIVE = {"hate": "toxic", "sentiment": "positive"}


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`helpers.chapters.common.start`)."""
    params, table = common.start(CHAPTER, namespace, PARAMETERS, DEFAULTS, resolve_models=False)
    for name in ("n_train", "n_validation", "n_test", "madlibs_sample", "swap_sample", "bec_pro_sample"):
        value = params[name]
        if isinstance(value, bool) or not (value == "all" or isinstance(value, (int, np.integer)) and value > 0):
            raise InputError(f"parameter {name} = {value!r}: a positive integer or 'all'")
    if params["identity_match"] not in ("word", "substring"):
        raise InputError(f"parameter identity_match = {params['identity_match']!r}: 'word' or 'substring'")
    for name in ("distill_epochs", "cb_sample"):
        value = params[name]
        if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) and v >= 0 for v in value)):
            raise InputError(f"parameter {name} = {value!r}: a pair of non-negative integers")
    for task in TASKS:                                                # a bad value: one line
        augmentation.resolve(augment_for(params, task), seed=params["seed"], mlm_handle=False)
    classifier_quality.check_margin(params["classifier_margin"])
    return params, table


def augment_for(params: dict, task: str):
    """The ``augment`` setting of one task: ``augment`` itself, or its entry for ``task`` when it is
    a dict keyed by task (``{"hate": {...}, "sentiment": False}``: the seed augments MLMA only; a
    task left out is not augmented)."""
    augment = params["augment"]
    if isinstance(augment, dict) and augment and set(augment) <= set(TASKS):
        return augment.get(task, False)
    return augment


def _digest(*parts) -> str:
    """SHA-256 of arrays and frames (a bootstrap's inputs) for its cache key."""
    pieces = []
    for x in parts:
        if isinstance(x, pd.DataFrame):
            pieces.append(hashing.sha256_frame(x))
        else:
            pieces.append(hashing.sha256_bytes(np.ascontiguousarray(np.asarray(x, dtype=float)).tobytes()))
    return hashing.sha256_json(pieces)


def bootstrap(params: dict, inputs: str, statistic, n: int, *, n_resamples: int | None = None) -> dict:
    """:func:`helpers.stats.bootstrap_difference` memoised on disk under ``inputs`` (a digest of
    everything the statistic reads), ``n``, the resamples and the seed: a warm rebuild redraws
    nothing."""
    n_resamples = n_resamples or params["n_resamples"]
    key = {"kind": "bootstrap-difference", "version": 1, "inputs": inputs, "n": n, "n_resamples": n_resamples,
           "seed": params["seed"]}
    return cache.memoize(key, lambda: stats.bootstrap_difference(statistic, n, n_resamples=n_resamples,
                                                                 seed=params["seed"]))


# ---------------------------------------------------------------- data and classifiers

@dataclass
class TaskData:
    """One task's seeded splits (``text``, ``label``) and what they were drawn from."""

    task: str
    train: pd.DataFrame
    validation: pd.DataFrame
    test: pd.DataFrame
    source: str


def task_data(params: dict, task: str) -> TaskData:
    """MLMA English (hate: single-label ``normal`` = non-toxic, seed 002's and the data's rule) or
    IMDB (sentiment), split train / validation / test with the parameter seed and sampled to the
    parameter sizes (stratified by label)."""
    seed = params["seed"]
    if task == "hate":
        from helpers.datasets.reviews import split_labels

        df = load_dataset("mlma", language="en")[["text", "label"]]
        df = df.assign(split=split_labels(df["label"], validation=0.1, test=0.2, seed=seed).to_numpy())
        source = "mlma (English), seeded 70/10/20 split"
    elif task == "sentiment":
        df = load_dataset("imdb", seed=seed)[["text", "label", "split"]]
        source = "imdb (aclImdb train, 25,000 reviews), seeded 70/10/20 split"
    else:
        raise InputError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    parts = {s: _sample(df[df["split"] == s][["text", "label"]], params[f"n_{s}"], seed, stratify="label")
             for s in ("train", "validation", "test")}
    return TaskData(task, parts["train"], parts["validation"], parts["test"], source)


def data_table(data: dict[str, TaskData]) -> pd.DataFrame:
    """Rows per task and split: n and the share of the positive class."""
    rows = [{"task": t, "source": d.source, "split": s, "n": len(getattr(d, s)),
             "positive_share": float((getattr(d, s)["label"] == POSITIVE[t]).mean())}
            for t, d in data.items() for s in ("train", "validation", "test")]
    return common.save(pd.DataFrame(rows), CHAPTER, "data_splits")


@dataclass
class Classifiers:
    """Per task: the fine-tuned teacher and the distilled student
    (:class:`helpers.training.classifier.FineTuned`, each in its own folder), and timings."""

    teacher: dict = field(default_factory=dict)
    student: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)


def _work_dir(params: dict, task: str) -> Path:
    return paths.cache_dir() / "tinybert-classifiers" / task


def train_classifiers(params: dict, data: dict[str, TaskData]) -> Classifiers:
    """Fine-tune the teacher (class-balanced cross-entropy and epochs chosen by macro F1: MLMA is
    88 % toxic, and a teacher that calls everything toxic has no false positives to compare) and
    distil the student (chosen the same way) for every
    task (each reused from the cache when its inputs and settings are unchanged: see the
    training functions)."""
    found = Classifiers()
    source = models.encoder_source(params["teacher"])
    for task, d in data.items():
        work = _work_dir(params, task)
        t0 = time.time()
        teacher = classifier.FineTuned(source, work / "teacher", epochs=params["epochs"], lr=TRAINING["lr"],
                                       batch_size=TRAINING["batch_size"], max_length=params["max_length"],
                                       seed=params["seed"], class_weight="balanced", metric=TRAINING["select_by"])
        found.teacher[task] = teacher.fit(d.train["text"], d.train["label"],
                                          validation=(d.validation["text"], d.validation["label"]))
        t1 = time.time()
        student = tinybert.distill_classifier(
            teacher.folder, d.train, d.validation, out_dir=work / "student", init=params["student_init"],
            shape=STUDENT_SHAPE,
            intermediate_epochs=params["distill_epochs"][0], prediction_epochs=params["distill_epochs"][1],
            lr=TRAINING["distill_lr"], batch_size=TRAINING["batch_size"], max_length=params["max_length"],
            seed=params["seed"], augment=augment_for(params, task), metric=TRAINING["select_by"])
        found.student[task] = classifier.FineTuned.load(student, max_length=params["max_length"])
        found.seconds[task] = {"teacher_call": round(t1 - t0, 1), "student_call": round(time.time() - t1, 1)}
    return found


def _positive(task: str, clf, texts) -> np.ndarray:
    """P(positive class) of each text (toxic for hate, positive for sentiment)."""
    return clf.cached_predict_proba(texts)[:, clf.classes_.index(POSITIVE[task])]


def task_quality(params: dict, data: dict[str, TaskData], found: Classifiers) -> pd.DataFrame:
    """Tables 1-2: F1, weighted F1, recall, precision and accuracy of teacher and student on each
    task's test split, with the parameter counts, each model's inference speed (examples per
    second, measured now on the test split) and the training time recorded by its manifest."""
    rows = []
    for task, d in data.items():
        y = (d.test["label"] == POSITIVE[task]).astype(int).to_numpy()
        for role in ("teacher", "student"):
            clf = getattr(found, role)[task]
            t0 = time.time()
            clf.predict_proba(d.test["text"].head(64))
            speed = min(64, len(d.test)) / max(time.time() - t0, 1e-9)
            p = _positive(task, clf, d.test["text"])
            metrics = classifier.classification_metrics(y, (p >= 0.5).astype(int), labels=[0, 1])
            man = classifier.read_manifest(clf.folder)
            rows.append({"task": task, "model": role, **dict(zip(metrics["metric"], metrics["value"])),
                         "parameters": _parameters(clf.folder), "examples_per_second": round(speed, 1),
                         "training_seconds": man.get("seconds_last_call")})
    return common.save(pd.DataFrame(rows), CHAPTER, "task_quality")


def classifier_gates(params: dict, data: dict[str, TaskData], found: Classifiers,
                     u: "Unintended | None" = None) -> pd.DataFrame:
    """The classifier quality gate (:func:`helpers.metrics.classifier_quality.classifier_gate`) of
    teacher and student on each task's test split at threshold 0.5 and, with ``u``, of the hate
    models on the madlibs sample at the threshold their bias is measured with. Tidy: task, model,
    data, metric, value, ci_low, ci_high, baseline, margin, passes, n, n_positive,
    majority_share, usable."""

    sets = [(task, role, f"{task} test split", (d.test["label"] == POSITIVE[task]).astype(int).to_numpy(),
             lambda task=task, role=role, d=d: _positive(task, getattr(found, role)[task], d.test["text"]), 0.5)
            for task, d in data.items() for role in ("teacher", "student")]
    if u is not None:
        y = (u.sample["label"] == "toxic").astype(int).to_numpy()
        sets += [("hate", role, "madlibs sample", y, lambda role=role: u.scores[role], u.thresholds[role])
                 for role in ("teacher", "student")]
    frames = []
    for task, role, where, y, scores, threshold in sets:
        g = classifier_quality.classifier_gate(y, scores(), threshold=threshold, margin=params["classifier_margin"],
                                               n_resamples=params["n_resamples"], seed=params["seed"])
        frames.append(g.assign(task=task, model=role, data=where, threshold=threshold, usable=g.attrs["usable"]))
    cols = ["task", "model", "data", "threshold", "metric", "value", "ci_low", "ci_high", "baseline", "margin",
            "passes", "n", "n_positive", "majority_share", "usable"]
    return pd.concat(frames, ignore_index=True)[cols]


#: Why a cell of the classifier gate's table is empty ("—" on the page).
GATE_WHY = {"margin": "accuracy is shown, not gated", "passes": "accuracy is shown, not gated"}


def usable_classifiers(gates: pd.DataFrame, task: str) -> bool:
    """Both models of ``task`` pass the classifier gate on every evaluation set shown."""
    return bool(gates.loc[gates["task"] == task, "usable"].all())


def gate_sentence(gates: pd.DataFrame, *, again: bool = False) -> str:
    """Which classifiers pass the gate, from the table (margin and statistics named). ``again``: the
    rule was stated above, so it is referred to, not repeated."""
    per = gates.drop_duplicates(["task", "model", "data"])
    failed = per[~per["usable"]]
    margin = gates["margin"].dropna().iloc[0]
    failing = [f"the {task} {report.and_list(list(g['model']))} on the {data}"
               for (task, data), g in failed.groupby(["task", "data"], sort=False)]
    if again:
        passing = report.count_of(int(per["usable"].sum()), len(per), "(model, evaluation set) pair",
                                  ("passes", "pass"))
        return (f"By the classifier gate (above), {passing} here"
                + (f"; {report.and_list(failing)} fail{'s' if len(failed) == 1 else ''}, so what follows is shown, "
                   "not interpreted." if len(failed) else "."))
    text = (f"A classifier is usable when, {report.classifier_gate_rule(margin, where='on each evaluation set')}. "
            + report.sentence_case(report.count_of(int(per["usable"].sum()), len(per), "(model, evaluation set) pair",
                                                   ("passes", "pass")))
            + " (the `usable` column).")
    if len(failed):
        text += (f"\n\nFailing: {'; '.join(failing)}. Their bias numbers are shown below but not interpreted: a classifier no "
                 "better than the majority class or chance has false-positive and false-negative gaps that measure "
                 "nothing.")
        if (failed["task"] == "hate").any():
            text += "\n\n" + report.MLMA_OFFLINE_BOUND
    return text


def quality_sentence(ratios: dict, gates: pd.DataFrame) -> str:
    """Student against teacher per task (``ratios``: :func:`classifier_section`'s facts): its share of
    the parameters and speed-up, and its weighted F1 only on the tasks whose classifiers pass the gate."""
    shares = sorted({f"{ratios[t]['parameter_share']:.0%}" for t in TASKS})
    text = (f"The student has {' to '.join(shares)} of the teacher's parameters and classifies test examples "
            + report.and_list([f"{ratios[t]['speedup']:.1f}x as fast on {t}" for t in TASKS]) + ".")
    ok = [t for t in TASKS if usable_classifiers(gates, t)]
    off = [t for t in TASKS if t not in ok]
    if ok:
        text += " Its weighted F1 is " + report.and_list(
            [f"{ratios[t]['student_f1_weighted']:.3f} against the teacher's {ratios[t]['teacher_f1_weighted']:.3f} "
             f"on {t}" for t in ok]) + "."
    if off:
        failed = gates[~gates["usable"].astype(bool)].drop_duplicates(["task", "model"])
        names = [f"{t} {report.and_list(list(g['model']))}" for t, g in failed.groupby("task", sort=False)]
        text += (f" The {report.and_list(names)} "
                 f"fail{'s' if len(failed) == 1 else ''} the classifier gate, so the {report.and_list(off)} F1 is "
                 "shown, not read.")
    return text


def _parameters(model_dir: Path) -> int:
    man = classifier.read_manifest(model_dir)
    if "parameters" in man:
        return int(man["parameters"]["student"])
    from transformers import AutoModelForSequenceClassification

    return sum(p.numel() for p in AutoModelForSequenceClassification.from_pretrained(model_dir).parameters())


# ---------------------------------------------------------------- 1. unintended bias (madlibs)

@dataclass
class Unintended:
    """The madlibs sample, each hate model's P(toxic), per-identity metrics and the identity terms."""

    sample: pd.DataFrame
    scores: dict
    metrics: dict
    terms: list
    thresholds: dict


def unintended_bias(params: dict, found: Classifiers) -> Unintended:
    """Score a seeded, template- and label-stratified sample of the released madlibs
    (:func:`helpers.datasets.madlibs.load_madlibs`) with both hate-speech models and compute the
    per-identity rates and AUCs (:func:`helpers.metrics.unintended.identity_metrics`) with
    membership by ``identity_match``."""
    from helpers.datasets import madlibs
    from helpers.metrics import unintended

    df = load_dataset("bias-madlibs")
    sample = _sample(df, params["madlibs_sample"], params["seed"], stratify="template")
    terms = sorted(t for t in df["identity"].unique() if t)
    member = madlibs.mentions(sample["text"], terms, match=params["identity_match"])
    y = (sample["label"] == "toxic").astype(int).to_numpy()
    scores, metrics, thresholds = {}, {}, {}
    for role in ("teacher", "student"):
        scores[role] = _positive("hate", getattr(found, role)["hate"], sample["text"])
        m = unintended.identity_metrics(y, scores[role], member, threshold=params["threshold"])
        metrics[role], thresholds[role] = m.assign(model=role), m.attrs["threshold"]
    common.save(pd.concat(metrics.values(), ignore_index=True), CHAPTER, "madlibs_identity_metrics")
    return Unintended(sample, scores, metrics, terms, thresholds)


def identity_term_toxicity(params: dict, found: Classifiers, terms: list[str]) -> pd.DataFrame:
    """Figure 1: each hate model's P(toxic) of every identity term alone (ideally near 0)."""
    rows = [{"identity": t, "model": role, "p_toxic": float(p)}
            for role in ("teacher", "student")
            for t, p in zip(terms, _positive("hate", getattr(found, role)["hate"], terms))]
    return common.save(pd.DataFrame(rows), CHAPTER, "figure1_identity_term_toxicity")


def madlibs_quality(u: Unintended) -> pd.DataFrame:
    """Table 3: F1, weighted F1, recall, precision, accuracy of the hate models on the madlibs
    sample (at each model's threshold)."""
    y = (u.sample["label"] == "toxic").astype(int).to_numpy()
    rows = []
    for role, p in u.scores.items():
        m = classifier.classification_metrics(y, (p >= u.thresholds[role]).astype(int), labels=[0, 1])
        rows.append({"model": role, "threshold": u.thresholds[role], **dict(zip(m["metric"], m["value"]))})
    return common.save(pd.DataFrame(rows), CHAPTER, "table3_madlibs_quality")


def equality_table(params: dict, u: Unintended, *, match: str | None = None) -> pd.DataFrame:
    """Table 4: FPED, FNED and the three AUC equality differences of teacher and student, the
    student's relative difference (the seed's "% diff"), a paired bootstrap interval of
    student - teacher over madlibs sentences, and the verdict (higher = more bias).
    ``match`` recomputes with another identity matching (the seed's substring defect)."""
    from helpers.datasets import madlibs
    from helpers.metrics import unintended

    member = madlibs.mentions(u.sample["text"], u.terms, match=match or params["identity_match"])
    y = (u.sample["label"] == "toxic").astype(int).to_numpy()

    metrics = ["fped", "fned", "subgroup_auc_ed", "bpsn_auc_ed", "bnsp_auc_ed"]

    def values(rows):
        out = []
        for role in ("teacher", "student"):
            m = unintended.identity_metrics(y[rows], u.scores[role][rows], member.iloc[rows].reset_index(drop=True),
                                            threshold=u.thresholds[role])
            out.append(unintended.equality_differences(m).set_index("metric").loc[metrics, "value"].to_numpy())
        return out

    b = bootstrap(params, _digest(u.scores["teacher"], u.scores["student"], y, member.astype(float),
                                  [u.thresholds["teacher"], u.thresholds["student"]]) + "table4",
                  values, len(y), n_resamples=TABLE4_RESAMPLES)
    out = [{"metric": metric, "teacher": b["teacher"][k], "student": b["student"][k],
            "percent_difference": 100 * b["difference"][k] / b["teacher"][k] if b["teacher"][k] else np.nan,
            "difference": b["difference"][k], "ci_low": b["ci_low"][k], "ci_high": b["ci_high"][k],
            "verdict": stats.verdict(b["ci_low"][k], b["ci_high"][k]), "identity_match": match or params["identity_match"],
            "n_sentences": len(y), "n_resamples": b["n_resamples"]} for k, metric in enumerate(metrics)]
    name = "table4_equality_differences" + ("" if match is None else f"_{match}")
    return common.save(pd.DataFrame(out), CHAPTER, name)


def pairwise_tests(params: dict, u: Unintended, rate: str) -> dict[str, pd.DataFrame]:
    """Figures 3 and 5: for each model, Fisher's exact test of every pair of identities' FPR
    (``rate="fpr"``) or FNR, Holm-corrected (:func:`helpers.metrics.unintended.pairwise_rate_tests`)."""
    from helpers.datasets import madlibs
    from helpers.metrics import unintended

    member = madlibs.mentions(u.sample["text"], u.terms, match=params["identity_match"])
    y = (u.sample["label"] == "toxic").astype(int).to_numpy()
    out = {role: unintended.pairwise_rate_tests(y, u.scores[role], member, rate=rate, threshold=u.thresholds[role])
           for role in ("teacher", "student")}
    common.save(pd.concat([t.assign(model=r) for r, t in out.items()], ignore_index=True), CHAPTER,
                f"pairwise_{rate}_tests")
    return out


# ---------------------------------------------------------------- 2. gender bias in sentiment (IMDB swap)

def gender_swap(params: dict, data: dict[str, TaskData], found: Classifiers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 5: for each term list (pro, weat, all), the IMDB test reviews that mention one of its
    words (a seeded sample of ``swap_sample``), rewritten all-male and all-female
    (:func:`helpers.metrics.gender_swap.swap_gender`); per model the total and absolute bias and
    the Wilcoxon test of male vs female ratings. Second table: the student's absolute bias minus
    the teacher's with a paired bootstrap interval over reviews, and the verdict."""
    from helpers.metrics import gender_swap as gs

    test = data["sentiment"].test
    rows, verdicts = [], []
    for terms in gs.TERM_LISTS:
        hit = test[gs.count_terms(test["text"], terms=terms) > 0]
        reviews = _sample(hit, params["swap_sample"], params["seed"])["text"].tolist()
        male, female = gs.swap_gender(reviews, terms=terms, to="male"), gs.swap_gender(reviews, terms=terms, to="female")
        diffs = {}
        for role in ("teacher", "student"):
            clf = getattr(found, role)["sentiment"]
            pm, pf = (_positive("sentiment", clf, texts) for texts in (male, female))
            diffs[role] = pm - pf
            rows.append({"terms": terms, "model": role, "n_reviews_with_terms": len(hit), **gs.sentiment_bias(pm, pf)})
        b = bootstrap(params, _digest(diffs["teacher"], diffs["student"]) + "swap",
                      lambda r: (np.abs(diffs["teacher"][r]).mean(), np.abs(diffs["student"][r]).mean()), len(reviews))
        verdicts.append({"test": "gender swap (IMDB)", "measure": f"absolute bias, {terms} terms", **_verdict_row(b)})
    return (common.save(pd.DataFrame(rows), CHAPTER, "table5_gender_swap"),
            common.save(pd.DataFrame(verdicts), CHAPTER, "gender_swap_verdicts"))


def _verdict_row(b: dict, *, higher_is_more_biased: bool = True) -> dict:
    return {"teacher": b["teacher"], "student": b["student"], "difference": b["difference"], "ci_low": b["ci_low"],
            "ci_high": b["ci_high"], "n": b["n"], "verdict": stats.verdict(b["ci_low"], b["ci_high"],
                                                                           higher_is_more_biased=higher_is_more_biased)}


# ---------------------------------------------------------------- 4. SEAT on the classifiers' encoders

def seat_tests(params: dict, found: Classifiers) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """SEAT (May et al. 2019) on the encoder of every classifier: the [CLS] vector of the last
    layer (May et al.'s choice for BERT), effect size and one-sided permutation p per test
    (:func:`helpers.metrics.association.seat`; exact where a test has at most 50 target words,
    else 10,000 random partitions, floored at 1/10,001). Returns the per-test table, May et al.'s
    aggregates per model, and the student-minus-teacher mean |d| per task with a bootstrap over
    tests and the verdict."""
    from types import SimpleNamespace

    from transformers import AutoModel, AutoTokenizer

    from helpers.measures.embedding_tests import SEAT_PERMUTATIONS, seat_effect_sizes
    from helpers.metrics import association
    from helpers.progress import transformers_errors_only

    tests = load_dataset("seat")
    per_test, summary, verdicts = [], [], []
    for task in TASKS:
        effect = {}
        for role in ("teacher", "student"):
            model_dir = getattr(found, role)[task].folder
            key = {"kind": "seat", "version": 2, "model": classifier.read_manifest(model_dir)["key"], "pooling": "cls",
                   "tests": hashing.sha256_frame(tests), "seed": params["seed"], "permutations": SEAT_PERMUTATIONS,
                   "p_method": "auto"}

            def run(model_dir=model_dir):
                # the classifier's checkpoint loaded as its bare encoder: transformers reports the
                # classification head's weights as unexpected keys, dropped on purpose (SEAT reads
                # the encoder's [CLS] vector only)
                with transformers_errors_only():
                    encoder = AutoModel.from_pretrained(model_dir).eval()
                enc = SimpleNamespace(model=encoder, tokenizer=AutoTokenizer.from_pretrained(model_dir))
                return seat_effect_sizes(enc, tests, pooling="cls", seed=params["seed"])

            res = cache.memoize(key, run).assign(task=task, model=role)
            effect[role] = res.set_index("test")["effect_size"]
            per_test.append(res)
            summary.append(association.aggregate_effect_sizes(res).assign(task=task, model=role))
        names = effect["teacher"].index.tolist()
        t_abs, s_abs = effect["teacher"].abs().to_numpy(), effect["student"].loc[names].abs().to_numpy()
        b = bootstrap(params, _digest(t_abs, s_abs) + "seat", lambda r: (t_abs[r].mean(), s_abs[r].mean()), len(names))
        verdicts.append({"test": "SEAT", "measure": f"mean |d| over tests, {task} classifier", "task": task,
                         **_verdict_row(b)})
    return (common.save(pd.concat(per_test, ignore_index=True), CHAPTER, "seat_effect_sizes"),
            common.save(pd.concat(summary, ignore_index=True), CHAPTER, "seat_aggregates"),
            common.save(pd.DataFrame(verdicts), CHAPTER, "seat_verdicts"))


# ---------------------------------------------------------------- the language-model pair (tests 3, 5, 6)

@dataclass
class LanguageModels:
    """The teacher language model and its distilled students, their roles and their gate."""

    names: list
    roles: dict
    gate: pd.DataFrame
    usable: list


def language_models(params: dict) -> LanguageModels:
    """``lm_models``: ``"zoo-distilled"`` (the zoo's causal teacher, SmolLM2-135M offline, and the
    zoo students distilled from it; built if missing) or a list whose first name is the teacher.
    Every model's language-model quality gate (:func:`helpers.runner.quality_table`)."""
    from helpers.training import zoo

    spec = params["lm_models"]
    if isinstance(spec, str) and spec == "zoo-distilled":
        zoo.ensure_default_zoo(zoo.current().get("profile") or "default", progress=False)
        cfg = zoo.current().get("config", {})
        teacher = cfg.get("causal_teacher", "smollm2-135m")
        man = zoo.manifests()
        kd = man[(man.get("healing", pd.Series(dtype=str)) == "kd") & (man.get("objective") == "causal")] \
            if len(man) else man
        names = [teacher] + sorted(kd["name"].tolist()) if len(kd) else [teacher]
    else:
        names = runner.resolve_models(spec)
    if not names:
        raise InputError("lm_models: no language model to test")
    roles = {n: ("teacher" if i == 0 else "student") for i, n in enumerate(names)}
    gate = runner.quality_table(names, device=params["device"], min_ratio=params["min_ratio"])
    gate.insert(1, "role", gate["model"].map(roles))
    return LanguageModels(names, roles, common.save(gate, CHAPTER, "lm_quality_gate"), runner.usable_models(gate))


def _lm_results(lms: LanguageModels, params: dict, measure) -> dict:
    """``measure(handle, params)`` of every language model; a model that cannot be loaded gets its reason."""
    results, unavailable = runner.for_each_model(lms.names, lambda h: measure(h, params), device=params["device"])
    for name, reason in unavailable.items():
        results[name] = reason
    return results


def _student_verdicts(params: dict, lms: LanguageModels, measured: dict, n: int, statistic, test: str,
                      measure: str, *, higher_is_more_biased: bool = True, n_resamples: int | None = None) -> list[dict]:
    """One verdict row per student measured with its teacher: ``statistic(name, rows)`` is the
    model's value on the resampled examples ``rows`` (paired across models); ``measured[name]``
    (arrays or frames) is what the statistic reads, digested for the bootstrap's cache key."""
    teacher, rows = lms.names[0], []
    for name in lms.names[1:]:
        if name in measured and teacher in measured:
            b = bootstrap(params, _digest(measured[teacher], measured[name]) + test + measure,
                          lambda r, n_=name: (statistic(teacher, r), statistic(n_, r)), n, n_resamples=n_resamples)
            rows.append({"test": test, "measure": f"{measure}, {name}",
                         "interpreted": teacher in lms.usable and name in lms.usable,
                         **_verdict_row(b, higher_is_more_biased=higher_is_more_biased)})
    return rows


def logprob_bias(params: dict, lms: LanguageModels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 6-9: BEC-Pro associations (:func:`helpers.metrics.logprob_bias.bec_pro_associations`)
    of every language model on a seeded sample of whole profession x pattern blocks (all 18
    person words each), female vs male per profession group by Wilcoxon with r = Z/sqrt(N); and
    each student's mean |female - male| minus the teacher's with a bootstrap over sentence
    pairs."""
    from helpers.metrics import logprob_bias as lpb

    results = _lm_results(lms, params, bec_pro_associations)
    tables, gaps = [], {}
    for name, res in results.items():
        if isinstance(res, str):
            continue
        tables.append(lpb.paired_gender_test(res).assign(model=name, role=lms.roles[name], usable=name in lms.usable))
        pairs = lpb.gender_pairs(res)
        gaps[name] = np.abs(pairs["female"].to_numpy() - pairs["male"].to_numpy())
    n = len(next(iter(gaps.values()))) if gaps else 0
    verdicts = _student_verdicts(params, lms, gaps, n, lambda m, r: gaps[m][r].mean(),
                                 "log-probability bias (BEC-Pro)", "mean |female - male|")
    return (common.save(pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=["group", "model"]), CHAPTER,
                        "tables6_9_logprob_bias"),
            common.save(pd.DataFrame(verdicts, columns=VERDICT_COLUMNS), CHAPTER, "logprob_bias_verdicts"))


def categorical_bias(params: dict, lms: LanguageModels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The CB score (:mod:`helpers.metrics.categorical`) of every language model on the English
    ethnic-bias templates: the first ``cb_sample[0]`` templates x a seeded ``cb_sample[1]`` of the
    70 attributes x the 35 countries; each student's CB minus the teacher's with a bootstrap over
    (template, attribute) sentences."""
    from helpers.metrics import categorical

    results = _lm_results(lms, params, cb_log_probs)
    rows, variances = [], {}
    for name, res in results.items():
        if isinstance(res, str):
            continue
        cb = categorical.categorical_bias_score(res)
        rows.append(cb.assign(model=name, role=lms.roles[name], usable=name in lms.usable))
        variances[name] = res.groupby(["template_id", "attribute"], sort=True)["normalized_log_prob"].var().to_numpy()
    n = len(next(iter(variances.values()))) if variances else 0
    verdicts = _student_verdicts(params, lms, variances, n, lambda m, r: variances[m][r].mean(),
                                 "categorical bias (CB)", "CB")
    return (common.save(pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["template_id", "cb", "model"]),
                        CHAPTER, "cb_scores"),
            common.save(pd.DataFrame(verdicts, columns=VERDICT_COLUMNS), CHAPTER, "cb_verdicts"))


LMS_COLUMNS = ["task", "model", "interpreted", "teacher", "student", "difference", "ci_low", "ci_high", "n", "reading"]


def lms_reading(ci_low: float, ci_high: float) -> str:
    """What the interval of student - teacher LMS (language-modelling score, not a bias) says:
    "lower" or "higher" when it excludes 0, else "no detectable difference" (:func:`helpers.stats.verdict`'s
    reading of the interval, in words that claim no bias)."""
    return {"amplified": "higher", "reduced": "lower"}.get(stats.verdict(ci_low, ci_high), stats.VERDICTS[2])


def stereoset_icat(params: dict, lms: LanguageModels) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """StereoSet LMS, SS and ICAT per domain of every language model (:mod:`helpers.metrics.stereoset`)
    on ``stereoset_clusters_per_target`` clusters of every target term: intrasentence, and
    intersentence for causal LMs (a masked LM would need a next-sentence head; the seed gave up
    on this task). ICAT = LMS min(SS, 100 - SS) / 50 mixes language modelling with stereotyping (a
    student with a lower LMS has a lower ICAT at the same SS), so the verdict on stereotyping comes
    from SS alone: each student's |SS - 50| minus the teacher's, per task, with a bootstrap over
    clusters (higher = more stereotyped, either way from 50). The same resamples give the student's
    LMS minus the teacher's, reported apart (third table, ``stereoset_lms_differences``) and never
    read as bias."""
    from helpers.metrics import stereoset

    data = stereoset_tasks(params["stereoset_clusters_per_target"])
    results = _lm_results(lms, params, stereoset_scored)
    teacher = lms.names[0]
    rows, verdicts, lms_rows = [], [], []
    for task, df in data.items():
        scored = {n: r[task] for n, r in results.items() if not isinstance(r, str) and task in r}
        for name, res in scored.items():
            rows.append(stereoset.aggregate(res).assign(task=task, model=name, role=lms.roles[name],
                                                        usable=name in lms.usable))
        clusters = df["cluster_id"].drop_duplicates().to_numpy()
        wide = {name: stereoset.clusters(res).set_index("cluster_id").loc[clusters].reset_index()
                for name, res in scored.items()}          # one row per cluster, in the data's order

        def ss_lms_of(name, rows_):
            ss, lm_score = stereoset.resampled_scores(wide[name], rows_)
            return np.array([abs(ss - 50), lm_score])

        for name in lms.names[1:]:
            if name not in scored or teacher not in scored:
                continue
            b = bootstrap(params, _digest(scored[teacher], scored[name]) + f"StereoSet ({task}) |SS - 50|, LMS",
                          lambda r, n_=name: (ss_lms_of(teacher, r), ss_lms_of(n_, r)), len(clusters),
                          n_resamples=min(params["n_resamples"], 200))
            part = [{k: float(b[k][i]) for k in ("teacher", "student", "difference", "ci_low", "ci_high")} for i in (0, 1)]
            interpreted = teacher in lms.usable and name in lms.usable
            verdicts.append({"test": f"StereoSet SS ({task})", "measure": f"|SS - 50|, {name}", "interpreted": interpreted,
                             **part[0], "n": b["n"], "verdict": stats.verdict(part[0]["ci_low"], part[0]["ci_high"])})
            lms_rows.append({"task": task, "model": name, "interpreted": interpreted, **part[1], "n": b["n"],
                             "reading": lms_reading(part[1]["ci_low"], part[1]["ci_high"])})
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["domain", "icat", "task", "model"])
    return (common.save(table, CHAPTER, "stereoset_icat"),
            common.save(pd.DataFrame(verdicts, columns=VERDICT_COLUMNS), CHAPTER, "stereoset_verdicts"),
            common.save(pd.DataFrame(lms_rows, columns=LMS_COLUMNS), CHAPTER, "stereoset_lms_differences"))


def stereoset_figure(table: pd.DataFrame):
    """Figure 11: ICAT per domain and task, one bar per model."""
    from helpers import plots

    df = table.assign(where=table["task"].str.replace("sentence", "") + " " + table["domain"])
    fig = plots.model_bars(df, category="where", value="icat", ylabel="ICAT (100 = unbiased and fluent)",
                           title="Figure 11: StereoSet ICAT per task and domain")
    return common.save_figure(fig, CHAPTER, "figure11")


# ---------------------------------------------------------------- the verdict table

def verdict_table(*parts: pd.DataFrame, unintended_table: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per test and measure: teacher, student, difference with its 95 % bootstrap
    interval, n and the verdict; rows of models that fail the quality gate keep their numbers
    but their verdict reads "not interpreted". With :func:`familywise`'s ``p_value``, ``p_holm`` and
    ``verdict_holm`` (what the conclusion counts)."""
    frames = [p for p in parts if p is not None and len(p)]
    if unintended_table is not None:
        frames.insert(0, unintended_table.assign(test="unintended bias (madlibs)", measure=unintended_table["metric"],
                                                 n=unintended_table["n_sentences"]))
    cols = ["test", "measure", "teacher", "student", "difference", "ci_low", "ci_high", "n", "verdict"]
    out = pd.concat([f.reindex(columns=cols + ["interpreted"]) for f in frames], ignore_index=True)
    out["interpreted"] = out["interpreted"].fillna(True).astype(bool)
    unexplained = ~out["interpreted"] & ~out["verdict"].astype(str).str.startswith("not interpreted")
    out.loc[unexplained, "verdict"] = "not interpreted (a language model fails the quality gate)"
    return common.save(familywise(out[cols]), CHAPTER, "verdicts")


#: The conclusion's family-wise correction: Holm (statsmodels' ``multipletests``) at ``ALPHA`` over
#: its family, every interpreted measure of the verdict table with an interval.
CORRECTION, ALPHA = "holm", 0.05


def interval_se(ci_low: float, ci_high: float, confidence_level: float = 0.95) -> float:
    """The standard error a ``confidence_level`` interval implies by the normal approximation
    (Altman & Bland 2011, BMJ 343:d2090): (high - low) / (2 z), z the normal quantile of (1 + level) / 2."""
    from scipy.stats import norm

    return (ci_high - ci_low) / (2 * norm.ppf((1 + confidence_level) / 2))


def interval_p_value(difference: float, ci_low: float, ci_high: float, confidence_level: float = 0.95) -> float:
    """Two-sided p-value of "student - teacher = 0" recovered from the difference and its
    ``confidence_level`` interval by the normal approximation (Altman & Bland 2011, BMJ 343:d2090):
    SE by :func:`interval_se`; p = 2 P(Z > |difference| / SE).
    NaN without an interval; 0 or 1 for an interval of width 0."""
    from scipy.stats import norm

    if not np.isfinite([difference, ci_low, ci_high]).all():
        return np.nan
    se = interval_se(ci_low, ci_high, confidence_level)
    if se <= 0:
        return 1.0 if difference == 0 else 0.0
    return float(2 * norm.sf(abs(difference) / se))


def familywise(table: pd.DataFrame, *, method: str = CORRECTION, alpha: float = ALPHA) -> pd.DataFrame:
    """The verdict table with ``p_value`` (:func:`interval_p_value` of each row), ``p_holm`` (the
    ``method``-adjusted p over the family, :func:`helpers.stats.adjust_p_values`, i.e. statsmodels'
    ``multipletests``: the interpreted rows with a p-value; NaN elsewhere) and ``verdict_holm``: a
    row's "amplified" or "reduced" only when the correction rejects it too, else "no detectable
    difference"; a row not interpreted keeps its reason."""
    out = table.copy()
    out["p_value"] = [interval_p_value(d, lo, hi) for d, lo, hi in zip(
        pd.to_numeric(out["difference"], errors="coerce"), pd.to_numeric(out["ci_low"], errors="coerce"),
        pd.to_numeric(out["ci_high"], errors="coerce"))]
    interpreted = ~out["verdict"].astype(str).str.startswith("not interpreted")
    if "interpreted" in out:
        interpreted &= out["interpreted"].fillna(True).astype(bool)
    family = (interpreted & out["p_value"].notna()).to_numpy()
    out["p_holm"], reject = np.nan, np.zeros(len(out), dtype=bool)
    if family.any():
        adjusted = stats.adjust_p_values(out.loc[family, ["p_value"]], method=method, alpha=alpha)
        out.loc[family, "p_holm"] = adjusted["p_adjusted"].to_numpy()
        reject[family] = adjusted["significant"].to_numpy(bool)
    directed = out["verdict"].isin(stats.VERDICTS[:2]).to_numpy()
    reason = out["verdict"].where(out["verdict"].astype(str).str.startswith("not interpreted"),
                                  "not interpreted (a model fails its quality gate)")
    out["verdict_holm"] = np.where(~interpreted, reason,
                                   np.where(reject & directed, out["verdict"], stats.VERDICTS[2]))
    return out


# ---------------------------------------------------------------- figures and prose

def unintended_figures(params: dict, found: Classifiers, u: Unintended) -> list:
    """Figures 1-5: identity terms alone, FPR and FNR per identity (teacher beside student) and
    the Holm-corrected pairwise tests of those rates, each saved as a PNG."""
    from helpers import plots

    tox = identity_term_toxicity(params, found, u.terms)
    figs = [plots.model_bars(tox, category="identity", value="p_toxic", ylabel="P(toxic) of the term alone",
                             title="Figure 1: toxicity of identity terms alone")]
    rates = pd.concat(u.metrics.values(), ignore_index=True)
    rates = rates[rates["identity"] != "overall"]
    for number, rate in ((2, "fpr"), (4, "fnr")):
        figs.append(plots.model_bars(rates, category="identity", value=rate, ylabel=rate.upper(),
                                     title=f"Figure {number}: {rate.upper()} per identity on the madlibs"))
        figs.append(plots.pairwise_heatmaps(pairwise_tests(params, u, rate),
                                            title=f"Figure {number + 1}: pairwise {rate.upper()} differences (Fisher, Holm)"))
    for k, f in enumerate(figs, 1):
        common.save_figure(f, CHAPTER, f"figure{k}")
    return figs


def conclusion(verdicts: pd.DataFrame) -> str:
    """The chapter's answer, counted from the verdict table (never from the seed's prose): only the
    verdicts that survive the family-wise correction (:func:`familywise`) over the family named."""
    if "verdict_holm" not in verdicts:
        verdicts = familywise(verdicts)
    n = len(verdicts)
    judged = verdicts[~verdicts["verdict_holm"].astype(str).str.startswith("not interpreted")]
    family = int(judged["p_holm"].notna().sum())
    counts = judged["verdict_holm"].value_counts()
    raw = int(judged["verdict"].isin(stats.VERDICTS[:2]).sum())
    amplified = judged.loc[judged["verdict_holm"] == "amplified", "measure"].tolist()
    if judged.empty:
        return (f"No measure is interpreted: {report.count_of(n, n, 'measure', ('rests', 'rest'))} on a model that "
                "fails its quality gate (language-model or classifier), so this build counts no verdict and draws no "
                "conclusion on whether the student amplifies its teacher's bias.")
    left_out = (f"Of the {n} measures, {n - len(judged)} {'is' if n - len(judged) == 1 else 'are'} not interpreted "
                "because a model they rest on fails its quality gate (language-model or classifier); they are in no "
                f"count below. The family is the other {len(judged)}" if len(judged) < n else
                f"Every model passes its quality gate, so the family is all {n} measures")
    lines = [left_out + (f" ({len(judged) - family} of them without an interval)" if family < len(judged) else "")
             + f": a verdict is counted only if it survives Holm's correction over the {family} with an interval "
             f"(statsmodels `multipletests`, family-wise α = {ALPHA:g}; each p two-sided, from the 95 % bootstrap "
             "interval of student - teacher by the normal approximation). After it, the student **amplified** the "
             f"teacher's bias on {counts.get('amplified', 0)}, **reduced** it on {counts.get('reduced', 0)} and "
             f"showed **no detectable difference** on {counts.get('no detectable difference', 0)}. Uncorrected, "
             f"{raw} of these {len(judged)} measures have an interval that excludes 0 (the `verdict` column)."]
    counts = counts.to_dict()
    if 0 < len(amplified) <= 2:
        lines.append("Amplified: " + "; ".join(amplified) + ".")
    elif amplified:                                  # more: the table lists them, the prose does not
        lines.append(f"The {len(amplified)} amplified measures are the rows whose `verdict_holm` reads amplified.")
    if counts.get("amplified", 0) and counts.get("reduced", 0):
        lines.append("The direction depends on the test: distillation neither uniformly amplifies nor "
                     "uniformly reduces bias here.")
    elif counts.get("amplified", 0):
        lines.append("Where the difference survives the correction, the student is the more biased.")
    elif counts.get("reduced", 0):
        lines.append("Where the difference survives the correction, the student is the less biased.")
    return "\n\n".join(lines)


# ---------------------------------------------------------------- sections as the notebook shows them

def published_table(name: str) -> pd.DataFrame | None:
    """Seed 003's published table ``name`` (:mod:`helpers.published`), or None if not typed."""
    from helpers import published

    try:
        return published.table("003", name)
    except Exception:  # noqa: BLE001 - an untyped table is shown as absent, not as an error
        return None


_TASK = {"hate speech": "hate", "sentiment": "sentiment"}
_ROLE = {"BERT-base": "teacher", "TinyBERT": "student"}
_METRIC = {"F1": "f1", "F1 - weighted": "f1_weighted", "Recall": "recall", "Precision": "precision",
           "Accuracy": "accuracy", "false positive eq. diff": "fped", "false negative eq. diff": "fned",
           "AUC subgroup eq. diff": "subgroup_auc_ed", "AUC bpsn eq. diff": "bpsn_auc_ed",
           "AUC bnsp eq. diff": "bnsp_auc_ed", "absolute bias": "absolute_bias", "total bias": "total_bias"}


def _published_long(name: str, **filters) -> pd.DataFrame | None:
    """A seed 003 table in our vocabulary: ``task`` (hate / sentiment), ``model`` (teacher /
    student), ``metric`` (our column names) and ``value``."""
    t = published_table(name)
    if t is None:
        return None
    for column, value in filters.items():
        t = t[t[column] == value]
    out = t.assign(task=t["task"].map(_TASK), model=t["model"].map(_ROLE),
                   metric=t["metric"].map(lambda m: _METRIC.get(m, m)))
    return out.drop(columns=[c for c in ("data", "statistic") if c in out.columns])


def compare(ours: pd.DataFrame, published_name: str, on: list[str], name: str, **filters) -> pd.DataFrame | None:
    """Ours beside seed 003's ``published_name`` on the keys ``on`` (``measured``, ``published``,
    ``difference``; rows on one side only kept), saved as ``<name>.csv``."""
    pub = _published_long(published_name, **filters)
    if pub is None:
        return None
    out = report.side_by_side(ours, pub, on, value="value")
    return common.save(out, CHAPTER, name)


def _melt(df: pd.DataFrame, ids: list[str], metrics: list[str]) -> pd.DataFrame:
    return df.melt(id_vars=ids, value_vars=metrics, var_name="metric", value_name="value")


_QUALITY = ["f1", "f1_weighted", "recall", "precision", "accuracy"]
#: What differs from the seed in each compared table, besides the models and training budget.
_DIFFERS = {"Table 1": "models and training budget",
            "Table 2": "models and training budget; the seed's F1 and weighted F1 do not follow from its own "
                       "precision, recall and accuracy (tests/test_published.py)",
            "Table 3": "models and training budget; ours on a sample of {madlibs} madlibs sentences",
            "Table 4": "models and training budget; identity terms matched as {match}",
            "Table 5": "models and training budget; the seed applied softmax twice (docs/UPSTREAM.md)",
            "SEAT": "models and training budget; both the sum of |d| over the tests"}


def classifier_section(params: dict) -> Section:
    """Data splits, the trained teacher and student per task, and Tables 1-2 next to the seed's;
    ``data``: ``{"data": {task: TaskData}, "classifiers": Classifiers}``."""
    data = {t: task_data(params, t) for t in TASKS}
    found = train_classifiers(params, data)
    quality = task_quality(params, data, found)
    ratios = {t: {"student_f1_weighted": r.loc["student", "f1_weighted"], "teacher_f1_weighted": r.loc["teacher", "f1_weighted"],
                  "parameter_share": r.loc["student", "parameters"] / r.loc["teacher", "parameters"],
                  "speedup": r.loc["student", "examples_per_second"] / r.loc["teacher", "examples_per_second"]}
              for t, r in ((t, quality[quality.task == t].set_index("model")) for t in TASKS)}
    side = compare(_melt(quality, ["task", "model"], _QUALITY), "table1", ["task", "model", "metric"], "tables1_2_vs_seed")
    side2 = compare(_melt(quality, ["task", "model"], _QUALITY), "table2", ["task", "model", "metric"], "table2_vs_seed")
    sides = [(label, t.dropna(subset=["published"])) for label, t in (("Table 1", side), ("Table 2", side2))
             if t is not None]
    gates = common.save(classifier_gates(params, data, found), CHAPTER, "classifier_gate")
    gates.attrs["why"] = GATE_WHY
    ratios |= {"usable": {f"{t} {m}": bool(g["usable"].all()) for (t, m), g in gates.groupby(["task", "model"])}}
    shown = [("data_splits", data_table(data)), call(classifier.classification_metrics, "y_test", "y_predicted",
                                                        labels=[0, 1]), ("task_quality", quality),
             call(classifier_quality.classifier_gate, "y_test", "p_positive", margin=params["classifier_margin"],
                  n_resamples=params["n_resamples"], seed=params["seed"]),
             ("classifier_gate", gates), gate_sentence(gates), quality_sentence(ratios, gates)]
    return Section(*shown, facts=ratios, data={"data": data, "classifiers": found, "gates": gates, "vs_seed": sides})


def unintended_section(params: dict, classifiers: Section) -> Section:
    """Test 1 on the hate-speech models: Figures 1-5, Table 3, Table 4 (with the seed's substring
    matching beside it) and the published tables; ``data``: the :class:`Unintended` measurement and
    Table 4 as ``verdicts``."""
    from helpers.metrics import unintended

    found = classifiers.data["classifiers"]
    u = unintended_bias(params, found)
    figures = unintended_figures(params, found, u)
    table4 = equality_table(params, u)
    other = "substring" if params["identity_match"] == "word" else "word"
    compat = equality_table(params, u, match=other)
    table3 = madlibs_quality(u)
    gates = pd.concat([classifiers.data["gates"], classifier_gates(params, {}, found, u)], ignore_index=True)
    gates = gates[gates["task"] == "hate"]
    common.save(gates, CHAPTER, "classifier_gate_hate")
    gates.attrs["why"] = GATE_WHY
    usable = usable_classifiers(gates, "hate")
    table4 = table4.assign(interpreted=usable)
    if not usable:
        table4["verdict"] = "not interpreted (a hate classifier fails the classifier gate)"
    shown = [call(unintended.identity_metrics, "y", "p_toxic", "membership", threshold=params["threshold"]),
             ("table3_madlibs_quality", table3),
             call(classifier_quality.classifier_gate, "y", "p_toxic", threshold=Var("threshold"),
                  margin=params["classifier_margin"]),
             ("classifier_gate_hate", gates), gate_sentence(gates, again=True),
             *[(f"figure{k}", f) for k, f in enumerate(figures, 1)],
             call(unintended.equality_differences, "identity_metrics"), ("table4_equality_differences", table4),
             f"With the seed's **{other}** matching of identity terms instead (how much Table 4 depends on it):",
             (f"table4_equality_differences_{other}", compat)]
    sides = [compare(_melt(table3.assign(task="hate"), ["task", "model"], _QUALITY), "table3",
                     ["task", "model", "metric"], "table3_vs_seed"),
             compare(pd.concat([table4[["metric", r]].rename(columns={r: "value"}).assign(task="hate", model=r)
                                for r in ("teacher", "student")], ignore_index=True), "table4",
                     ["task", "model", "metric"], "table4_vs_seed", statistic="value")]
    sides = [(label, t.dropna(subset=["published"])) for label, t in zip(("Table 3", "Table 4"), sides)
             if t is not None]
    return Section(*shown, facts={"hate_classifiers_usable": usable},
                   data={"unintended": u, "verdicts": table4, "vs_seed": sides})


def swap_section(params: dict, classifiers: Section) -> Section:
    """Test 2: Table 5 (IMDB gender swap) next to the seed's; ``data["verdicts"]``."""
    from helpers.metrics import gender_swap as gs

    table5, verdicts = gender_swap(params, classifiers.data["data"], classifiers.data["classifiers"])
    usable = usable_classifiers(classifiers.data["gates"], "sentiment")
    verdicts = verdicts.assign(interpreted=usable)
    if not usable:
        verdicts["verdict"] = "not interpreted (a sentiment classifier fails the classifier gate)"
    ours = _melt(table5.assign(task="sentiment", term_set=table5["terms"].map(
        {"pro": "Pro", "weat": "WEAT", "all": "All"})), ["task", "model", "term_set"], ["absolute_bias", "total_bias"])
    side = compare(ours, "table5", ["task", "model", "term_set", "metric"], "table5_vs_seed")
    shown = [call(gs.sentiment_bias, "p_male", "p_female"), ("table5_gender_swap", table5),
             _bootstrap_call(params), ("gender_swap_verdicts", verdicts)]
    return Section(*shown, facts={"sentiment_classifiers_usable": usable},
                   data={"verdicts": verdicts, "vs_seed": [] if side is None else [("Table 5", side)]})


def seat_section(params: dict, classifiers: Section) -> Section:
    """Test 4: SEAT effect sizes on the four classifiers' encoders, Figure 10 and the aggregates;
    ``data``: the per-test table and the ``verdicts``."""
    from helpers import plots
    from helpers.metrics import association

    per_test, aggregates, verdicts = seat_tests(params, classifiers.data["classifiers"])
    # a task whose teacher or student fails the classifier gate: its SEAT row is shown, not interpreted
    verdicts = verdicts.assign(interpreted=[usable_classifiers(classifiers.data["gates"], t) for t in verdicts["task"]])
    verdicts["verdict"] = [v if ok else f"not interpreted (a {t} classifier fails the classifier gate)"
                           for v, ok, t in zip(verdicts["verdict"], verdicts["interpreted"], verdicts["task"])]
    fig = common.save_figure(plots.effect_sizes(per_test, title="Figure 10: SEAT effect sizes"), CHAPTER, "figure10")
    exact = per_test["p_method"].eq("exact")
    floor = per_test.loc[~exact, "p_floor"]
    shown = [f"Each test's one-sided permutation p-value is exact for "
             f"{report.count_of(int(exact.sum()), len(per_test), '(test, encoder) row')}: their partitions are "
             "counted exactly (all of them, or by meet-in-the-middle up to 50 target words)."
             + (f" The other {int((~exact).sum())} draw 10,000 random partitions, so their p cannot fall below "
                f"{floor.min():.1e} (the `p_floor` column of `seat_effect_sizes.csv`)." if (~exact).any() else ""),
             call(association.seat, "tests", "cls_embeddings", n_resamples=10_000, seed=params["seed"], p_method="auto"),
             ("figure10", fig), call(association.aggregate_effect_sizes, "per_test"), ("seat_aggregates", aggregates),
             _bootstrap_call(params), ("seat_verdicts", verdicts)]
    off = verdicts.loc[~verdicts["interpreted"], "task"].tolist()
    if off:
        shown.append(f"The SEAT row{'s' if len(off) > 1 else ''} of the {' and '.join(off)} classifiers "
                     f"{'are' if len(off) > 1 else 'is'} shown, not interpreted: a model of that task fails the "
                     "classifier gate (above), so it is in no count of the conclusion.")
    ours = aggregates.assign(task=aggregates["task"], tests=aggregates["subset"].map(
        {"all": "all tests", "p < 0.01": "p < 0.01", "p < 0.1": "p < 0.10"}), metric="sum of |effect size|",
        value=aggregates["sum_abs_effect_size"])[["task", "model", "tests", "metric", "value"]]
    side = compare(ours, "seat_aggregate", ["task", "model", "tests", "metric"], "seat_aggregates_vs_seed")
    return Section(*shown, facts={"seat_interpreted": {t: bool(i) for t, i in zip(verdicts["task"], verdicts["interpreted"])}},
                   data={"per_test": per_test, "verdicts": verdicts,
                         "vs_seed": [] if side is None else [("SEAT", side)]})


SEED_COLUMNS = ["seed_table", "task", "model", "measure", "ours", "published", "difference", "what_differs"]


def _count(n) -> str:
    """A sample size as written: ``1,000``, or ``all``."""
    return f"{n:,}" if isinstance(n, (int, np.integer)) else str(n)


def seed_comparison(params: dict, *sections: Section) -> pd.DataFrame:
    """Every value of ours that seed 003 also published (its Tables 1-5 and SEAT aggregates, from the
    sections' ``data["vs_seed"]``), one row each: the seed's table, task, model, measure, ours, the
    published value, ours - published, and what differs; written as ``seed_comparison.csv``."""
    frames = []
    for section in sections:
        for label, side in (section.data or {}).get("vs_seed", []):
            measure = side["metric"].astype(str)
            if "term_set" in side:
                measure = measure + ", " + side["term_set"].astype(str) + " terms"
            if "tests" in side:
                measure = measure + ", " + side["tests"].astype(str)
            match = {"word": "whole words (the seed: substrings)"}.get(params["identity_match"],
                                                                        "substrings, as the seed")
            differs = _DIFFERS[label].format(match=match, madlibs=_count(params["madlibs_sample"]))
            frames.append(pd.DataFrame({"seed_table": label, "task": side["task"], "model": side["model"],
                                        "measure": measure, "ours": side["measured"], "published": side["published"],
                                        "difference": side["difference"], "what_differs": differs}))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SEED_COLUMNS)
    return common.save(table[SEED_COLUMNS], CHAPTER, "seed_comparison")


def seed_section(params: dict, *sections: Section) -> Section:
    """Ours next to seed 003's published values in one table (:func:`seed_comparison`) and one
    sentence on why levels differ. Facts: ``compared`` (rows with a published value)."""
    table = seed_comparison(params, *sections)
    n = int(table["published"].notna().sum())
    text = (f"Ours stand next to the {n} values seed 003 published for its BERT-base teacher and TinyBERT-4L-312D "
            f"student, trained on the full data on a GPU; ours come from the {params['teacher']} teacher and a "
            f"student cut from it, trained on {_count(params['n_train'])} examples per task on CPU, so their levels "
            "are expected to differ and what compares is the direction of student against teacher "
            "(`what_differs`: what else differs).")
    return Section(text, call(published.table, "'003'", "name"), ("seed_comparison", table), facts={"compared": n})


def lm_section(params: dict) -> Section:
    """Tests 3, 5 and 6 on the language-model pair: the quality gate, Tables 6-9 (BEC-Pro), the CB
    score and StereoSet (LMS, SS, ICAT; the verdict on |SS - 50|, the LMS difference apart), each with
    its verdicts; ``data``: the :class:`LanguageModels`, the ``verdicts`` and ``lms_differences``."""
    from helpers.metrics import categorical, logprob_bias as lpb, stereoset

    lms = language_models(params)
    lp, vl = logprob_bias(params, lms)
    cb, vc = categorical_bias(params, lms)
    ss, vs, vlms = stereoset_icat(params, lms)
    lms.gate.attrs["why"] = {"reason": "the model was measured (a reason is given only when it could not be)",
                             **{c: "the model could not be measured (its reason)" for c in
                                ("heldout_perplexity", "unigram_perplexity", "ratio", "heldout_tokens")}}
    shown = [common.gate_call(min_ratio=params["min_ratio"]), ("lm_quality_gate", lms.gate),
             report.gate_sentence(lms.gate, min_ratio=params["min_ratio"]),
             call(lpb.bec_pro_associations, "model", "bec_pro_sample"), call(lpb.paired_gender_test, "associations"),
             ("tables6_9_logprob_bias", lp), ("logprob_bias_verdicts", vl),
             call(categorical.normalized_log_probs, "model", "templates", "targets"),
             call(categorical.categorical_bias_score, "normalized_log_probs"), ("cb_scores", cb), ("cb_verdicts", vc),
             call(stereoset.score, "model", "clusters", task=Var("task")), ("stereoset_icat", ss),
             ("figure11", stereoset_figure(ss)),
             "ICAT = LMS min(SS, 100 - SS) / 50 falls when the language-modelling score (LMS) falls, even at the "
             "same stereotype score (SS), so the verdict on stereotyping below is the student's |SS - 50| minus the "
             "teacher's; the LMS difference, from the same resamples, follows it and is no bias verdict.",
             ("stereoset_verdicts", vs), ("stereoset_lms_differences", vlms), lms_sentence(vlms)]
    published = [(f"seed_{n}", t) for n, t in ((n, published_table(n)) for n in
                                                ("table6", "table7", "table8", "table9", "cb_score")) if t is not None]
    if published:
        shown += ["Seed 003's Tables 6-9 and CB scores come from its *classifiers* loaded with a random "
                  "masked-LM head (docs/UPSTREAM.md), so they measure no language model; they are "
                  "shown for the record, not compared. Its printed 'effect size r' is W/sqrt(N), not Z/sqrt(N) "
                  "(tests/test_published.py).", *published]
    return Section(*shown, data={"language_models": lms, "verdicts": pd.concat([vl, vc, vs], ignore_index=True),
                                 "lms_differences": vlms})


def lms_sentence(lms_differences: pd.DataFrame) -> str:
    """What the LMS differences say, counted from the table (interpreted rows only)."""
    ok = lms_differences[lms_differences["interpreted"].astype(bool)]
    off = len(lms_differences) - len(ok)
    tail = (f" {off} row{'s rest' if off != 1 else ' rests'} on a model failing the quality gate: shown, not "
            "interpreted." if off else "")
    if ok.empty:
        return "No student's language-modelling score (LMS) is interpreted here." + tail
    n = ok["reading"].value_counts()
    return (f"Language modelling (LMS, student - teacher, each 95 % bootstrap interval over clusters read alone, "
            f"uncorrected), of the {len(ok)} (student, task) rows: lower for "
            f"{n.get('lower', 0)}, higher for {n.get('higher', 0)} and no detectable difference for "
            f"{n.get('no detectable difference', 0)}. A lower LMS lowers ICAT "
            "without any change in stereotyping, which is why it is not counted as bias." + tail)


def verdict_section(unintended: Section, *sections: Section) -> Section:
    """The verdict table over every test and the conclusion drawn from it (facts: the counts)."""
    table = verdict_table(*(s.data["verdicts"] for s in sections), unintended_table=unintended.data["verdicts"])
    judged = table[~table["verdict_holm"].str.startswith("not interpreted")]
    table.attrs["why"] = {"p_holm": "not in the Holm family: the row is not interpreted, or has no interval",
                          "p_value": "no interval to read a p-value from"}
    facts = {"measures": len(table), "not_interpreted": len(table) - len(judged), "correction": CORRECTION,
             "family": int(judged["p_holm"].notna().sum()),
             **{v.replace(" ", "_"): int((judged["verdict_holm"] == v).sum()) for v in stats.VERDICTS},
             "uncorrected": {v.replace(" ", "_"): int((judged["verdict"] == v).sum()) for v in stats.VERDICTS}}
    return Section(call(stats.verdict, "ci_low", "ci_high", higher_is_more_biased=True),
                   call(stats.adjust_p_values, "interpreted_verdicts", method=CORRECTION, alpha=ALPHA),
                   ("verdicts", table),
                   conclusion(table), facts=facts,
                   data={"verdicts": table})


def _digits(value: float) -> int:
    """Decimals that show ``value`` with at least two significant digits (3 at least)."""
    return 3 if not np.isfinite(value) or abs(value) >= 0.01 else 4


_GATED = {"macro_f1": "macro F1", "balanced_accuracy": "balanced accuracy", "auc": "AUC"}


def _gate_finding(gates: pd.DataFrame) -> report.Finding:
    """The classifier gate on the test splits: each failing classifier with the gated statistic it
    misses by most (never read further), or that every classifier passes."""
    gated = gates[gates["passes"].notna()].assign(bar=lambda g: g["baseline"] + g["margin"])
    per = gated.drop_duplicates(["task", "model"])
    failed = per[~per["usable"].astype(bool)]
    if failed.empty:
        worst = gated[gated["metric"] == "macro_f1"].nsmallest(1, "ci_low").iloc[0]
        every = report.sentence_case(report.count_of(len(per), len(per), "classifier", ("passes", "pass")))
        return report.Finding(f"{every} the classifier gate on their test splits; the lowest "
                              f"macro F1 is the {worst.task} {worst.model}'s, "
                              f"{report.fmt_ci(worst.value, worst.ci_low, worst.ci_high)}.", "classifier_gate")
    short = gated[~gated["passes"].astype(bool)].assign(gap=lambda g: g["ci_low"] - g["bar"])
    worst = short.sort_values("gap").drop_duplicates(["task", "model"]).set_index(["task", "model"])
    misses = [f"the {t} {m}'s {_GATED[r.metric]} is {report.fmt_ci(r.value, r.ci_low, r.ci_high)}"
              for (t, m), r in worst.loc[list(zip(failed["task"], failed["model"]))].iterrows()]
    bars = sorted({f"{b:.3f}" for b in worst["bar"]})
    tasks = report.and_list(sorted(set(failed["task"])))
    return report.Finding(
        f"{report.sentence_case(report.count_of(len(failed), len(per), 'classifier', ('fails', 'fail')))} the "
        "classifier gate on their test split "
        f"({report.and_list(misses)}, "
        f"where the interval must clear {' or '.join(bars)}), so every {tasks} bias measure is shown and not "
        "interpreted.", "classifier_gate")


def _clearest_finding(table: pd.DataFrame, skip=None) -> report.Finding | None:
    """The interpreted student - teacher difference with the smallest Holm-corrected p (not row ``skip``)."""
    judged = table[table["p_holm"].notna()]
    if judged.empty or judged["p_holm"].idxmin() == skip:
        return None
    r = judged.loc[judged["p_holm"].idxmin()]
    d = _digits(r["difference"])
    return report.Finding(
        f"The clearest difference is in the {r['test']}, row `{r['measure']}` (Holm-corrected p = "
        f"{r['p_holm']:.2g}): student − teacher {report.fmt_ci(r['difference'], r['ci_low'], r['ci_high'], digits=d)}"
        f" against the teacher's {r['teacher']:.{d}f}, so the verdict after Holm's correction is "
        f"{r['verdict_holm']}.", "verdicts")


def detectable_change(row: pd.Series, family_size: int, *, alpha: float = ALPHA,
                      confidence_level: float = 0.95) -> float:
    """The smallest student - teacher difference a row's test detects with 80 % power at Holm's
    strictest level, ``alpha / family_size`` (Card et al. 2020's minimum detectable effect,
    :func:`helpers.stats.detectable_difference`), with the standard error its bootstrap interval
    implies (:func:`interval_se`)."""
    se = interval_se(row["ci_low"], row["ci_high"], confidence_level)
    return stats.detectable_difference(se, alpha=alpha / max(int(family_size), 1))


def swap_finding(r: pd.Series, family_size: int) -> report.Finding:
    """The gender-swap verdict on all terms (a row of the verdict table) in one sentence, with the
    change the test could have detected (:func:`detectable_change`) when it detected none."""
    text = (f"On gender-swapped IMDB reviews (all terms, n = {int(r['n'])}), the student's mean absolute bias "
            f"minus the teacher's is "
            f"{report.fmt_ci(r['difference'], r['ci_low'], r['ci_high'], digits=_digits(r['difference']))}: "
            f"{r['verdict_holm']} after Holm's correction")
    if r["verdict_holm"] == "no detectable difference":
        change = detectable_change(r, family_size)
        text += (f"; a change of {change:.2g} or more, {change / r['teacher']:.0%} of the teacher's "
                 f"{r['teacher']:.2g}, would have been detected (80% power at Holm's strictest level)")
    return report.Finding(text + ".", "gender_swap_verdicts")


def findings(classifiers: Section, swap: Section, language_models: Section, verdict: Section) -> Section:
    """The chapter's Findings box (:func:`helpers.chapters.common.findings_section`): the classifier
    gate, the student's quality on a task whose classifiers pass it, the gender-swap verdict on all
    terms when interpreted, the measure with the smallest Holm-corrected p, the language models' gate
    and the conclusion's Holm-corrected counts."""
    gates, out = classifiers.data["gates"], []
    out.append(_gate_finding(gates))
    macro = gates[gates["metric"] == "macro_f1"].set_index(["task", "model"])
    for task in TASKS:
        if usable_classifiers(gates, task):
            t, s = macro.loc[(task, "teacher")], macro.loc[(task, "student")]
            out.append(report.Finding(
                f"On {task} (n = {int(s.n)} test texts), the student's macro F1 is "
                f"{report.fmt_ci(s.value, s.ci_low, s.ci_high)} against the teacher's "
                f"{report.fmt_ci(t.value, t.ci_low, t.ci_high)}, with "
                f"{classifiers.facts[task]['parameter_share']:.0%} of its parameters.", "classifier_gate"))
            break
    table = verdict.tables["verdicts"]
    row = table[(table["test"] == "gender swap (IMDB)") & table["measure"].str.endswith("all terms")]
    swapped = None
    if len(row) and swap.facts["sentiment_classifiers_usable"]:
        swapped = row.index[0]
        out.append(swap_finding(row.iloc[0], verdict.facts["family"]))
    clearest = _clearest_finding(table, skip=swapped)
    if clearest is not None:
        out.append(clearest)
    gate = language_models.data["language_models"].gate
    measured = gate[gate["usable"].map(lambda u: isinstance(u, (bool, np.bool_)))]
    off = measured.loc[~measured["usable"].astype(bool), "model"].tolist()
    passing = report.count_of(len(measured) - len(off), len(measured), "language model", ("passes", "pass"))
    out.append(report.Finding(
        f"{report.sentence_case(passing)} the language-model quality gate (the teacher and its students)"
        + (f"; {report.and_list(off)} fail{'s' if len(off) == 1 else ''} it, so the measures resting on "
           f"{'it' if len(off) == 1 else 'them'} are shown, not interpreted." if off else "."), "lm_quality_gate"))
    out.append(verdict_finding(verdict.facts))
    return common.findings_section(CHAPTER, out)


def verdict_finding(f: dict) -> report.Finding:
    """The conclusion's Holm-corrected counts (``f``: the facts of :func:`verdict_section`) in one
    sentence: amplified, reduced and no detectable difference among the interpreted measures, and how
    many rest on a model failing its gate."""
    judged = f["measures"] - f["not_interpreted"]
    if not judged:
        resting = report.count_of(f["measures"], f["measures"], "measure", ("rests", "rest"))
        return report.Finding(f"No measure is interpreted: {resting} on a model failing its gate, so none is "
                              "counted as amplified or reduced bias.", "verdicts")
    over = f"the {judged}" if f["family"] == judged else f"the {f['family']} with an interval"
    rest = (f"the other {f['not_interpreted']} of the {f['measures']} rest on a model failing its gate and are in "
            "no count." if f["not_interpreted"] else "no measure rests on a model failing its gate.")
    return report.Finding(
        f"Of the {judged} interpreted measures, after Holm's correction over {over}, the student amplified its "
        f"teacher's bias on {f['amplified']}, reduced it on {f['reduced']} and showed no detectable difference on "
        f"{f['no_detectable_difference']}; {rest}", "verdicts")


def _bootstrap_call(params: dict):
    """The call of every student - teacher interval (:func:`bootstrap`)."""
    return call(stats.bootstrap_difference, "statistic", "n", n_resamples=params["n_resamples"], seed=params["seed"])
