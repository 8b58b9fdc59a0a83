"""The card measured: the language-model quality gate, then each applicable measure of
:data:`~helpers.card.catalogue.MEASUREMENTS` per model (:func:`report_card`), its rows tidied with
the catalogue's ideal and direction; the standing and, with two models, the comparison."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from helpers import models, runner
from helpers.card.catalogue import (CATALOGUE, MEASUREMENTS, METRIC_COLUMNS, PAIRED_ON, PROBING, applies, check_budget,
                                    check_languages, status_table)
from helpers.card.comparison import COMPARISON_COLUMNS, next_budget_words, compare
from helpers.card.references import standing
from helpers.errors import HarmsError, InputError, Interrupted, first_line
from helpers.progress import mode as progress_mode, progress

@dataclass
class Card:
    """A report card: ``gate`` (one row per model), ``metrics`` (tidy: model, metric, group,
    value, ci_low, ci_high, n, ideal, direction), ``status`` (every catalogue metric per model:
    computed, not applicable and why, or not asked for), ``standing``, ``comparison`` (two
    models), ``provenance`` and the ``settings``; ``per_sentence`` keeps the scored items."""

    models: list[str]
    budget: str
    settings: dict
    gate: pd.DataFrame
    metrics: pd.DataFrame
    status: pd.DataFrame
    standing: pd.DataFrame
    comparison: pd.DataFrame
    provenance: dict
    per_sentence: dict = field(default_factory=dict, repr=False)

    def usable(self, model: str) -> bool:
        row = self.gate[self.gate["model"] == model]
        return bool(len(row)) and bool(row["usable"].iloc[0])

    def interpretable(self, model: str) -> bool:
        """Whether verdicts may be drawn from ``model``'s numbers: it passes the language-model gate,
        or it is an encoder (the gate measures language models; an encoder's card holds only
        its embedding metrics)."""
        row = self.gate[self.gate["model"] == model]
        return self.usable(model) or (bool(len(row)) and row["objective"].iloc[0] == "encoder")

    def why_not_interpreted(self) -> str:
        """Why the card's models are not all interpreted ("" when they are): a model that fails the
        gate, or one the gate does not apply to and that is no encoder (a permutation LM)."""
        why = []
        for g in self.gate.itertuples():
            if self.interpretable(g.model):
                continue
            applies = bool(getattr(g, "gate_applies", g.objective in ("causal", "masked")))
            why.append(f"{g.model} fails the language-model quality gate" if applies else
                       f"the quality gate does not apply to {g.model} ({g.objective}), so its numbers are not read")
        return "; ".join(why)


def _rows(name: str, metric: str, df: pd.DataFrame) -> pd.DataFrame:
    """Tidy card rows (:data:`METRIC_COLUMNS`) from ``df`` with group, value, ci_low, ci_high, n."""
    ideal, direction = CATALOGUE.set_index("metric").loc[metric, ["ideal", "direction"]]
    return pd.DataFrame({"model": name, "metric": metric, "group": df["group"].astype(str).to_numpy(),
                         "value": df["value"].to_numpy(float), "ci_low": df["ci_low"].to_numpy(float),
                         "ci_high": df["ci_high"].to_numpy(float), "n": df["n"].to_numpy(int), "ideal": ideal,
                         "direction": direction})


def _status_note(model: str, metric: str, flags: dict) -> str | None:
    """Why ``model``'s ``metric`` is shown but not read: its own classifier's failure, or the other
    model's (a comparison needs both)."""
    own = flags.get((model, metric))
    other = [f"{m}: {why}" for (m, mt), why in flags.items() if mt == metric and m != model]
    if own:
        return own
    return f"read alone; its comparison is not interpreted ({'; '.join(other)})" if other else None


