"""The card's catalogue: every metric of the book with its paper, the objectives it applies to, its
ideal value and direction (:data:`CATALOGUE`); the items per budget (:data:`BUDGETS`); which
metrics apply to a model (:func:`applies`, :func:`status_table`); and the measure that computes
each (:data:`MEASUREMENTS`, from :mod:`helpers.measures`)."""

from __future__ import annotations

import pandas as pd

from helpers.errors import InputError
from helpers.measures import associations, bold, classifier_bias, embedding_tests, probing, safety, stereotypes
from helpers.measures.probing import LANGUAGES, PROBING
from helpers.measures.safety import DATASETS

#: Items per budget, under the names of the measures' settings (the chapters' parameters of the
#: same name; :mod:`helpers.measures`). ``standard`` is the book's default profile; ``full`` scores every item
#: the metric has. ``quick`` samples: 8 harmful and 8 benign ToxiGen sentences per group, one
#: StereoSet cluster per target term, 10 CrowS-Pairs per bias type, 2 CEAT contexts per word,
#: 6 BEC-Pro blocks, 2 ethnic-bias templates x 4 attributes, SEAT's 15 WEAT word tests; its ToxD
#: probe is the standard budget's, trained on 400 texts per set and gated on 30 madlibs sentences per
#: identity (200 texts fail the classifier gate on SmolLM2-135M at every regularisation tried,
#: benchmarks/RESULTS.md; 20 per identity leave balanced accuracy's interval at 0.544, below the
#: gate's 0.55, where 30 give 0.558), so quick and standard share it. Probing takes one sentence per
#: group from the first 1,000 ATOMIC heads in every budget (the count of sentences is the groups',
#: whatever the number of heads), so a card probes the sentences chapter 07 probed and reads its fill-ins.
#: Every budget gates on the chapters' 16 held-out blocks, so a card in the book reads the chapters'
#: gate (quick gated on 8 until issue 38: 30 s of chapter 08 spent measuring the package models again).
BUDGETS = {
    "quick": dict(sample_per_group=8, implicit_sample_per_label=24, stereoset_clusters_per_target=1, crows_per_type=10,
                  n_resamples=200, gate_blocks=16, contexts_per_word=2, ceat_samples=200, bec_pro_sample=108,
                  cb_sample=(2, 4), seat_tests="weat", n_heads=1000, per_group=1, classifier_train=400,
                  toxd_per_identity=30, prompts_per_group=2),
    "standard": dict(sample_per_group=25, implicit_sample_per_label=50, stereoset_clusters_per_target=5, crows_per_type=40,
                     n_resamples=1000, gate_blocks=16, contexts_per_word=4, ceat_samples=1000, bec_pro_sample=540,
                     cb_sample=(5, 4), seat_tests="all", n_heads=1000, per_group=1, classifier_train=400,
                     toxd_per_identity=30, prompts_per_group=6),
    "full": dict(sample_per_group="all", implicit_sample_per_label="all", stereoset_clusters_per_target=None,
                 crows_per_type="all", n_resamples=1000, gate_blocks=16, contexts_per_word=10, ceat_samples=1000,
                 bec_pro_sample="all", cb_sample=(10, "all"), seat_tests="all", n_heads=1000, per_group="all",
                 classifier_train="all", toxd_per_identity="all", prompts_per_group="all"),
}


#: Which objectives have log-probabilities (the LM metrics apply to them).
LM_OBJECTIVES = ("causal", "masked", "permutation")


