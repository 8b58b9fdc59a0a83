"""Seed 002's English toxicity classifier offline (issue 36): each mix of the English
abusive-language sets available here, and the MLMA-only classifier, against the classifier gate
on held-out texts; and seed 001's ToxD probe (chapter 06) before and after, on a model.

    .venv/bin/python benchmarks/bench_english_classifier.py [--toxd smollm2-135m] [--no-append]

Classifiers: chapter 07's TF-IDF + logistic regression (class-balanced) fitted on the training
split of :func:`helpers.chapters.ch07_probing.training_data` (each set split 80 / 20 on its own with
seed 0; a held-out text that is also a training text is dropped). Each is gated
(:func:`helpers.metrics.classifier_quality.classifier_gate`, margin 0.05, 1,000 stratified
resamples) on the held-out texts of the *largest* mix pooled (so every classifier is judged on the
same texts, none of which any of them trained on), and on each set's held-out texts alone.

``--toxd MODEL``: chapter 06's ToxD probe (logistic regression on MODEL's frozen mean-pooled last
hidden states) trained as chapter 06 trains it now (``classifier_data`` of its defaults, C =
``PROBE_C``) and as before issue 36 (400 MLMA English tweets, C = 1), and each change alone;
gated on the madlibs test sentences.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import parser, publish  # noqa: E402

MIXES = [("mlma",), ("mlma", "insults"), ("mlma", "implicit-hate"), ("mlma", "insults", "implicit-hate"),
         ("mlma", "insults", "implicit-hate", "toxigen"), ("insults", "implicit-hate")]


def cell(g: pd.DataFrame, metric: str) -> str:
    r = g.set_index("metric").loc[metric]
    return f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def english_rows(params: dict) -> list[str]:
    from helpers.chapters import ch07_probing as ch

    largest = ch.training_data(params, "en", MIXES[4])
    test = largest[largest["split"] == "test"]
    lines = [f"Held-out texts (the largest mix's test split, shared by every row): {len(test):,}, "
             + ", ".join(f"{s} {n:,}" for s, n in test["source"].value_counts(sort=False).items())
             + f"; {(test['label'] == 'toxic').mean():.1%} toxic.", "",
             "| training sets | training texts | seconds | held-out | n | weighted F1 | macro F1 [95 % CI] (baseline) "
             "| balanced accuracy | AUC | usable |", "|---|---:|---:|---|---:|---:|---|---|---|---|"]
    for mix in MIXES:
        data = ch.training_data(params, "en", mix)
        train = data[data["split"] == "train"]
        train = train[~train["text"].isin(set(test["text"]))]        # never a shared held-out text
        t0 = time.perf_counter()
        clf = ch.TfidfLogistic(seed=params["seed"], class_weight="balanced").fit(train["text"], train["label"])
        seconds = time.perf_counter() - t0
        for where in ["all", *MIXES[4]]:
            t = test if where == "all" else test[test["source"] == where]
            m, g = ch.score_classifier(params, clf, t)
            f1w = m.set_index("metric").loc["f1_weighted", "value"]
            base = g.set_index("metric").loc["macro_f1", "baseline"]
            lines.append(f"| {' + '.join(mix)} | {len(train):,} | {seconds:.1f} | {where} | {len(t):,} | {f1w:.3f} | "
                         f"{cell(g, 'macro_f1')} ({base:.3f}) | {cell(g, 'balanced_accuracy')} | {cell(g, 'auc')} | "
                         f"{'yes' if g['usable'].iloc[0] else 'no'} |")
            print(lines[-1], flush=True)
    return lines


def toxd_rows(model: str) -> list[str]:
    from helpers import runner
    from helpers.chapters import ch06_intrinsic_extrinsic as ch06
    from helpers.datasets.probing import load_mlma

    p6 = {**ch06.DEFAULTS, "classifier": "probe", "seed": 0}
    train, test = ch06.classifier_data(p6)
    mlma = load_mlma(language="en")
    before = mlma.groupby("label", group_keys=False).sample(frac=400 / len(mlma), random_state=0)[["text", "label"]]
    lines = ["", f"ToxD probe on {model} (frozen mean-pooled last hidden states + standardised logistic regression, "
             f"balanced), gated on chapter 06's {len(test)} madlibs test sentences "
             f"({(test['label'] == 'toxic').mean():.0%} toxic). Before: 400 MLMA English tweets, C = 1; after (chapter "
             f"06's default now): {p6['classifier_train']} texts of each of {', '.join(ch06.TOXD_SETS.values())} "
             f"(first {ch06.SUBSTITUTE_WORDS} words), C = {ch06.PROBE_C:g}.", "",
             "| trained on | texts | C | seconds | macro F1 [95 % CI] | balanced accuracy | AUC | usable |",
             "|---|---:|---:|---:|---|---|---|---|"]
    chosen = ch06.PROBE_C
    try:
        for what, tr, c in (("400 MLMA English tweets (before)", before.reset_index(drop=True), 1.0),
                            ("400 MLMA English tweets", before.reset_index(drop=True), chosen),
                            ("the English sets, 400 each", train, 1.0),
                            ("the English sets, 400 each (after)", train, chosen)):
            ch06.PROBE_C = c
            t0 = time.perf_counter()
            results, _ = runner.for_each_model([model], lambda h: ch06.classifier_results(h, p6, tr, test)[1])
            g = results[model]
            lines.append(f"| {what} | {len(tr):,} | {c:g} | {time.perf_counter() - t0:.0f} | {cell(g, 'macro_f1')} | "
                         f"{cell(g, 'balanced_accuracy')} | {cell(g, 'auc')} | {'yes' if g['usable'].iloc[0] else 'no'} |")
            print(lines[-1], flush=True)
    finally:
        ch06.PROBE_C = chosen
    return lines


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--toxd", default="", help="a model to gate chapter 06's ToxD probe on (e.g. smollm2-135m)")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    lines = english_rows({"test_fraction": 0.2, "seed": 0, "classifier_margin": 0.05})
    if a.toxd:
        lines += toxd_rows(a.toxd)
    publish("Seed 002's English classifier: offline mixes against the classifier gate (issue 36)", lines,
            threads=a.threads, append=not a.no_append)


if __name__ == "__main__":
    main()
