"""Dixon et al. (2018)'s "bias madlibs": synthetic sentences that mention identity terms, half
toxic by construction (Lucas Dixon, John Li, Jeffrey Sorensen, Nithum Thain, Lucy Vasserman.
*Measuring and Mitigating Unintended Bias in Text Classification*, AIES 2018;
conversationai/unintended-ml-bias-analysis, Apache-2.0).

- ``bias-madlibs`` (:func:`load_madlibs`): the newer generator's English set (``new_madlibber``),
  rebuilt here from its templates and word list as the generator does: every template filled with
  every combination of the words its slots select (a slot ``{type|identity_connotation|neutral}``
  takes the words whose ``type`` is ``identity`` and ``connotation`` is ``neutral``; its label is
  the template's ``toxicity``). The word list at the pinned commit has 51 neutral identity terms
  and gives **78,078** sentences (39,039 toxic); the released output
  (``new_madlibber/output_data/English/madlibs.csv``, the same rows as the root
  ``en_sentence_templates.csv``) has **76,564** (38,282 toxic), the same 12 templates with 50
  terms: ``cis`` was added to the list after the release. ``identities="released"`` (default, the
  set seed 003 evaluated: its hard-coded 50 terms have no ``cis``) leaves ``cis`` out; ``"all"``
  keeps it. Each row knows the words it was filled with: ``identity`` (and its ``identity_group``,
  the word's subtype), ``adjective``, ``name``, ``verb``, ``occupation`` (empty when the template
  has no such slot; the occupation template has no identity). With the released terms the rows
  come in the released file's order (``sentence_id`` = its data row number, from 0).
- ``bias-madlibs-77k`` (:func:`load_madlibs_77k`): the older generation
  (``eval_datasets/bias_madlibs_77k.csv``: 76,564 rows, BAD / NOT_BAD, 38,282 each), its identity
  term read off the text: the one term of ``adjectives_people.txt`` it contains as a whole word,
  case-insensitive, the longest when terms nest ("african american", not "american"). Every row
  has exactly one, except the 864 occupation-template rows, which have none (``identity`` empty,
  counted in ``attrs["without_identity"]``); a row with two different terms is an error. Its
  sentences are the released ones above up to case ("i am" / "I am") and a final period.

:func:`identity_terms` gives the term list of either set. :func:`mentions` gives the example x
term membership matrix the unintended-bias metrics (FPR/FNR per term, subgroup / BPSN / BNSP AUC)
take: whole words, case-insensitive, overlaps allowed ("african american" mentions "american"), as
the reference analysis code (``model_bias_analysis.add_subgroup_columns_from_text``) does;
``match="substring"`` reproduces seed 003's defect (its upstream tested ``term in sentence``, so
"male" is found in "female") as a named compatibility option. On the 77k set the two differ on
7,570 rows: the 1,514 rows of each of "female", "transgender", "lgbtq", "older", "younger" also
"mention" "male", "trans", "lgbt", "old", "young" as substrings.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_csv_checked, read_lines

__all__ = ["load_madlibs", "load_madlibs_77k", "generate", "identity_terms", "mentions", "MADLIBS_COLUMNS",
           "SLOT_COLUMNS", "GENERATED_COLUMNS", "UNRELEASED_IDENTITIES"]

MADLIBS_COLUMNS = ["sentence_id", "text", "label", "template", "identity", "identity_group"]
#: The other slots of the newer generator's templates: the word each row was filled with.
SLOT_COLUMNS = ["adjective", "name", "verb", "occupation"]
GENERATED_COLUMNS = MADLIBS_COLUMNS + SLOT_COLUMNS
#: Identity terms of the pinned word list that the released output does not have.
UNRELEASED_IDENTITIES = ("cis",)
_WORDS = "new_madlibber/input_data/en/en-us/words.csv"
_TEMPLATES = "new_madlibber/input_data/en/en-us/sentence_templates.csv"
_TERMS_77K = "bias_madlibs_data/adjectives_people.txt"
_LABELS = {"toxic": "toxic", "nontoxic": "non-toxic", "BAD": "toxic", "NOT_BAD": "non-toxic"}


def _categories(words: pd.DataFrame) -> dict[str, set]:
    """``"column|value"`` -> the words with that value (the generator's word categories)."""
    cats: dict[str, set] = {}
    for column in words.columns[:-1]:
        for value, word in zip(words[column], words["word"]):
            if value:
                cats.setdefault(f"{column}|{value}", set()).add(word)
    return cats


def _slot_words(slot: str, cats: dict, order: list[str]) -> list[str]:
    """The words a slot selects, in word-list order."""
    parts = slot.split("_")
    if any(len(p.split("|")) != 2 for p in parts) or any(p not in cats for p in parts):
        raise InputError(f"madlibs template slot {{{slot}}}: not a valid slot of the word list")
    chosen = set.intersection(*(cats[p] for p in parts))
    return [w for w in order if w in chosen]


def generate(words: pd.DataFrame, templates: pd.DataFrame) -> pd.DataFrame:
    """Every filling of every template (``template, toxicity, phrase``) with every combination of
    its slots' words (``words``: type, subtype, connotation, word). Returns ``template, toxicity,
    text`` and one column per slot kind filled (``identity``, ``adjective``, ``name``, ``verb``,
    ``occupation``) plus ``identity_group`` (the identity's subtype). Rows in template order, then
    the first slot's words outermost, each slot's words in word-list order: the released file's
    order, row for row (upstream iterates Python sets, an order it does not fix). As upstream,
    duplicate template rows are an error; a template with two slots of one kind (the
    intersectional templates) is refused, since each kind has one column here."""
    if words["word"].duplicated().any():
        raise InputError(f"madlibs word list: duplicate word {words['word'][words['word'].duplicated()].iloc[0]!r}")
    if templates.duplicated().any():
        raise InputError(f"madlibs templates: duplicate row {templates[templates.duplicated()].iloc[0].tolist()}")
    cats, order = _categories(words), list(words["word"])
    subtype = dict(zip(words["word"], words.get("subtype", pd.Series([""] * len(words)))))
    rows = []
    for t in templates.itertuples():
        slots = re.findall(r"\{(.*?)\}", t.phrase)
        if not slots:
            raise InputError(f"madlibs template {t.template!r} ({t.toxicity}): no slot to fill in {t.phrase!r}")
        kinds = [s.split("_")[0].split("|")[-1] for s in slots]
        if len(set(kinds)) < len(kinds):
            raise InputError(f"madlibs template {t.template!r} ({t.toxicity}): two slots of one kind in {t.phrase!r}")
        for combo in itertools.product(*(_slot_words(s, cats, order) for s in slots)):
            fill = dict(zip(slots, combo))
            row = {"template": t.template, "toxicity": t.toxicity, "text": t.phrase.format(**fill)}
            row.update(zip(kinds, combo))
            rows.append(row)
    df = pd.DataFrame(rows)
    if "identity" in df:
        df["identity_group"] = df["identity"].map(subtype)
    return df


def _words(name: str, identities: str) -> pd.DataFrame:
    """The newer generator's word list (``identities="released"``: without the later terms)."""
    if identities not in ("released", "all"):
        raise InputError(f"identities must be 'released' or 'all', got {identities!r}")
    words = read_csv_checked(registry.path(name, _WORDS), ["type", "subtype", "connotation", "word"], "madlibs words")
    words = words[words["word"] != ""]
    if identities == "released":
        words = words[~((words["type"] == "identity") & words["word"].isin(UNRELEASED_IDENTITIES))]
    return words.reset_index(drop=True)


def load_madlibs(name: str = "bias-madlibs", *, identities: str = "released") -> pd.DataFrame:
    """The newer generator's English madlibs (module docstring): :data:`GENERATED_COLUMNS`
    (``label`` toxic / non-toxic; a slot column is empty where the template has no such slot)."""
    words = _words(name, identities)
    templates = read_csv_checked(registry.path(name, _TEMPLATES), ["template", "toxicity", "phrase"],
                                 "madlibs templates")
    bad = sorted(set(templates["toxicity"]) - {"toxic", "nontoxic"})
    if bad:
        raise InputError(f"madlibs templates: unknown toxicity {bad[0]!r} (toxic or nontoxic)")
    df = generate(words, templates[templates["phrase"] != ""])
    out = df.rename(columns={"toxicity": "label"}).reindex(columns=GENERATED_COLUMNS, fill_value="").fillna("")
    out = out.assign(sentence_id=range(len(out)), label=df["toxicity"].map(_LABELS))
    out.attrs.update(dataset=name, identities=identities)
    return out


def load_madlibs_77k(name: str = "bias-madlibs-77k") -> pd.DataFrame:
    """The older 77k madlibs (module docstring): :data:`MADLIBS_COLUMNS` (``identity_group``
    empty: the old term list has no groups). ``attrs["without_identity"]``: rows with no term."""
    f = registry.path(name)
    raw = read_csv_checked(f, ["Text", "Label", "Template"], "madlibs 77k")
    bad = sorted(set(raw["Label"]) - {"BAD", "NOT_BAD"})
    if bad:
        raise InputError(f"madlibs 77k file {f}: unknown label {bad[0]!r} (BAD or NOT_BAD)")
    longest_first = sorted(set(identity_terms(name)), key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, longest_first)) + r")(?!\w)", re.IGNORECASE)
    found = [sorted({m.lower() for m in pattern.findall(t)}) for t in raw["Text"]]
    two = next((i for i, m in enumerate(found) if len(m) > 1), None)
    if two is not None:
        raise InputError(f"madlibs 77k file {f}: row {two + 2} names two identity terms {found[two]}: "
                         f"{raw['Text'][two]!r}")
    out = pd.DataFrame({"sentence_id": range(len(raw)), "text": raw["Text"], "label": raw["Label"].map(_LABELS),
                        "template": raw["Template"], "identity": [m[0] if m else "" for m in found],
                        "identity_group": ""})
    out.attrs.update(dataset=name, without_identity=int((out["identity"] == "").sum()))
    return out[MADLIBS_COLUMNS]


