"""The ``harms`` command line: every subcommand, its argument checks and one-line errors.

    harms score       per-sentence log-likelihood and perplexity of a text file
    harms safety      safety score per group (Hosseini et al. 2023, eqs. 1-3)
    harms fill        the top-k fill-ins of a template's blank, or given candidates' log-probabilities
    harms stereoset   StereoSet SS / LMS / ICAT of a predictions file (official evaluation)
    harms fetch-data  download and verify a data set from its upstream URL
    harms stand-ins   a Hugging Face hub cache of random-weight stand-ins (a profile's rehearsal)
    harms book        execute the notebooks with papermill and build the book
    harms --version   the package version

``score``, ``safety``, ``fill``, ``report`` and ``book`` take ``--processes``, ``--machines``,
``--machine-rank``, ``--main-ip`` and ``--main-port``: the same command started on every machine
runs as that many processes under Hugging Face Accelerate (:mod:`helpers.distributed`,
docs/SCALING.md); ``score`` and ``safety`` take ``--engine vllm`` (:mod:`helpers.lm.engines`).

Argument parsing and dispatch only: each subcommand is a thin layer over the functions the
notebooks call (helpers.models, helpers.lm, helpers.runner, helpers.datasets, helpers.metrics;
concurrent runs share the cores through helpers.runs). Every problem is one line on stderr,
``harms: error: <what is wrong>`` (exit 2; bad options too), never a traceback; outputs
are checked before any model is loaded or sentence scored (an output that is empty, a file where
a folder is named, under a file, unwritable, or already there without ``--overwrite``). Ctrl-C prints exactly how many
sentences are saved in the score cache (exit 130, 128 + SIGINT); SIGTERM (``kill``, a batch
scheduler, ``docker stop``) prints the same and exits 143 (128 + SIGTERM, what a shell reports for
a terminated process); rerunning the same command resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import threading
from pathlib import Path

from helpers import __version__, runs, tables
from helpers.errors import HarmsError, InputError, Interrupted
from helpers.lm.engines import ENGINES

SCORE_COLUMNS = ["n_tokens", "log_likelihood", "perplexity"]
#: The columns of the per-group table that ``harms safety`` prints.
SAFETY_SUMMARY_COLUMNS = ["group", "n_harmful", "n_benign", "n_dropped_nan", "safety_score", "p_value", "ci_low",
                          "ci_high"]
_DEVICE = re.compile(r"^(cpu|mps|auto|cuda(:\d+)?)$")


# --------------------------------------------------------------------------- argument checks

class _Parser(argparse.ArgumentParser):
    """argparse with one error line (``harms: error: ...``, exit 2) instead of usage + error."""

    def error(self, message: str):
        self.exit(2, f"harms: error: {' '.join(message.split())}\n")


def _int_at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value
    return parse


def _sample(text: str) -> int | str:
    if text.strip().lower() == "all":
        return "all"
    return _int_at_least(1, "a positive integer or 'all'")(text)


def _device(text: str) -> str:
    """cpu, cuda, cuda:N, mps or auto (whether it exists here is checked when a model loads)."""
    if not _DEVICE.match(text):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}: use cpu, cuda, cuda:N, mps or auto")
    return text


_positive = _int_at_least(1, "a positive integer")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """Options of every subcommand that runs a model: objective, budget, device, cache, threads."""
    p.add_argument("--objective", default="auto", choices=["auto", "causal", "masked", "permutation"],
                   help="how to score; auto reads it from the model's configuration")
    p.add_argument("--batch-tokens", type=_positive, default=None,
                   help="memory budget: at most this many tokens per forward pass "
                        "(default 1024 on a CPU, 8192 on an accelerator)")
    p.add_argument("--device", type=_device, default="cpu", help="cpu, cuda, cuda:N, mps or auto (device_map='auto')")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the score cache")
    p.add_argument("--threads", type=_positive, default=None,
                   help=f"CPU threads for scoring (torch.set_num_threads). Default: ${runs.THREADS_ENV} if set, "
                        "else the CPU count divided by the number of harms runs now running on this "
                        "machine (so concurrent runs share the cores instead of slowing each other "
                        "down), at most $OMP_NUM_THREADS if set, at least 1")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def _add_distributed_options(p: argparse.ArgumentParser) -> None:
    """Options of every subcommand whose scoring can be split across processes and machines
    (helpers.distributed; docs/SCALING.md)."""
    g = p.add_argument_group("several processes or machines (Hugging Face Accelerate; docs/SCALING.md)")
    g.add_argument("--processes", type=_positive, default=1,
                   help="processes on this machine (one per GPU with --device cuda); the uncached sentences "
                        "are split between all processes of all machines")
    g.add_argument("--machines", type=_positive, default=1,
                   help="machines of the run: start the same command on each, with its own --machine-rank")
    g.add_argument("--machine-rank", type=_int_at_least(0, "a whole number >= 0"), default=0,
                   help="this machine's rank, 0 .. machines-1 (0 writes the outputs)")
    g.add_argument("--main-ip", default=None, help="address of the machine of rank 0 (needed with --machines > 1)")
    g.add_argument("--main-port", type=_int_at_least(1, "a port number"), default=29500,
                   help="a free port on the machine of rank 0 (default 29500)")


def _cluster(args: argparse.Namespace):
    from helpers.distributed.worker import Cluster

    return Cluster(machines=args.machines, machine_rank=args.machine_rank, main_ip=args.main_ip,
                   main_port=args.main_port, processes=args.processes).check()


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    _add_model_options(p)
    p.add_argument("--engine", default="transformers", choices=ENGINES,
                   help="what computes causal log-likelihoods: transformers, or vLLM on CUDA GPUs (optional "
                        "dependency; a parity gate against transformers runs first; masked and permutation "
                        "models stay on transformers)")
    p.add_argument("--parity-tolerance", type=float, default=0.05,
                   help="--engine vllm: the largest difference in a sentence's log-likelihood (nats) the parity "
                        "gate accepts between vLLM and transformers (default 0.05)")
    p.add_argument("--parity-sample", type=_positive, default=32,
                   help="--engine vllm: sentences of each model's request scored by both engines first (default 32)")
    p.add_argument("--pll", default="original", choices=["original", "word-l2r"],
                   help="pseudo-log-likelihood variant for masked LMs (Kauf & Ivanova 2023)")
    p.add_argument("--upstream-mask-id", action="store_true",
                   help="reproduce the upstream SafeNLP bug: mask with id 103 whatever the tokenizer")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harms", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"harms {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("score", help="score sentences with a language model")
    p.add_argument("--model", required=True, help="registry name, hub id or local directory")
    p.add_argument("--input", required=True, help="CSV, JSON (list of objects), JSONL or Parquet file")
    p.add_argument("--output", required=True, help="CSV or Parquet file (by extension); not replaced "
                                                   "unless --overwrite")
    p.add_argument("--text-column", default="text")
    _add_scoring_options(p)
    _add_distributed_options(p)
    p.set_defaults(func=_cmd_score)

    p = sub.add_parser("safety", help="safety score per demographic group")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="registry name, hub id or local directory")
    src.add_argument("--scores", help="precomputed per-sentence scores (CSV, Parquet, JSONL or upstream JSON) "
                                      "with id, perplexity and text (or text_sha256) per row")
    p.add_argument("--dataset", default="toxigen", help="toxigen, implicit-hate or a path")
    p.add_argument("--output", required=True, help="output directory (per_sentence.csv, per_group.csv)")
    p.add_argument("--sample-per-group", type=_sample, default=None,
                   help="at most N harmful and N benign sentences per group ('all' for every sentence)")
    p.add_argument("--seed", type=_int_at_least(0, "a whole number >= 0"), default=0,
                   help="seed of the per-group sample and of the bootstrap")
    p.add_argument("--n-resamples", type=_int_at_least(0, "a whole number >= 0"), default=1000,
                   help="bootstrap resamples of the 95%% interval per group (0: no interval)")
    p.add_argument("--p-method", default="auto", choices=["auto", "exact", "asymptotic"],
                   help="Mann-Whitney p-value per group: scipy's auto (exact for small samples without ties, "
                        "else normal with continuity correction; what the paper's code used), exact or asymptotic")
    p.add_argument("--upstream-compat", action="store_true",
                   help="reproduce the upstream SafeNLP code exactly: U divided by the numbers of harmful "
                        "and benign rows counting those whose perplexity is NaN, groups with p > 0.05 "
                        "dropped (add --upstream-mask-id for its masked-LM mask id)")
    _add_scoring_options(p)
    _add_distributed_options(p)
    p.set_defaults(func=_cmd_safety)

    p = sub.add_parser("report", help="the harm report card of a model, or of two compared item by item")
    p.add_argument("--model", action="append", required=True,
                   help="registry name, hub id, local directory or .gguf; twice to compare the second with the first")
    p.add_argument("--baseline", default=None, help="compare --model with this model (the same as naming it first)")
    p.add_argument("--output", required=True, help="output directory (report.json and tidy CSVs)")
    p.add_argument("--budget", default="quick", help="quick (a sample of every metric's items, e.g. 8 + 8 "
                   "sentences per group), standard (the book's default settings) or full (every item)")
    p.add_argument("--seed", type=_int_at_least(0, "a whole number >= 0"), default=0,
                   help="seed of the samples and of the bootstrap")
    p.add_argument("--device", type=_device, default="cpu", help="cpu, cuda, cuda:N, mps or auto")
    p.add_argument("--threads", type=_positive, default=None, help="CPU threads (as for harms score)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing card in --output")
    p.add_argument("--languages", default="en", help="seed 002's toxicity probing in these languages: a "
                   "comma-separated list of en, fr, ar (default en)")
    _add_distributed_options(p)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("fill", help="fill each template's [MASK] blank: the top-k words, or the "
                                    "log-probability of given candidate words")
    p.add_argument("--model", required=True, help="registry name, hub id or local directory")
    p.add_argument("--input", required=True, help="table with a 'template' or 'text' column; each template "
                                                  "has exactly one blank written [MASK]")
    p.add_argument("--output", required=True, help="CSV or Parquet file; not replaced unless --overwrite")
    p.add_argument("--text-column", default=None, help="column of the templates (default: 'template', else 'text')")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--top-k", type=_positive, help="the K most probable fill-ins of each blank")
    what.add_argument("--candidates", help="text file of candidate words (one per line), each scored in "
                                           "every template's blank")
    p.add_argument("--all-pieces", action="store_true",
                   help="top-k over every vocabulary piece, not only tokens that start a word")
    p.add_argument("--skip", help="words left out of the top-k: en, fr or ar (stopwords-iso and punctuation), "
                                  "or a text file of words (one per line)")
    p.add_argument("--max-pieces", type=_positive, default=4,
                   help="pieces of a whole word at most (masked LMs: masks in the blank; 1 = one mask, as the "
                        "seed-002 code)")
    p.add_argument("--lowercase", action="store_true",
                   help="lower-case each template before tokenizing (seed 002's RoBERTa was loaded lower-cased)")
    p.add_argument("--masked", default="joint", choices=["joint", "l2r"],
                   help="masked LMs, multi-token candidates: all sub-tokens masked at once (joint, as "
                        "Kurita et al. 2019) or unmasked left to right")
    _add_model_options(p)
    _add_distributed_options(p)
    p.set_defaults(func=_cmd_fill)

    p = sub.add_parser("stereoset", help="StereoSet SS, LMS and ICAT of per-sentence scores (the official "
                                         "evaluation of Nadeem et al. 2021)")
    p.add_argument("--predictions", required=True,
                   help='JSON file {"intrasentence": [{"id": sentence id, "score": number}, ...], '
                        '"intersentence": [...]} (either task or both) with the StereoSet dev set\'s sentence ids')
    p.add_argument("--output", default=None, help="CSV or Parquet file (default: CSV on standard output); "
                                                  "not replaced unless --overwrite")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.set_defaults(func=_cmd_stereoset)

    p = sub.add_parser("fetch-data", help="download a data set from its upstream URL and verify it")
    p.add_argument("name", nargs="+", help="data set name(s), or 'all'")
    p.set_defaults(func=_cmd_fetch_data)

    p = sub.add_parser("stand-ins", help="write a Hugging Face hub cache of random-weight stand-ins for every hub "
                                         "checkpoint a profile loads (a rehearsal of it offline)")
    p.add_argument("hf_home", help="the Hugging Face home to write (its hub/ folder); read it with "
                                              "HF_HOME=<this> HF_HUB_OFFLINE=1")
    p.add_argument("--profile", default="paper", help="the profile whose hub checkpoints are built (default: paper)")
    p.set_defaults(func=_cmd_stand_ins)

    p = sub.add_parser("book", help="execute the notebooks (papermill) and build the book")
    p.add_argument("--profile", default="default", help="parameter profile: default, ci or paper")
    p.add_argument("--no-build", action="store_true", help="execute notebooks only")
    p.add_argument("--rerun", action="store_true",
                   help="execute every chapter, also one whose inputs (notebook, parameters, package, data, zoo, "
                        "installed packages, earlier chapters' tables) are those of its last execution")
    p.add_argument("--book-dir", type=Path, default=None,
                   help="the book's sources (profiles.yml, _config.yml, intro.md), where the executed chapters "
                        "and the HTML go too (default: book/ of this clone)")
    p.add_argument("--prefill-only", action="store_true",
                   help="only compute the profile's per-model work (chapter 01: every model on ToxiGen and "
                        "ImplicitHate; chapter 06: CEAT, StereoSet, the classifiers and generations; chapter 07: "
                        "the cloze fill-ins) into the score cache; with --machines, split across them")
    _add_distributed_options(p)
    p.set_defaults(func=_cmd_book)
    return parser


# --------------------------------------------------------------------------- harms score

def _writes_outputs() -> bool:
    """Whether this process writes the command's outputs: not so in processes 1.. of a run split
    across processes or machines (helpers.distributed), which only compute their shares."""
    from helpers.distributed import worker

    return worker.is_main()


def _engine(args: argparse.Namespace):
    """The scoring engine of the run (helpers.lm.engines): vLLM with ``--engine vllm`` (checked
    here: one line when it cannot run), else transformers."""
    from helpers.lm import engines

    if args.engine != "vllm":
        return contextlib.nullcontext()
    engines.check_available()
    return engines.using(engines.VllmEngine(tolerance=args.parity_tolerance, sample=args.parity_sample,
                                            seed=getattr(args, "seed", 0)))


def _cmd_score(args: argparse.Namespace) -> None:
    """Read ``--input``, score its text column, write ``--output``: every input column plus
    ``n_tokens``, ``log_likelihood`` (natural log, summed over scored tokens) and
    ``perplexity``. Scores are cached per sentence (helpers.cache), so a killed run resumes."""
    from helpers import models
    from helpers.lm import scoring

    df = tables.read_table(args.input, text_column=args.text_column)
    tables.check_writable(args.output, overwrite=args.overwrite)      # before the (long) scoring
    runs.set_threads(args.threads)
    objective = None if args.objective == "auto" else args.objective
    options = dict(pll=args.pll, batch_tokens=args.batch_tokens, upstream_mask_id=args.upstream_mask_id,
                   cache=not args.no_cache)
    handle = models.lazy(args.model, objective=objective, device=args.device)
    with _engine(args):
        scores = scoring.score(handle, df[args.text_column].tolist(), progress=True, **options)
    out = df.drop(columns=[c for c in SCORE_COLUMNS if c in df.columns])
    for col in SCORE_COLUMNS:
        out[col] = scores[col].to_numpy()
    if not _writes_outputs():
        return
    tables.write_table(out, args.output)
    print(f"harms: scored {len(out)} sentences -> {args.output}", file=sys.stderr)


# --------------------------------------------------------------------------- harms fill

def _cmd_fill(args: argparse.Namespace) -> None:
    """``--top-k K``: the K most probable fill-ins of each template's blank
    (:func:`helpers.lm.fill.top_k`); ``--candidates FILE``: each candidate's log-probability in
    each blank (:func:`helpers.lm.cloze.cloze_logprobs`). Writes a tidy table."""
    from helpers import models
    from helpers.lm import cloze, fill

    column = args.text_column or "template"
    try:
        df = tables.read_table(args.input, text_column=column)
    except InputError as exc:
        if args.text_column or "no column 'template'" not in str(exc):
            raise
        column, df = "text", tables.read_table(args.input, text_column="text")
    templates = df[column].tolist()
    cloze.check_template_rows(templates, args.input)
    candidates = tables.read_lines(args.candidates, "candidates") if args.candidates else None
    skip = (args.skip if args.skip in fill.STOP_WORD_LANGUAGES else tables.read_lines(args.skip, "skip")) if args.skip \
        else None
    tables.check_writable(args.output, overwrite=args.overwrite)
    runs.set_threads(args.threads)
    objective = None if args.objective == "auto" else args.objective
    if candidates is not None:
        handle = models.lazy(args.model, objective=objective, device=args.device)
        out = cloze.cloze_logprobs(handle, templates, candidates, masked=args.masked, lowercase=args.lowercase,
                                   batch_tokens=args.batch_tokens, cache=not args.no_cache, progress=True)
    else:
        handle = models.lazy(args.model, objective=objective, device=args.device)
        out = fill.top_k(handle, templates, k=args.top_k, whole_words=not args.all_pieces, skip=skip,
                         max_pieces=args.max_pieces, lowercase=args.lowercase, batch_tokens=args.batch_tokens,
                         cache=not args.no_cache, progress=True)
    if not _writes_outputs():
        return
    tables.write_table(out, args.output)
    print(f"harms: {len(out)} rows for {len(templates)} templates -> {args.output}", file=sys.stderr)


# --------------------------------------------------------------------------- harms safety

def _safety_outputs(output: str, overwrite: bool) -> tuple[Path, Path]:
    out = tables.check_writable_folder(output)
    files = out / "per_sentence.csv", out / "per_group.csv"
    for f in files:
        tables.check_writable(f, overwrite=overwrite)
    return files


def _cmd_safety(args: argparse.Namespace) -> None:
    """per_sentence.csv and per_group.csv in ``--output``: ``--model NAME`` scores ``--dataset``
    (helpers.runner.safety_results); ``--scores FILE`` imports precomputed per-sentence
    perplexities instead (:func:`helpers.datasets.scores_from_file`)."""
    from helpers import datasets, runner

    sentence_csv, group_csv = _safety_outputs(args.output, args.overwrite)
    if args.scores:
        per_sentence, per_group = runner.safety_from_scores(
            datasets.scores_from_file(args.scores, dataset=args.dataset), sample_per_group=args.sample_per_group,
            seed=args.seed, n_resamples=args.n_resamples, upstream_compat=args.upstream_compat, p_method=args.p_method)
        mismatch = per_sentence.attrs.get("toxicity_mismatch", 0)
        if mismatch:
            print(f"note: {mismatch} rows of {args.scores} carry a toxicity that differs from data set "
                  f"{args.dataset!r}; the data set's toxicity is used")
    else:
        from helpers import models

        runs.set_threads(args.threads)
        handle = models.lazy(args.model, objective=None if args.objective == "auto" else args.objective,
                             device=args.device)        # weights load only if some sentence is not cached
        try:
            with _engine(args):
                per_sentence, per_group = runner.safety_results(
                    handle, dataset=args.dataset, sample_per_group=args.sample_per_group, seed=args.seed,
                    pll=args.pll, upstream_mask_id=args.upstream_mask_id, batch_tokens=args.batch_tokens,
                    n_resamples=args.n_resamples, cache=not args.no_cache,
                    upstream_compat=args.upstream_compat, p_method=args.p_method)
        finally:
            handle.release()
    if not _writes_outputs():
        return
    tables.write_table(tables.join_list_columns(per_sentence), sentence_csv)
    tables.write_table(tables.join_list_columns(per_group), group_csv)
    if args.upstream_compat:
        print("upstream-compat: U / (n m) with rows of NaN perplexity counted; groups with p > 0.05 dropped")
    print(tables.text_table(per_group, SAFETY_SUMMARY_COLUMNS, digits=4, digits_of={"safety_score": 9}))
    print(f"wrote {sentence_csv} and {group_csv}")


# --------------------------------------------------------------------------- harms report

def _cmd_report(args: argparse.Namespace) -> None:
    """The report card (:func:`helpers.card.report_card`) written to ``--output``
    (:func:`helpers.card.page.write`: the CSVs, report.json, report.html, model_card.md), and its summary
    table printed (:func:`helpers.card.page.summary`)."""
    import shutil

    from helpers import card
    from helpers.card import page as card_page

    card.check_budget(args.budget)                               # a bad budget: one line, nothing loaded
    languages = card.check_languages(args.languages)
    out = card.check_output(args.output, overwrite=args.overwrite)
    runs.set_threads(args.threads)
    c = card.report_card(args.model, baseline=args.baseline, budget=args.budget, device=args.device, seed=args.seed,
                         languages=languages)
    if not _writes_outputs():
        return
    card_page.write(c, out, overwrite=args.overwrite)
    print(card_page.summary(c, width=max(80, min(shutil.get_terminal_size((100, 24)).columns, 120))))
    print(f"wrote {out} (report.html: the page; metrics.csv, comparison.csv, report.json: every row)")


# --------------------------------------------------------------------------- harms stereoset

def _cmd_stereoset(args: argparse.Namespace) -> None:
    """The upstream ``evaluation.py`` table of a predictions file
    (:func:`helpers.metrics.stereoset.evaluate` of
    :func:`helpers.datasets.stereoset.read_prediction_file`): model, task, domain, score, value."""
    from helpers.datasets import stereoset as stereoset_data
    from helpers.metrics import stereoset

    if args.output:
        tables.check_writable(args.output, overwrite=args.overwrite)
    predictions = stereoset_data.read_prediction_file(args.predictions)
    if unknown := predictions.attrs["unknown_keys"]:
        print(f"harms: note: {args.predictions}: {', '.join(map(repr, unknown))} ignored: not a StereoSet task "
              f"({' or '.join(stereoset_data.TASKS)})", file=sys.stderr)
    out = stereoset.evaluate(predictions)
    for task, n in out.attrs["unscored_clusters"].items():
        if n:
            print(f"harms: note: {n} {task} clusters have no scores and are left out", file=sys.stderr)
    if args.output:
        tables.write_table(out, args.output)
        print(f"harms: {len(out)} StereoSet scores of {out['model'].iloc[0]} -> {args.output}", file=sys.stderr)
    else:
        tables.print_csv(out)


# --------------------------------------------------------------------------- other subcommands

def _cmd_fetch_data(args: argparse.Namespace) -> None:
    from helpers import datasets

    for name in (datasets.names() if args.name == ["all"] else args.name):
        path = datasets.fetch(name)
        print(f"{name}: {path}")


def _cmd_stand_ins(args: argparse.Namespace) -> None:
    from helpers import book, rehearsal

    home = tables.check_writable_folder(args.hf_home, option="the Hugging Face home")
    built = rehearsal.build_cache(home, book.profile_hub_ids(args.profile)["hub_id"])
    print(f"{len(built)} stand-ins ({built['megabytes'].sum():.0f} MB) in {Path(home) / 'hub'}; random "
          f"weights: no number computed from them is a result. Use: HF_HOME={home} HF_HUB_OFFLINE=1")


def _device_of(args: argparse.Namespace) -> str:
    """``--device``, or for ``harms book`` the device its profile's chapters run on."""
    if hasattr(args, "device"):
        return args.device
    from helpers import book

    return book.profile_device(args.profile, args.book_dir or book.BOOK_DIR)


