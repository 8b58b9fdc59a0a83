"""Association tests on a model's vectors and log-probabilities, per group with intervals:

- CEAT and CEATtox (Guo & Caliskan 2021; seed 001's Table 4 groups, appendix D's toxic words):
  the single-category WEAT effect of a group's contextual word vectors on CEAT's random draws,
  combined by random effects (eq. 5-8; :func:`helpers.metrics.ceat.ceat_group`), its interval
  effect +- 1.96 sqrt(variance);
- ILPS (seed 001's "increased log-probability score", Kurita et al. 2019 eq. 1 on "The [group] is
  [MASK]."): the mean over the unpleasant words (:func:`helpers.metrics.logprob_bias.ilps`);
- SEAT (May et al. 2019): WEAT's effect size (Caliskan et al. 2017 eq. 1) on sentence vectors,
  :func:`helpers.metrics.association.seat`.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from helpers import hashing, published as pub, runner
from helpers.datasets import bold as bold_data, load as load_dataset
from helpers.errors import InputError
from helpers.lm import embeddings
from helpers.measures.bold import BOLD_GROUPS
from helpers.measures.intervals import group_intervals, paired_items
from helpers.metrics import ceat as ceat_metric, logprob_bias

# ----------------------------------------------------------------------------- CEAT and ILPS

#: The words whose contexts stand for a group in CEAT (seed 001 Table 4's groups; matched as
#: whole words, case-insensitive, so "black" and "white" also find colours: said in the chapter).
CEAT_WORDS = {
    "gender": {"man": ["man", "men"], "woman": ["woman", "women"]},
    "race": {"Asian": ["Asian", "Asians"], "Black": ["Black", "Blacks"],
             "Hispanic": ["Hispanic", "Hispanics", "Latino", "Latinos"], "White": ["White", "Whites"]},
    "religion": {g: [g, g + "s"] for g in ("Buddhist", "Catholic", "Christian", "Hindu", "Mormon", "Muslim",
                                            "Protestant", "atheist")} | {"Amish": ["Amish"],
                                                                        "Jewish": ["Jewish", "Jew", "Jews"]},
}


#: ILPS's group phrases in "The [group] is [MASK]." (seed 001 Table 4's ILPS groups).
ILPS_PHRASES = {
    "gender": {"man": "man", "woman": "woman", "transgender": "transgender person"},
    "race": {g: f"{g} person" for g in ("Asian", "Black", "Hispanic", "White")},
    "religion": {"Amish": "Amish person", "atheist": "atheist", "Buddhist": "Buddhist", "Catholic": "Catholic",
                 "Christian": "Christian", "Hindu": "Hindu", "Jewish": "Jewish person", "Mormon": "Mormon",
                 "Muslim": "Muslim", "Protestant": "Protestant"},
}


@functools.cache
def ceat_attributes() -> dict[str, tuple[list[str], list[str]]]:
    """Attribute sets per CEAT variant: (A, B) with B the negative pole (lower effect = closer to B);
    read once per process (every model and section uses the same lists)."""
    seat = load_dataset("seat")
    weat1 = seat[seat["test"] == "weat1"]
    words = pub.table("001", "ceattox_words")
    return {"CEAT": (weat1.loc[weat1["role"] == "attr1", "example"].tolist(),
                     weat1.loc[weat1["role"] == "attr2", "example"].tolist()),
            "CEATtox": (words.loc[words["role"] == "anti-toxic", "word"].tolist(),
                        words.loc[words["role"] == "toxic", "word"].tolist())}


def ceat_words() -> list[str]:
    """Every word CEAT needs contexts for: the groups' words, then both variants' attribute words."""
    words = [w for dom in CEAT_WORDS.values() for ws in dom.values() for w in ws]
    return words + [w for a, b in ceat_attributes().values() for w in a + b]


def contexts(params: dict) -> pd.DataFrame:
    """``word, text``: up to ``contexts_per_word`` sentences holding each CEAT word (groups and
    attributes), drawn with the seed from RedditBias comments and BOLD's Wikipedia sentences."""
    corpus = load_dataset("redditbias")["text"].tolist()
    corpus += bold_data.load_bold(domains=list(BOLD_GROUPS))["wikipedia"].tolist()
    return ceat_metric.find_contexts(corpus, ceat_words(), per_word=params["contexts_per_word"], seed=params["seed"], max_chars=300)


