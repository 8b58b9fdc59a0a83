"""Gender bias of a sentiment classifier by gender-swapped reviews (Jentzsch & Turan 2022,
GeBNLP; seed 003 section 3.2).

Every review is rewritten twice, once with all gendered terms of a list made male and once made
female; the bias of a review is ``sent(male version) - sent(female version)`` (``sent`` = the
classifier's probability of *positive*). The model's *total bias* is the mean of these
differences, its *absolute bias* the mean of their absolute values, and a Wilcoxon signed-rank
test (:func:`helpers.stats.wilcoxon_signed_rank`) says whether the male and female ratings
differ.

Term lists (``gender_terms.csv`` in :mod:`helpers.datasets`, transcribed from Jentzsch & Turan's
``res_data/term_lists.py``, sciphie/bias-bert commit b7c7dc8, with Python's dict semantics: a
repeated key keeps its last value, so upstream's ``his -> hers`` is overridden by ``his -> her``
and the inverted female-to-male maps keep one source per target): ``pro`` (pronouns: 4 + 3
pairs), ``weat`` (Nosek et al.'s WEAT gender words: 17 + 17) and ``all`` (682 pairs: roles,
occupations, relatives, pronouns).

``method="word"`` (default) replaces whole words in one pass, case-insensitively, keeping the
case of the original (``He`` -> ``She``); multi-word terms (``best man``) match as phrases.
``method="upstream"`` reproduces the reference code: for each pair in list order, ``text.replace(
" source ", " target ")`` on the text as is, so a term next to punctuation or at the start or end
of the review is not swapped and replacements can chain.
"""

from __future__ import annotations

import re

import numpy as np

from helpers.datasets.words import gender_terms
from helpers.errors import InputError
from helpers.stats import wilcoxon_signed_rank

__all__ = ["TERM_LISTS", "term_pairs", "swap_gender", "count_terms", "sentiment_bias"]

TERM_LISTS = ("pro", "weat", "all")
_DIRECTIONS = {"male": "f2m", "female": "m2f"}


def term_pairs(terms: str = "all", to: str = "female") -> dict[str, str]:
    """``{source: target}`` that makes a text ``to`` (``"male"`` or ``"female"``), in list order."""
    if terms not in TERM_LISTS:
        raise InputError(f"terms must be one of {', '.join(TERM_LISTS)}, got {terms!r}")
    if to not in _DIRECTIONS:
        raise InputError(f"to must be 'male' or 'female', got {to!r}")
    t = gender_terms()
    part = t[(t["list"] == terms) & (t["direction"] == _DIRECTIONS[to])]
    return dict(zip(part["source"], part["target"]))


def _pattern(words) -> re.Pattern:
    alternation = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)


def _cased(target: str, found: str) -> str:
    if found.isupper() and len(found) > 1:
        return target.upper()
    if found[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


def swap_gender(texts, *, terms: str = "all", to: str = "female", method: str = "word") -> list[str]:
    """Each text with every term of list ``terms`` made ``to`` (module docstring)."""
    if method not in ("word", "upstream"):
        raise InputError(f"method must be 'word' or 'upstream', got {method!r}")
    if isinstance(texts, str):
        raise InputError("texts must be a list of strings, not one string")
    pairs = term_pairs(terms, to)
    if method == "upstream":
        out = []
        for text in texts:
            for source, target in pairs.items():
                text = text.replace(f" {source} ", f" {target} ")
            out.append(text)
        return out
    lower = {k.lower(): v for k, v in pairs.items()}
    pattern = _pattern(pairs)
    return [pattern.sub(lambda m: _cased(lower[m.group(0).lower()], m.group(0)), t) for t in texts]


def count_terms(texts, *, terms: str = "all") -> np.ndarray:
    """How many words of list ``terms`` (either gender) each text holds, whole words, any case."""
    words = set(term_pairs(terms, "male")) | set(term_pairs(terms, "female"))
    pattern = _pattern(words)
    return np.array([len(pattern.findall(t)) for t in texts], dtype=int)


def sentiment_bias(p_male, p_female, **wilcoxon) -> dict:
    """Total and absolute bias of paired positive-sentiment probabilities (module docstring)
    with the Wilcoxon signed-rank test of male vs female (``wilcoxon`` options go to
    :func:`helpers.stats.wilcoxon_signed_rank`): ``n, total_bias, absolute_bias`` and the test's
    fields."""
    m, f = np.asarray(p_male, dtype=float), np.asarray(p_female, dtype=float)
    if m.shape != f.shape or m.ndim != 1 or m.size == 0:
        raise InputError(f"p_male and p_female must be 1-D and of one length, got {m.shape} and {f.shape}")
    d = m - f
    return {"n": int(d.size), "total_bias": float(d.mean()), "absolute_bias": float(np.abs(d).mean()),
            **wilcoxon_signed_rank(m, f, **wilcoxon)}
