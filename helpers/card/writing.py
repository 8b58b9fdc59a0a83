"""A card's files: the CSVs and ``report.json`` (:func:`write`), checked against the versioned schema
shipped in the package (:func:`validate`); the pages are :mod:`helpers.card.page`'s."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.errors import InputError

#: The version of report.json's schema (helpers/report_card.schema.json): 2 added the standing's
#: reference sets; 3 the headline family, adjusted p, interval levels, test floors and detectable
#: differences of the comparison, the gate's ``gate_applies`` and the standing's ``comparable``; 4
#: names the status's paper ``paper`` (it was ``seed``, beside the card's random seed).
SCHEMA_ID = "harms-report-card/5"


SCHEMA = Path(__file__).parent.parent / "report_card.schema.json"


def validate(doc: dict) -> None:
    """Check a report card's JSON against the versioned schema shipped in the package
    (``helpers/report_card.schema.json``); a mismatch is a bug of this module, raised as is. The
    tests validate every card shape :func:`write` makes (one model, two); :func:`write` itself does
    not, as importing jsonschema costs 2-3 s of a 13 s warm card (benchmarks/RESULTS.md)."""
    import jsonschema

    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


def check_output(output, *, overwrite: bool = False) -> Path:
    """``output`` as a Path, checked before anything is computed (and again when writing): one line
    when it is empty, a file, under a file or unwritable (:func:`helpers.tables.check_writable_folder`),
    or when a card is already there and ``overwrite`` is off."""
    from helpers import tables

    out = tables.check_writable_folder(output)
    if (out / "report.json").exists() and not overwrite:
        raise InputError(f"{out}: a report card is already there; pass --overwrite to replace it")
    return out


def write(c, output, *, overwrite: bool = False, pages: dict | None = None) -> Path:
    """``metrics.csv``, ``status.csv``, ``gate.csv``, ``standing.csv``, ``comparison.csv`` (two
    models), ``report.json`` and each of ``pages`` (file name -> function of the card returning its
    text) in ``output``, each written atomically; an existing card there is one line unless
    ``overwrite``. :func:`helpers.card.page.write` adds ``report.html`` and ``model_card.md``."""
    from helpers import tables

    out = check_output(output, overwrite=overwrite)
    out.mkdir(parents=True, exist_ok=True)
    parts = {"gate": c.gate, "metrics": c.metrics, "status": c.status, "standing": c.standing}
    if len(c.comparison):
        parts["comparison"] = c.comparison
    for name, df in parts.items():
        tables.write_table(df, out / f"{name}.csv")
    doc = {"schema": SCHEMA_ID, "models": c.models, "settings": c.settings, "provenance": c.provenance,
           **{name: json.loads(df.to_json(orient="records")) for name, df in parts.items()}}
    tables.atomic_write(out / "report.json", json.dumps(doc, indent=2))
    for name, render in (pages or {}).items():
        tables.atomic_write(out / name, render(c))
    return out
