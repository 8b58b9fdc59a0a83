"""Dixon et al. (2018)'s "bias madlibs": synthetic sentences that mention identity terms, half
toxic by construction (AIES 2018; conversationai/unintended-ml-bias-analysis, Apache-2.0).

- ``bias-madlibs``: the newer generator's English set (``new_madlibber``), rebuilt here from its
  templates and word list as the generator does: every template filled with every combination of
  the words its slots select (a slot ``{type|identity_connotation|neutral}`` takes the words whose
  ``type`` is ``identity`` and ``connotation`` is ``neutral``). The word list at the pinned commit
  has 51 neutral identity terms and gives **78,078** sentences; the released output
  (``new_madlibber/output_data/English/madlibs.csv`` and the root ``en_sentence_templates.csv``)
  has **76,564**, the same templates with 50 terms: ``cis`` was added to the list after the release.
  ``identities="released"`` (default, what seed 003 evaluated) leaves ``cis`` out; ``"all"`` keeps
  it. Each row knows its identity term and group from the slot it filled.
- ``bias-madlibs-77k``: the older generation (``eval_datasets/bias_madlibs_77k.csv``: 76,564
  rows, BAD / NOT_BAD), its identity term read off the text (the longest of the 50 terms of
  ``adjectives_people.txt`` it contains as whole words).

:func:`mentions` gives the example x identity membership matrix the unintended-bias metrics
take: whole words, case-insensitive, overlaps allowed ("african american" mentions "american"),
as the reference analysis code (``model_bias_analysis``) does; ``match="substring"`` reproduces
seed 003's defect (``"male" in "female"``) as a named compatibility option.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_csv_checked, read_lines

__all__ = ["load_madlibs", "load_madlibs_77k", "generate", "mentions", "MADLIBS_COLUMNS", "UNRELEASED_IDENTITIES"]

MADLIBS_COLUMNS = ["sentence_id", "text", "label", "template", "identity", "identity_group"]
#: Identity terms of the pinned word list that the released output does not have.
UNRELEASED_IDENTITIES = ("cis",)
_WORDS = "new_madlibber/input_data/en/en-us/words.csv"
_TEMPLATES = "new_madlibber/input_data/en/en-us/sentence_templates.csv"
_LABELS = {"toxic": "toxic", "nontoxic": "non-toxic", "BAD": "toxic", "NOT_BAD": "non-toxic"}


def _categories(words: pd.DataFrame) -> dict[str, set]:
    """``"column|value"`` -> the words with that value (the generator's word categories)."""
    cats: dict[str, set] = {}
    for column in words.columns[:-1]:
        for value, word in zip(words[column], words["word"]):
            if value:
                cats.setdefault(f"{column}|{value}", set()).add(word)
    return cats


def _slot_words(slot: str, cats: dict) -> list[str]:
    parts = slot.split("_")
    if any(len(p.split("|")) != 2 for p in parts) or any(p not in cats for p in parts):
        raise InputError(f"madlibs template slot {{{slot}}}: not a valid slot of the word list")
    return sorted(set.intersection(*(cats[p] for p in parts)))


def generate(words: pd.DataFrame, templates: pd.DataFrame) -> pd.DataFrame:
    """Every filling of every template (``template, toxicity, phrase``) with every combination of
    its slots' words (``words``: type, subtype, connotation, word). Returns ``template, toxicity,
    text`` and one column per slot kind filled (``identity``, ``adjective``, ``name``, ``verb``,
    ``occupation``) plus ``identity_group`` (the identity's subtype)."""
    if words["word"].duplicated().any():
        raise InputError(f"madlibs word list: duplicate word {words['word'][words['word'].duplicated()].iloc[0]!r}")
    cats = _categories(words)
    subtype = dict(zip(words["word"], words.get("subtype", pd.Series([""] * len(words)))))
    rows = []
    for t in templates.itertuples():
        slots = re.findall(r"\{(.*?)\}", t.phrase)
        if not slots:
            raise InputError(f"madlibs template {t.template!r} ({t.toxicity}): no slot to fill in {t.phrase!r}")
        kinds = [s.split("_")[0].split("|")[1] for s in slots]
        for combo in itertools.product(*(_slot_words(s, cats) for s in slots)):
            fill = dict(zip(slots, combo))
            row = {"template": t.template, "toxicity": t.toxicity, "text": t.phrase.format(**fill)}
            row.update(zip(kinds, combo))
            rows.append(row)
    df = pd.DataFrame(rows)
    if "identity" in df:
        df["identity_group"] = df["identity"].map(subtype)
    return df


def load_madlibs(name: str = "bias-madlibs", *, identities: str = "released") -> pd.DataFrame:
    """The newer generator's English madlibs (module docstring): :data:`MADLIBS_COLUMNS`
    (``label`` toxic / non-toxic; ``identity`` empty for the occupation template)."""
    if identities not in ("released", "all"):
        raise InputError(f"identities must be 'released' or 'all', got {identities!r}")
    words = read_csv_checked(registry.path(name, _WORDS), ["type", "subtype", "connotation", "word"], "madlibs words")
    words = words[words["word"] != ""]
    if identities == "released":
        words = words[~((words["type"] == "identity") & words["word"].isin(UNRELEASED_IDENTITIES))]
    templates = read_csv_checked(registry.path(name, _TEMPLATES), ["template", "toxicity", "phrase"],
                                 "madlibs templates")
    bad = sorted(set(templates["toxicity"]) - {"toxic", "nontoxic"})
    if bad:
        raise InputError(f"madlibs templates: unknown toxicity {bad[0]!r} (toxic or nontoxic)")
    df = generate(words.reset_index(drop=True), templates[templates["phrase"] != ""])
    out = pd.DataFrame({"sentence_id": range(len(df)), "text": df["text"], "label": df["toxicity"].map(_LABELS),
                        "template": df["template"], "identity": df.get("identity", pd.Series(dtype=str)).fillna(""),
                        "identity_group": df.get("identity_group", pd.Series(dtype=str)).fillna("")})
    out.attrs.update(dataset=name, identities=identities)
    return out[MADLIBS_COLUMNS]


def load_madlibs_77k(name: str = "bias-madlibs-77k") -> pd.DataFrame:
    """The older 77k madlibs (module docstring): :data:`MADLIBS_COLUMNS` (``identity_group``
    empty: the old term list has no groups)."""
    raw = read_csv_checked(registry.path(name), ["Text", "Label", "Template"], "madlibs 77k")
    bad = sorted(set(raw["Label"]) - {"BAD", "NOT_BAD"})
    if bad:
        raise InputError(f"madlibs 77k: unknown label {bad[0]!r} (BAD or NOT_BAD)")
    terms = read_lines(registry.path(name, "bias_madlibs_data/adjectives_people.txt"), "identity term list")
    longest_first = sorted(set(terms), key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, longest_first)) + r")(?!\w)", re.IGNORECASE)
    found = [max(pattern.findall(t), key=len, default="").lower() for t in raw["Text"]]
    out = pd.DataFrame({"sentence_id": range(len(raw)), "text": raw["Text"], "label": raw["Label"].map(_LABELS),
                        "template": raw["Template"], "identity": found, "identity_group": ""})
    out.attrs["dataset"] = name
    return out[MADLIBS_COLUMNS]


def mentions(texts, terms, *, match: str = "word") -> pd.DataFrame:
    """Boolean DataFrame (rows = texts, columns = terms): does the text mention the term?
    ``match="word"``: whole words, case-insensitive (the reference analysis code);
    ``"substring"``: case-insensitive substring, seed 003's defect ("male" found in "female")."""
    if match not in ("word", "substring"):
        raise InputError(f"match must be 'word' or 'substring', got {match!r}")
    texts = pd.Series(list(texts), dtype=object).str.lower()
    terms = list(dict.fromkeys(terms))
    if not terms:
        raise InputError("mentions: no identity terms")
    cols = {}
    for term in terms:
        pattern = re.escape(term.lower())
        cols[term] = texts.str.contains(rf"(?<!\w){pattern}(?!\w)" if match == "word" else pattern, regex=True).to_numpy()
    return pd.DataFrame(cols).astype(bool).set_axis(np.arange(len(texts)))
