"""The ``harms`` command line: a thin layer over the functions the notebooks call.

    harms score       per-sentence log-likelihood and perplexity of a text file
    harms safety      safety score per group (Hosseini et al. 2023, eqs. 1-3)
    harms fetch-data  download and verify a data set from its upstream URL
    harms book        execute the notebooks with papermill and build the book
"""

from __future__ import annotations

import argparse
import sys

from helpers.errors import HarmsError


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--objective", default="auto", choices=["auto", "causal", "masked", "permutation"],
                   help="how to score; auto reads it from the model's configuration")
    p.add_argument("--pll", default="original", choices=["original", "word-l2r"],
                   help="pseudo-log-likelihood variant for masked LMs (Kauf & Ivanova 2023)")
    p.add_argument("--batch-tokens", type=int, default=None,
                   help="memory budget: at most this many tokens per forward pass "
                        "(default 1024 on a CPU, 8192 on an accelerator)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, mps or auto (device_map='auto')")
    p.add_argument("--upstream-mask-id", action="store_true",
                   help="reproduce the upstream SafeNLP bug: mask with id 103 whatever the tokenizer")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the score cache")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harms", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score sentences with a language model")
    p.add_argument("--model", required=True, help="registry name, hub id or local directory")
    p.add_argument("--input", required=True, help="CSV, JSON (list of objects), JSONL or Parquet file")
    p.add_argument("--output", required=True, help="CSV or Parquet file (by extension)")
    p.add_argument("--text-column", default="text")
    p.add_argument("--processes", type=int, default=1,
                   help="split the input across N processes (one per GPU with --device cuda) "
                        "through Hugging Face Accelerate")
    _add_scoring_options(p)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("safety", help="safety score per demographic group")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="registry name, hub id or local directory")
    src.add_argument("--scores", help="precomputed per-sentence scores (CSV, Parquet, or upstream JSON)")
    p.add_argument("--dataset", default="toxigen", help="toxigen, implicit-hate or a path")
    p.add_argument("--output", required=True, help="output directory")
    p.add_argument("--sample-per-group", default=None,
                   help="at most N harmful and N benign sentences per group ('all' for every sentence)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-resamples", type=int, default=1000,
                   help="bootstrap resamples of the 95%% interval per group (0: no interval)")
    _add_scoring_options(p)
    p.set_defaults(func=_cmd_safety)

    p = sub.add_parser("fetch-data", help="download a data set from its upstream URL and verify it")
    p.add_argument("name", nargs="+", help="data set name(s), or 'all'")
    p.set_defaults(func=_cmd_fetch_data)

    p = sub.add_parser("book", help="execute the notebooks (papermill) and build the book")
    p.add_argument("--profile", default="default", help="parameter profile: default, ci or paper")
    p.add_argument("--no-build", action="store_true", help="execute notebooks only")
    p.set_defaults(func=_cmd_book)
    return parser


def _cmd_score(args: argparse.Namespace) -> None:
    from helpers.lm import scoring

    scoring.score_file(args)


def _cmd_safety(args: argparse.Namespace) -> None:
    from helpers.metrics import safety

    safety.run_cli(args)


def _cmd_fetch_data(args: argparse.Namespace) -> None:
    from helpers import datasets

    for name in (datasets.names() if args.name == ["all"] else args.name):
        path = datasets.fetch(name)
        print(f"{name}: {path}")


def _cmd_book(args: argparse.Namespace) -> None:
    from helpers import book

    book.build(profile=args.profile, execute_only=args.no_build)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except HarmsError as exc:
        print(f"harms: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harms: interrupted (scores computed so far are cached; rerun to resume)", file=sys.stderr)
        return 130
    return 0
