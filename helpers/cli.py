"""The ``harms`` command line: every subcommand, its argument checks and one-line errors.

    harms score       per-sentence log-likelihood and perplexity of a text file
    harms safety      safety score per group (Hosseini et al. 2023, eqs. 1-3)
    harms stereoset   StereoSet SS / LMS / ICAT of a predictions file (official evaluation)
    harms fetch-data  download and verify a data set from its upstream URL
    harms book        execute the notebooks with papermill and build the book
    harms --version   the package version

A thin layer over the functions the notebooks call (helpers.models, helpers.lm.scoring,
helpers.runner, helpers.metrics.safety). Every problem is one line on stderr,
``harms: error: <what is wrong>`` (exit 2; bad options too), never a traceback; outputs
are checked before any model is loaded or sentence scored; Ctrl-C prints what was saved
(exit 130).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import __version__, paths, tables
from helpers.errors import HarmsError, InputError, Interrupted

SCORE_COLUMNS = ["n_tokens", "log_likelihood", "perplexity"]
THREADS_ENV = "HARMS_NUM_THREADS"
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
                   help=f"CPU threads for scoring (torch.set_num_threads). Default: ${THREADS_ENV} if set, "
                        "else the CPU count divided by the number of harms runs now running on this "
                        "machine (so concurrent runs share the cores instead of slowing each other "
                        "down), at most $OMP_NUM_THREADS if set, at least 1")
    p.add_argument("--overwrite", action="store_true", help="replace existing output files")


def _add_scoring_options(p: argparse.ArgumentParser) -> None:
    _add_model_options(p)
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
    p.add_argument("--processes", type=_positive, default=1,
                   help="split the input across N processes (one per GPU with --device cuda) "
                        "through Hugging Face Accelerate")
    _add_scoring_options(p)
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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-resamples", type=_int_at_least(0, "a whole number >= 0"), default=1000,
                   help="bootstrap resamples of the 95%% interval per group (0: no interval)")
    p.add_argument("--upstream-compat", action="store_true",
                   help="reproduce the upstream SafeNLP code exactly: U divided by the numbers of harmful "
                        "and benign rows counting those whose perplexity is NaN, groups with p > 0.05 "
                        "dropped (add --upstream-mask-id for its masked-LM mask id)")
    _add_scoring_options(p)
    p.set_defaults(func=_cmd_safety)

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

    p = sub.add_parser("book", help="execute the notebooks (papermill) and build the book")
    p.add_argument("--profile", default="default", help="parameter profile: default, ci or paper")
    p.add_argument("--no-build", action="store_true", help="execute notebooks only")
    p.set_defaults(func=_cmd_book)
    return parser


# --------------------------------------------------------------------------- threads of concurrent runs

def runs_dir() -> Path:
    """Where running ``harms`` processes register (one ``<pid>.pid`` file each)."""
    return paths.cache_dir() / "runs"


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), "" where unknown: a pid file
    whose recorded start time differs belongs to a dead run whose pid was reused."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def running_harms(runs: Path | None = None) -> int:
    """How many harms processes are registered and alive; pid files of dead ones are removed."""
    runs = Path(runs) if runs is not None else runs_dir()
    alive = 0
    for f in runs.glob("*.pid"):
        if not f.stem.isdigit():
            continue
        pid = int(f.stem)
        try:
            recorded = f.read_text().strip()
        except OSError:
            continue
        now = _start_time(pid)
        if tables.pid_alive(pid) and (not recorded or not now or recorded == now):
            alive += 1
        else:
            f.unlink(missing_ok=True)
    return alive


@contextlib.contextmanager
def registered_run(runs: Path | None = None):
    """Register this process in :func:`runs_dir` for the duration of the block (best effort)."""
    runs = Path(runs) if runs is not None else runs_dir()
    me = runs / f"{os.getpid()}.pid"
    try:
        runs.mkdir(parents=True, exist_ok=True)
        tables.atomic_write(me, _start_time(os.getpid()), durable=False)
    except OSError:
        me = None           # an unwritable cache directory is reported where the cache is used
    try:
        yield
    finally:
        if me is not None:
            me.unlink(missing_ok=True)


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"{name}={raw!r} is not a whole number >= 1")
    return int(raw)


def thread_count(requested: int | None = None, *, cpu_count: int | None = None, runs: Path | None = None) -> int:
    """Threads for this run: ``requested`` (``--threads``), else ``$HARMS_NUM_THREADS``, else the
    CPU count divided by the number of live harms runs (this one included), capped by
    ``$OMP_NUM_THREADS`` when set, at least 1. Two runs that each use every core are 8-11x
    slower than one (measured), so concurrent runs split the cores."""
    if requested is not None:
        return requested
    env = _env_int(THREADS_ENV)
    if env is not None:
        return env
    share = (cpu_count or os.cpu_count() or 1) // max(1, running_harms(runs))
    try:
        cap = _env_int("OMP_NUM_THREADS")
    except InputError:
        cap = None
    return max(1, min(share, cap) if cap else share)


def _set_threads(args: argparse.Namespace) -> int:
    import torch

    n = thread_count(args.threads)
    torch.set_num_threads(n)
    return n


# --------------------------------------------------------------------------- harms score

def _cmd_score(args: argparse.Namespace) -> None:
    """Read ``--input``, score its text column, write ``--output``: every input column plus
    ``n_tokens``, ``log_likelihood`` (natural log, summed over scored tokens) and
    ``perplexity``. Scores are cached per sentence (helpers.cache), so a killed run resumes;
    with ``--processes N > 1`` the input is split across N processes (helpers.lm.parallel)."""
    from helpers import models
    from helpers.lm import scoring

    df = tables.read_table(args.input, text_column=args.text_column)
    tables.check_writable(args.output, overwrite=args.overwrite)      # before the (long) scoring
    _set_threads(args)
    objective = None if args.objective == "auto" else args.objective
    options = dict(pll=args.pll, batch_tokens=args.batch_tokens, upstream_mask_id=args.upstream_mask_id,
                   cache=not args.no_cache)
    texts = df[args.text_column].tolist()
    if args.processes > 1:
        from helpers.lm import parallel

        scores = parallel.score_parallel(args.model, texts, num_processes=args.processes, objective=objective,
                                         device=args.device, **options)
    else:
        handle = models.lazy(args.model, objective=objective, device=args.device)
        scores = scoring.score(handle, texts, progress=True, **options)
    out = df.drop(columns=[c for c in SCORE_COLUMNS if c in df.columns])
    for col in SCORE_COLUMNS:
        out[col] = scores[col].to_numpy()
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
    for i, t in enumerate(templates):
        try:
            cloze.split_template(t)
        except InputError as exc:
            raise InputError(f"{args.input}, row {i}: {exc}") from None
    candidates = tables.read_lines(args.candidates, "candidates") if args.candidates else None
    skip = (args.skip if args.skip in fill.STOP_WORD_LANGUAGES else tables.read_lines(args.skip, "skip")) if args.skip \
        else None
    tables.check_writable(args.output, overwrite=args.overwrite)
    _set_threads(args)
    objective = None if args.objective == "auto" else args.objective
    if candidates is not None:
        handle = models.lazy(args.model, objective=objective, device=args.device)
        out = cloze.cloze_logprobs(handle, templates, candidates, masked=args.masked, batch_tokens=args.batch_tokens,
                                   cache=not args.no_cache, progress=True)
    else:
        handle = models.lazy(args.model, objective=objective, device=args.device)
        out = fill.top_k(handle, templates, k=args.top_k, whole_words=not args.all_pieces, skip=skip,
                         max_pieces=args.max_pieces, lowercase=args.lowercase, batch_tokens=args.batch_tokens,
                         cache=not args.no_cache, progress=True)
    tables.write_table(out, args.output)
    print(f"harms: {len(out)} rows for {len(templates)} templates -> {args.output}", file=sys.stderr)


# --------------------------------------------------------------------------- harms safety

def _read_scores(p: Path) -> pd.DataFrame:
    suffix = p.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(p)
        if suffix == ".csv":
            df = pd.read_csv(p)
            if "text" in df.columns:   # the text verbatim: "NA" or "null" are sentences, not missing values
                df["text"] = pd.read_csv(p, usecols=["text"], dtype=str, keep_default_na=False)["text"]
            return df
        if suffix in (".jsonl", ".ndjson"):
            return pd.read_json(p, lines=True, dtype=False, convert_dates=False)
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{p}: cannot read scores ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    if isinstance(data, dict):
        values = list(data.values())
        if values and all(isinstance(v, dict) for v in values):  # {id: {...}}
            data = [{"id": k} | v for k, v in data.items()]
        elif values and all(isinstance(v, list) for v in values):  # column-oriented
            return pd.DataFrame(data)
        else:
            raise InputError(f"{p}: expected a list of rows, {{id: row}} or {{column: values}}")
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{p}: expected a JSON list of objects with a 'perplexity' field")
    return pd.DataFrame(data)


def _first(p: Path, raw: pd.DataFrame, bad, problem: str) -> InputError:
    i = int(np.flatnonzero(np.asarray(bad))[0])
    return InputError(f"{p}: row {i} (id {raw['id'].iloc[i]}): {problem(i) if callable(problem) else problem}")


def _check_texts(p: Path, raw: pd.DataFrame, ids: pd.Series, data: pd.DataFrame, dataset: str) -> None:
    """Refuse scores of other sentences: SHA-256 of each row's text (or its ``text_sha256``)
    must equal that of the data set's text for the same id, cleaned or as upstream scored it
    (``_x000D_`` kept)."""
    from helpers import datasets
    from helpers.hashing import sha256_text

    if "text" in raw.columns:
        given = [sha256_text(t) if isinstance(t, str) else None for t in raw["text"]]
    elif "text_sha256" in raw.columns:
        given = [h.strip().lower() if isinstance(h, str) else None for h in raw["text_sha256"]]
    else:
        raise InputError(f"{p}: needs a 'text' or 'text_sha256' column to check that its rows are the "
                         f"sentences of data set {dataset!r} (columns: {', '.join(map(str, raw.columns))})")

    def differing(table: pd.DataFrame, rows) -> list[int]:
        expected = dict(zip(table["id"], table["text"]))
        return [i for i in rows if given[i] != sha256_text(expected[ids.iloc[i]])]

    differ = differing(data, range(len(raw)))
    if differ:
        differ = differing(datasets.load(dataset, fix_x000d=False), differ)
    if differ:
        raise InputError(f"{p}: the text of {len(differ)} of {len(raw)} rows differs from data set {dataset!r} "
                         f"(first: row {differ[0]}, id {raw['id'].iloc[differ[0]]}); these are not its scores")


def scores_from_file(scores_path, *, dataset: str = "toxigen", fix_x000d: bool = True) -> pd.DataFrame:
    """Per-sentence scores computed elsewhere, joined to ``dataset`` by ``id`` and checked by text.

    ``scores_path``: CSV, Parquet, JSONL or JSON (e.g. the upstream SafeNLP
    ``results/perplexities.json``: a list of the data set's rows, each with a ``perplexity``
    field; NaN/``null`` allowed). Each row needs ``id``, ``perplexity`` (positive and finite,
    or missing) and ``text`` or ``text_sha256``, which must match the data set's sentence of
    that id (so the scores of another data set are refused). Only ``id``, ``perplexity`` and,
    when present, ``n_tokens``, ``log_likelihood`` and ``model`` are taken from the file; text,
    label, toxicity and groups come from the validated data set. (The upstream run file
    records toxicity 2.25 for every row, neutral rows included; the data set's 1.0 is what the
    published ImplicitHate score used.) ``df.attrs["toxicity_mismatch"]`` counts the rows
    whose file toxicity differs from the data set's.
    """
    from helpers import datasets

    p = Path(scores_path)
    if not p.is_file():
        raise InputError(f"scores file {p} not found")
    raw = _read_scores(p)
    for col in ("id", "perplexity"):
        if col not in raw.columns:
            raise InputError(f"{p}: missing column {col!r} (need id, perplexity and text per row)")
    ppl = pd.to_numeric(raw["perplexity"], errors="coerce").astype(float)
    given = raw["perplexity"].notna()
    if (ppl.isna() & given).any():
        raise _first(p, raw, ppl.isna() & given, lambda i: f"perplexity {raw['perplexity'].iloc[i]!r} is not a number")
    if (given & ~((ppl > 0) & np.isfinite(ppl))).any():
        raise _first(p, raw, given & ~((ppl > 0) & np.isfinite(ppl)),
                     lambda i: f"perplexity {ppl.iloc[i]} is not positive and finite")
    if raw["id"].duplicated().any():
        raise _first(p, raw, raw["id"].duplicated(), "duplicate id")
    data = datasets.load(dataset, fix_x000d=fix_x000d)
    ids = raw["id"].map(lambda v: int(v) if isinstance(v, str) and v.strip().isdigit() else v)
    unknown = ~ids.isin(set(data["id"]))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise InputError(f"{p}: row {i}: id {raw['id'].iloc[i]} is not in data set {dataset!r} "
                         f"({int(unknown.sum())} unknown ids)")
    _check_texts(p, raw, ids, data, dataset)
    keep = {"id": ids, "perplexity": ppl}
    for col in ("n_tokens", "log_likelihood"):
        keep[col] = pd.to_numeric(raw[col], errors="coerce") if col in raw.columns else np.nan
    model = raw["model"].astype(str) if "model" in raw.columns else p.stem
    per_sentence = data.merge(pd.DataFrame(keep), on="id", how="inner", validate="one_to_one")
    per_sentence["model"] = model if isinstance(model, str) else per_sentence["id"].map(dict(zip(ids, model)))
    per_sentence["source"] = "measured"
    per_sentence["dataset"] = data.attrs.get("dataset", str(dataset))
    tox_col = "toxicity_score" if "toxicity_score" in raw.columns else ("toxicity" if "toxicity" in raw.columns
                                                                          else None)
    if tox_col:
        file_tox = pd.Series(pd.to_numeric(raw[tox_col], errors="coerce").to_numpy(), index=ids)
        per_sentence.attrs["toxicity_mismatch"] = int(
            (per_sentence["toxicity"].to_numpy() != file_tox.loc[per_sentence["id"]].to_numpy()).sum())
    per_sentence.attrs["scores_file"] = str(p)
    return per_sentence


def _safety_outputs(out: Path, overwrite: bool) -> tuple[Path, Path]:
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a directory (--output names a directory)")
    files = out / "per_sentence.csv", out / "per_group.csv"
    for f in files:
        tables.check_writable(f, overwrite=overwrite)
    return files


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    out = df.copy()
    if "target_groups" in out.columns:
        out["target_groups"] = out["target_groups"].map(";".join)
    tables.write_table(out, path)


def _cmd_safety(args: argparse.Namespace) -> None:
    """per_sentence.csv and per_group.csv in ``--output``: ``--model NAME`` scores ``--dataset``
    (helpers.runner.safety_results); ``--scores FILE`` imports precomputed per-sentence
    perplexities instead (:func:`scores_from_file`)."""
    from helpers import datasets, runner
    from helpers.metrics import safety

    sentence_csv, group_csv = _safety_outputs(Path(args.output), args.overwrite)
    if args.scores:
        per_sentence = scores_from_file(args.scores, dataset=args.dataset)
        per_sentence = datasets.sample_per_group(per_sentence, args.sample_per_group, seed=args.seed)
        per_group = runner.with_group_labels(safety.safety_scores(
            per_sentence, n_resamples=args.n_resamples, seed=args.seed, upstream_compat=args.upstream_compat))
        per_group.insert(0, "model", per_sentence["model"].iloc[0] if per_sentence["model"].nunique() == 1
                         else "mixed")
        per_group["dataset"], per_group["source"] = per_sentence["dataset"].iloc[0], "measured"
        mismatch = per_sentence.attrs.get("toxicity_mismatch", 0)
        if mismatch:
            print(f"note: {mismatch} rows of {args.scores} carry a toxicity that differs from data set "
                  f"{args.dataset!r}; the data set's toxicity is used")
    else:
        from helpers import models

        _set_threads(args)
        handle = models.lazy(args.model, objective=None if args.objective == "auto" else args.objective,
                             device=args.device)        # weights load only if some sentence is not cached
        try:
            per_sentence, per_group = runner.safety_results(
                handle, dataset=args.dataset, sample_per_group=args.sample_per_group, seed=args.seed,
                pll=args.pll, upstream_mask_id=args.upstream_mask_id, batch_tokens=args.batch_tokens,
                n_resamples=args.n_resamples, cache=not args.no_cache,
                upstream_compat=args.upstream_compat)
        finally:
            handle.release()
    _write_csv(per_sentence, sentence_csv)
    _write_csv(per_group, group_csv)
    if args.upstream_compat:
        print("upstream-compat: U / (n m) with rows of NaN perplexity counted; groups with p > 0.05 dropped")
    cols = ["group", "n_harmful", "n_benign", "n_dropped_nan", "safety_score", "p_value", "ci_low", "ci_high"]
    print(per_group[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}",
                                    formatters={"safety_score": lambda v: f"{v:.9f}"}))
    print(f"wrote {sentence_csv} and {group_csv}")


# --------------------------------------------------------------------------- harms stereoset

def _cmd_stereoset(args: argparse.Namespace) -> None:
    """The upstream ``evaluation.py`` table of a predictions file
    (:func:`helpers.metrics.stereoset.evaluate`): model, task, domain, score, value."""
    from helpers.metrics import stereoset

    if args.output:
        tables.check_writable(args.output, overwrite=args.overwrite)
    out = stereoset.evaluate(args.predictions)
    for task, n in out.attrs["unscored_clusters"].items():
        if n:
            print(f"harms: note: {n} {task} clusters have no scores and are left out", file=sys.stderr)
    if args.output:
        tables.write_table(out, args.output)
        print(f"harms: {len(out)} StereoSet scores of {out['model'].iloc[0]} -> {args.output}", file=sys.stderr)
    else:
        try:
            out.to_csv(sys.stdout, index=False)
            sys.stdout.flush()
        except BrokenPipeError:      # e.g. piped into head: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# --------------------------------------------------------------------------- other subcommands

def _cmd_fetch_data(args: argparse.Namespace) -> None:
    from helpers import datasets

    for name in (datasets.names() if args.name == ["all"] else args.name):
        path = datasets.fetch(name)
        print(f"{name}: {path}")


def _cmd_book(args: argparse.Namespace) -> None:
    from helpers import book

    book.build(profile=args.profile, execute_only=args.no_build)


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; return the exit status (0 ok, 2 bad input or option, 1 system error,
    130 interrupted)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:        # --help, --version, or one error line already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        with registered_run() if hasattr(args, "threads") else contextlib.nullcontext():
            args.func(args)
    except Interrupted as exc:
        print(f"harms: {exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("harms: interrupted", file=sys.stderr)
        return 130
    except HarmsError as exc:
        print(f"harms: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except OSError as exc:           # e.g. a full disk while writing outputs
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"harms: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    return 0