def identity_terms(name: str = "bias-madlibs-77k", *, identities: str = "released") -> list[str]:
    """The identity terms of a madlibs set, in file order (Dixon et al. 2018): ``bias-madlibs-77k``
    the 50 of ``adjectives_people.txt``; ``bias-madlibs`` the neutral identity words of the newer
    word list (the ones its templates fill: the same 50, or 51 with ``identities="all"``). Seed 003
    hard-codes the same 50 (and matched them as substrings: see :func:`mentions`)."""
    if name == "bias-madlibs-77k":
        return read_lines(registry.path(name, _TERMS_77K), "madlibs identity term list")
    if name == "bias-madlibs":
        words = _words(name, identities)
        return words.loc[(words["type"] == "identity") & (words["connotation"] == "neutral"), "word"].tolist()
    raise InputError(f"identity_terms: {name!r} is not a madlibs set (bias-madlibs or bias-madlibs-77k)")


def mentions(texts, terms, *, match: str = "word") -> pd.DataFrame:
    """Boolean DataFrame (rows = texts, columns = terms): does the text mention the term?
    ``match="word"`` (default): whole words, case-insensitive, as Dixon et al.'s analysis code
    does; ``"substring"``: case-insensitive substring, seed 003's convention and defect ("male"
    found in "female"), for reproducing its numbers only."""
    if match not in ("word", "substring"):
        raise InputError(f"match must be 'word' or 'substring', got {match!r}")
    texts = pd.Series(list(texts), dtype=object).str.lower()
    terms = list(dict.fromkeys(terms))
    if not terms:
        raise InputError("mentions: no identity terms")
    cols = {}
    for term in terms:
        pattern = re.escape(term.lower())
        regex = rf"(?<!\w){pattern}(?!\w)" if match == "word" else pattern
        cols[term] = texts.str.contains(regex, regex=True).to_numpy()
    return pd.DataFrame(cols).astype(bool).set_axis(np.arange(len(texts)))