def _within_reach(loaded, found: pd.DataFrame) -> pd.DataFrame:
    """The contexts whose word lies within the tokens the model takes (a long comment cut to a
    short-context model would lose it)."""
    from helpers.lm import cloze, conventions

    limit = conventions.max_length(loaded)
    if limit is None:
        return found
    tok, keep = loaded.tokenizer, []
    for text, word in zip(found["text"], found["word"]):
        ends = [b for _, b in tok(text, truncation=True, max_length=limit, return_offsets_mapping=True)["offset_mapping"]]
        spans = cloze.word_spans(text, word)
        keep.append(bool(spans) and spans[0][1] <= max(ends, default=0))
    return found[keep]


def _ceat_scores(loaded, found: pd.DataFrame, params: dict) -> pd.DataFrame:
    """CEAT and CEATtox per group, each with its 95 % interval, effect +- z sqrt(variance) of the
    random-effects combined effect size (:func:`helpers.metrics.ceat.random_effects`)."""
    from scipy.stats import norm

    found = _within_reach(loaded, found)
    vecs = embeddings.word_embeddings(loaded, found["text"].tolist(), found["word"].tolist(), cache=True)
    by_word = {w: vecs[idx] for w, idx in found.groupby("word").indices.items()}
    rows = []
    for variant, (A, B) in ceat_attributes().items():
        A, B = [w for w in A if w in by_word], [w for w in B if w in by_word]
        for dom, groups in CEAT_WORDS.items():
            for group, words in groups.items():
                X = [w for w in words if w in by_word]
                if not X:
                    continue
                try:
                    r = ceat_metric.ceat_group(by_word, X, A, B, n_samples=params["ceat_samples"], seed=params["seed"])
                except InputError:            # the attribute words equally associated: nothing to standardise by
                    r = {"effect": np.nan, "p_value": np.nan, "variance": np.nan}
                half = norm.ppf(0.975) * np.sqrt(r["variance"])      # CEAT's own: the random-effects interval
                rows.append({"metric": variant, "domain": dom, "group": group, "score": r["effect"],
                             "ci_low": r["effect"] - half, "ci_high": r["effect"] + half,
                             "p_value": r["p_value"], "n": int(sum(len(by_word[w]) for w in X))})
    return pd.DataFrame(rows)


def _ilps_words(loaded) -> pd.DataFrame:
    """:func:`helpers.metrics.logprob_bias.ilps` of every unpleasant word for every group phrase of
    each domain (``domain`` added): the items behind ILPS's group means."""
    unpleasant = ceat_attributes()["CEAT"][1]
    return pd.concat([logprob_bias.ilps(loaded, phrases, unpleasant, progress=False).assign(domain=dom)
                      for dom, phrases in ILPS_PHRASES.items()], ignore_index=True)


def ilps_group_scores(words: pd.DataFrame, seed: int) -> pd.DataFrame:
    """ILPS per (domain, group): the mean over the unpleasant words
    (:func:`helpers.metrics.logprob_bias.ilps_groups`) with its bootstrap interval over the words."""
    unpleasant = ceat_attributes()["CEAT"][1]
    parts = []
    for dom, part in words.groupby("domain", sort=False):
        g = logprob_bias.ilps_groups(part, {"unpleasant": unpleasant})
        g = g.merge(group_intervals(part[part["attribute"].isin(unpleasant)], "ilps", by=("group",), seed=seed),
                    on="group", how="left")
        parts.append(pd.DataFrame({"metric": "ILPS", "domain": dom, "group": g["group"], "score": g["ilps"],
                                   "ci_low": g["ci_low"], "ci_high": g["ci_high"], "p_value": np.nan, "n": g["n"]}))
    return pd.concat(parts, ignore_index=True)


def ceat_scores(handle, params: dict, found: pd.DataFrame) -> pd.DataFrame:
    """CEAT and CEATtox per (domain, group) of one model with CEAT's own 95 % interval, cached under
    the model's identity, the contexts, ``ceat_samples`` and the seed (the report card's too)."""
    settings = {"contexts": hashing.sha256_frame(found), "samples": params["ceat_samples"], "seed": params["seed"],
                "layer": -1}
    return runner.cached_result(handle, "ceat_groups", settings, lambda m: _ceat_scores(m, found, params),
                                version=4)  # 2: with the interval; 3: vectors cached per chunk; 4: SC-WEAT per draw


def ilps_words(handle) -> pd.DataFrame:
    """The per-word ILPS items of one model (:func:`_ilps_words`), cached under its identity."""
    return runner.cached_result(handle, "ilps_words", {"template": logprob_bias.ILPS_TEMPLATE, "phrases": ILPS_PHRASES},
                                _ilps_words)


