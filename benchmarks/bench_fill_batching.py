"""Causal whole-word fill-ins with prefixes of one length together against each prefix alone
(issue 38): chapter 07's probed sentences of each language, the same model in one process, the
two alternated (alone, together, alone, together; the faster of each pair kept), caches off.

    .venv/bin/python benchmarks/bench_fill_batching.py [--models smollm2-135m gemma3-270m]
        [--languages en fr ar] [--sentences 32] [--no-append]
    .venv/bin/python benchmarks/bench_fill_batching.py --rows-only [--models ...]

Prints and appends to benchmarks/RESULTS.md the seconds of each, the ratio, whether every word
is the same and the largest relative difference of a word's probability (float32 sums in another
batch order). The peer is the code before the change: each prefix alone is
``fill._PREFIXES_TOGETHER = 1`` (one prefix pass each, its continuations batched on their own).
``--rows-only`` prints why: the cost per row of one continuation step (2 new tokens on a 15-token
prefix cache) in batches of 14 to 224 rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def sentences(language: str, n: int) -> list[str]:
    """The first ``n`` templates chapter 07 probes in ``language`` (its default parameters)."""
    from helpers.chapters import ch07_probing as ch07
    from helpers.measures import probing

    params = ch07.parameters({"languages": [language]})
    classifiers, _, _ = probing.train_classifiers(params)
    kept = probing.sample(params, probing.build(params, language, classifiers[language]))
    return kept["template"].drop_duplicates().head(n).tolist()


def compare(model: str, language: str, templates: list[str]) -> dict:
    from helpers.lm import fill
    from helpers.models.loading import load

    lm = load(model)
    seconds, found = {1: [], fill._PREFIXES_TOGETHER: []}, {}
    together = fill._PREFIXES_TOGETHER
    try:
        for size in (1, together, 1, together):
            fill._PREFIXES_TOGETHER = size
            t = time.perf_counter()
            found[size] = fill.top_k(lm, templates, k=10, skip={fill.NON_WORDS}, max_pieces=4, cache=False,
                                     progress=False)
            seconds[size].append(time.perf_counter() - t)
    finally:
        fill._PREFIXES_TOGETHER = together
    a, b = found[1], found[together]
    return {"model": model, "language": language, "templates": len(templates), "alone_s": min(seconds[1]),
            "together_s": min(seconds[together]), "speed_up": min(seconds[1]) / min(seconds[together]),
            "same_words": bool((a["word"].to_numpy() == b["word"].to_numpy()).all()),
            "max_rel_prob_diff": float(np.max(np.abs(a["probability"] - b["probability"]) / a["probability"]))}


def per_row(model: str) -> None:
    """Milliseconds per row of one continuation step, by batch size (the fastest of 3)."""
    import copy

    import torch

    from helpers.models.loading import load

    lm = load(model).model
    with torch.inference_mode():
        cache = lm(input_ids=torch.randint(100, 1000, (1, 15)), use_cache=True, logits_to_keep=1).past_key_values
        for rows in (14, 28, 56, 112, 224):
            times = []
            for _ in range(3):
                past = copy.deepcopy(cache)
                past.batch_repeat_interleave(rows)
                ids = torch.randint(100, 1000, (rows, 2))
                t = time.perf_counter()
                lm(input_ids=ids, past_key_values=past, use_cache=True, logits_to_keep=1)
                times.append(time.perf_counter() - t)
            print(f"{model}: batch of {rows} rows {1000 * min(times) / rows:.2f} ms a row", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"])
    ap.add_argument("--languages", nargs="+", default=["en", "fr", "ar"])
    ap.add_argument("--sentences", type=int, default=32)
    ap.add_argument("--no-append", action="store_true")
    ap.add_argument("--rows-only", action="store_true", help="only the cost per row by batch size")
    args = ap.parse_args()
    if args.rows_only:
        for model in args.models:
            per_row(model)
        return
    import pandas as pd

    rows = []
    for language in args.languages:
        templates = sentences(language, args.sentences)
        for model in args.models:
            rows.append(compare(model, language, templates))
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows).round({"alone_s": 1, "together_s": 1, "speed_up": 2})
    text = (f"\n## Causal fill-ins: prefixes of one length together (issue 38, {dt.datetime.now():%Y-%m-%d %H:%M})\n\n"
            f"Command: `.venv/bin/python benchmarks/bench_fill_batching.py` ({os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.1f}); chapter 07's first {args.sentences} probed sentences per language, top-10 "
            "whole words, caches off, the faster of two runs each.\n\n" + table.to_markdown(index=False) + "\n")
    print(text)
    if not args.no_append:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