def report_card(names, *, baseline: str | None = None, budget: str = "quick", device: str = "cpu",
                seed: int = 0, min_ratio: float = 2.0, languages=("en",)) -> Card:
    """The card of ``names`` (one model, or two compared item by item: the second against the
    first; ``baseline`` is the same as naming it first); ``languages``: those of seed 002's
    probing (en, fr, ar). Fails with one line on an unknown budget, an unknown model, an
    unreachable hub, an unknown language or one the model's tokenizer cannot write."""
    names = [names] if isinstance(names, (str, Path)) else [str(n) for n in names]
    if baseline is not None:
        names = [str(baseline), *names]
    if not 1 <= len(names) <= 2 or len(set(names)) != len(names):
        raise InputError(f"a card takes one model or two different ones, got {names}")
    b = check_budget(budget)
    languages = check_languages(languages)
    settings = {"budget": budget, **b, "seed": seed, "device": device, "min_ratio": min_ratio,
                "languages": list(languages), "probing": PROBING}
    gates, metrics, status, per_sentence, provenance = [], [], [], {}, {"models": {}, "seconds": {}}
    flags: dict[tuple[str, str], str] = {}          # (model, metric) -> why it is shown, not interpreted
    failed: dict[tuple[str, str], str] = {}         # (model, metric) -> why it could not be computed
    for name in names:
        handle = models.lazy(name, device=device)
        provenance["models"][handle.name] = {"fingerprint": handle.fingerprint,
                                             "tokenizer_fingerprint": handle.tokenizer_fingerprint,
                                             "objective": handle.objective}
        status.append(status_table(handle, languages))
        if handle.objective not in ("causal", "masked"):
            gates.append({"model": handle.name, "objective": handle.objective, "usable": False, "gate_applies": False,
                          "reason": f"the quality gate measures causal or masked LMs, not {handle.objective!r}"})
        else:
            t = time.perf_counter()
            g = runner.language_model_quality(handle, blocks=b["gate_blocks"], min_ratio=min_ratio)
            gates.append({"model": handle.name, "objective": handle.objective, "gate_applies": True,
                          **runner.gate_columns(g)})
            provenance["seconds"][f"{handle.name}: quality gate"] = round(time.perf_counter() - t, 1)
        per_sentence[handle.name] = {}
        params = {**b, "seed": seed, "languages": languages}
        steps = [(names_, measure, [m for m in names_ if applies(m, handle.objective, languages)])
                 for names_, measure in MEASUREMENTS]
        steps = [s for s in steps if s[2]]
        lines = progress_mode() == "lines"             # a log: one line per measurement, not one per card
        bar = progress(total=len(steps), desc=f"card {handle.name}", unit="measurement", enabled=not lines)
        for _, measure, wanted in steps:
            bar.set_postfix(metric=", ".join(wanted))
            t = time.perf_counter()
            try:
                measured = measure(handle, params)
            except Interrupted:
                raise
            except HarmsError as exc:             # this measurement only: the others go on
                why = first_line(exc)
                failed.update({(handle.name, metric): why for metric in wanted})
                print(f"harms: note: {handle.name}: {', '.join(wanted)} not computed: {why}", file=sys.stderr,
                      flush=True)
                measured = {}
            for metric, (rows, items, *flag) in measured.items():
                if metric in wanted:
                    metrics.append(_rows(handle.name, metric, rows))
                    per_sentence[handle.name][metric] = items
                    if flag and flag[0]:
                        flags[(handle.name, metric)] = flag[0]
            provenance["seconds"][f"{handle.name}: {', '.join(wanted)}"] = round(time.perf_counter() - t, 1)
            bar.update()
            if lines:
                done = bar.n
                print(f"card {handle.name}: {', '.join(wanted)} in {time.perf_counter() - t:.1f} s ({done} of "
                      f"{len(steps)} measurements)", file=sys.stderr, flush=True)
        bar.close()
        handle.release()
    gate = pd.DataFrame(gates)
    if failed and not metrics:
        raise HarmsError("nothing could be computed for the card: " + "; ".join(
            f"{model} {metric}: {why}" for (model, metric), why in failed.items()))
    table = pd.concat(metrics, ignore_index=True) if metrics else pd.DataFrame(columns=METRIC_COLUMNS)
    status = pd.concat(status, ignore_index=True)
    status["status"] = [f"{NOT_COMPUTED}: {failed[(m, mt)]}" if (m, mt) in failed else st
                        for m, mt, st in zip(status["model"], status["metric"], status["status"])]
    status["note"] = [_status_note(model, metric, flags) if s == "computed" else None
                      for model, metric, s in zip(status["model"], status["metric"], status["status"])]
    out = Card([g["model"] for g in gates], budget, settings, gate, table, status, pd.DataFrame(), pd.DataFrame(),
               provenance, per_sentence)
    out.standing = standing(table, budget=budget, not_interpreted={
        (model, metric) for model, metric in zip(table["model"], table["metric"])
        if (model, metric) in flags or not out.interpretable(model)})
    if len(out.models) == 2:
        a, b_ = out.models
        out.comparison = compare(per_sentence, a, b_, n_resamples=b["n_resamples"], seed=seed,
                                 interpretable=out.interpretable(a) and out.interpretable(b_), flags=flags,
                                 why_not=out.why_not_interpreted())
        out.comparison["verdict"] = next_budget_words(out.comparison, budget)
        out.comparison = not_tested_rows(out.comparison, failed, a, b_)
    out.provenance.update(_versions())
    out.provenance["data"] = _data_digests()
    return out


#: How a status starts for a metric whose measurement failed for a model (the reason follows).
NOT_COMPUTED = "not computed"


def not_tested_rows(comparison: pd.DataFrame, failed: dict, a: str, b: str) -> pd.DataFrame:
    """``comparison`` with one row per metric that could not be computed for ``a`` or ``b`` (``failed``:
    (model, metric) -> why): no statistic, its verdict "not tested: <model>: <why>", in no family."""
    rows = []
    for metric in dict.fromkeys(mt for (m, mt) in failed if m in (a, b)):
        why = "; ".join(f"{m}: {failed[(m, metric)]}" for m in (a, b) if (m, metric) in failed)
        rows.append({"metric": metric, "model_a": a, "model_b": b, "group": "overall", "headline": False,
                     "paired_on": PAIRED_ON.get(metric.split(":")[0], ""), "n": 0, "test": "not tested",
                     "family": "not tested", "family_size": 0, "verdict": f"not tested: {why}"})
    if not rows:
        return comparison
    extra = pd.DataFrame(rows).reindex(columns=comparison.columns if len(comparison.columns) else COMPARISON_COLUMNS)
    return pd.concat([comparison, extra], ignore_index=True) if len(comparison) else extra


def _data_digests() -> dict:
    """sha256 of each data set file the card reads (the memoised digest of :func:`helpers.hashing.sha256_file`)."""
    from helpers import hashing
    from helpers.datasets import registry

    found = {}
    for name in ("toxigen", "implicit-hate", "stereoset-dev", "crows-pairs"):
        try:
            f = registry.path(name)
        except HarmsError:                   # a data set absent here is not listed
            continue
        if f.is_file():
            found[f"{name} ({f.name})"] = hashing.sha256_file(f)
    return found


def _versions() -> dict:
    from importlib import metadata

    found = {}
    for pkg in ("harms-helpers", "torch", "transformers", "numpy", "pandas", "scipy", "statsmodels"):
        try:
            found[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            continue
    return {"versions": found}
