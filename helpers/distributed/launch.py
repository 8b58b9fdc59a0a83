"""The launcher's side of a run split across processes and machines (called by the CLI only).

:func:`run_command` is what ``harms`` does with a subcommand that can be split: in a worker of a
launched run it runs the subcommand as that worker (:func:`helpers.distributed.worker.run_worker`); on
a machine of a run of several processes it starts this machine's workers with :func:`launch` and
prints one line on their exchanges; otherwise it runs the subcommand in this process.

:func:`launch` starts ``accelerate launch --multi_gpu --num_machines M --machine_rank R
--main_process_ip IP --main_process_port P --num_processes M*N -m helpers <the command>``
(:func:`launch_command`). Before the launch, machine 0 checks that its port is free and the other
machines that the main address answers (:func:`preflight`), each one line within seconds.

The launcher learns how its workers ended from status files in a job directory in the cache
(``parallel/.status.harms-tmp-<pid>@<host>-<random>``): one JSON per process of this machine, with
the one-line error of a worker that failed. torchrun's exit barrier waits up to 5 minutes for a
machine that died; once every local worker has reported, the launcher gives the launch
:data:`EXIT_GRACE` seconds and then ends it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from helpers import errors, paths
from helpers.distributed import worker
from helpers.distributed.worker import CLUSTER_ENV, POLL_SECONDS, STATUS_ENV, Cluster, PeerStopped, env_seconds
from helpers.errors import HarmsError
from helpers.tables import remove_stale_temporaries, temporary_path

CONNECT_TIMEOUT_ENV = "HARMS_CONNECT_TIMEOUT"  # seconds a machine waits for the main machine to answer
DEFAULT_CONNECT_TIMEOUT = 60.0
UNREACHABLE_AFTER = 10.0                     # no answer at all (not even "refused") for this long: unreachable
EXIT_GRACE = 10.0

__all__ = ["run_command", "launch", "launch_command", "preflight", "exchange_summary"]


def run_command(argv: Sequence[str], cluster: Cluster, body: Callable[[Callable[[str], str] | None], None],
                device: Callable[[], str], interrupts: Callable[[], contextlib.AbstractContextManager]
                = contextlib.nullcontext) -> int:
    """Run ``harms <argv>`` (already checked; ``cluster`` its settings) as this process's part of the
    run and return the exit status (0; errors are raised as one-line errors).

    ``body(device)`` runs the subcommand, with ``device`` mapping ``--device`` to this worker's device
    (None: unchanged); ``device()`` is the device of the command (called only for a run of several
    processes); ``interrupts()`` is the block within which SIGTERM interrupts the launch as Ctrl-C.

    - In a worker of a launched run (:func:`helpers.distributed.worker.is_worker`): ``body`` as that
      worker (:func:`helpers.distributed.worker.run_worker`).
    - On a machine of a run of several processes: this machine's workers (:func:`launch`), then one
      line on their exchanges on stderr (and, on a machine of rank > 0, that machine 0 writes the
      outputs).
    - Otherwise ``body(None)`` in this process."""
    if worker.is_worker():        # one process of a run started by launch()
        return worker.run_worker(lambda: body(worker.worker_device), device=device())
    if cluster.distributed:
        with interrupts():
            spent = launch(argv, cluster, device())
        print(f"harms: {spent}", file=sys.stderr)
        if cluster.machine_rank:
            print(f"harms: machine rank {cluster.machine_rank} computed its share; machine rank 0 "
                  "writes the outputs", file=sys.stderr)
        return 0
    body(None)
    return 0


def preflight(cluster: Cluster) -> None:
    """Fail fast with one line: on machine 0, if the main port is taken; on the others, if the
    main address does not answer (nothing reachable within :data:`UNREACHABLE_AFTER` seconds) or
    nothing listens there within ``$HARMS_CONNECT_TIMEOUT`` seconds (default 60)."""
    if cluster.machines == 1:
        return
    port = cluster.main_port
    if cluster.machine_rank == 0:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("", port))
            except OSError as exc:
                raise HarmsError(f"--main-port {port} is in use on this machine ({exc.strerror or exc}); "
                                 "choose a free port and give it to every machine") from None
        return
    timeout = env_seconds(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)
    start = time.monotonic()
    answered = False
    last = ""
    while True:
        try:
            with socket.create_connection((cluster.main_ip, port), timeout=2.0):
                pass
            return _check_store(cluster.main_ip, port)
        except socket.gaierror as exc:
            raise HarmsError(f"--main-ip {cluster.main_ip!r} is not a known host ({exc.strerror or exc})") from None
        except ConnectionRefusedError:
            answered = True                  # the host is up; machine 0 has not opened the port yet
            last = "connection refused"
        except OSError as exc:
            last = exc.strerror or type(exc).__name__
            if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
                answered = False
        waited = time.monotonic() - start
        if not answered and waited >= min(UNREACHABLE_AFTER, timeout):
            raise HarmsError(f"cannot reach the main machine at {cluster.main_ip}:{port} ({last} for "
                             f"{waited:.0f} s); check --main-ip and that the machines can reach each other")
        if waited >= timeout:
            raise HarmsError(f"nothing listens at {cluster.main_ip}:{port} after {waited:.0f} s ({last}); "
                             "start machine rank 0 with the same --main-port (or raise $"
                             f"{CONNECT_TIMEOUT_ENV})")
        time.sleep(0.5)


#: The rendezvous store's client handshake, in a process of its own: torch's C++ client logs every
#: retry with its stack frames on file descriptor 2, which a one-line error must not be preceded by.
_HANDSHAKE = ("import datetime, sys, torch.distributed as d; "
              "d.TCPStore(sys.argv[1], int(sys.argv[2]), is_master=False, "
              "timeout=datetime.timedelta(seconds=float(sys.argv[3])))")


def _check_store(ip: str, port: int, seconds: float = 10.0) -> None:
    """Whether what listens at ``ip:port`` is a torch rendezvous store (machine 0's launch), not
    some other service on that port: a store client's handshake within ``seconds``, in a child
    process whose standard error is read, not shown (the last line of its error names the cause)."""
    try:
        res = subprocess.run([sys.executable, "-c", _HANDSHAKE, ip, str(port), str(seconds)], capture_output=True,
                             text=True, timeout=seconds + 30, env=dict(os.environ, TORCH_CPP_LOG_LEVEL="ERROR"))
    except subprocess.TimeoutExpired:
        why = f"no answer in {seconds:.0f} s"
    else:
        if res.returncode == 0:
            return
        last = next((ln for ln in reversed(res.stderr.splitlines()) if ln.strip()), "")
        why = " ".join(last.split(": ", 1)[-1].split())[:100] or f"the handshake exited with {res.returncode}"
    raise HarmsError(f"what listens at {ip}:{port} is not machine 0's harms launch (no rendezvous store "
                     f"answered: {why}); check --main-ip and --main-port")


def launch_command(argv: Sequence[str], cluster: Cluster, device: str) -> list[str]:
    """The ``accelerate launch`` command line that runs ``harms <argv>`` on this machine's processes."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
           "--num_processes", str(cluster.world_size), "--num_machines", str(cluster.machines),
           "--machine_rank", str(cluster.machine_rank), "--mixed_precision", "no", "--dynamo_backend", "no"]
    if cluster.machines > 1:
        cmd += ["--main_process_ip", cluster.main_ip, "--main_process_port", str(cluster.main_port),
                "--rdzv_conf", f"timeout={int(join_timeout()) + int(EXIT_GRACE)}"]
    else:
        cmd += ["--main_process_port", str(_free_port())]
    if not device.startswith("cuda"):
        threads = max(1, (os.cpu_count() or 1) // cluster.processes)
        cmd += ["--num_cpu_threads_per_process", str(threads)]
    return cmd + ["-m", "helpers", *argv]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(argv: Sequence[str], cluster: Cluster, device: str = "cpu") -> str:
    """Run ``harms <argv>`` as this machine's ``cluster.processes`` workers of the run and wait for
    them. Returns, when they have finished, one line on what their exchanges cost
    (:func:`exchange_summary`); raises the first worker's error as the same one-line error (a dead
    process on another machine: :class:`PeerStopped` naming it)."""
    cluster.check()
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise HarmsError(f"data-parallel scoring runs on cpu or cuda, not {device!r}")
    preflight(cluster)
    root = paths.cache_dir() / "parallel"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HarmsError(f"cannot write the parallel job directory in {root}: "
                         f"{exc.strerror or exc}; set HARMS_CACHE_DIR to a writable directory") from None
    remove_stale_temporaries(root)          # status directories of killed launchers (of this host)
    status = temporary_path(root / "status")
    status.mkdir()
    env = dict(os.environ, **{STATUS_ENV: str(status), CLUSTER_ENV: json.dumps(asdict(cluster))})
    proc = subprocess.Popen(launch_command(argv, cluster, device), env=env, start_new_session=True,
                            preexec_fn=functools.partial(_ended_with, os.getpid()), stderr=subprocess.PIPE)
    relay = _Relay(proc.stderr)
    try:
        if not _wait(proc, status, cluster.processes, join_timeout() if cluster.machines > 1 else None):
            relay.mute()
            _stop(proc, signal.SIGTERM)
            raise HarmsError(_not_joined(cluster))
        reports = [json.loads(p.read_text()) for p in sorted(status.glob("rank-*.json"))]
        failed = [r for r in reports if not r["ok"]]
        failed.sort(key=lambda r: (r["type"] == "PeerStopped", r["rank"]))   # a cause before its echoes
        if failed or len(reports) < cluster.processes:
            relay.mute()                     # torch's and Accelerate's logs of the failure stay off the terminal
        if failed:
            cls = getattr(errors, failed[0]["type"], None) or globals().get(failed[0]["type"])
            if isinstance(cls, type) and issubclass(cls, HarmsError):
                raise cls(failed[0]["message"])
            raise HarmsError(failed[0]["message"])
        if len(reports) < cluster.processes:
            raise HarmsError(f"{cluster.processes - len(reports)} of this machine's {cluster.processes} "
                             f"processes stopped without finishing (accelerate launch exited with "
                             f"{proc.returncode}); rerun the same command on every machine to resume from "
                             "the score cache")
        return exchange_summary([r["exchange"] for r in reports], cluster.world_size)
    except KeyboardInterrupt:
        relay.mute()
        _stop(proc, signal.SIGINT)
        raise
    finally:
        if proc.poll() is None:
            relay.mute()
            _stop(proc, signal.SIGTERM)
        relay.close()
        shutil.rmtree(status, ignore_errors=True)


def _ended_with(parent: int) -> None:
    """In the launch's child, before it runs: SIGTERM when ``parent`` (the ``harms`` that started it)
    dies, however it dies (``kill -9`` too; Linux's parent-death signal), so its workers stop with it
    and the other machines see a dead machine instead of one that goes on scoring alone. Elsewhere
    nothing."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)          # PR_SET_PDEATHSIG
        if os.getppid() != parent:                       # the parent died before the call
            os.kill(os.getpid(), signal.SIGTERM)


def exchange_summary(exchanges: Sequence[dict], processes: int) -> str:
    """One line on this machine's processes' exchanges: rounds, texts in the jobs, seconds in the
    collectives (sending) and seconds waiting for the other processes (the slowest share sets it)."""
    if not exchanges:
        return ""
    worst = max(exchanges, key=lambda e: e["transfer_seconds"] + e["wait_seconds"])
    return (f"{processes} processes exchanged {worst['rounds']} times over {worst['texts']:,} texts to score: "
            f"{worst['transfer_seconds']:.2f} s sending, {worst['wait_seconds']:.1f} s waiting for the others")


def join_timeout() -> float:
    """Seconds every machine waits for the run's process group to form (each machine's workers to
    join): ``$HARMS_CONNECT_TIMEOUT``, the same bound as a machine's wait for the main machine."""
    return env_seconds(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)


