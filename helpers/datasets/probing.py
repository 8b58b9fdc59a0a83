"""Seed 002's probing patterns (Ousidhoum et al. 2021): ATOMIC events turned into cloze patterns
in English, French and Arabic, and the social-group phrases that replace ``PersonX``.

:func:`load_patterns` (``atomic-probing``): ``language, head_id, head, pattern_id, pattern``, one
row per non-empty pattern cell. The English file names its columns; the French and Arabic files
are shifted against their headers (the first column holds the head), so they are read by
position (docs/UPSTREAM.md, seed 002). English: 10,586 heads x 6 patterns.
:func:`load_groups` (``atomic-probing-groups``): ``language, gender, group`` from ``cands/``
(trailing spaces stripped, empty lines dropped).
:func:`with_group` puts a group phrase into a pattern: in place of ``PersonX`` (English,
French); the Arabic patterns have no ``PersonX`` (the verb carries the subject), so the group is
put first — our reading, stated wherever Arabic results are shown.
"""

from __future__ import annotations

import csv

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_csv_checked, read_lines

LANGUAGES = ("en", "fr", "ar")
PATTERN_COLUMNS = ["language", "head_id", "head", "pattern_id", "pattern"]
GROUP_COLUMNS = ["language", "gender", "group"]


def _language(language: str) -> str:
    if language not in LANGUAGES:
        raise InputError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    return language


def load_patterns(name: str = "atomic-probing", *, language: str = "en") -> pd.DataFrame:
    """The cloze patterns of one language (module docstring)."""
    f = registry.path(name).parent / f"atomic_probing_{_language(language)}.csv"
    try:
        with open(f, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{f}: cannot read the patterns ({exc.__class__.__name__})") from None
    if len(rows) < 2:
        raise InputError(f"{f}: no patterns")
    out = []
    for i, r in enumerate(rows[1:]):
        head, cells = (r[-1], r[:-1]) if language == "en" else (r[0], r[1:])
        for k, p in enumerate(cells, start=1):
            if p.strip():
                if p.count("[MASK]") != 1:
                    raise InputError(f"{f}: row {i + 2}, pattern {k}: needs exactly one [MASK]")
                out.append((language, i, head.strip(), k, p.strip()))
    df = pd.DataFrame(out, columns=PATTERN_COLUMNS)
    df.attrs.update(dataset=name, language=language)
    return df


def load_groups(name: str = "atomic-probing-groups", *, language: str = "en") -> pd.DataFrame:
    """The social-group phrases of one language, by gender file (module docstring)."""
    folder = registry.path(name).parent        # the main file is cands/neutral.txt
    suffix = "" if _language(language) == "en" else f"_{language}"
    rows = []
    for gender in ("female", "male", "neutral"):
        f = folder / f"{gender}{suffix}.txt"
        rows += [(language, gender, g) for g in read_lines(f, "group list")]
    df = pd.DataFrame(rows, columns=GROUP_COLUMNS)
    df.attrs.update(dataset=name, language=language)
    return df


def with_group(pattern: str, group: str) -> str:
    """``pattern`` with ``group`` as its subject (``PersonX`` replaced, or put first)."""
    return pattern.replace("PersonX", group) if "PersonX" in pattern else f"{group} {pattern}"


MLMA_COLUMNS = ["tweet_id", "language", "text", "sentiment", "label", "directness", "target", "group"]


def load_mlma(name: str = "mlma", *, language: str = "en") -> pd.DataFrame:
    """MLMA hate speech (Ousidhoum et al. 2019), one language: ``tweet_id, language, text,
    sentiment`` (multi-label hostility joined by ``_``), ``label`` (Ousidhoum et al. 2021's binary
    rule: single-label ``normal`` = ``non-toxic``, anything else ``toxic``), ``directness``,
    ``target``, ``group``. Seed 002's probe classifier is trained on it."""
    f = registry.path(name).parent / f"{_language(language)}_dataset.csv"
    raw = read_csv_checked(f, ["tweet", "sentiment", "directness", "target", "group"], "MLMA")
    df = pd.DataFrame({"tweet_id": range(len(raw)), "language": language, "text": raw["tweet"].str.strip(),
                       "sentiment": raw["sentiment"], "label": raw["sentiment"].map(
                           lambda s: "non-toxic" if s == "normal" else "toxic"),
                       "directness": raw["directness"], "target": raw["target"], "group": raw["group"]})
    df = df[df["text"] != ""].reset_index(drop=True)[MLMA_COLUMNS]
    df.attrs.update(dataset=name, language=language)
    return df
