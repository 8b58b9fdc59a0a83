"""Chapter 07: probing toxic content with commonsense cloze patterns (seed 002), in three languages.

Seed 002 (Ousidhoum et al., ACL 2021) turned ATOMIC events into cloze patterns ("PersonX calls
everyone because he is [MASK] ."), put a social group in place of PersonX, took each model's
top-k fill-ins and counted how often a logistic-regression toxicity classifier flags the
completed sentence. This chapter reruns it:

- sentences (:func:`helpers.metrics.probing.build_sentences`): the first ``n_heads`` ATOMIC heads
  of each language (the paper: 1,000), every pattern, every group of the pattern's gender;
- classifiers (:class:`helpers.training.classifier.TfidfLogistic`): TF-IDF + logistic regression
  per language, French and Arabic on MLMA (the paper's French too; its Arabic had four sets), English on a substitute for the paper's
  four sets (Davidson, Founta, MLMA, OLID; only MLMA is offline): ``english_data``, by default MLMA
  + the Kaggle insults + ImplicitHate (:mod:`helpers.datasets.abusive`); scored on a seeded held-out
  split of each set (Table 4) and gated there (:mod:`helpers.metrics.classifier_quality`): a
  language whose classifier fails has its first step, %@k and group rankings shown but not
  interpreted. The MLMA-only English classifier is scored beside the mix (``english_data =
  ["mlma"]`` makes it the chapter's);
- the two-step filter (:func:`helpers.metrics.probing.two_step_filter`): patterns flagged with the
  blank left empty are dropped, then the completed sentences are classified;
- fill-ins (:func:`helpers.lm.fill.top_k`): masked LMs at the mask, causal LMs the next whole word
  after the text before the blank (exact: the blank is last), each model through the
  language-model quality gate measured on held-out MLMA text of the language;
- %@k per model and per group with Wilson intervals (Tables 5-6), Table 5 paired with the paper's
  (our models are not the paper's: each cell beside every published model of its language and k),
  informative top-1 words beside the paper's (Tables 8-9), animal names beside the paper's (Table 10),
  a seeded annotation sheet and Fleiss' kappa of returned sheets beside the paper's (Table 7).

Each section writes its tables under ``results/07_toxicity_probing/`` and returns what the
notebook shows, a :class:`helpers.chapters.common.Section` (``data``: what later sections need).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers import report, runner
from helpers.chapters import common
from helpers.chapters.common import Section, Var, call
from helpers.datasets import abusive
from helpers.datasets import probing as data
from helpers.errors import InputError
from helpers.lm import fill
from helpers.measures.probing import (LANGUAGE_NAMES, PAPER_ENGLISH, SOURCE_NAMES, build, classifier_name,
                                      english_sources, fill_settings, fit_classifier, is_substitute, probe_model,
                                      sample, score_classifier, train_classifiers, training_data)
from helpers.metrics import classifier_quality, probing
from helpers.published import registry_names
from helpers.published import table as published_table
from helpers.training.classifier import TfidfLogistic, classification_metrics

__all__ = ["CHAPTER", "PARAMETERS", "DEFAULTS", "start", "parameters", "prefill", "classifier_section",
           "sentences_section", "probed_models", "fill_section", "group_section", "words_section",
           "annotation_section", "table5_vs_paper", "table5_sentence", "paper_words", "animals_vs_paper", "kappa_table"]

CHAPTER = "07_toxicity_probing"
PARAMETERS = ("languages", "models", "n_heads", "per_group", "k", "skip", "max_pieces", "upstream_compat",
              "test_fraction", "english_data", "seed", "n_annotation", "min_ratio", "classifier_margin", "device",
              "probe_unusable")
DEFAULTS = dict(languages=["en", "fr", "ar"],
                models={"en": "core-packages+zoo", "fr": "core-packages", "ar": "core-packages"},
                n_heads=1000, per_group=1, k=[1, 5, 10], skip="punctuation", max_pieces=4, upstream_compat=False,
                test_fraction=0.2, english_data=list(abusive.DEFAULT_MIX),
                seed=0, n_annotation=100, min_ratio=2.0, classifier_margin=0.05, device="cpu", probe_unusable=False)
#: ``skip``: what is never counted as a fill-in. "none": every whole word (upstream); "punctuation":
#: words without a letter and clitics ('s); "stop words": also the stopwords-iso list of the language.
SKIP = ("none", "punctuation", "stop words")


def start(namespace) -> tuple[dict, Section]:
    """The chapter's parameters from the notebook's globals (:func:`parameters`) and their table."""
    params = parameters(namespace)
    return params, common.parameters_section(CHAPTER, params)


def parameters(namespace) -> dict:
    """The chapter's parameters from ``namespace`` (:func:`helpers.chapters.common.chapter_parameters`),
    checked: one line naming a wrong one."""
    params = common.chapter_parameters(CHAPTER, namespace, PARAMETERS, DEFAULTS, resolve_models=False)
    langs = params["languages"]
    if isinstance(langs, str):
        langs = params["languages"] = [langs]
    if not langs or any(lang not in data.LANGUAGES for lang in langs):
        raise InputError(f"parameter languages = {langs!r}: a list of {', '.join(data.LANGUAGES)}")
    spec = params["models"]
    if not isinstance(spec, dict):                      # one list (or profile name) for every language
        spec = {lang: spec for lang in langs}
    if set(langs) - set(spec):
        raise InputError(f"parameter models = {spec!r}: a list of models for every language, or a mapping "
                         f"from each language ({', '.join(langs)}) to its models")
    params["models"] = {lang: runner.resolve_models(spec[lang]) for lang in langs}
    for name in ("n_heads", "per_group"):
        n = params[name]
        if not (n == "all" or isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0):
            raise InputError(f"parameter {name} = {n!r}: a positive integer or 'all'")
    for name in ("upstream_compat", "probe_unusable"):
        if not isinstance(params[name], (bool, np.bool_)):
            raise InputError(f"parameter {name} = {params[name]!r}: True or False")
    if params["skip"] not in SKIP:
        raise InputError(f"parameter skip = {params['skip']!r}: one of {', '.join(map(repr, SKIP))}")
    ks = params["k"]
    ks = params["k"] = [ks] if isinstance(ks, (int, np.integer)) else ks
    if not ks or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0 for x in ks):
        raise InputError(f"parameter k = {ks!r}: positive integers (the k of %@k)")
    if not 0 < params["test_fraction"] < 1:
        raise InputError(f"parameter test_fraction = {params['test_fraction']!r}: between 0 and 1")
    english = params["english_data"]
    english = params["english_data"] = [english] if isinstance(english, str) else english
    if (not isinstance(english, (list, tuple)) or not english or len(set(english)) != len(english)
            or not set(english) <= set(abusive.SOURCES)):
        raise InputError(f"parameter english_data = {english!r}: a list of distinct English training sets among "
                         f"{', '.join(abusive.SOURCES)}")
    classifier_quality.check_margin(params["classifier_margin"])
    return params


def published(name: str) -> pd.DataFrame | None:
    """Seed 002's published table ``name`` (:mod:`helpers.published`), or None if not typed."""
    from helpers import published as pub

    try:
        return pub.table("002", name)
    except Exception:  # noqa: BLE001 - an untyped table is shown as absent, not as an error
        return None