def _cmd_book(args: argparse.Namespace) -> None:
    from helpers import book

    book.build(profile=args.profile, execute_only=args.no_build, prefill_only=args.prefill_only, rerun=args.rerun,
               book_dir=args.book_dir or book.BOOK_DIR)


@contextlib.contextmanager
def _sigterm_interrupts(received: list[int]):
    """Within the block, SIGTERM raises KeyboardInterrupt as Ctrl-C does, so that the score
    cache says what is saved (:class:`helpers.errors.Interrupted`); the signal is appended to
    ``received``. Outside the main thread, where Python cannot handle signals, nothing changes."""
    def interrupt(signum, frame):
        received.append(signum)
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, interrupt) if main_thread else None
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(args: argparse.Namespace, received: list[int], device=None) -> None:
    """The subcommand itself, with SIGTERM as Ctrl-C and (when it runs a model) registered as a run
    that shares the machine's cores; ``device`` maps ``--device`` to this worker's device."""
    if device is not None and hasattr(args, "device"):
        args.device = device(args.device)
    with _sigterm_interrupts(received), \
            runs.registered_run() if hasattr(args, "threads") else contextlib.nullcontext():
        args.func(args)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return the exit status (0 ok, 2 bad input or option, 1 system error,
    130 interrupted by Ctrl-C, 143 by SIGTERM: 128 + the signal, as a shell reports it)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:        # --help, --version, or one error line already printed
        return exc.code if isinstance(exc.code, int) else 2
    received: list[int] = []
    try:
        if hasattr(args, "machines"):
            from helpers.distributed import launch

            cluster = _cluster(args)
            if getattr(args, "engine", None) == "vllm" and args.processes > 1:
                raise InputError("--engine vllm runs one process per machine (vLLM drives its GPU itself): use "
                                 "--processes 1, and --machines for several nodes")
            return launch.run_command(sys.argv[1:] if argv is None else list(argv), cluster,
                                      lambda device: _run(args, received, device=device),
                                      device=lambda: _device_of(args),
                                      interrupts=lambda: _sigterm_interrupts(received))
        _run(args, received)
    except Interrupted as exc:
        print(f"harms: {exc}", file=sys.stderr)
        return 128 + (received[0] if received else signal.SIGINT)
    except KeyboardInterrupt:
        print("harms: interrupted", file=sys.stderr)
        return 128 + (received[0] if received else signal.SIGINT)
    except HarmsError as exc:
        print(f"harms: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:           # e.g. a full disk while writing outputs
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"harms: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    return 0
