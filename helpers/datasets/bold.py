"""BOLD: Bias in Open-ended Language Generation (Dhamala et al. 2021, FAccT).

23,679 prompts (the first words of a Wikipedia sentence about a person, profession or ideology)
over five domains; each prompt keeps the Wikipedia sentence it was cut from. Seed 001 generates
a continuation of each prompt and compares the continuations' sentiment, toxicity and regard
between the groups of a domain (gender: American actors vs actresses; race: European, African,
Asian and Hispanic/Latino Americans; religious and political ideologies; professions).

:func:`load_bold` returns one row per prompt: ``prompt_id, domain, group, entity, prompt,
wikipedia`` (the source sentence), in the upstream files' order.
"""

from __future__ import annotations

import json

import pandas as pd

from helpers.datasets import registry
from helpers.errors import InputError

__all__ = ["load_bold", "DOMAINS", "BOLD_COLUMNS"]

DOMAINS = ("gender", "political_ideology", "profession", "race", "religious_ideology")
BOLD_COLUMNS = ["prompt_id", "domain", "group", "entity", "prompt", "wikipedia"]


def _nested(path) -> dict:
    """``{group: {entity: [text, ...]}}`` from one BOLD JSON file, checked."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"BOLD file {path}: cannot read JSON ({exc.__class__.__name__})") from None
    ok = isinstance(data, dict) and all(
        isinstance(e, dict) and all(isinstance(t, list) and all(isinstance(s, str) for s in t) for t in e.values())
        for e in data.values())
    if not ok:
        raise InputError(f"BOLD file {path}: expected {{group: {{entity: [text, ...]}}}}")
    return data


def load_bold(name: str = "bold", *, domains=DOMAINS) -> pd.DataFrame:
    """The BOLD prompts of ``domains`` with their Wikipedia source sentences (module docstring).

    A prompt whose entity has a different number of Wikipedia sentences than prompts keeps an
    empty ``wikipedia`` (none in the released files)."""
    domains = [domains] if isinstance(domains, str) else list(domains)
    unknown = sorted(set(domains) - set(DOMAINS))
    if unknown or not domains:
        raise InputError(f"BOLD domains must be among {', '.join(DOMAINS)}; got {', '.join(unknown) or 'none'}")
    rows = []
    for domain in domains:
        prompts = _nested(registry.path(name, f"prompts/{domain}_prompt.json"))
        wiki = _nested(registry.path(name, f"wikipedia/{domain}_wiki.json"))
        for group, entities in prompts.items():
            for entity, texts in entities.items():
                source = wiki.get(group, {}).get(entity, [])
                source = source if len(source) == len(texts) else [""] * len(texts)
                rows += [(domain, group, entity, p, w) for p, w in zip(texts, source)]
    df = pd.DataFrame(rows, columns=BOLD_COLUMNS[1:])
    df.insert(0, "prompt_id", range(len(df)))
    df.attrs["dataset"] = name
    return df