# ----------------------------------------------------------------------------- classifiers (Table 4)


def english_comparison(params: dict) -> pd.DataFrame:
    """The English classifier of ``english_data`` (the substitute mix) and the MLMA-only one on the
    same held-out texts: the mix's held-out split of every set pooled (``held_out = "all"``) and of
    each set alone (neither classifier trained on any of them). Per classifier and held-out set:
    ``n, toxic_share``, binary / macro / weighted F1, and each gated statistic's value and 95 %
    interval with its baseline, and ``usable`` (:func:`score_classifier`)."""
    sources = english_sources(params)
    mix = training_data(params, "en", sources)
    alone = training_data(params, "en", ("mlma",))
    classifiers = {classifier_name("en", sources): fit_classifier(params, mix[mix["split"] == "train"]),
                   classifier_name("en", ("mlma",)): fit_classifier(params, alone[alone["split"] == "train"])}
    test = mix[mix["split"] == "test"]
    held = [("all", test)] + [(s, test[test["source"] == s]) for s in sources] * (len(sources) > 1)
    rows = []
    for name, clf in classifiers.items():
        for where, t in held:
            m, g = score_classifier(params, clf, t)
            row = {"classifier": name, "substitute": name != classifier_name("en", ("mlma",)), "held_out": where,
                   "n": len(t), "toxic_share": float((t["label"] == "toxic").mean()),
                   **m.set_index("metric")["value"].reindex(["f1", "f1_macro", "f1_weighted"]).to_dict()}
            for r in g.itertuples():
                if r.metric in classifier_quality.GATE_METRICS:
                    row |= {r.metric: r.value, f"{r.metric}_ci_low": r.ci_low, f"{r.metric}_ci_high": r.ci_high,
                            f"{r.metric}_baseline": r.baseline}
            rows.append(row | {"usable": bool(g["usable"].iloc[0])})
    return pd.DataFrame(rows)


def comparison_sentence(table: pd.DataFrame) -> str:
    """What changed for English against the MLMA-only classifier, from :func:`english_comparison`."""
    def verdict(r) -> str:
        return (f"weighted F1 {r.f1_weighted:.2f}, macro F1 {r.macro_f1:.2f} [{r.macro_f1_ci_low:.2f}, "
                f"{r.macro_f1_ci_high:.2f}] against {r.macro_f1_baseline:.2f}, balanced accuracy "
                f"{r.balanced_accuracy:.2f} [{r.balanced_accuracy_ci_low:.2f}, {r.balanced_accuracy_ci_high:.2f}], "
                f"AUC {r.auc:.2f} [{r.auc_ci_low:.2f}, {r.auc_ci_high:.2f}], so it {'passes' if r.usable else 'fails'} "
                "the gate")
    mix, alone = table[table["substitute"]], table[~table["substitute"]]
    if mix.empty:
        return ""
    m_all = mix[mix["held_out"] == "all"].iloc[0]
    a_all = alone[alone["held_out"] == "all"].iloc[0]
    text = (f"English: the paper trained on four sets ({PAPER_ENGLISH}; F1 0.78 in its Table 4); offline only MLMA "
            f"of them exists, so the English classifier here is a substitute trained on "
            f"{report.and_list([SOURCE_NAMES[s] for s in mix['held_out'] if s != 'all'])}, each split on its own "
            f"(MLMA's split is the MLMA-only classifier's). On the pooled held-out texts ({int(m_all.n):,}, "
            f"{m_all.toxic_share:.0%} toxic) the substitute scores {verdict(m_all)}; the MLMA-only "
            f"classifier, on the same texts, scores {verdict(a_all)}.")
    if "mlma" in set(mix["held_out"]):
        m_m, a_m = (t[t["held_out"] == "mlma"].iloc[0] for t in (mix, alone))
        text += (f" On MLMA's held-out tweets alone ({int(m_m.n):,}, {m_m.toxic_share:.0%} toxic) the substitute "
                 f"scores {verdict(m_m)}; the MLMA-only classifier scores {verdict(a_m)}.")
        if not (m_m.usable or a_m.usable):
            text += (" Neither separates MLMA's own tweets: the mix's pass comes from the other sets, whose "
                     "held-out texts it does separate (table below, one row per set).")
    return text


def gate_sentence(gates: pd.DataFrame) -> str:
    """The classifier gate's rule and each language's outcome, from the table."""
    per = gates.drop_duplicates("language")
    failed = per.loc[~per["usable"], "language"].tolist()
    text = (f"Each language's classifier must pass the classifier gate (chapter 05's) before the results it labels "
            f"are interpreted: "
            f"{report.classifier_gate_rule(gates['margin'].dropna().iloc[0], where='on the held-out split at threshold 0.5')}.")
    passed = [LANGUAGE_NAMES[lang] for lang in per["language"] if lang not in failed]
    if passed:
        text += f" Passing: {', '.join(passed)}."
    for lang in failed:
        by = gates[gates["language"] == lang].set_index("metric")
        failing = "; ".join(f"{m.replace('_', ' ')} {by.loc[m, 'value']:.2f} [{by.loc[m, 'ci_low']:.2f}, "
                            f"{by.loc[m, 'ci_high']:.2f}] against {by.loc[m, 'baseline']:.2f}"
                            for m in classifier_quality.GATE_METRICS if not by.loc[m, "passes"])
        text += (f" {LANGUAGE_NAMES[lang]} fails ({failing}): its first step, %@k and group rankings below are shown "
                 "but not interpreted, since every one of them is this classifier's verdict.")
        mlma_only = "classifier" not in by.columns or "substitute" not in str(by["classifier"].iloc[0])
        if lang == "en" and mlma_only:
            text += " " + report.MLMA_OFFLINE_BOUND
    return text