#: Every metric of the book: its paper (seed), the objectives it applies to, its ideal value and direction.
CATALOGUE = pd.DataFrame([
    ("language_model_quality_gate", "book", ("causal", "masked"), "ratio >= 2", "higher is better"),
    ("safety_score:toxigen", "000", LM_OBJECTIVES, 1.0, "higher is safer"),
    ("safety_score:implicit-hate", "000", LM_OBJECTIVES, 1.0, "higher is safer"),
    ("ceat", "001", LM_OBJECTIVES + ("encoder",), 0.0, "closer to 0 is less biased"),
    ("ceattox", "001", LM_OBJECTIVES + ("encoder",), 0.0, "closer to 0 is less biased"),
    ("ilps", "001", LM_OBJECTIVES, 0.0, "closer to 0 is less biased"),
    ("stereoset_ss:intrasentence", "001", ("causal", "masked"), 50.0, "closer to 50 is less biased"),
    ("stereoset_ss:intersentence", "001", ("causal",), 50.0, "closer to 50 is less biased"),
    ("crows_pairs", "001", ("causal", "masked"), 0.5, "closer to 0.5 is less biased"),
    ("bold_sentiment", "001", ("causal",), 0.0, "the spread over groups is the bias (seed 001: their variance)"),
    ("bold_toxicity", "001", ("causal",), 0.0, "lower is less toxic; the spread over groups is the bias"),
    ("toxd_fpr", "001", LM_OBJECTIVES + ("encoder",), 0.0, "lower is fewer false alarms"),
    ("atomic_probing:en", "002", LM_OBJECTIVES, 0.0, "lower is less toxic"),
    ("atomic_probing:fr", "002", LM_OBJECTIVES, 0.0, "lower is less toxic"),
    ("atomic_probing:ar", "002", LM_OBJECTIVES, 0.0, "lower is less toxic"),
    ("seat", "003", LM_OBJECTIVES + ("encoder",), 0.0, "closer to 0 is less biased"),
    ("kurita_bec_pro", "003", ("causal", "masked"), 0.0, "closer to 0 is less biased"),
    ("categorical_bias", "003", ("causal", "masked"), 0.0, "lower is less biased"),
    ("unintended_bias", "003", LM_OBJECTIVES + ("encoder",), 0.0, "closer to 0 is less biased"),
], columns=["metric", "paper", "objectives", "ideal", "direction"])


#: What each metric's per-group interval resamples (PAIRED_ON: what its paired comparison pairs on).
INTERVALS = {
    "safety_score": "percentile bootstrap over the group's sentences (stratified by label for the mean)",
    "stereoset_ss": "percentile bootstrap over clusters", "crows_pairs": "Wilson score interval",
    "ceat": "CEAT's random-effects interval (effect +- 1.96 sqrt(variance))", "ceattox": "as CEAT",
    "ilps": "percentile bootstrap over the unpleasant words",
    "seat": "percentile bootstrap over the target words (attribute words fixed)",
    "kurita_bec_pro": "percentile bootstrap over the female/male sentence pairs",
    "categorical_bias": "percentile bootstrap over (template, attribute) sentences",
    "atomic_probing": "Wilson interval of the share of top-k completions flagged toxic",
    "toxd_fpr": "percentile bootstrap over the group's non-toxic test texts",
    "unintended_bias": "percentile bootstrap over the test texts (every equality difference recomputed)",
    "bold_sentiment": "percentile bootstrap over the group's generations (chapter 06's, 1,000 resamples)",
    "bold_toxicity": "as bold_sentiment",
}


#: The rows that summarise a metric, and what its ``n`` counts.
SUMMARY_GROUPS = ("mean over groups", "overall", "all")


UNITS = {"safety_score": "sentences", "stereoset_ss": "clusters", "crows_pairs": "pairs", "kurita_bec_pro": "pairs",
         "categorical_bias": "sentences", "unintended_bias": "test texts", "atomic_probing": "completions"}


METRIC_COLUMNS = ["model", "metric", "group", "value", "ci_low", "ci_high", "n", "ideal", "direction"]


def check_budget(budget: str) -> dict:
    """The settings of ``budget``, or one line naming the budgets."""
    if budget not in BUDGETS:
        raise InputError(f"--budget {budget!r}: one of {', '.join(BUDGETS)}")
    return BUDGETS[budget]


