"""Data-parallel scoring of a large input across processes or GPUs with Hugging Face Accelerate.

:func:`score_parallel` writes the job (model, texts, options) to a job directory
``paths.cache_dir()/parallel/.job.harms-tmp-<pid>@<host>-<random>`` (named by
:func:`helpers.tables.temporary_path`, removed when the call ends; the job
directories of killed runs, whose pid is dead, are removed by the next call
with :func:`helpers.tables.remove_stale_temporaries`) and runs::

    python -m accelerate.commands.launch --multi_gpu --num_processes N \\
        [--num_cpu_threads_per_process K] -m helpers.parallel JOB_DIR

Accelerate's multi-process launcher (torchrun underneath) starts N copies of
:func:`main`. On CPU each worker builds ``PartialState(cpu=True)``, which gives
a gloo process group (``DistributedType.MULTI_CPU``); on CUDA, one process per
GPU (``DistributedType.MULTI_GPU``, worker ``i`` on ``cuda:i``). Each worker
loads the model, takes its contiguous shard with
``PartialState.split_between_processes``, scores it with
:func:`helpers.lm.scoring.score` (the shared score cache is safe for concurrent
writers, so a killed parallel run resumes too), and the shards are collected
with ``accelerate.utils.gather_object``; the main process writes them in input
order. An error in any worker (e.g. an unknown model) is gathered as well and
re-raised in the caller as the same one-line error.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Sequence

import pandas as pd

from helpers import errors, paths
from helpers.tables import remove_stale_temporaries, temporary_path

__all__ = ["score_parallel", "main"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_command(job_dir: Path, num_processes: int, device: str) -> list[str]:
    """The ``accelerate launch`` command line that runs :func:`main` on ``num_processes`` workers."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
           "--num_processes", str(num_processes), "--num_machines", "1", "--mixed_precision", "no",
           "--dynamo_backend", "no", "--main_process_port", str(_free_port())]
    if not device.startswith("cuda"):
        threads = max(1, (os.cpu_count() or 1) // num_processes)
        cmd += ["--num_cpu_threads_per_process", str(threads)]
    return cmd + ["-m", "helpers.lm.parallel", str(job_dir)]


def score_parallel(model: str, texts: Sequence[str], *, num_processes: int, objective: str | None = None,
                   device: str = "cpu", progress: bool = True, **score_options) -> pd.DataFrame:
    """Score ``texts`` with ``model`` split across ``num_processes`` Accelerate workers.

    ``model`` is anything :func:`helpers.models.load` accepts; ``device`` is
    ``"cpu"`` (N CPU processes) or ``"cuda"`` (one process per GPU);
    ``score_options`` go to :func:`helpers.lm.scoring.score` (pll, batch_tokens,
    upstream_mask_id, cache). Returns the same DataFrame as ``scoring.score``
    (n_tokens, log_likelihood, perplexity; rows in input order), with
    ``attrs["num_processes"]`` the number of workers that ran.
    """
    texts = list(texts)
    if num_processes < 1:
        raise ValueError(f"num_processes must be >= 1, got {num_processes}")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise errors.HarmsError(f"data-parallel scoring runs on cpu or cuda, not {device!r}")
    if num_processes == 1:
        from helpers import models
        from helpers.lm import scoring

        loaded = models.load(model, objective=objective, device=device)
        out = scoring.score(loaded, texts, progress=progress, **score_options)
        out.attrs["num_processes"] = 1
        return out
    root = paths.cache_dir() / "parallel"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise errors.HarmsError(f"cannot write the parallel job directory in {root}: "
                                f"{exc.strerror or exc}; set HARMS_CACHE_DIR to a writable directory") from None
    remove_stale_temporaries(root)          # job directories of killed runs
    job = temporary_path(root / "job")
    job.mkdir()
    try:
        (job / "job.json").write_text(json.dumps({
            "model": str(model), "texts": texts, "objective": objective, "device": device,
            "progress": progress, "options": score_options}))
        proc = subprocess.run(launch_command(job, num_processes, device),
                              stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE, text=True)
        if (job / "error.json").exists():
            err = json.loads((job / "error.json").read_text())
            cls = getattr(errors, err["type"], None)
            if isinstance(cls, type) and issubclass(cls, errors.HarmsError):
                raise cls(err["message"])
            raise RuntimeError(f"parallel scoring worker failed:\n{err['traceback']}")
        if proc.returncode != 0 or not (job / "scores.parquet").exists():
            tail = (proc.stderr or "").strip().splitlines()[-5:]
            raise RuntimeError(f"accelerate launch exited with {proc.returncode}: " + " | ".join(tail))
        out = pd.read_parquet(job / "scores.parquet")
        out.attrs["num_processes"] = json.loads((job / "meta.json").read_text())["num_processes"]
        return out
    finally:
        shutil.rmtree(job, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """Worker entry point (``python -m helpers.lm.parallel JOB_DIR`` under ``accelerate launch``)."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    job_dir = Path((argv or sys.argv[1:])[0])
    job = json.loads((job_dir / "job.json").read_text())
    device = job["device"]
    state = PartialState(cpu=not device.startswith("cuda"))
    texts = job["texts"]
    with state.split_between_processes(list(range(len(texts)))) as mine:
        try:
            from helpers import models
            from helpers.lm import scoring

            loaded = models.load(job["model"], objective=job["objective"],
                                 device="cpu" if device == "cpu" else str(state.device))
            df = scoring.score(loaded, [texts[i] for i in mine],
                               progress=job["progress"] and state.is_main_process, **job["options"])
            payload = {"index": list(mine), "n_tokens": df["n_tokens"].tolist(),
                       "log_likelihood": df["log_likelihood"].tolist(), "perplexity": df["perplexity"].tolist()}
        except Exception as exc:  # gathered, so no worker is left waiting for a dead peer
            payload = {"error": {"type": type(exc).__name__, "message": str(exc),
                                 "traceback": traceback.format_exc()}}
    parts = gather_object([payload])
    if state.is_main_process:
        failed = [p["error"] for p in parts if "error" in p]
        if failed:
            (job_dir / "error.json").write_text(json.dumps(failed[0]))
        else:
            frame = pd.concat([pd.DataFrame(p) for p in parts]).set_index("index").sort_index()
            frame.index.name = None
            assert frame.index.tolist() == list(range(len(texts)))
            frame = frame.astype({"n_tokens": "int64", "log_likelihood": "float64", "perplexity": "float64"})
            frame.reset_index(drop=True).to_parquet(job_dir / "scores.parquet")
            (job_dir / "meta.json").write_text(json.dumps({"num_processes": state.num_processes}))
    state.wait_for_everyone()
    state.destroy_process_group()


if __name__ == "__main__":
    main()