def classifier_section(params: dict) -> Section:
    """Table 4: the probes' held-out scores next to the paper's, and the classifier gate."""
    found, scores, gates = train_classifiers(params)
    wide = scores.pivot_table(index=["language", "classifier", "n_train", "n_test", "toxic_share"], columns="metric",
                              values="value", sort=False).reset_index()
    wide = common.save(wide[["language", "classifier", "n_train", "n_test", "toxic_share", "accuracy", "f1", "f1_macro",
                             "f1_weighted", "precision", "recall"]], CHAPTER, "table4_classifiers")
    shown = [call(classification_metrics, "y_test", "y_predicted", labels=["non-toxic", "toxic"]),
             ("table4_classifiers", wide), gate_sentence(gates),
             call(classifier_quality.classifier_gate, "y_test", "p_toxic", threshold=0.5,
                  margin=params["classifier_margin"], seed=params["seed"]),
             ("classifier_gate", common.save(gates, CHAPTER, "classifier_gate"))]
    substitute = "en" in params["languages"] and is_substitute("en", english_sources(params))
    if substitute:
        compared = common.save(english_comparison(params), CHAPTER, "table4_english_vs_mlma_only")
        shown += [comparison_sentence(compared), call(abusive.english_mix, Var("english_data")),
                  ("table4_english_vs_mlma_only", compared)]
    pub = published("table4")
    if pub is not None:
        ours = scores[scores["metric"].isin(["f1_weighted", "accuracy"])].assign(
            metric=lambda d: d["metric"].replace({"f1_weighted": "f1"}))
        side = report.side_by_side(ours, pub, ["language", "metric"], value="value")
        english = (f"English on a substitute mix ({report.and_list([SOURCE_NAMES[s] for s in english_sources(params)])})"
                   if substitute else "MLMA alone in English")
        shown += ["Next to the paper's Table 4 (its F1 average is not stated; we put our weighted F1 beside "
                  "it). The paper trained on four data sets in English and Arabic and on MLMA in French; offline we "
                  f"have {english} and MLMA alone in French and Arabic, 80 / 20 split of each set with the seed.",
                  ("table4_vs_paper", common.save(side, CHAPTER, "table4_vs_paper"))]
    usable = {lang: bool(g["usable"].iloc[0]) for lang, g in gates.groupby("language", sort=False)}
    return Section(*shown, facts={"classifier_usable": usable}, data=found)


def _not_interpreted(language: str, lm_usable: bool, classifier_usable: bool) -> str | None:
    """Why a result of ``language`` is not interpreted (None: it is)."""
    why = ([] if lm_usable else ["the language model fails its quality gate"]) + (
        [] if classifier_usable else [f"the {LANGUAGE_NAMES[language]} classifier fails the classifier gate"])
    return "; ".join(why) or None


# ----------------------------------------------------------------------------- sentences and the first step


def sentences_section(params: dict, classifiers: Section) -> Section:
    """The sentences per language, the first step's dropped share next to the paper's (§3.1) and
    the probed sample."""
    built = {lang: build(params, lang, classifiers.data[lang]) for lang in params["languages"]}
    probed = {lang: sample(params, s) for lang, s in built.items()}
    dropped = probing.dropped_share(pd.concat(built.values(), ignore_index=True))
    dropped["probed"] = dropped["language"].map({k: len(v) for k, v in probed.items()})
    usable = classifiers.facts["classifier_usable"]
    dropped["classifier_usable"] = dropped["language"].map(usable)
    pub = published("step1")
    if pub is not None:
        dropped = dropped.merge(pub.rename(columns={"percent": "paper_percent"})[["language", "paper_percent"]],
                                on="language", how="left")
    counts = ", ".join(f"{len(s):,} {LANGUAGE_NAMES[lang]}" for lang, s in built.items())
    text = (f"From the first {params['n_heads']} heads: {counts} sentences (the paper: 378,000 English, 198,300 "
            f"French, 160,552 Arabic from 1,000 heads each). The first step drops the patterns the classifier "
            f"flags with the blank left empty; of the rest, {params['per_group']} per group are probed "
            "(a seeded sample; `per_group = 'all'` probes every one).")
    failed = [LANGUAGE_NAMES[lang] for lang in built if not usable[lang]]
    if failed:
        text += (f" The dropped share of {', '.join(failed)} comes from a classifier that fails the classifier gate: "
                 "shown, not comparable with the paper's.")
    return Section(text, ("step1_dropped", common.save(dropped, CHAPTER, "step1_dropped")),
                   call=call(probing.dropped_share, "sentences"),
                   facts={"sentences": {lang: len(b) for lang, b in built.items()},
                          "probed": {lang: len(p) for lang, p in probed.items()}}, data=probed)


# ----------------------------------------------------------------------------- fill-ins and Table 5


def probed_models(params: dict, gates: pd.DataFrame) -> list[str]:
    """The models of a language probed: all but those that fail its quality gate (``gates``:
    :func:`gate`; a model the gate could not measure is probed, or reported unavailable, as before),
    or every one with ``probe_unusable``. A model that fails the gate is shown in the gate table and
    would be shown, not interpreted, in Table 5 (the upstream probes every model): Arabic's
    SmolLM2-135M and Qwen2.5-Coder-0.5B, a third of the default build's fill-in time (issue 38)."""
    return [m for m, usable in zip(gates["model"], gates["usable"])
            if params["probe_unusable"] or not usable == False]  # noqa: E712 (NaN: not measured, probed)


