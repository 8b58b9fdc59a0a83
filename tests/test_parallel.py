"""helpers.distributed: a harms command split across processes and machines with Accelerate.

Two "machines" are two launchers on 127.0.0.1 (machine ranks 0 and 1, one process each, gloo),
each with its own host name (HARMS_HOST_ID) and one shared score cache, as on a cluster with a
shared file system. Their scores must equal one process's; a dead machine, a busy port, an
unreachable main address and mismatched settings are one line each, never a hang.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import models, paths
from helpers.distributed import launch, split, worker
from helpers.cli import main
from helpers.lm import scoring

from conftest import SENTENCES

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [f"{s} {i}" for i, s in enumerate(SENTENCES * 2)][:15]      # odd count: uneven shares
SESSION_CACHE = paths.cache_dir()        # the test session's cache, before each test gets its own


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _machine(rank: int, argv: list[str], port: int, *, machines: int = 2, env: dict | None = None,
             ip: str = "127.0.0.1") -> subprocess.Popen:
    """One machine's launcher: ``harms <argv>`` with machine rank ``rank`` of ``machines``."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HARMS_HOST_ID": f"host{rank}", "HARMS_DEAD_AFTER": "3",
            **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "helpers", *argv, "--machines", str(machines),
                             "--machine-rank", str(rank), "--main-ip", ip, "--main-port", str(port)],
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _finish(proc: subprocess.Popen) -> tuple[int, list[str]]:
    """Exit status and the harms lines (errors, notes) of a launcher, which must end on its own."""
    _, err = proc.communicate(timeout=600)          # a hang is a failure, not a wait
    return proc.returncode, [line for line in err.splitlines() if line.startswith("harms:")]


def _score_input(tmp_path: Path, texts=TEXTS) -> Path:
    path = tmp_path / "in.csv"
    pd.DataFrame({"id": range(len(texts)), "text": texts}).to_csv(path, index=False)
    return path


def _chunks(cache_dir: Path) -> list[Path]:
    """Every chunk file of the score cache (cache.cached_rows writes one per chunk)."""
    return sorted(cache_dir.glob("scores/*/chunk-*.json"))


def _single(model: Path, texts=TEXTS, **options) -> pd.DataFrame:
    return scoring.score(models.load(str(model)), texts, cache=False, progress=False, **options)


# ---------------------------------------------------------------------------- equal to one process

def test_two_processes_on_one_machine_equal_one(tiny_gpt2, tmp_path, capsys):
    out = tmp_path / "two.csv"
    code = main(["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)),
                 "--output", str(out), "--processes", "2"])
    assert code == 0, capsys.readouterr().err
    both, single = pd.read_csv(out), _single(tiny_gpt2)
    assert both["n_tokens"].tolist() == single["n_tokens"].tolist()
    # to float32's resolution: the two processes batch other texts together, and one rounding of a sum
    # near -76 is 3.8e-6 (CI saw it on tiny_bert); two float32 steps relative, 1e-6 absolute near 0
    np.testing.assert_allclose(both["log_likelihood"], single["log_likelihood"], rtol=2 * 2.0 ** -23, atol=1e-6)
    chunks = [json.loads(p.read_text())["rows"] for p in _chunks(tmp_path / "cache")]
    assert sum(len(c) for c in chunks) == len(TEXTS)                 # each sentence stored exactly once


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_bert"])
def test_two_machines_give_the_scores_of_one_process(fixture, request, tmp_path):
    model = request.getfixturevalue(fixture)
    port, inp, out = _port(), _score_input(tmp_path), tmp_path / "scores.csv"
    argv = ["score", "--model", str(model), "--input", str(inp), "--output", str(out)]
    procs = [_machine(r, argv, port) for r in (0, 1)]
    (code0, lines0), (code1, lines1) = (_finish(p) for p in procs)
    assert (code0, code1) == (0, 0), lines0 + lines1
    assert lines1[-1] == "harms: machine rank 1 computed its share; machine rank 0 writes the outputs"
    for lines in (lines0, lines1):       # what the exchanges cost, on each machine
        assert any(re.fullmatch(r"harms: 2 processes exchanged \d+ times over 15 texts to score: "
                                r"\d+\.\d\d s sending, \d+\.\d s waiting for the others", x) for x in lines), lines
    both, single = pd.read_csv(out), _single(model)
    assert both["n_tokens"].tolist() == single["n_tokens"].tolist()
    # to float32's resolution: the two processes batch other texts together, and one rounding of a sum
    # near -76 is 3.8e-6 (CI saw it on tiny_bert); two float32 steps relative, 1e-6 absolute near 0
    np.testing.assert_allclose(both["log_likelihood"], single["log_likelihood"], rtol=2 * 2.0 ** -23, atol=1e-6)
    rows = [json.loads(p.read_text())["rows"] for p in _chunks(tmp_path / "cache")]
    assert sum(len(r) for r in rows) == len(TEXTS)                   # scored exactly once between them
    assert len(rows) >= 2                                             # ... and by both machines


