"""How evenly a job split across processes is shared (issue 27): equal counts of texts (the split
before 0597224) vs equal characters (``distributed.split.share_bounds``), on the two real jobs the
score cache computes longest first (``cached_rows(longest_first=True)``): SEAT's sentences (the
report card's and chapter 05's sentence vectors) and StereoSet's intrasentence rows.

    .venv/bin/python benchmarks/bench_shares.py [--no-append]

No model runs: a share's work is measured three ways, in characters (what the split balances), in
SmolLM2-135M tokens (a causal scorer's or an encoder's work) and in squared tokens (a
pseudo-log-likelihood's: one pass per token). Printed per number of processes: the largest share
over the mean share (1.00 = even; the run waits for the largest).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import parser, publish  # noqa: E402

from helpers.distributed import split  # noqa: E402


def equal_counts(n: int, parts: int) -> list[tuple[int, int]]:
    """The old split: ``n // parts`` texts each, the first ``n % parts`` one more."""
    q, r = divmod(n, parts)
    starts = [k * q + min(k, r) for k in range(parts + 1)]
    return list(zip(starts, starts[1:]))


def imbalance(bounds, cost) -> float:
    shares = [sum(cost[a:b]) for a, b in bounds]
    return max(shares) / (sum(shares) / len(shares))


def jobs() -> dict[str, list[str]]:
    from helpers.datasets import stereoset, words

    seat = words.load_seat()["example"].drop_duplicates().tolist()
    ss = stereoset.load_intrasentence()
    rows = (ss["context"] + " " + ss["sentence"]).drop_duplicates().tolist()
    return {"SEAT sentences": seat, "StereoSet rows": rows}


def main() -> None:
    from helpers import models

    args = parser(__doc__).parse_args()
    tok = models.load("smollm2-135m").tokenizer
    lines = ["| job | texts | processes | cost | equal counts | equal characters + 10 per text |", "|---|---|---|---|---|---|"]
    for name, texts in jobs().items():
        texts = sorted(texts, key=len, reverse=True)              # cached_rows(longest_first=True)
        tokens = [len(ids) for ids in tok(texts)["input_ids"]]
        costs = {"characters": [len(t) for t in texts], "tokens": tokens, "tokens²": [n * n for n in tokens]}
        for parts in (2, 4, 8):
            old = equal_counts(len(texts), parts)
            new = split.share_bounds([n + split.PER_TEXT_CHARACTERS for n in costs["characters"]], parts)
            for what, cost in costs.items():
                lines.append(f"| {name} | {len(texts):,} | {parts} | {what} | {imbalance(old, cost):.2f} | "
                             f"{imbalance(new, cost):.2f} |")
    publish("How evenly a longest-first job is shared between processes", [
        "", "The largest share over the mean share (1.00 = even: the run waits for the largest share) of a job "
        "sorted longest first, split into equal counts of texts (the split before) or equal characters, "
        "counting 10 more per text for its special tokens (`distributed.split.share_bounds`, now). No model runs; tokens are SmolLM2-135M's. "
        "Tokens are the work of these jobs (sentence vectors, StereoSet's scores: one pass per text, where the "
        "feed-forward layers outweigh attention at these lengths); squared tokens, a pseudo-log-likelihood's "
        "work, stay uneven for SEAT, whose few 126-token texts outweigh thousands of one-word ones, but no "
        "longest-first job computes one.", "", *lines, ""],
        threads=args.threads, append=not args.no_append)

if __name__ == "__main__":
    main()
