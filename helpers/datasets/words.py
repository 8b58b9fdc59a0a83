"""Word-level bias sets (chapter 05): BEC-Pro (Bartl et al. 2020) for cloze tests, and the SEAT /
WEAT tests (May et al. 2019; Caliskan et al. 2017) for embedding association tests.

:func:`load_seat` returns one row per example: ``test, role`` (``targ1``, ``targ2``, ``attr1``,
``attr2``), ``category`` (e.g. ``Flowers``), ``example`` (a word, or a bleached sentence for the
``sent-`` tests).

:func:`load_bec_pro` returns ``sentence, template, person, gender, profession, profession_gender,
pattern``: ``template`` is the sentence with the person word as the one blank ``[MASK]`` (the
form :func:`helpers.lm.cloze.cloze_logprobs` takes, whatever the model's mask token);
the profession is the attribute that Kurita et al.'s prior masks too
(:func:`helpers.lm.cloze.kurita_log_ratio` with ``attributes=df["profession"]``), so the upstream
per-token ``[MASK] [MASK]`` columns (BERT-specific) are not needed. The template is rebuilt from
the sentence by masking the person word as a whole word: the upstream ``Sent_TM`` column replaced
it as a substring, so in 5 rows "man" inside "manager" became "[MASK]ager" as well (counted in
``df.attrs["upstream_templates_fixed"]``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_csv_checked, read_lines

BEC_PRO_COLUMNS = ["sentence", "template", "person", "gender", "profession", "profession_gender", "pattern"]
_BEC_PRO_SOURCE = {"Sentence": "sentence", "Sent_TM": "template", "Person": "person", "Gender": "gender",
                   "Profession": "profession", "Prof_Gender": "profession_gender", "Template": "pattern"}


def load_bec_pro(name: str = "bec-pro") -> pd.DataFrame:
    """BEC-Pro English: 5,400 sentences, 18 person words x 60 professions x 5 patterns."""
    f = registry.path(name)
    raw = read_csv_checked(f, list(_BEC_PRO_SOURCE), "BEC-Pro", sep="\t", index_col=0)
    df = raw[list(_BEC_PRO_SOURCE)].rename(columns=_BEC_PRO_SOURCE).reset_index(drop=True)
    rebuilt = [re.sub(rf"(?<!\w){re.escape(p)}(?!\w)", "[MASK]", t, count=1)
               for t, p in zip(df["sentence"], df["person"])]
    bad = [i for i, t in enumerate(rebuilt) if t.count("[MASK]") != 1]
    if bad:
        raise InputError(f"{f}: row {bad[0]}: the person word {df['person'][bad[0]]!r} is not in its sentence")
    fixed = int((df["template"] != pd.Series(rebuilt)).sum())
    df = df.assign(template=rebuilt)[BEC_PRO_COLUMNS]
    df.attrs.update(dataset=name, upstream_templates_fixed=fixed)
    return df


SEAT_COLUMNS = ["test", "role", "category", "example"]
SEAT_ROLES = ("targ1", "targ2", "attr1", "attr2")


def load_seat(name: str = "seat", *, tests=None) -> pd.DataFrame:
    """SEAT / WEAT tests (module docstring); ``tests``: test names to keep (None: all 46)."""
    folder = registry.path(name) / "tests"
    files = sorted(folder.glob("*.jsonl"))
    wanted = None if tests is None else [tests] if isinstance(tests, str) else list(tests)
    if wanted is not None:
        unknown = sorted(set(wanted) - {f.stem for f in files})
        if unknown:
            raise InputError(f"unknown SEAT test(s) {', '.join(unknown)}; known: {', '.join(f.stem for f in files)}")
        files = [f for f in files if f.stem in wanted]
    rows = []
    for f in files:
        try:
            test = json.loads(f.read_text(encoding="utf-8"))      # one pretty-printed object per file
            for role in SEAT_ROLES:
                rows += [(f.stem, role, test[role]["category"], e) for e in test[role]["examples"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{f}: not a SEAT test ({exc.__class__.__name__}: {exc})") from None
    df = pd.DataFrame(rows, columns=SEAT_COLUMNS)
    df.attrs["dataset"] = name
    return df


KURITA_COLUMNS = ["list", "item"]
KURITA_LISTS = ("positive_traits", "negative_traits", "in_demand_tech_skills")


def load_kurita(name: str = "kurita-lists") -> pd.DataFrame:
    """Kurita et al. (2019)'s attribute lists: ``list`` (positive_traits 230, negative_traits 365,
    in_demand_tech_skills 25 items), ``item`` (blank lines dropped). Their templates, e.g.
    ``"[MASK] is XXX."``, live in the upstream code, not in a data file: chapter 05 states the
    ones it uses."""
    folder = registry.path(name).parent
    rows = []
    for lst in KURITA_LISTS:
        rows += [(lst, x) for x in read_lines(folder / lst, "Kurita list")]
    df = pd.DataFrame(rows, columns=KURITA_COLUMNS)
    df.attrs["dataset"] = name
    return df


@lru_cache(maxsize=None)
def gender_terms() -> pd.DataFrame:
    """The gendered term lists of the IMDB gender-swap test (``gender_terms.csv`` shipped in this
    package, transcribed from Jentzsch & Turan's code): ``list`` (pro, weat, all), ``direction``
    (f2m, m2f), ``source``, ``target`` (:mod:`helpers.metrics.gender_swap`)."""
    with resources.files("helpers.datasets").joinpath("gender_terms.csv").open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)