def test_safety_through_two_machines_is_the_table_of_one(tiny_gpt2, tmp_path):
    common = ["safety", "--model", str(tiny_gpt2), "--sample-per-group", "3", "--n-resamples", "50"]
    assert main([*common, "--output", str(tmp_path / "one"), "--no-cache"]) == 0
    port = _port()
    procs = [_machine(r, [*common, "--output", str(tmp_path / "two")], port) for r in (0, 1)]
    assert [_finish(p)[0] for p in procs] == [0, 0]
    for name in ("per_group.csv", "per_sentence.csv"):
        one, two = pd.read_csv(tmp_path / "one" / name), pd.read_csv(tmp_path / "two" / name)
        pd.testing.assert_frame_equal(one, two, check_exact=False, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------- a machine dies

_PAUSE = """
import os, signal, time
if os.environ.get("TEST_PAUSE_FLAG"):
    signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C even where the test runner ignores it
    import helpers.cache as c
    real = c._write_chunk
    def write_then_hang(directory, rows):          # machine 1 stores one chunk, then stalls until killed
        real(directory, rows)
        open(os.environ["TEST_PAUSE_FLAG"], "w").close()
        time.sleep(3600)
    c._write_chunk = write_then_hang
"""


def _stored(cache_dir: Path) -> dict[str, list]:
    return {h: row for p in _chunks(cache_dir) for h, row in json.loads(p.read_text())["rows"].items()}


def _paused_pair(model: Path, tmp_path: Path) -> tuple[subprocess.Popen, subprocess.Popen, list[str]]:
    """Two machines scoring with ``model``, one chunk at a time, returned (with their argv) once machine 1
    has stored one chunk and stalls (``_PAUSE``), both still running."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_PAUSE)
    flag, port = tmp_path / "paused", _port()
    argv = ["score", "--model", str(model), "--input", str(_score_input(tmp_path)),
            "--output", str(tmp_path / "scores.csv")]
    first = _machine(0, argv, port, env={"HARMS_CACHE_CHUNK_SIZE": "1"})
    second = _machine(1, argv, port, env={"HARMS_CACHE_CHUNK_SIZE": "1", "TEST_PAUSE_FLAG": str(flag),
                                          "PYTHONPATH": f"{hook}{os.pathsep}{ROOT}"})
    while not flag.exists():
        assert second.poll() is None and first.poll() is None
        time.sleep(0.05)
    return first, second, argv


def test_a_dead_machine_stops_the_other_with_one_line_and_the_rerun_resumes(tiny_gpt2, tmp_path):
    import psutil

    first, second, argv = _paused_pair(tiny_gpt2, tmp_path)
    [worker] = [p for p in psutil.Process(second.pid).children(recursive=True)
                if "helpers" in p.cmdline() and "accelerate.commands.launch" not in p.cmdline()]
    worker.send_signal(signal.SIGKILL)                # machine 1 dies mid-run
    code0, lines0 = _finish(first)
    code1, lines1 = _finish(second)
    assert code0 == 2 and len(lines0) == 1
    assert lines0[0].startswith("harms: error: machine rank 1 (process 1, host host1") and "stopped" in lines0[0]
    assert "rerun the same command on every machine" in lines0[0]
    assert code1 == 2 and len(lines1) == 1 and "stopped without finishing" in lines1[0]
    assert not (tmp_path / "scores.csv").exists()

    before = _stored(tmp_path / "cache")
    assert 1 <= len(before) < len(TEXTS)              # machine 0's share and machine 1's one chunk
    files_before = set(_chunks(tmp_path / "cache"))
    port = _port()
    procs = [_machine(r, argv, port) for r in (0, 1)]
    assert [_finish(p)[0] for p in procs] == [0, 0]
    new_files = set(_chunks(tmp_path / "cache")) - files_before
    rescored = {h for p in new_files for h in json.loads(p.read_text())["rows"]}
    assert rescored and not rescored & set(before)    # what was stored is not scored again
    assert len(rescored) + len(before) == len(TEXTS)
    single = _single(tiny_gpt2)
    np.testing.assert_allclose(pd.read_csv(tmp_path / "scores.csv")["log_likelihood"], single["log_likelihood"],
                               rtol=0, atol=1e-6)


def test_killing_a_machines_harms_ends_its_whole_run_and_the_other_machine_stops(tiny_gpt2, tmp_path):
    """``kill -9`` of the ``harms`` process of machine 1 mid-run (its worker stalled after one stored chunk):
    no process it started outlives it (the launch gets the parent-death signal and ends its workers), and
    machine 0 stops with one line instead of finishing alone."""
    import psutil

    first, second, argv = _paused_pair(tiny_gpt2, tmp_path)
    started = psutil.Process(second.pid).children(recursive=True)
    assert any("accelerate.commands.launch" in p.cmdline() for p in started)
    second.send_signal(signal.SIGKILL)                # the machine's harms dies; its children are not signalled
    second.communicate(timeout=600)
    _, alive = psutil.wait_procs(started, timeout=120)  # a bound on a hang, not a timing: they end on a signal
    assert not alive, [p.cmdline() for p in alive]
    code0, lines0 = _finish(first)
    assert code0 == 2 and len(lines0) == 1 and "machine rank 1" in lines0[0], lines0
    assert not (tmp_path / "scores.csv").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_stopping_a_machines_harms_ends_its_whole_run_in_one_line(tiny_gpt2, tmp_path, sig):
    """SIGTERM (a batch scheduler) or Ctrl-C to machine 1's ``harms`` mid-run: it says it was interrupted
    in one line and exits 128 + the signal, no process it started outlives it, and machine 0 stops
    with one line naming machine 1."""
    import psutil

    first, second, _ = _paused_pair(tiny_gpt2, tmp_path)
    started = psutil.Process(second.pid).children(recursive=True)
    second.send_signal(sig)
    code1, lines1 = _finish(second)
    assert code1 == 128 + sig and len(lines1) == 1 and lines1[0].startswith("harms: interrupted"), lines1
    _, alive = psutil.wait_procs(started, timeout=120)  # a bound on a hang, not a timing
    assert not alive, [p.cmdline() for p in alive]
    code0, lines0 = _finish(first)
    assert code0 == 2 and len(lines0) == 1 and "machine rank 1" in lines0[0], lines0


def test_a_main_machine_started_alone_gives_up_in_one_line_and_leaves_no_process(tiny_gpt2, tmp_path):
    """Machine 0 of two, the other never started: after ``$HARMS_CONNECT_TIMEOUT`` seconds one line naming
    the machine that did not join, exit 2, and no process of its launch left behind."""
    import psutil

    argv = ["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)), "--output",
            str(tmp_path / "o.csv")]
    proc = _machine(0, argv, _port(), env={"HARMS_CONNECT_TIMEOUT": "5"})
    children = []
    while proc.poll() is None and not children:
        children = psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=600)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, lines[:5]
    assert lines[0].startswith("harms: error: the run's process group did not form within 5 s: this machine "
                               "(rank 0) started, machine rank 1 did not;"), lines
    _, alive = psutil.wait_procs(children, timeout=120)
    assert not alive, [p.cmdline() for p in alive]


def test_a_main_port_answered_by_another_program_is_one_line_without_torchs_log(tiny_gpt2, tmp_path):
    """Another program answers at the main port (a web server's reply): torch's client retries and logs
    each retry with its C++ stack frames; machine 1 prints only the one line."""
    import threading

    argv = ["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)), "--output",
            str(tmp_path / "o.csv")]
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(64)

        def answer():
            while True:
                try:
                    conn, _ = other.accept()
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    conn.close()
                except OSError:
                    return
        threading.Thread(target=answer, daemon=True).start()
        proc = _machine(1, argv, other.getsockname()[1])
        _, err = proc.communicate(timeout=600)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, lines[:5]
    assert "is not machine 0's harms launch" in lines[0] and "TCPStore" not in err and "frame #" not in err


# ---------------------------------------------------------------------------- one line, never a hang

def test_a_busy_main_port_is_one_line(tiny_gpt2, tmp_path):
    with socket.socket() as busy:
        busy.bind(("", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, lines = _finish(_machine(0, ["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)),
                                           "--output", str(tmp_path / "o.csv")], port))
    assert code == 2 and lines == [f"harms: error: --main-port {port} is in use on this machine (Address already in "
                                   "use); choose a free port and give it to every machine"]


@pytest.mark.parametrize("ip, says", [
    ("192.0.2.1", "at 192.0.2.1:"),    # a documentation address: no route, a timeout or (in a sandbox) refused
    ("127.0.0.1", "nothing listens at 127.0.0.1"),
    ("no-such-host.invalid", "is not a known host")])
def test_an_unreachable_main_address_is_one_line(tiny_gpt2, tmp_path, ip, says):
    argv = ["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)), "--output",
            str(tmp_path / "o.csv")]
    code, lines = _finish(_machine(1, argv, _port(), ip=ip, env={"HARMS_CONNECT_TIMEOUT": "3"}))
    assert code == 2 and len(lines) == 1 and says in lines[0], lines


def test_a_main_port_held_by_another_service_is_one_line(tiny_gpt2, tmp_path):
    argv = ["score", "--model", str(tiny_gpt2), "--input", str(_score_input(tmp_path)), "--output",
            str(tmp_path / "o.csv")]
    with socket.socket() as other:                     # listens, never speaks torch's store protocol
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        code, lines = _finish(_machine(1, argv, other.getsockname()[1]))
    assert code == 2 and len(lines) == 1 and "is not machine 0's harms launch" in lines[0], lines


def test_mismatched_settings_between_machines_are_one_line_on_each(tiny_bert, tmp_path):
    port, inp = _port(), _score_input(tmp_path)
    argv = ["score", "--model", str(tiny_bert), "--input", str(inp), "--output", str(tmp_path / "o.csv")]
    procs = [_machine(0, argv, port), _machine(1, [*argv, "--pll", "word-l2r"], port)]
    for code, lines in (_finish(p) for p in procs):
        assert code == 2 and len(lines) == 1
        assert "machine rank 1 (process 1, host host1" in lines[0] and "different settings" in lines[0]
        assert "pll 'word-l2r' instead of 'original'" in lines[0]
    assert not (tmp_path / "o.csv").exists()


def test_a_worker_error_is_one_line(tmp_path, capsys):
    code = main(["score", "--model", "no-such-model-xyz", "--input", str(_score_input(tmp_path)),
                 "--output", str(tmp_path / "o.csv"), "--processes", "2"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("harms: error: ") and "no-such-model-xyz" in err[0]


@pytest.mark.parametrize("extra, says", [(["--machines", "2"], "--main-ip"),
                                         (["--machines", "2", "--machine-rank", "2", "--main-ip", "x"],
                                          "--machine-rank 2 is not one of 0 .. 1")])
def test_bad_cluster_options_are_one_line(tmp_path, capsys, extra, says):
    code = main(["score", "--model", "m", "--input", str(_score_input(tmp_path)), "--output",
                 str(tmp_path / "o.csv"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and says in err[0]


def test_the_launch_is_accelerate_with_the_machines_settings():
    cluster = worker.Cluster(machines=4, machine_rank=2, main_ip="10.0.0.1", main_port=29555, processes=8)
    cmd = launch.launch_command(["score", "--model", "m"], cluster, "cuda")
    assert cmd[1:3] == ["-m", "accelerate.commands.launch"]
    flags = dict(zip(cmd[3:], cmd[4:]))
    assert (flags["--num_processes"], flags["--num_machines"], flags["--machine_rank"]) == ("32", "4", "2")
    assert (flags["--main_process_ip"], flags["--main_process_port"]) == ("10.0.0.1", "29555")
    assert cmd[-5:] == ["-m", "helpers", "score", "--model", "m"]


def test_a_report_card_through_two_machines_is_the_card_of_one_process(tiny_gpt2, data_without_crows_pairs, tmp_path):
    """Every measurement of the card reaches the shared computations in the same order on every
    process (else the job check would stop the run); the card's numbers equal one process's, and so
    does a metric that cannot be computed (CrowS-Pairs absent offline): one status row, no failed run."""
    argv = ["report", "--model", str(tiny_gpt2), "--budget", "quick"]
    assert main([*argv, "--output", str(tmp_path / "one")]) == 0
    port = _port()
    env = {"HARMS_CACHE_DIR": str(tmp_path / "shared-cache")}       # nothing cached: all computed again
    procs = [_machine(r, [*argv, "--output", str(tmp_path / "two")], port, env=env) for r in (0, 1)]
    assert [_finish(p)[0] for p in procs] == [0, 0]
    one, two = (pd.read_csv(tmp_path / d / "metrics.csv") for d in ("one", "two"))
    assert len(one) > 20
    status = [pd.read_csv(tmp_path / d / "status.csv") for d in ("one", "two")]
    pd.testing.assert_frame_equal(*status)
    assert status[0].set_index("metric").loc["crows_pairs", "status"].startswith("not computed: data set 'crows-pairs'")
    # Two processes compute the word and sentence vectors in other batches (other shares, other
    # padding): each vector equals one process's to a few float32 roundings of its scale ...
    alone, split = (_cached_vectors(tmp_path / d) for d in ("cache", "shared-cache"))
    assert len(alone) > 100 and alone.keys() == split.keys()
    for k, v in alone.items():
        assert np.abs(v - split[k]).max() <= 8 * np.finfo(np.float32).eps * np.abs(v).max(), k
    # ... which CEAT's random-effects combination of effect sizes (differences of means over the
    # standard deviations of a random tiny model's nearly alike vectors) amplifies to a few 1e-5
    ceat = one["metric"].isin(["ceat", "ceattox"])
    pd.testing.assert_frame_equal(one[~ceat], two[~ceat], check_exact=False, rtol=1e-5, atol=1e-6)
    pd.testing.assert_frame_equal(one[ceat], two[ceat], check_exact=False, rtol=1e-4, atol=1e-6)
    assert len(_chunks(tmp_path / "shared-cache")) >= 2


def _cached_vectors(cache_dir: Path) -> dict:
    """Every word / sentence vector in a score cache: {(key directory, text hash): float64 vector}."""
    from helpers.lm.embeddings import _unpack
    out = {}
    for directory in (cache_dir / "scores").iterdir():
        if "embedding" in json.loads((directory / "key.json").read_text()):
            for chunk in directory.glob("chunk-*.json"):
                for h, row in json.loads(chunk.read_text())["rows"].items():
                    out[directory.name, h] = _unpack(row[0]).astype(float)
    return out


@pytest.mark.parametrize("what", [["--top-k", "3"], ["--candidates", "CANDIDATES"]])
def test_fill_through_two_machines_is_the_table_of_one(tiny_bert, tmp_path, what):
    templates = [f"the {w} people are [MASK] ." for w in ("young", "old", "tall", "short", "rich")]
    inp, words = tmp_path / "templates.csv", tmp_path / "words.txt"
    pd.DataFrame({"template": templates}).to_csv(inp, index=False)
    words.write_text("capable\nunhappiness\nkindness\n")
    what = [str(words) if w == "CANDIDATES" else w for w in what]
    argv = ["fill", "--model", str(tiny_bert), "--input", str(inp), *what]
    assert main([*argv, "--output", str(tmp_path / "one.csv"), "--no-cache"]) == 0
    port = _port()
    procs = [_machine(r, [*argv, "--output", str(tmp_path / "two.csv")], port) for r in (0, 1)]
    assert [_finish(p)[0] for p in procs] == [0, 0]
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "one.csv"), pd.read_csv(tmp_path / "two.csv"),
                                  check_exact=False, rtol=0, atol=1e-6)


#: A ``ci`` profile smaller than book/profiles.yml's for the prefill test (its own profiles file;
#: the name picks the ci zoo): the same code paths (chapter 01's two data sets, chapter 06's two
#: models dealt to the two machines, chapter 07's fill-ins), fewer texts; the book's own ``ci``
#: profile runs in test_book_all_chapters.
TINY_PROFILE = """
profiles:
  ci:
    zoo: true
    zoo_dir: zoo-ci
    parameters:
      "*": {device: cpu, sample_per_group: 2}
      01_safety_scores: {models: [smollm2-135m], implicit_sample_per_label: 6}
      06_intrinsic_extrinsic:
        models: [smollm2-135m, zoo-smollm2-L22-lm]
        contexts_per_word: 1
        stereoset_clusters_per_target: 1
        prompts_per_group: 1
        max_new_tokens: 4
        classifier_train: 40
        toxd_per_identity: 4
      07_toxicity_probing: {languages: [en], models: {en: [smollm2-135m]}}
"""


def test_the_books_prefill_through_two_machines_leaves_the_chapters_nothing_to_score(tmp_path, monkeypatch):
    """`harms book --prefill-only` on two machines computes the profile's per-model work into the
    shared cache: split text by text, chapter 01 (every model on ToxiGen and ImplicitHate), chapter
    06's intrinsic metrics (CEAT's word vectors, StereoSet) and chapter 07's cloze fill-ins; model
    by model, chapter 06's classifiers and generations. The chapters' own calls then load no model."""
    from helpers import book, runner
    from helpers.chapters import ch01_safety as ch01, ch06_intrinsic_extrinsic as ch06, ch07_probing as ch07
    from helpers.models import LazyModel

    zoo = SESSION_CACHE / "zoo-ci"             # the ci profile's zoo, built once per test session
    book_dir = tmp_path / "book"
    book_dir.mkdir()
    (book_dir / "profiles.yml").write_text(TINY_PROFILE)
    env = {"HARMS_CACHE_DIR": str(tmp_path / "shared-cache"), "HARMS_RESULTS_DIR": str(tmp_path / "results"),
           "HARMS_ZOO_DIR": str(zoo)}
    port = _port()
    procs = [_machine(r, ["book", "--profile", "ci", "--book-dir", str(book_dir), "--prefill-only"], port, env=env)
             for r in (0, 1)]
    results = [_finish(p) for p in procs]
    assert [code for code, _ in results] == [0, 0], results
    timings = pd.read_csv(tmp_path / "results" / "book_timings.csv")
    assert timings["step"].tolist()[-1] == "prefill" and set(timings["status"]) == {"ok"}   # machine 0's only
    assert len(_chunks(tmp_path / "shared-cache")) >= 2                   # both machines stored shares

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "shared-cache"))
    monkeypatch.setenv("HARMS_ZOO_DIR", str(zoo))

    def no_loading(self):
        raise AssertionError(f"{self.name}: a text was not in the cache")
    monkeypatch.setattr(LazyModel, "load", no_loading)
    cfg = book.load_profile("ci", book_dir / "profiles.yml")
    params = book.chapter01_parameters(cfg)
    toxigen = ch01.measure(params, params["toxigen"], params["sample_per_group"])
    implicit = ch01.measure(params, params["implicit_hate"], params["implicit_sample_per_label"])
    assert toxigen.models == implicit.models == params["models"] and not toxigen.unavailable
    assert len(toxigen.per_sentence) >= 40 and len(implicit.per_sentence) >= 10    # scored, from the cache

    p6 = book.chapter_parameters(cfg, "ch06_intrinsic_extrinsic")   # the calls ch06.measure makes per model
    found = ch06.contexts(p6)
    intrinsic, missing = runner.for_each_model(p6["models"], lambda h: ch06.intrinsic_scores(h, p6, found))
    assert list(intrinsic) == p6["models"] == ["smollm2-135m", "zoo-smollm2-L22-lm"] and not missing
    assert all({"CEAT", "StereoSet"} <= set(t["metric"]) for t in intrinsic.values())
    train, test = ch06.classifier_data(p6)                 # the whole-model work, each model on one machine
    hatex, _ = ch06._hatex_or_none(p6)
    prompts = ch06.bold_prompts(p6)
    whole, missing = runner.for_each_model(p6["models"], lambda h: (
        ch06._classifier_parts(h, p6, train, test, hatex), ch06.generations(h, p6, prompts)))
    assert list(whole) == p6["models"] and not missing
    assert all(len(gens) == len(prompts) for _, gens in whole.values())     # one continuation per prompt
    p7 = book.chapter_parameters(cfg, "ch07_probing")       # the calls of ch07's sentences and fill sections
    classifiers, _, _ = ch07.train_classifiers(p7)
    for lang in p7["languages"]:
        probed, missing = ch07.probe(p7, lang, ch07.sample(p7, ch07.build(p7, lang, classifiers[lang])),
                                     classifiers[lang])
        assert len(probed) > 0 and not missing


def test_a_process_lost_inside_an_exchange_is_one_line_naming_the_exchange():
    """Collectives start only once every process has arrived; one that dies in between makes gloo
    raise "Connection closed by peer" in the others: that becomes the same one-line PeerStopped."""
    w = worker._World.__new__(worker._World)       # no process group needed for the wrapper
    with pytest.raises(worker.PeerStopped, match=r"^a process stopped during the exchange of rows "
                                                       r"\(\[pair\.cc:553\] Connection closed by peer "):
        with w._collective("rows"):
            raise RuntimeError("[pair.cc:553] Connection closed by peer [127.0.0.1]:20361.\nGLHF")


# ---------------------------------------------------------------------------- waiting on the store

class _CountingStore:
    """A dict with TCPStore's set/get/add/check/multi_get, counting requests; ``arrive`` lets the
    other processes reach a round after ``polls`` requests of the arrival counter."""

    def __init__(self):
        self.data: dict[str, bytes] = {}
        self.requests = 0
        self.on_poll = lambda: None

    def set(self, k, v):
        self.requests += 1
        self.data[k] = v.encode() if isinstance(v, str) else v

    def get(self, k):
        self.requests += 1
        return self.data[k]

    def add(self, k, n):
        self.requests += 1
        value = int(self.data.get(k, b"0")) + n
        self.data[k] = str(value).encode()
        if k.endswith("/arrived") and n == 0:
            self.on_poll()
        return value

    def check(self, keys):
        self.requests += 1
        return all(k in self.data for k in keys)

    def multi_get(self, keys):
        self.requests += 1
        return [self.data[k] for k in keys]


def _waiting_world(size: int, monkeypatch, dead_after: float = 30.0):
    """Process 0 of ``size`` on a counting store, with a clock that advances by each sleep."""
    clock = [0.0]
    monkeypatch.setattr(worker.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(worker.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    w = worker._World.__new__(worker._World)
    w.rank, w.size, w.round, w.prefix, w.dead_after = 0, size, 0, "harms/", dead_after
    w._beats, w.store = {}, _CountingStore()
    w.exchange = {"rounds": 0, "texts": 0, "wait_seconds": 0.0, "transfer_seconds": 0.0}
    w.cluster = worker.Cluster(machines=size)
    for r in range(size):
        w.store.data[f"harms/who/{r}"] = json.dumps({"machine_rank": r, "host": f"h{r}", "pid": 1}).encode()
    return w, clock


def test_waiting_costs_the_store_requests_linear_in_the_processes(monkeypatch):
    """64 processes wait 30 s for the last one: the store sees O(processes) requests a second
    (each process: the arrival counter 5 times a second, failures and all heartbeats once),
    where one key per process polled 5 times a second would be O(processes²)."""
    size, seconds = 64, 30.0
    w, clock = _waiting_world(size, monkeypatch)

    def others():                 # everyone beats; all arrive at once after `seconds`
        for r in range(size):
            w.store.data[f"harms/beat/{r}"] = str(int(clock[0] * 10)).encode()
        if clock[0] >= seconds:
            w.store.data["harms/1-x/arrived"] = str(size).encode()

    w.store.on_poll = others
    w.wait_for_all("x")
    per_second = w.store.requests / seconds
    assert clock[0] == pytest.approx(seconds, abs=0.5)
    assert per_second <= 1 / worker.POLL_SECONDS + 2 / worker.HEARTBEAT_SECONDS + 1   # 7: not × size
    assert w.exchange["wait_seconds"] == pytest.approx(seconds, abs=0.5)


def test_a_silent_process_is_named_after_dead_after_seconds_and_a_failed_one_at_once(monkeypatch):
    w, clock = _waiting_world(4, monkeypatch, dead_after=3.0)

    def beats_but_rank_2():
        for r in (0, 1, 3):
            w.store.data[f"harms/beat/{r}"] = str(int(clock[0] * 10)).encode()
        w.store.data.setdefault("harms/beat/2", b"7")

    w.store.on_poll = beats_but_rank_2
    with pytest.raises(worker.PeerStopped, match=r"^machine rank 2 \(process 2, host h2, pid 1\) stopped "
                                                       r"\(no heartbeat for 3 s\)"):
        w.wait_for_all("rows")
    assert 3.0 < clock[0] <= 3.0 + 2 * worker.HEARTBEAT_SECONDS

    w.store.data["harms/failed/3"] = b"out of memory"
    w.store.data["harms/failures"] = b"1"
    began = clock[0]
    with pytest.raises(worker.PeerStopped, match=r"^machine rank 3 .* failed: out of memory$"):
        w.wait_for_all("rows")
    assert clock[0] - began <= worker.HEARTBEAT_SECONDS


def test_the_exchange_summary_names_the_slowest_process():
    line = launch.exchange_summary([
        {"rounds": 6, "texts": 15, "transfer_seconds": 0.01, "wait_seconds": 2.0},
        {"rounds": 6, "texts": 15, "transfer_seconds": 0.02, "wait_seconds": 0.5}], 2)
    assert line == "2 processes exchanged 6 times over 15 texts to score: 0.01 s sending, 2.0 s waiting for the others"
    assert launch.exchange_summary([], 2) == ""


def _best_contiguous_split(costs, parts):
    """Brute force: the smallest possible largest share over every contiguous split."""
    from itertools import combinations
    n = len(costs)
    best = float("inf")
    for cuts in combinations(range(n + 1), parts - 1):
        edges = (0, *cuts, n)
        if any(a > b for a, b in zip(edges, edges[1:])):
            continue
        best = min(best, max(sum(costs[a:b]) for a, b in zip(edges, edges[1:])))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_shares_are_contiguous_and_equal_in_cost_within_one_item(seed):
    rng = np.random.default_rng(seed)
    costs = [int(c) for c in rng.integers(0, 50, size=int(rng.integers(0, 10)))]
    if seed % 3 == 0:
        costs = sorted(costs, reverse=True)                       # a job sorted longest first
    parts = int(rng.integers(1, 5))
    bounds = split.share_bounds(costs, parts)
    assert len(bounds) == parts and bounds[0][0] == 0 and bounds[-1][1] == len(costs)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:])) and all(s <= e for s, e in bounds)
    shares = [sum(costs[s:e]) for s, e in bounds]
    biggest = max(costs, default=0)
    assert all(abs(share - sum(costs) / parts) <= biggest for share in shares)
    assert max(shares) <= _best_contiguous_split(costs, parts) + biggest


def test_share_bounds_rejects_nonsense():
    with pytest.raises(ValueError, match="parts must be >= 1"):
        split.share_bounds([1, 2], 0)
    with pytest.raises(ValueError, match="costs must be >= 0"):
        split.share_bounds([1, -2], 2)


class _ThreadWorld:
    """Process ``rank`` of two threads exchanging through a dict and a barrier (no store, no
    launch): enough for :func:`split.shard`'s broadcast, check and gather."""

    def __init__(self, rank, board, barrier):
        self.rank, self.size, self.board, self.barrier = rank, 2, board, barrier
        self.cluster = worker.Cluster()
        self.exchange = {"rounds": 0, "texts": 0, "wait_seconds": 0.0, "transfer_seconds": 0.0}

    def broadcast(self, obj, tag):
        if self.rank == 0:
            self.board[tag] = obj
        self.barrier.wait()
        return self.board[tag]

    def gather(self, obj, tag):
        self.board.setdefault((tag, self.rank), obj)
        self.barrier.wait()
        return [self.board[(tag, r)] for r in range(self.size)]


def test_a_job_sorted_longest_first_is_shared_equally_in_length(monkeypatch):
    """A longest-first job (embeddings, StereoSet rows) split into equal counts gave process 0 the
    longest half of the texts; shares are now equal in characters (plus a constant per text) and
    still cover the job once."""
    import threading
    texts = sorted((("word " * (1 + i % 40)).strip() for i in range(101)), key=len, reverse=True)
    todo = [(f"h{i}", t) for i, t in enumerate(texts)]
    board, barrier, local = {}, threading.Barrier(2, timeout=120), threading.local()
    computed, merged = {}, {}
    monkeypatch.setattr(worker, "world", lambda: local.world)

    def process(rank):
        local.world = _ThreadWorld(rank, board, barrier)

        def compute(items):
            computed[rank] = [t for _, t in items]
            return {h: [len(t)] for h, t in items}
        merged[rank] = split.shard({"k": 1}, [h for h, _ in todo], todo, compute)

    threads = [threading.Thread(target=process, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    chars = [sum(map(len, computed[r])) for r in (0, 1)]
    assert computed[0] + computed[1] == texts                     # contiguous, in order, once
    assert abs(chars[0] - chars[1]) <= 2 * max(map(len, texts))
    assert sum(map(len, texts[:51])) > 1.3 * sum(map(len, texts[51:]))   # what equal counts gave
    assert merged[0] == merged[1] == {h: [len(t)] for h, t in todo}


def test_whole_items_are_dealt_round_robin_and_alone_means_no_exchange(monkeypatch):
    """Process 1 of 3 takes models 1, 4, ...; inside ``alone()`` it computes every text of a job
    itself and waits for no one (an exchange there would wait for processes that never reach it)."""
    class Rank1Of3:
        rank, size = 1, 3

        def broadcast(self, obj, tag):
            raise AssertionError("no exchange inside alone()")
        gather = wait_for_all = broadcast

    monkeypatch.setattr(worker, "_world", Rank1Of3())
    models = [f"m{i}" for i in range(7)]
    assert worker.mine(models) == ["m1", "m4"]
    dealt = [[m for i, m in enumerate(models) if i % 3 == r] for r in range(3)]
    assert sorted(sum(dealt, [])) == sorted(models)                      # each model to exactly one process
    todo = [("h1", "a"), ("h2", "bb")]
    with worker.alone():
        assert worker.world() is None and worker.mine(models) == models
        worker.barrier("nothing to wait for")
        assert split.shard({"k": 1}, ["h1", "h2"], todo, lambda items: {h: [t] for h, t in items}) == \
            {"h1": ["a"], "h2": ["bb"]}
    assert worker.world() is not None and not worker.is_main()
