"""The ``harms`` command line under bad input: one line ``harms: error: ...``, never a traceback or
argparse's usage block; interrupts say what was saved; concurrent runs share the cores."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from helpers import __version__, cli, paths, runs, tables
from helpers.errors import Interrupted

from conftest import SENTENCES

DEAD_PID = 4_194_304 + 17       # above Linux's PID_MAX_LIMIT (2**22): never a running process


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("HARMS_CACHE_CHUNK_SIZE", "HARMS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)


def _one_line(capsys, *, start="harms: error: ") -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(start) and "Traceback" not in captured.err and "usage:" not in captured.err
    return lines[0]


@pytest.fixture
def inp(tmp_path) -> Path:
    path = tmp_path / "in.csv"
    pd.DataFrame({"text": SENTENCES[:4]}).to_csv(path, index=False)
    return path


def _user_data(tmp_path) -> Path:
    rows = [{"id": i, "text": f"sentence {i}", "toxicity_score": 3.0 if i % 2 else 1.0,
             "label": "hate" if i % 2 else "neutral", "target_groups": ["women"]} for i in range(8)]
    path = tmp_path / "data.json"
    path.write_text(json.dumps(rows))
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"id": range(8), "perplexity": [10.0 + i for i in range(8)],
                  "text": [r["text"] for r in rows]}).to_csv(scores, index=False)
    return path, scores


# ---------------------------------------------------------------- bad options: one line, exit 2

SCORE = ["score", "--model", "m", "--input", "in.csv", "--output", "o.csv"]
SAFETY = ["safety", "--model", "m", "--output", "out"]
BAD_OPTIONS = [
    ("batch-tokens 0", SCORE + ["--batch-tokens", "0"], "--batch-tokens"),
    ("batch-tokens negative", SCORE + ["--batch-tokens", "-8"], "--batch-tokens"),
    ("processes 0", SCORE + ["--processes", "0"], "--processes"),
    ("threads 0", SCORE + ["--threads", "0"], "--threads"),
    ("n-resamples negative", SAFETY + ["--n-resamples", "-5"], "--n-resamples"),
    ("sample-per-group 0", SAFETY + ["--sample-per-group", "0"], "--sample-per-group"),
    ("sample-per-group abc", SAFETY + ["--sample-per-group", "abc"], "--sample-per-group"),
    ("device nonsense", SCORE + ["--device", "nonsense"], "unknown device 'nonsense'"),
    ("device cuda:x", SAFETY + ["--device", "cuda:x"], "unknown device"),
    ("missing option", ["score", "--model", "m"], "required"),
    ("model and scores", SAFETY + ["--scores", "s.csv"], "not allowed"),
    ("unknown subcommand", ["nope"], "invalid choice"),
    ("no subcommand", [], "required"),
]


@pytest.mark.parametrize("argv, fragment", [b[1:] for b in BAD_OPTIONS], ids=[b[0] for b in BAD_OPTIONS])
def test_bad_option_is_one_line(argv, fragment, capsys):
    assert cli.main(argv) == 2
    assert fragment in _one_line(capsys)


@pytest.mark.parametrize("option, value, expected", [
    ("--n-resamples", "0", 0), ("--sample-per-group", "all", "all"), ("--sample-per-group", "25", 25),
    ("--device", "cuda:1", "cuda:1"), ("--device", "auto", "auto"), ("--batch-tokens", "64", 64)])
def test_good_options_parse(option, value, expected):
    args = cli.build_parser().parse_args(SAFETY + [option, value])
    assert getattr(args, option[2:].replace("-", "_")) == expected


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"harms {__version__}"


# ---------------------------------------------------------------- environment and interrupts

@pytest.mark.parametrize("value", ["abc", "0"])
def test_bad_chunk_size_is_one_line(value, inp, tmp_path, tiny_gpt2, monkeypatch, capsys):
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", value)
    assert cli.main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output",
                     str(tmp_path / "o.csv")]) == 2
    assert "HARMS_CACHE_CHUNK_SIZE" in _one_line(capsys)
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-2"])
def test_bad_thread_variable_is_one_line_before_loading(value, inp, tmp_path, monkeypatch, capsys):
    from helpers import models

    monkeypatch.setenv("HARMS_NUM_THREADS", value)
    monkeypatch.setattr(models, "lazy", lambda *a, **k: pytest.fail("model loaded"))
    assert cli.main(["score", "--model", "m", "--input", str(inp), "--output", str(tmp_path / "o.csv")]) == 2
    assert "HARMS_NUM_THREADS" in _one_line(capsys)


def _interrupt_scoring(monkeypatch, exc):
    from helpers.lm import scoring

    def score(*a, **k):
        raise exc
    monkeypatch.setattr(scoring, "score", score)


def test_interrupt_says_exactly_what_was_saved(inp, tmp_path, tiny_gpt2, monkeypatch, capsys):
    message = "interrupted: 3 of 4 sentences are saved in the score cache; rerun the same command to resume"
    _interrupt_scoring(monkeypatch, Interrupted(message, saved=3, total=4))
    assert cli.main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output",
                     str(tmp_path / "o.csv")]) == 130
    assert _one_line(capsys, start="harms: ") == f"harms: {message}"
    assert not (tmp_path / "o.csv").exists()


def test_bare_ctrl_c_claims_nothing_was_saved(inp, tmp_path, tiny_gpt2, monkeypatch, capsys):
    _interrupt_scoring(monkeypatch, KeyboardInterrupt())
    assert cli.main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output",
                     str(tmp_path / "o.csv")]) == 130
    assert _one_line(capsys, start="harms: ") == "harms: interrupted"


def test_full_disk_while_writing_is_one_line(tmp_path, monkeypatch, capsys):
    data, scores = _user_data(tmp_path)

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    assert cli.main(["safety", "--scores", str(scores), "--dataset", str(data), "--output",
                     str(tmp_path / "out"), "--n-resamples", "0"]) == 2
    assert "No space left on device" in _one_line(capsys)
    assert [p.name for p in (tmp_path / "out").iterdir()] == []     # no partial or temporary file


# ---------------------------------------------------------------- tracebacks and accepted nonsense (issue 24)

def test_negative_seed_is_one_line_before_any_work(tmp_path, capsys):
    data, scores = _user_data(tmp_path)
    out = tmp_path / "out"
    assert cli.main(["safety", "--scores", str(scores), "--dataset", str(data), "--output", str(out),
                     "--sample-per-group", "2", "--seed", "-1"]) == 2
    line = _one_line(capsys)
    assert "--seed" in line and "'-1'" in line and not out.exists()
    assert cli.build_parser().parse_args(SAFETY + ["--seed", "0"]).seed == 0


def test_safety_csv_with_a_text_over_csv_field_limit(tmp_path, capsys):
    """A field longer than the csv module's default limit (131,072 characters) reads as
    harms score reads it (pandas), and the limit is restored afterwards."""
    import csv

    from helpers import tables

    long = "very " * 40_000 + "long"                      # 200,004 characters
    texts = [long] + [f"sentence {i}" for i in range(1, 4)]
    data = tmp_path / "data.csv"
    pd.DataFrame({"id": range(4), "text": texts, "toxicity_score": [3.0, 1.0, 3.0, 1.0],
                  "label": ["hate", "neutral"] * 2, "target_groups": "women"}).to_csv(data, index=False)
    scores = tmp_path / "scores.csv"
    pd.DataFrame({"id": range(4), "perplexity": [10.0, 11.0, 12.0, 13.0], "text": texts}).to_csv(scores, index=False)
    limit = csv.field_size_limit()
    assert [r["text"] for r in tables.read_records(data)[0]] == tables.read_table(data)["text"].tolist() == texts
    assert csv.field_size_limit() == limit
    out = tmp_path / "out"
    assert cli.main(["safety", "--scores", str(scores), "--dataset", str(data), "--output", str(out),
                     "--n-resamples", "0"]) == 0, capsys.readouterr().err
    got = pd.read_csv(out / "per_sentence.csv", keep_default_na=False)
    assert got["text"].tolist() == texts and got["perplexity"].tolist() == [10.0, 11.0, 12.0, 13.0]


@pytest.mark.parametrize("kind", ["json true", "csv True/False"])
def test_boolean_perplexity_is_refused_naming_row_and_value(kind, tmp_path, capsys):
    data, _ = _user_data(tmp_path)
    texts = [f"sentence {i}" for i in range(8)]
    if kind == "json true":      # read as 1.0 before
        scores = tmp_path / "scores.json"
        scores.write_text(json.dumps([{"id": i, "perplexity": True if i == 3 else 10.0 + i, "text": t}
                                      for i, t in enumerate(texts)]))
        row = "row 3 (id 3)"
    else:                        # a column of booleans only: pandas reads bool, True was 1.0
        scores = tmp_path / "scores.csv"
        pd.DataFrame({"id": range(8), "perplexity": ["True", "False"] * 4, "text": texts}).to_csv(scores, index=False)
        row = "row 0 (id 0)"
    assert cli.main(["safety", "--scores", str(scores), "--dataset", str(data), "--output",
                     str(tmp_path / "out"), "--n-resamples", "0"]) == 2
    line = _one_line(capsys)
    assert f"{row}: perplexity True is a boolean, not a number" in line and str(scores) in line


#: upstream's GPT-2 StereoSet predictions, found where the loaders look: HARMS_DATA_DIR, then data/raw/
REF_PREDICTIONS = next((p for p in (d / "stereoset" / "predictions" / "predictions_gpt2_ModelNSP_GPT2LM.json"
                                    for d in paths.data_dirs()) if p.is_file()),
                       paths.download_dir() / "stereoset" / "predictions" / "predictions_gpt2_ModelNSP_GPT2LM.json")


def test_misspelled_stereoset_task_is_named(tmp_path, capsys):
    """An unknown key is ignored, as upstream's evaluation.py ignores it, but named on stderr;
    a file with no known key is an error."""
    from helpers.datasets import stereoset
    from helpers.errors import DataNotFoundError

    if not REF_PREDICTIONS.is_file():
        pytest.skip("StereoSet reference predictions not available")
    try:
        stereoset.load_examples(tasks=("intrasentence",))
    except DataNotFoundError as exc:
        pytest.skip(f"StereoSet dev set not available: {exc}")
    good = json.loads(REF_PREDICTIONS.read_text())
    intra, typo = tmp_path / "intra.json", tmp_path / "typo.json"
    intra.write_text(json.dumps({"intrasentence": good["intrasentence"]}))
    typo.write_text(json.dumps({"intrasentence": good["intrasentence"], "intersentance": good["intersentence"]}))
    assert cli.main(["stereoset", "--predictions", str(intra)]) == 0
    expected = capsys.readouterr().out
    assert cli.main(["stereoset", "--predictions", str(typo)]) == 0
    captured = capsys.readouterr()
    assert captured.out.replace("typo", "intra") == expected                 # the same table (model = file stem)
    notes = [line for line in captured.err.splitlines() if "intersentance" in line]
    assert len(notes) == 1 and notes[0].startswith("harms: note: ") and "ignored" in notes[0], captured.err
    only_typo = tmp_path / "only_typo.json"
    only_typo.write_text(json.dumps({"intersentance": good["intersentence"]}))
    assert cli.main(["stereoset", "--predictions", str(only_typo)]) == 2
    assert "'intersentance'" in _one_line(capsys)


# ---------------------------------------------------------------- harms safety --output DIR

def test_safety_output_checks(tmp_path, capsys):
    data, scores = _user_data(tmp_path)
    base = ["safety", "--scores", str(scores), "--dataset", str(data), "--n-resamples", "0", "--output"]
    afile = tmp_path / "afile"
    afile.write_text("keep")
    assert cli.main(base + [str(afile)]) == 2
    assert "is a file, not a folder" in _one_line(capsys) and afile.read_text() == "keep"
    assert cli.main(base + [""]) == 2
    assert "--output is empty" in _one_line(capsys) and not (Path.cwd() / "per_group.csv").exists()
    out = tmp_path / "existing"
    out.mkdir()
    assert cli.main(base + [str(out)]) == 0                         # an existing directory is fine
    capsys.readouterr()
    (out / "per_group.csv").write_text("old")
    assert cli.main(base + [str(out)]) == 2
    assert "per_sentence.csv exists; pass --overwrite" in _one_line(capsys)
    assert (out / "per_group.csv").read_text() == "old"
    assert cli.main(base + [str(out), "--overwrite"]) == 0
    assert pd.read_csv(out / "per_group.csv")["group"].tolist() == ["women"]


# ---------------------------------------------------------------- harms report --output DIR, checked first

def _bad_report_outputs(tmp_path) -> dict:
    """Each kind of unusable --output of ``harms report`` and the words its one line must hold."""
    afile = tmp_path / "afile"
    afile.write_text("keep")
    card = tmp_path / "card"
    card.mkdir()
    (card / "report.json").write_text("{}")
    return {"": "--output is empty", str(afile): "is a file, not a folder",
            str(afile / "sub" / "card"): f"{afile} is a file, so no folder can be made under it",
            str(card): "a report card is already there; pass --overwrite",
            "/proc/harms-card": "cannot write in /proc"}


def test_an_empty_output_file_is_one_line(inp, capsys):
    assert cli.main(["score", "--model", "smollm2-135m", "--input", str(inp), "--output", ""]) == 2
    assert "--output is empty" in _one_line(capsys)


def test_report_outputs_are_checked_before_any_model_is_loaded(tmp_path, monkeypatch, capsys):
    """``harms report --output`` empty, a file, under a file, unwritable or an existing card: one
    line, exit 2, before the card is computed (the card's computation here fails the test); nothing
    is written or created."""
    from helpers import card

    def computed(*a, **k):
        raise AssertionError("the card was computed before its output was checked")
    monkeypatch.setattr(card, "report_card", computed)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for output, words in _bad_report_outputs(here).items():
        before = sorted(p.name for p in here.rglob("*"))
        assert cli.main(["report", "--model", "smollm2-135m", "--output", output]) == 2, output
        assert words in _one_line(capsys), output
        assert sorted(p.name for p in here.rglob("*")) == before and (here / "afile").read_text() == "keep"
    assert tables.check_writable_folder(here / "new" / "card") == here / "new" / "card"
    assert not (here / "new").exists()                             # a good output: checked, not created


# ---------------------------------------------------------------- threads of concurrent runs

def _pid_file(folder: Path, pid, content: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pid}.pid"
    path.write_text(content)
    return path


def test_thread_count_divides_the_cores_among_live_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    registry = tmp_path / "runs"
    assert runs.thread_count(cpu_count=8, runs=registry) == 8                    # nothing registered
    _pid_file(registry, os.getpid())
    assert runs.thread_count(cpu_count=8, runs=registry) == 8
    _pid_file(registry, os.getppid())                                           # another live process
    dead = _pid_file(registry, DEAD_PID)
    _pid_file(registry, "notes")                                                # not a pid file: ignored
    assert runs.running_harms(registry) == 2 and not dead.exists()               # stale file removed
    assert runs.thread_count(cpu_count=8, runs=registry) == 4
    assert runs.thread_count(cpu_count=3, runs=registry) == 1
    _pid_file(registry, 1)
    assert runs.thread_count(cpu_count=2, runs=registry) == 1                    # at least one
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert runs.thread_count(cpu_count=16, runs=registry) == 1                   # capped by OMP_NUM_THREADS
    monkeypatch.setenv("HARMS_NUM_THREADS", "6")
    assert runs.thread_count(cpu_count=16, runs=registry) == 6                   # the variable wins ...
    assert runs.thread_count(5, cpu_count=16, runs=registry) == 5                # ... --threads over both


def test_reused_pid_of_a_dead_run_is_not_counted(tmp_path):
    if not runs._start_time(os.getpid()):
        pytest.skip("process start times are read from /proc (Linux)")
    registry = tmp_path / "runs"
    mine = _pid_file(registry, os.getpid(), runs._start_time(os.getpid()))
    reused = _pid_file(registry, os.getppid(), "1")        # recorded by a run that started at tick 1
    assert runs.running_harms(registry) == 1 and mine.exists() and not reused.exists()


def test_run_registers_itself_and_sets_the_threads(inp, tmp_path, tiny_gpt2, monkeypatch):
    import torch

    from helpers.lm import scoring

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    registry = runs.runs_dir()
    _pid_file(registry, os.getppid())                      # one other harms run is going on
    seen = {}
    real_score = scoring.score

    def score(*a, **k):
        seen["registered"] = sorted(p.name for p in registry.iterdir())
        return real_score(*a, **k)
    monkeypatch.setattr(scoring, "score", score)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: seen.setdefault("threads", []).append(n))
    assert cli.main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output",
                     str(tmp_path / "a.csv")]) == 0
    assert seen["registered"] == sorted([f"{os.getpid()}.pid", f"{os.getppid()}.pid"])
    assert seen["threads"] == [3]
    assert sorted(p.name for p in registry.iterdir()) == [f"{os.getppid()}.pid"]     # removed at exit
    assert cli.main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output",
                     str(tmp_path / "b.csv"), "--threads", "5"]) == 0
    assert seen["threads"] == [3, 5]


def test_threads_documented_in_help():
    text = " ".join(cli.build_parser()._subparsers._group_actions[0].choices["score"].format_help().split())
    assert "--threads" in text and "HARMS_NUM_THREADS" in text and "harms runs" in text


def test_machines_sharing_a_cache_count_only_their_own_runs(tmp_path, monkeypatch):
    """Two hosts on one cache: host b's live-looking pid file is not counted against host a's
    cores, nor removed by a (its pid means nothing on a)."""
    from helpers import runs

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv(runs.THREADS_ENV, raising=False)
    monkeypatch.setenv("HARMS_HOST_ID", "b")
    theirs = runs.runs_dir()
    _pid_file(theirs, os.getppid())
    _pid_file(theirs, 999_999_999)                                          # dead on b as on a
    monkeypatch.setenv("HARMS_HOST_ID", "a")
    assert runs.runs_dir() != theirs and runs.running_harms() == 0
    assert runs.thread_count(cpu_count=4) == 4
    assert sorted(p.name for p in theirs.iterdir()) == [f"{os.getppid()}.pid", "999999999.pid"]


@pytest.mark.parametrize("exc, plain, typed", [
    (ValueError("bad header\nTraceback (most recent call last):\n  ..."), "bad header", "ValueError: bad header"),
    (OSError("\n\n  disk full  \nmore"), "disk full", "OSError: disk full"),
    (KeyError(), "KeyError", "KeyError"),                     # an empty message: its type, never an IndexError
    (RuntimeError(""), "RuntimeError", "RuntimeError"),
])
def test_an_errors_first_line_is_what_a_one_line_message_quotes(exc, plain, typed):
    from helpers.errors import first_line

    assert first_line(exc) == plain and first_line(exc, with_type=True) == typed