def _not_joined(cluster: Cluster) -> str:
    """The one line of a run whose machines did not all join within :func:`join_timeout`."""
    others = [r for r in range(cluster.machines) if r != cluster.machine_rank]
    which = (f"machine rank {others[0]} did not" if len(others) == 1 else
             f"not every one of machine ranks {', '.join(map(str, others))} did")
    return (f"the run's process group did not form within {join_timeout():.0f} s: this machine (rank "
            f"{cluster.machine_rank}) started, {which}; start every machine with the same --machines, "
            f"--main-ip and --main-port (or raise ${CONNECT_TIMEOUT_ENV})")


def _wait(proc: subprocess.Popen, status: Path, local: int, join: float | None = None) -> bool:
    """Until the launch exits, or every local worker has reported and :data:`EXIT_GRACE` has passed
    (torchrun's exit barrier waits minutes for a dead machine's agent). False when ``join`` seconds
    pass before any local worker has joined the process group (its ``joined-*`` file)."""
    reported_at, started = None, time.monotonic()
    while proc.poll() is None:
        if len(list(status.glob("rank-*.json"))) >= local:
            reported_at = reported_at or time.monotonic()
            if time.monotonic() - reported_at > EXIT_GRACE:
                _stop(proc, signal.SIGTERM)
                return True
        elif join is not None and time.monotonic() - started > join and not any(status.glob("joined-*")):
            return False
        time.sleep(POLL_SECONDS)
    return True