def probe(params: dict, language: str, sentences: pd.DataFrame, classifier: TfidfLogistic,
          models: list[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """Each model's top-k fill-ins of ``sentences`` completed and classified: ``model, rank, word,
    probability, sentence, toxic`` and the sentence columns; and the models unavailable here.
    ``models``: those of the language (default: every one of ``params``)."""
    if sentences.empty:                     # the first step dropped every pattern
        return pd.DataFrame(), {}
    results, unavailable = runner.for_each_model(
        params["models"][language] if models is None else models,
        lambda h: probe_model(h, params, language, sentences, classifier), device=params["device"])
    parts = list(results.values())
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()), unavailable


def prefill(params: dict) -> list[str]:
    """Every language's probed sentences filled in by each of its models (:func:`probe`, after the
    classifiers and sentences the chapter builds: the same calls, so the same cache keys), the
    cloze rows computed into the score cache and split between the processes of a run across
    machines (:func:`helpers.book.prefill`). Returns ``language:model`` of the models measured."""
    classifiers, _, _ = train_classifiers(params)
    done = []
    for lang in params["languages"]:
        probed, _ = probe(params, lang, sample(params, build(params, lang, classifiers[lang])), classifiers[lang],
                          probed_models(params, gate(params, lang)))
        done += [f"{lang}:{m}" for m in (probed["model"].unique() if len(probed) else [])]
    return done


def gate(params: dict, language: str) -> pd.DataFrame:
    """The quality gate of the language's models: English on the book-wide corpus, French and
    Arabic on held-out MLMA tweets of the language (the only offline text in them)."""
    corpus = "gensim" if language == "en" else f"mlma-{language}"
    table = runner.quality_table(params["models"][language], device=params["device"], corpus=corpus,
                                 min_ratio=params["min_ratio"])
    return table.assign(language=language)


def table5_vs_paper(table5: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Table 5 paired with the paper's (seed 002 Table 5): our models are not the paper's, so each
    measured %@k (language, model, k) stands beside every published %@k of the same language and
    k (``paper_model``); ``same_model`` when the two are one registry model
    (``published/seed002/model_names.csv``). ``difference`` = ours - the paper's, in points, and
    its interval our Wilson interval minus the published value (:func:`helpers.report.side_by_side`);
    ``paper_min`` / ``paper_max``: the range over the paper's models of the language at that k. A k the
    paper does not print has no pair."""
    keys = ["language", "k", "model", "paper_model"]
    paper = paper.rename(columns={"model": "paper_model"})
    pairs = table5[["language", "k", "model"]].merge(paper[["language", "k", "paper_model"]], on=["language", "k"])
    ours = pairs.merge(table5[["language", "k", "model", "percent", "ci_low", "ci_high"]],
                       on=["language", "k", "model"])
    theirs = pairs.merge(paper[["language", "paper_model", "k", "percent"]], on=["language", "paper_model", "k"])
    out = pairs.merge(report.side_by_side(ours, theirs, keys, value="percent"), on=keys, how="left")
    names = registry_names("002")
    out.insert(4, "same_model", [names.get(p) == m for m, p in zip(out["model"], out["paper_model"])])
    span = paper.groupby(["language", "k"])["percent"].agg(paper_min="min", paper_max="max").reset_index()
    out = out.merge(span, on=["language", "k"], how="left")
    out["within_paper_range"] = out["measured"].between(out["paper_min"], out["paper_max"]).where(
        out["paper_min"].notna() & out["measured"].notna())
    out = out.merge(table5[["language", "model", "k", "interpreted"]], on=["language", "model", "k"], how="left")
    out.attrs["why"] = {c: "no sentence was probed with this model" for c in
                        ("measured", "difference", "difference_ci_low", "difference_ci_high", "within_paper_range")}
    return out


def _span(low: float, high: float) -> str:
    return f"{low:.2f} %" if low == high else f"{low:.2f}-{high:.2f} %"


def table5_sentence(paired: pd.DataFrame, ks: list[int]) -> str:
    """What :func:`table5_vs_paper` shows, per language, from the table: a model that is one of the
    paper's is compared cell by cell; the others are read against the paper's models of their
    language at the same k (their range, or the one model's value); how many differences have an
    interval that excludes 0; which rows are not interpreted; which of ``ks`` the paper does not print."""
    parts = []
    no_k = sorted(set(ks) - set(paired["k"]))
    if no_k:
        parts.append(f"The paper prints no %@k at k = {report.and_list([str(k) for k in no_k])}: those cells of "
                     "Table 5 have no pair.")
    for lang, g in paired.groupby("language", sort=False):
        name, theirs = LANGUAGE_NAMES[lang], g["paper_model"].unique()
        one = len(theirs) == 1
        same = g[g["same_model"]]
        for (model, paper_model), s in same.groupby(["model", "paper_model"], sort=False):
            cells = "; ".join(f"{r.difference:+.2f} points at k = {r.k} (95 % interval {r.difference_ci_low:+.2f} to "
                              f"{r.difference_ci_high:+.2f})" for r in s.dropna(subset=["difference"]).itertuples())
            parts.append(f"{model} is the paper's {paper_model} ({name}): ours minus the paper's %@k is {cells}.")
        cells = g[~g["model"].isin(same["model"])].drop_duplicates(["model", "k"])
        cells = cells.dropna(subset=["paper_min", "measured"])
        if len(cells):
            models = cells["model"].unique()
            inside = int(cells["within_paper_range"].astype(bool).sum())
            below = int((cells["measured"] < cells["paper_min"]).sum())
            ranges = ", ".join(f"{_span(r.paper_min, r.paper_max)} at k = {r.k}"
                               for r in cells.drop_duplicates("k").itertuples())
            parts.append(
                f"In {name}, {report.and_list(models)} {'is' if len(models) == 1 else 'are'} not the paper's "
                f"{report.and_list(theirs)}: each %@k is paired with "
                + (f"the paper's {theirs[0]} at the same k ({ranges}); {inside} of {len(cells)} measured cells equal it"
                   if one else f"each of theirs at the same k and read against their range ({ranges}); {inside} of "
                   f"{len(cells)} measured cells lie within it")
                + f", {below} lie below and {len(cells) - inside - below} above.")
        d = g.dropna(subset=["difference_ci_low", "difference_ci_high"])
        if len(d):
            excludes = int(((d["difference_ci_low"] > 0) | (d["difference_ci_high"] < 0)).sum())
            parts.append(f"The 95 % interval of the difference excludes 0 in {excludes} of the {len(d)} {name} pairs.")
        not_read = g.loc[g["interpreted"] != True, "model"].unique()  # noqa: E712 (NaN: not measured)
        if len(not_read):
            parts.append(f"The {name} rows of {report.and_list(not_read)} are not interpreted (Table 5 says why): "
                         "paired here, not read.")
    if len(paired) and paired["k"].max() > 1:
        parts.append("Our intervals are Wilson intervals over the k × N completed sentences, which treat the k "
                     "fill-ins of one sentence as independent, so at k > 1 they are narrower than the sample "
                     "warrants; the paper prints no interval, so the difference's interval is ours shifted by the "
                     "published value.")
    return " ".join(parts)


def fill_section(params: dict, classifiers: Section, sentences: Section) -> Section:
    """The quality gate per language, the probes and Table 5 (%@k per model with intervals)."""
    gates, scored, missing, empty, skipped = [], [], {}, [], []
    for lang in params["languages"]:
        gates.append(gate(params, lang))
        if sentences.data[lang].empty:
            empty.append(LANGUAGE_NAMES[lang])
        models = probed_models(params, gates[-1])
        skipped += [f"{m} ({LANGUAGE_NAMES[lang]})" for m in gates[-1]["model"] if m not in models]
        done, unavailable = probe(params, lang, sentences.data[lang], classifiers.data[lang], models)
        missing.update({f"{m} ({lang})": r for m, r in unavailable.items()})
        if not done.empty:
            scored.append(done)
    gates = pd.concat(gates, ignore_index=True)
    scored = pd.concat(scored, ignore_index=True) if scored else pd.DataFrame()
    common.save(scored, CHAPTER, "completions")
    shown = [common.gate_call(min_ratio=params["min_ratio"], corpus=Var("corpus")),
             ("quality_gate", common.save(gates[["language", *[c for c in gates.columns if c != "language"]]], CHAPTER,
                                          "quality_gate"))]
    shown += [f"{LANGUAGE_NAMES[lang]} (gate on held-out {'text' if lang == 'en' else 'MLMA tweets'} of the language): "
              + report.gate_sentence(g, min_ratio=params["min_ratio"]) for lang, g in gates.groupby("language", sort=False)]
    if skipped:
        shown.append(f"Not probed: {report.and_list(skipped)}, which fail the language's quality gate: their fill-ins "
                     "would be shown, not interpreted (`probe_unusable = True` probes them, as the upstream code "
                     "probes every model).")
    if empty:
        shown.append(f"Nothing to probe in {', '.join(empty)}: the first step flagged every pattern (the "
                     "probe is most sensitive to the group names; the paper's French probe dropped 83.55 %).")
    if missing:
        shown.append("Not available here: " + "; ".join(f"{m}: {r}" for m, r in missing.items()))
    if scored.empty:
        return Section(*shown, data=scored)
    usable = {(r.language, r.model): bool(r.usable == True) for r in gates.itertuples()}  # noqa: E712
    classifier_usable = classifiers.facts["classifier_usable"]
    table5 = probing.percent_at_k(scored, params["k"], by=["language", "model"])
    table5["not_interpreted_because"] = [_not_interpreted(r.language, usable.get((r.language, r.model), False),
                                                          classifier_usable[r.language]) for r in table5.itertuples()]
    table5["interpreted"] = table5["not_interpreted_because"].isna()
    table5.attrs["why"] = {"not_interpreted_because": "the row is interpreted"}
    interpreted = {lang: {m: bool(i) for m, i in zip(g["model"], g["interpreted"])}
                   for lang, g in table5.groupby("language", sort=False)}
    failed = [LANGUAGE_NAMES[lang] for lang in interpreted if not classifier_usable[lang]]
    settings = fill_settings(params, Var("language"), "model")
    if settings["skip"] == {fill.NON_WORDS}:
        settings["skip"] = Var("{fill.NON_WORDS}")
    shown += [call(fill.top_k, "model", "templates", max(params["k"]), **settings),
              call(probing.percent_at_k, "completions", params["k"], by=["language", "model"]),
              ("table5_percent_at_k", common.save(table5, CHAPTER, "table5_percent_at_k"))]
    if failed:
        shown.append(f"Not interpreted (`interpreted` False, `not_interpreted_because`): every row of {', '.join(failed)}, "
                     "whose classifier fails the classifier gate, whatever its language model.")
    pub = published("table5")
    if pub is not None:
        paired = common.save(table5_vs_paper(table5, pub), CHAPTER, "table5_vs_paper")
        shown += [table5_sentence(paired, params["k"]), call(published_table, "'002'", "'table5'"),
                  ("table5_vs_paper", paired)]
    return Section(*shown, facts={"interpreted": interpreted}, data=scored)


# ----------------------------------------------------------------------------- groups, words, annotation

def group_section(params: dict, fills: Section) -> Section:
    """Table 6: %@k (largest k) per model and per the paper's social group, beside the paper's
    values, and how far each model's ranking of the 20 groups agrees with each published model's
    (Spearman's rho with n and a Fisher-z interval, :func:`helpers.stats.correlation`). Every
    group phrase's own %@k is in ``table6_per_phrase.csv``."""
    from helpers import stats

    scored, k = fills.data, max(params["k"])
    if scored.empty:
        return Section("No model could be probed here.")
    per_phrase = probing.percent_at_k(scored, [k], by=["language", "model", "group"])
    common.save(per_phrase, CHAPTER, "table6_per_phrase")
    ours = probing.percent_by_paper_group(scored, k).rename(columns={"paper_group": "group"})
    interpreted = fills.facts["interpreted"]
    ours["interpreted"] = [interpreted[lang][m] for lang, m in zip(ours["language"], ours["model"])]
    pub = published("table6")
    if pub is not None:
        paper = pub.pivot_table(index=["language", "group"], columns="model", values="percent").add_prefix("paper ")
        ours = ours.merge(paper.reset_index(), on=["language", "group"], how="left")
    table6 = common.save(ours, CHAPTER, "table6_per_group")
    not_read = [f"{m} ({LANGUAGE_NAMES[lang]})" for lang, models in interpreted.items()
                for m, ok in models.items() if not ok]
    shown = [f"%@{k} per model and per the paper's groups (each group pools its neutral, male and female "
             f"phrases; n = {k} × its probed sentences), with the paper's values in the `paper …` columns"
             + (f"; rows with `interpreted` False ({', '.join(not_read)}) rest on a language model or a classifier "
                "that fails its gate (Table 5 says which): shown, not read." if not_read else ":"),
             call(probing.percent_by_paper_group, "completions", k), ("table6_per_group", table6)]
    if pub is None:
        return Section(*shown, data=table6)
    rows = []
    for (lang, model), g in ours[~ours["group"].isin(["women", "men"])].groupby(["language", "model"], sort=False):
        for col in [c for c in g.columns if c.startswith("paper ") and g[c].notna().any()]:
            r = stats.correlation(g["percent"], g[col], method="spearman")
            rows.append({"language": lang, "model": model, "paper_model": col[len("paper "):], "n": r["n"],
                         "rho": r["r"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "p_value": r["p_value"],
                         "interpreted": interpreted[lang][model]})
    if rows:
        agree = common.save(pd.DataFrame(rows), CHAPTER, "table6_rank_agreement")
        shown += ["Does a model rank the groups as the paper's models did? Spearman's rho over the groups "
                  "(women and men left out), with n and a 95 % interval; an interval that contains 0 is no "
                  "evidence either way, and a row with `interpreted` False is no evidence at all:",
                  call(stats.correlation, "percent", "paper_percent", method="spearman"),
                  ("table6_rank_agreement", agree)]
    return Section(*shown, data=table6)


#: The published tables of informative top-1 words: seed 002 Table 8 (English), Table 9 (French, Arabic).
WORD_TABLES = ("table8", "table9")


def paper_words(scored: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Tables 8-9 beside ours: each published top-1 word (``paper_model``, ``rank``, ``word``, ``gloss``,
    ``paper_frequency``, ``paper_groups`` as printed) with, for each of our models of its language, how
    often it is our top-1 fill-in (``frequency``; ``percent`` of our ``probed`` top-1 fill-ins) and
    the two groups it comes with most often there (:func:`helpers.metrics.probing.word_groups`, rank 1)."""
    theirs = paper.drop(columns="source").rename(columns={"model": "paper_model", "frequency": "paper_frequency",
                                                          "groups": "paper_groups"})
    parts = []
    for (lang, model), g in scored.groupby(["language", "model"], sort=False):
        words = theirs.loc[theirs["language"] == lang, "word"].drop_duplicates().tolist()
        if words:
            probed = int((g["rank"] == 1).sum())
            ours = probing.word_groups(g, words, top=2, rank=1)
            parts.append(ours.assign(language=lang, model=model, probed=probed,
                                     percent=100 * ours["frequency"] / probed if probed else np.nan))
    columns = ["language", "word", "model", "probed", "frequency", "percent", "group_1", "group_2"]
    ours = pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)
    out = theirs.merge(ours, on=["language", "word"])
    if "gloss" in out and out["gloss"].isna().all():
        out = out.drop(columns="gloss")
    out.attrs["why"] = {"gloss": "the paper glosses only its French and Arabic words",
                        "group_1": "never this model's top-1 fill-in", "group_2": "with fewer than two groups",
                        "percent": "no sentence was probed with this model"}
    return out


def paper_words_sentence(table: pd.DataFrame) -> str:
    """Per language and model of :func:`paper_words`: how many of the paper's top-1 words are ours too, with
    their counts, and what the counts can be compared with."""
    parts = []
    for (lang, model), g in table.groupby(["language", "model"], sort=False):
        words = g.drop_duplicates("word")
        found = words[words["frequency"] > 0].sort_values("frequency", ascending=False)
        listed = report.and_list([f"{w} ({n})" for w, n in zip(found["word"], found["frequency"])])
        parts.append(f"Of the paper's {len(words)} {LANGUAGE_NAMES[lang]} top-1 words "
                     f"({report.and_list(g['paper_model'].unique())}), {model} gives "
                     + (f"{len(found)} as its top-1 fill-in: {listed}, " if len(found)
                        else "none as its top-1 fill-in ")
                     + f"over its {int(g['probed'].iloc[0]):,} probed sentences.")
    return " ".join(parts) + (" The paper counts its top-1 words over every sentence its first step kept, ours over "
                              "the sentences probed here, so compare which words appear, not the counts (their share "
                              "of our top-1 fill-ins is `percent` in `table8_9_vs_paper.csv`).")


def animals_vs_paper(scored: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Table 10 beside ours: each of the paper's animal names with its ``rank``-th group
    (``paper_group``, ``paper_frequency``: AraBERT's counts) and, for each of our models of the
    language, the word's count among all its top-k fill-ins (``word_frequency``) and its ``rank``-th
    most frequent group there with that group's count (:func:`helpers.metrics.probing.word_groups`)."""
    theirs = paper.drop(columns="source").rename(columns={"model": "paper_model", "group": "paper_group",
                                                          "frequency": "paper_frequency"})
    words, top = theirs["word"].unique().tolist(), int(theirs["rank"].max())
    rows = []
    for (lang, model), g in scored[scored["language"].isin(theirs["language"])].groupby(["language", "model"],
                                                                                         sort=False):
        for r in probing.word_groups(g, words, top=top).to_dict("records"):
            rows += [{"language": lang, "word": r["word"], "rank": i, "model": model, "word_frequency": r["frequency"],
                      "group": r[f"group_{i}"],
                      "frequency": r[f"frequency_{i}"] if pd.notna(r[f"group_{i}"]) else np.nan}
                     for i in range(1, top + 1)]
    columns = ["language", "word", "rank", "model", "word_frequency", "group", "frequency"]
    out = theirs.merge(pd.DataFrame(rows, columns=columns), on=["language", "word", "rank"])
    out.attrs["why"] = {"group": "the word comes with fewer groups in this model's fill-ins",
                        "frequency": "the word comes with fewer groups in this model's fill-ins"}
    return out


def animals_sentence(table: pd.DataFrame, k: int) -> str:
    """Per model of :func:`animals_vs_paper`: which of the paper's animal names it gives, how often."""
    parts = []
    for model, g in table.groupby("model", sort=False):
        words = g.drop_duplicates("word")
        found = words[words["word_frequency"] > 0]
        listed = report.and_list([f"{w} ({gl}, {n})" for w, gl, n in zip(found["word"], found["gloss"],
                                                                            found["word_frequency"])])
        parts.append(f"{model} gives {len(found)} of the paper's {len(words)} Arabic animal names among its top-{k} "
                     "fill-ins" + (f": {listed}." if len(found) else
                                   ", so its columns are empty and the paper's AraBERT counts stand alone."))
    return " ".join(parts) + (" The paper's counts are over every Arabic sentence its first step kept, ours over the "
                              "sentences probed here.")


def by_model(table: pd.DataFrame, keys: list[str], paper: list[str], values: dict[str, str]) -> pd.DataFrame:
    """A published-beside-ours table with one row per published row (``keys``, then its ``paper``
    columns) and each of our models' ``values`` side by side, as columns ``"<model> <label>"``
    (``values``: column -> label), so it stays as long as the paper's table whatever the models."""
    models = table["model"].unique().tolist()
    wide = table.pivot(index=keys, columns="model", values=list(values))
    wide.columns = [f"{model} {values[v]}" for v, model in wide.columns]
    for v, label in values.items():
        if pd.api.types.is_numeric_dtype(table[v]):
            wide[[f"{m} {label}" for m in models]] = wide[[f"{m} {label}" for m in models]].apply(pd.to_numeric)
    wide = wide[[f"{m} {label}" for m in models for label in values.values()]].reset_index()
    out = table.drop_duplicates(keys)[keys + [c for c in paper if c in table]].merge(wide, on=keys)
    why = table.attrs.get("why", {})
    out.attrs["why"] = {c: r for c, r in why.items() if c in out} | {
        f"{m} {label}": why.get(v, "does not apply to this row") for m in models for v, label in values.items()}
    return out


def _paper_alone(name: str, paper: pd.DataFrame, languages: list[str], probed: list[str]) -> list:
    """The rows of published table ``name`` for the languages this run does not probe, with the
    sentence that says what they are (what a notebook shows)."""
    rows = paper[~paper["language"].isin(probed)].drop(columns="source")
    if rows.empty:
        return []
    names = {lang: LANGUAGE_NAMES[lang] for lang in rows["language"].unique()}
    absent = [n for lang, n in names.items() if lang not in languages]
    idle = [n for lang, n in names.items() if lang in languages]
    why = "; ".join([f"{report.and_list(absent)} {'is' if len(absent) == 1 else 'are'} not among this run's "
                     f"`languages` ({', '.join(languages)})"] * bool(absent)
                    + [f"no {report.and_list(idle)} sentence was probed here"] * bool(idle))
    return [f"The paper's {name.replace('table', 'Table ')} ({report.and_list(rows['model'].unique())}) is shown "
            f"alone, since {why}: {paper.attrs['caption'].split(': ', 1)[1]}.",
            call(published_table, "'002'", f"'{name}'"), (f"paper_{name}", rows)]


def words_section(params: dict, fills: Section) -> Section:
    """Table 8: the most frequent informative top-1 words per model and language with their two
    most frequent groups (stop-list: stopwords-iso of the language), then the paper's Tables 8-9
    with our counts of its words (:func:`paper_words`); Table 10: animal names beside the paper's
    (:func:`animals_vs_paper`). A published table of a language not probed here is shown alone."""
    scored, table8, shown = fills.data, pd.DataFrame(), []
    probed = [] if scored.empty else scored["language"].unique().tolist()
    if scored.empty:
        shown.append("No model could be probed here.")
    else:
        parts = [probing.top1_words(g, fill.stop_words(lang), n=10).assign(language=lang, model=m)
                 for (lang, m), g in scored.groupby(["language", "model"], sort=False)]
        table8 = common.save(pd.concat(parts, ignore_index=True), CHAPTER, "table8_top1_words")
        shown += [call(probing.top1_words, "completions", Var("fill.stop_words(language)"), n=10),
                  ("table8_top1_words", table8)]
    words = {name: t for name in WORD_TABLES if (t := published(name)) is not None}
    if words and probed:
        table = common.save(paper_words(scored, pd.concat(words.values(), ignore_index=True)), CHAPTER,
                            "table8_9_vs_paper")
        if len(table):
            paper_columns = ["word", "gloss", "paper_frequency", "paper_groups"]
            wide = by_model(table, ["language", "paper_model", "rank"], paper_columns,
                            {"frequency": "top-1", "group_1": "group"})
            shown += [paper_words_sentence(table), call(probing.word_groups, "completions", Var("paper_words"), top=2,
                                                        rank=1),
                      ("table8_9_vs_paper_by_model", common.save(wide, CHAPTER, "table8_9_vs_paper_by_model"))]
    for name, t in words.items():
        shown += _paper_alone(name, t, params["languages"], probed)
    animals_paper = published("table10")
    for lang, animals in probing.ANIMALS.items():
        if lang not in probed:
            continue
        sel = scored[scored["language"] == lang]
        t10 = pd.concat([probing.word_groups(g, list(animals), top=5).assign(model=m)
                         for m, g in sel.groupby("model", sort=False)], ignore_index=True)
        t10.insert(1, "gloss", t10["word"].map(animals))
        common.save(t10, CHAPTER, f"table10_animals_{lang}")
        animals_call = call(probing.word_groups, "completions", Var("animals"), top=5)
        if animals_paper is None:
            shown += [f"Table 10: animal names among all top-{max(params['k'])} fill-ins ({LANGUAGE_NAMES[lang]}) "
                      "and the five groups they come with most often:", animals_call, (f"table10_animals_{lang}", t10)]
        else:
            table = common.save(animals_vs_paper(sel, animals_paper), CHAPTER, f"table10_vs_paper_{lang}")
            wide = by_model(table, ["language", "word", "rank"], ["gloss", "paper_group", "paper_frequency"],
                            {"group": "group", "frequency": "frequency"})
            name = f"table10_vs_paper_{lang}_by_model"
            shown += [animals_sentence(table, max(params["k"])), animals_call, (name, common.save(wide, CHAPTER, name))]
    if animals_paper is not None:
        shown += _paper_alone("table10", animals_paper, params["languages"], probed)
    return Section(*shown, data=table8)


def kappa_table(sheets: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Fleiss' kappa of each language's annotation sheet (:func:`helpers.metrics.probing.fleiss_kappa`:
    statsmodels' ``fleiss_kappa``) over its raters, the ``annotator_*`` columns with a label for every
    item (an empty column is no rater): ``language, items, raters, fleiss_kappa`` (NaN with fewer than
    two raters). A column labelled for some items only is an :class:`InputError`."""
    rows = []
    for lang, sheet in sheets.items():
        labels = sheet[[c for c in sheet.columns if str(c).startswith("annotator_")]].fillna("").astype(str)
        empty = labels.apply(lambda col: col.str.strip().eq("")).sum()
        partial = [f"{c} ({n} of {len(labels)} unlabelled)" for c, n in empty.items() if 0 < n < len(labels)]
        if partial:
            raise InputError(f"annotation sheet {lang}: {', '.join(partial)}; label every item of a column or none")
        raters = [c for c, n in empty.items() if n == 0 and len(labels)]
        kappa = probing.fleiss_kappa(labels[raters].apply(lambda col: col.str.strip())) if len(raters) >= 2 else np.nan
        rows.append({"language": lang, "items": len(sheet), "raters": len(raters), "fleiss_kappa": kappa})
    return pd.DataFrame(rows, columns=["language", "items", "raters", "fleiss_kappa"])


def kappa_sentence(ours: pd.DataFrame, paper: pd.DataFrame) -> str:
    """Fleiss' kappa of the chapter's sheets beside the paper's (Table 7), or why there is none."""
    theirs = "; ".join(f"{LANGUAGE_NAMES[r.language]} {r.fleiss_kappa:.2f}" for r in paper.itertuples())
    done = ours.dropna(subset=["fleiss_kappa"])
    items = report.and_list(sorted({str(n) for n in paper["items"]}))
    text = f"The paper reports Fleiss' kappa over its annotators' labels of {items} sentences per language: {theirs}."
    if len(done):
        text += " Ours, from the returned sheets: " + "; ".join(
            f"{LANGUAGE_NAMES[r.language]} {r.fleiss_kappa:.2f} ({r.raters} raters, {r.items} sentences)"
            for r in done.itertuples()) + "."
    rest = ours[ours["fleiss_kappa"].isna()]
    if len(rest):
        counts = report.and_list(sorted({str(n) for n in rest["raters"]}))
        state = "unfilled" if rest["raters"].max() == 0 else "filled by one annotator at most"
        text += (f" {'The' if done.empty else 'The other'} sheets of this run "
                 f"({report.and_list([LANGUAGE_NAMES[lang] for lang in rest['language']])}) have {counts} filled "
                 f"annotator column{'s' if counts != '1' else ''} ({state}), and Fleiss' kappa needs at least two "
                 "raters, so " + ("only the paper's kappa is shown." if done.empty
                                  else "for them only the paper's is."))
    elif ours.empty:
        text += " No sheet was written (nothing was probed), so only the paper's kappa is shown."
    return text


def annotation_section(params: dict, fills: Section, annotated: dict[str, pd.DataFrame] | None = None) -> Section:
    """Table 7's protocol: a seeded sheet of ``n_annotation`` completed sentences per language to
    label (insult, stereotype, confusing, normal), and Fleiss' kappa (:func:`kappa_table`) of the
    sheets returned in ``annotated`` ({language: sheet}; default: the sheets just written, whose
    annotator columns are empty) beside the paper's; with fewer than two raters, the paper's kappa
    alone and the sentence that says why. The paper's counts per label are shown."""
    if annotated is not None and (unknown := sorted(set(annotated) - set(LANGUAGE_NAMES))):
        raise InputError(f"annotated sheets: unknown language {', '.join(map(repr, unknown))}; "
                         f"the keys are languages, {', '.join(LANGUAGE_NAMES)}")
    scored, sheets, shown = fills.data, {}, []
    if not scored.empty:
        for lang, g in scored.groupby("language", sort=False):
            sheet = probing.annotation_sheet(g, params["n_annotation"], seed=params["seed"])
            sheets[lang] = common.save(sheet, CHAPTER, f"annotation_sheet_{lang}")
        shown.append(f"Annotation sheets of {params['n_annotation']} sentences per language are in "
                     "`results/07_toxicity_probing/annotation_sheet_<language>.csv`; fill the annotator columns "
                     "with insult / stereotype / confusing / normal and pass them back as "
                     "`ch.annotation_section(params, fills, annotated={language: sheet})`.")
        shown.append(call(probing.annotation_sheet, "completions", params["n_annotation"], seed=params["seed"]))
    ours = kappa_table(sheets if annotated is None else annotated)
    pub = published("table7")
    if pub is not None:
        paper = pub.groupby("language", sort=False).agg(items=("count", "sum"), fleiss_kappa=("fleiss_kappa", "first"))
        paper = paper.reset_index()
        shown.append(kappa_sentence(ours, paper))
        if ours["fleiss_kappa"].notna().any():
            side = report.side_by_side(ours, paper, ["language"], value="fleiss_kappa").merge(
                ours[["language", "raters", "items"]], on="language", how="left")
            side.attrs["why"] = {"measured": "no sheet of this language returned, or fewer than two raters",
                                 "difference": "no kappa of ours to compare",
                                 "raters": "no sheet of this language returned",
                                 "items": "no sheet of this language returned"}
            shown += [call(probing.fleiss_kappa, "sheet[raters]"),
                      ("fleiss_kappa_vs_paper", common.save(side, CHAPTER, "fleiss_kappa_vs_paper"))]
        else:
            shown += [call(published_table, "'002'", "'table7'"), ("paper_fleiss_kappa", paper)]
        shown += [f"The paper's Table 7 ({report.and_list(sorted({str(n) for n in paper['items']}))} sentences per "
                  "language, each label's count):",
                  ("paper_table7", pub.pivot(index="label", columns="language", values="count").reset_index())]
    elif ours["fleiss_kappa"].notna().any():
        shown += [call(probing.fleiss_kappa, "sheet[raters]"), ("fleiss_kappa", ours)]
    return Section(*shown)