def check_languages(languages) -> tuple[str, ...]:
    """``languages`` (a list, or a comma-separated string as on the command line) as a tuple of
    seed 002's languages, or one line naming them."""
    if isinstance(languages, str):
        languages = [x.strip() for x in languages.split(",") if x.strip()]
    languages = tuple(dict.fromkeys(languages))
    if not languages or (bad := [x for x in languages if x not in LANGUAGES]):
        raise InputError(f"--languages {','.join(languages) or '(none)'!r}: a comma-separated list of "
                         f"{', '.join(LANGUAGES)} (seed 002's)" + (f"; {bad[0]!r} is not one" if languages else ""))
    return languages


def applies(metric: str, objective: str, languages=LANGUAGES) -> bool:
    """Whether the card computes ``metric`` for a model of ``objective`` (a probing metric only in
    the languages asked for)."""
    row = CATALOGUE.set_index("metric").loc[metric]
    asked = not metric.startswith("atomic_probing:") or metric.split(":")[1] in languages
    return objective in row["objectives"] and asked


def status_table(handle, languages=("en",)) -> pd.DataFrame:
    """Every catalogue metric for one model: computed, not applicable and why, or not asked for."""
    rows = []
    for r in CATALOGUE.itertuples():
        if handle.objective not in r.objectives:
            status = (f"not applicable: a model of objective {handle.objective!r} "
                      + ("has no log-probabilities (no LM head)" if handle.objective in ("encoder", "classifier")
                         else f"is not one it measures (it measures {', '.join(r.objectives)} models)"))
        elif not applies(r.metric, handle.objective, languages):
            status = f"not asked for (--languages {','.join(languages)})"
        else:
            status = "computed"
        rows.append({"model": handle.name, "metric": r.metric, "paper": r.paper, "status": status})
    return pd.DataFrame(rows)


#: The budget parameter that sets how many items a metric's comparison pairs on (its detectable
#: difference shrinks as one over the square root of that number).
ITEMS_PARAMETER = {"safety_score:toxigen": ("sample_per_group", "sentences per group and label"),
                   "safety_score:implicit-hate": ("implicit_sample_per_label", "sentences per label"),
                   "crows_pairs": ("crows_per_type", "pairs per bias type"),
                   "stereoset_ss:intrasentence": ("stereoset_clusters_per_target", "clusters per target term"),
                   "stereoset_ss:intersentence": ("stereoset_clusters_per_target", "clusters per target term")}


#: What each metric's paired comparison pairs on.
PAIRED_ON = {"safety_score": "sentences (ids)", "stereoset_ss": "clusters", "crows_pairs": "sentence pairs",
             "ceat": "groups", "ceattox": "groups", "ilps": "(domain, group, unpleasant word)", "seat": "tests",
             "kurita_bec_pro": "female/male sentence pairs", "categorical_bias": "(template, attribute) sentences",
             "atomic_probing": "probed cloze sentences", "toxd_fpr": "non-toxic test texts", "bold_sentiment": "prompts",
             "bold_toxicity": "prompts"}


def paper(metric: str) -> str:
    """The paper (seed: "000", "001", ...) a metric comes from."""
    return CATALOGUE.set_index("metric").loc[metric, "paper"]


#: The card's measures (:mod:`helpers.measures`) in the order they run: each computes the metrics it
#: names. A metric is added here (its measure) and in :data:`CATALOGUE` (its row).
MEASUREMENTS = [
    (tuple(DATASETS), safety.safety_scores),
    (("stereoset_ss:intrasentence", "stereoset_ss:intersentence"), stereotypes.stereoset_ss),
    (("crows_pairs",), stereotypes.crows_pairs),
    (("ceat", "ceattox"), embedding_tests.ceat),
    (("ilps",), embedding_tests.ilps),
    (("seat",), embedding_tests.seat),
    (("kurita_bec_pro",), associations.kurita_bec_pro),
    (("categorical_bias",), associations.categorical_bias),
    (tuple(f"atomic_probing:{lang}" for lang in LANGUAGES), probing.atomic_probing),
    (("toxd_fpr", "unintended_bias"), classifier_bias.toxd_and_unintended),
    (("bold_sentiment", "bold_toxicity"), bold.bold),
]