#: Lines of torch's C++ log (``[W1129 02:18:32.42 TCPStore.cpp:340] ...``) and of its stack frames.
_TORCH_LOG = re.compile(rb"^(\[[WEI]\d{4} \d\d:\d\d:\d\d|frame #\d+:|Exception raised from )")


class _Relay:
    """The launch's standard error passed on to this process's, as it comes (progress bars' carriage
    returns kept), without torch's C++ log lines; :meth:`mute` stops it on a failure path, whose
    one-line error is the whole message."""

    def __init__(self, pipe):
        self.pipe, self.muted = pipe, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        out = getattr(sys.stderr, "buffer", None)
        pending = b""
        while chunk := os.read(self.pipe.fileno(), 65536):
            if self.muted.is_set():
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not _TORCH_LOG.match(line.lstrip(b"\r")))
            if pending and not _TORCH_LOG.match(pending.lstrip(b"\r")) and pending.endswith(b"\r"):
                kept, pending = kept + pending, b""           # a progress bar's update: shown now
            self._write(out, kept)
        if pending and not self.muted.is_set() and not _TORCH_LOG.match(pending):
            self._write(out, pending)

    @staticmethod
    def _write(out, data: bytes) -> None:
        if not data:
            return
        if out is not None:
            out.write(data)
            out.flush()
        else:
            sys.stderr.write(data.decode(errors="replace"))
            sys.stderr.flush()

    def mute(self) -> None:
        self.muted.set()

    def close(self) -> None:
        self.thread.join(timeout=EXIT_GRACE)
        self.pipe.close()


def _stop(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=EXIT_GRACE)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