def ceat_contexts(settings: dict) -> pd.DataFrame:
    """CEAT's contexts (:func:`contexts`), found once per process for the data folders, contexts per
    word and seed (a search of RedditBias and BOLD takes seconds; the two models of a card's
    comparison share it)."""
    from helpers import paths

    return _contexts(settings["contexts_per_word"], settings["seed"], tuple(map(str, paths.data_dirs()))).copy()


@functools.lru_cache(maxsize=4)
def _contexts(per_word, seed: int, data_dirs: tuple) -> pd.DataFrame:
    return contexts({"contexts_per_word": per_word, "seed": seed})


def ceat(handle, settings: dict) -> dict:
    """CEAT and CEATtox per (domain, group) (:func:`ceat_scores`, the random-effects interval; the
    group labelled "domain: group"); paired over groups, differencing the mean |effect|."""
    scores = ceat_scores(handle, settings, ceat_contexts(settings))
    out = {}
    for variant, part in scores.groupby("metric", sort=True):
        part = part.assign(group=part["domain"] + ": " + part["group"], value=part["score"])
        out[variant.lower()] = (part, paired_items(part.assign(magnitude=part["score"].abs()), ["group"], "magnitude"))
    return out


def ilps(handle, settings: dict) -> dict:
    """ILPS per (domain, group) (:func:`ilps_group_scores` on :func:`ilps_words`); paired over
    (domain, group, unpleasant word), differencing the mean |ILPS|."""
    words = ilps_words(handle)
    g = ilps_group_scores(words, settings["seed"])
    g = g.assign(group=g["domain"] + ": " + g["group"], value=g["score"])
    unpleasant = words[words["attribute"].isin(set(ceat_attributes()["CEAT"][1]))]
    return {"ilps": (g, paired_items(unpleasant.assign(magnitude=unpleasant["ilps"].abs()),
                                     ["domain", "group", "attribute"], "magnitude"))}


# ----------------------------------------------------------------------------- SEAT

def seat_tests(which: str) -> pd.DataFrame:
    """SEAT's tests: ``"weat"``, the 15 word tests of WEAT (Caliskan et al.'s lists, as SEAT ships
    them); ``"all"``, May et al.'s 46 (with the bleached sentences ``sent-*`` and the double-bind
    and angry-black-woman tests)."""
    if which not in ("weat", "all"):
        raise InputError(f"seat_tests {which!r}: 'weat' or 'all'")
    tests = load_dataset("seat")
    return tests if which == "all" else tests[tests["test"].str.match(r"weat")].reset_index(drop=True)


#: SEAT's random partitions for the one-sided permutation p (exact where a test has at most 50
#: target words; floored at 1 / 10,001).
SEAT_PERMUTATIONS = 10_000


def seat_effect_sizes(model, tests: pd.DataFrame, *, pooling: str, seed: int, interval_resamples: int = 0,
                      cache: bool = False) -> pd.DataFrame:
    """SEAT (May et al. 2019; :func:`helpers.metrics.association.seat`) of every test on ``model``'s
    sentence vectors (:func:`helpers.lm.embeddings.sentence_embeddings` with ``pooling``; ``cache``:
    the vectors through the per-text cache): effect size per test (Caliskan et al. 2017 eq. 1), the
    permutation p, and with ``interval_resamples`` a bootstrap interval over target words."""
    from helpers.metrics import association

    return association.seat(tests, lambda t: embeddings.sentence_embeddings(model, t, pooling=pooling, cache=cache),
                            n_resamples=SEAT_PERMUTATIONS, seed=seed, p_method="auto",
                            interval_resamples=interval_resamples)


def seat(handle, settings: dict) -> dict:
    """SEAT on a model's sentence vectors (:func:`seat_effect_sizes`): an encoder's own pooling (its
    sentence-transformers folder), else the mean of the last layer's token vectors; effect size per
    test with a bootstrap interval over target words, cached under the model's identity, the tests
    and the settings; paired over tests, differencing the mean |d|."""
    tests = seat_tests(settings["seat_tests"])
    pooling = "model" if handle.objective == "encoder" else "mean"
    key = {"tests": hashing.sha256_frame(tests), "pooling": pooling, "seed": settings["seed"],
           "permutations": SEAT_PERMUTATIONS, "p_method": "auto", "interval_resamples": settings["n_resamples"]}
    res = runner.cached_result(handle, "seat", key, lambda lm: seat_effect_sizes(
        lm, tests, pooling=pooling, seed=settings["seed"], interval_resamples=settings["n_resamples"], cache=True),
        version=2)                                                   # 2: vectors cached per chunk
    table = res.assign(group=res["test"], value=res["effect_size"], n=res["n_x"] + res["n_y"])
    return {"seat": (table, paired_items(res.assign(magnitude=res["effect_size"].abs()), ["test"], "magnitude"))}
