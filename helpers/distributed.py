"""Scoring split across processes and machines with Hugging Face Accelerate (data parallel, multi-node).

Every ``harms`` command that scores (``score``, ``safety``, ``fill``, ``report``) takes
``--processes N`` (per machine) and ``--machines M --machine-rank R --main-ip IP --main-port P``.
The same command is started once per machine (by hand, or by ``srun`` under Slurm:
docs/SCALING.md). Each starts ``accelerate launch --multi_gpu --num_machines M --machine_rank R
--main_process_ip IP --main_process_port P --num_processes M*N -m helpers <the command>``
(:func:`launch`), so the command runs as M*N copies, one per process: SPMD, like torchrun. The
copies agree at every cached computation (:func:`helpers.cache.cached_rows` calls
:func:`shard`): process 0 broadcasts the job (the cache key, the digest of the request's texts,
each machine's launch settings, and the texts still missing from the shared score cache); a
process started with different settings stops every copy with one line naming the setting; each
process computes a contiguous share of the missing texts (equal in characters,
:func:`share_bounds`) and stores its chunks in the (shared)
score cache as it goes; the rows are then gathered and checked to be computed exactly once.
Work between two cached computations (a bootstrap, a table) is repeated by every copy, and only
process 0 writes the outputs (:func:`is_main`). On CPU the process group is gloo
(``PartialState(cpu=True)``), on CUDA nccl with one process per GPU.

Waiting is done on the rendezvous store, never inside a collective: a process that has finished
its share marks it in the store and polls for the others while every process beats a heartbeat
counter (each second). A process whose heartbeat stops for :data:`DEAD_AFTER_ENV` seconds
(default 30) has died: every other copy stops with one line naming its machine rank, process and
host, and rerunning the same command on every machine resumes from the score cache. Before the
launch, machine 0 checks that its port is free and the other machines that the main address
answers (:func:`preflight`), each one line within seconds.

The launcher learns how its workers ended from status files in a job directory in the cache
(``parallel/.status.harms-tmp-<pid>@<host>-<random>``): one JSON per process of this machine, with
the one-line error of a worker that failed. torchrun's exit barrier waits up to 5 minutes for a
machine that died; once every local worker has reported, the launcher gives the launch
:data:`EXIT_GRACE` seconds and then ends it.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import errno
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from helpers import errors, paths
from helpers.errors import HarmsError, InputError
from helpers.hashing import sha256_json
from helpers.tables import atomic_write, host_id, remove_stale_temporaries, temporary_path

STATUS_ENV = "HARMS_WORKER_STATUS"           # set by the launcher: the worker's status directory
CLUSTER_ENV = "HARMS_WORKER_CLUSTER"         # set by the launcher: this machine's launch settings (JSON)
DEAD_AFTER_ENV = "HARMS_DEAD_AFTER"          # seconds without a heartbeat after which a process is dead
CONNECT_TIMEOUT_ENV = "HARMS_CONNECT_TIMEOUT"  # seconds a machine waits for the main machine to answer
DEFAULT_PORT = 29500
DEFAULT_DEAD_AFTER = 30.0
DEFAULT_CONNECT_TIMEOUT = 60.0
UNREACHABLE_AFTER = 10.0                     # no answer at all (not even "refused") for this long: unreachable
EXIT_GRACE = 10.0
HEARTBEAT_SECONDS = 1.0
POLL_SECONDS = 0.2

__all__ = ["Cluster", "PeerStopped", "launch", "preflight", "shard", "share_bounds", "alone", "mine", "barrier",
           "is_main", "is_worker", "run_worker", "worker_device", "world"]


class PeerStopped(HarmsError):
    """Another process of the run died or failed; this one stops too."""


@dataclass(frozen=True)
class Cluster:
    """Where the processes of one run are: ``machines`` machines with ``processes`` each; this is
    machine ``machine_rank``; machine 0 is reachable at ``main_ip:main_port``."""

    machines: int = 1
    machine_rank: int = 0
    main_ip: str | None = None
    main_port: int = DEFAULT_PORT
    processes: int = 1

    @property
    def world_size(self) -> int:
        return self.machines * self.processes

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def check(self) -> "Cluster":
        """The settings, or one :class:`InputError` line naming the first wrong one."""
        if self.machines < 1 or self.processes < 1:
            raise InputError("--machines and --processes must be at least 1")
        if not 0 <= self.machine_rank < self.machines:
            raise InputError(f"--machine-rank {self.machine_rank} is not one of 0 .. {self.machines - 1} "
                             f"(--machines {self.machines})")
        if self.machines > 1 and not self.main_ip:
            raise InputError("--machines > 1 needs --main-ip, the address of the machine of rank 0")
        if not 1 <= self.main_port <= 65535:
            raise InputError(f"--main-port {self.main_port} is not a port number (1 .. 65535)")
        return self


# --------------------------------------------------------------------------- the launcher's side

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
    timeout = _env_seconds(CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)
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


def _check_store(ip: str, port: int, seconds: float = 10.0) -> None:
    """Whether what listens at ``ip:port`` is a torch rendezvous store (machine 0's launch), not
    some other service on that port: a store client's handshake within ``seconds``."""
    import torch.distributed as dist

    outcome: list = []

    def handshake() -> None:          # torch's client can wait past its timeout on a silent peer: a thread
        try:
            dist.TCPStore(ip, port, is_master=False, timeout=datetime.timedelta(seconds=seconds))
            outcome.append(None)
        except Exception as exc:      # noqa: BLE001 - torch raises several types here
            outcome.append(" ".join(str(exc).split())[:100])

    probe = threading.Thread(target=handshake, daemon=True)
    probe.start()
    probe.join(seconds)
    if outcome[:1] != [None]:
        why = outcome[0] if outcome else f"no answer in {seconds:.0f} s"
        raise HarmsError(f"what listens at {ip}:{port} is not machine 0's harms launch (no rendezvous store "
                         f"answered: {why}); check --main-ip and --main-port")


def _env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InputError(f"${name}={raw!r} is not a positive number of seconds")
    return value


def launch_command(argv: Sequence[str], cluster: Cluster, device: str) -> list[str]:
    """The ``accelerate launch`` command line that runs ``harms <argv>`` on this machine's processes."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
           "--num_processes", str(cluster.world_size), "--num_machines", str(cluster.machines),
           "--machine_rank", str(cluster.machine_rank), "--mixed_precision", "no", "--dynamo_backend", "no"]
    if cluster.machines > 1:
        cmd += ["--main_process_ip", cluster.main_ip, "--main_process_port", str(cluster.main_port)]
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
    proc = subprocess.Popen(launch_command(argv, cluster, device), env=env, start_new_session=True)
    try:
        _wait(proc, status, cluster.processes)
        reports = [json.loads(p.read_text()) for p in sorted(status.glob("rank-*.json"))]
        failed = [r for r in reports if not r["ok"]]
        failed.sort(key=lambda r: (r["type"] == "PeerStopped", r["rank"]))   # a cause before its echoes
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
        _stop(proc, signal.SIGINT)
        raise
    finally:
        if proc.poll() is None:
            _stop(proc, signal.SIGTERM)
        shutil.rmtree(status, ignore_errors=True)


def exchange_summary(exchanges: Sequence[dict], processes: int) -> str:
    """One line on this machine's processes' exchanges: rounds, texts in the jobs, seconds in the
    collectives (sending) and seconds waiting for the other processes (the slowest share sets it)."""
    if not exchanges:
        return ""
    worst = max(exchanges, key=lambda e: e["transfer_seconds"] + e["wait_seconds"])
    return (f"{processes} processes exchanged {worst['rounds']} times over {worst['texts']:,} texts to score: "
            f"{worst['transfer_seconds']:.2f} s sending, {worst['wait_seconds']:.1f} s waiting for the others")


def _wait(proc: subprocess.Popen, status: Path, local: int) -> None:
    """Until the launch exits, or every local worker has reported and :data:`EXIT_GRACE` has passed
    (torchrun's exit barrier waits minutes for a dead machine's agent)."""
    reported_at = None
    while proc.poll() is None:
        if len(list(status.glob("rank-*.json"))) >= local:
            reported_at = reported_at or time.monotonic()
            if time.monotonic() - reported_at > EXIT_GRACE:
                _stop(proc, signal.SIGTERM)
                return
        time.sleep(POLL_SECONDS)


def _stop(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=EXIT_GRACE)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# --------------------------------------------------------------------------- the workers' side

class _World:
    """This worker's place in the run: its Accelerate state, rendezvous store and heartbeat."""

    def __init__(self, device: str):
        from accelerate import PartialState
        import torch.distributed as dist

        self.cluster = Cluster(**json.loads(os.environ[CLUSTER_ENV]))
        self.dead_after = _env_seconds(DEAD_AFTER_ENV, DEFAULT_DEAD_AFTER)
        self.state = PartialState(cpu=not device.startswith("cuda"),
                                  timeout=datetime.timedelta(seconds=max(60.0, 4 * self.dead_after)))
        _save_on_every_process()
        self.rank, self.size = self.state.process_index, self.state.num_processes
        self.dist = dist
        self.round = 0
        self._beats: dict[int, tuple[int, float]] = {}
        self.exchange = {"rounds": 0, "texts": 0, "wait_seconds": 0.0, "transfer_seconds": 0.0}
        addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        self.store = dist.TCPStore(addr, port, is_master=False, timeout=datetime.timedelta(seconds=30))
        beat_store = dist.TCPStore(addr, port, is_master=False, timeout=datetime.timedelta(seconds=30))
        self.prefix = "harms/"
        self.store.set(f"{self.prefix}who/{self.rank}", json.dumps(
            {"machine_rank": self.cluster.machine_rank, "host": host_id(), "pid": os.getpid()}))
        self.store.add(f"{self.prefix}beat/{self.rank}", 1)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, args=(beat_store,), daemon=True)
        self._beat.start()

    def _heartbeat(self, store) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                store.add(f"{self.prefix}beat/{self.rank}", 1)
            except Exception:         # the store (machine 0's launcher) is gone: the waits say so
                return

    def describe(self, rank: int) -> str:
        try:
            who = json.loads(self.store.get(f"{self.prefix}who/{rank}"))
            return f"machine rank {who['machine_rank']} (process {rank}, host {who['host']}, pid {who['pid']})"
        except Exception:
            return f"process {rank} (machine rank {rank // self.cluster.processes})"

    def fail(self, message: str) -> None:
        """Tell the other processes that this one stopped with ``message``."""
        try:
            self.store.set(f"{self.prefix}failed/{self.rank}", message)
            self.store.add(f"{self.prefix}failures", 1)
        except Exception:
            pass

    def wait_for_all(self, what: str) -> None:
        """Mark this process as having reached ``what`` and wait until every process has; a
        process that failed or whose heartbeat stopped raises :class:`PeerStopped` naming it.

        One arrival counter per round, polled every :data:`POLL_SECONDS`; the failure counter and
        every heartbeat are read (two requests) once a :data:`HEARTBEAT_SECONDS`, so the store
        sees O(processes) requests a second, not O(processes²)."""
        began = time.monotonic()
        self.round += 1
        tag = f"{self.prefix}{self.round}-{what}"
        try:
            self.store.set(f"{tag}/{self.rank}", "1")
            self.store.add(f"{tag}/arrived", 1)
            checked = 0.0
            while self.store.add(f"{tag}/arrived", 0) < self.size:
                now = time.monotonic()
                if now - checked >= HEARTBEAT_SECONDS:
                    checked = now
                    self._check_peers(tag, now)
                time.sleep(POLL_SECONDS)
        except PeerStopped:
            raise
        except Exception as exc:      # the store lives in machine 0's launch: machine 0 is gone
            raise PeerStopped(f"lost the main machine (rank 0) at {os.environ.get('MASTER_ADDR')}:"
                              f"{os.environ.get('MASTER_PORT')} ({' '.join(str(exc).split())[:120]}); rerun the "
                              "same command on every machine to resume from the score cache") from None
        finally:
            self.exchange["wait_seconds"] += time.monotonic() - began

    def _check_peers(self, tag: str, now: float) -> None:
        """Raise :class:`PeerStopped` for a process that failed, or that has not reached ``tag``
        and whose heartbeat has not moved for :attr:`dead_after` seconds."""
        if self.store.add(f"{self.prefix}failures", 0):
            for r in range(self.size):
                if self.store.check([f"{self.prefix}failed/{r}"]):
                    raise PeerStopped(f"{self.describe(r)} failed: "
                                      f"{self.store.get(f'{self.prefix}failed/{r}').decode()}")
        keys = [f"{self.prefix}beat/{r}" for r in range(self.size)]
        if self.store.check(keys):
            counts = [int(c) for c in self.store.multi_get(keys)]
        else:                         # a process has not beaten yet: add(key, 0) reads and creates
            counts = [self.store.add(k, 0) for k in keys]
        for r, count in enumerate(counts):
            if r not in self._beats or self._beats[r][0] != count:
                self._beats[r] = (count, now)
            elif now - self._beats[r][1] > self.dead_after and not self.store.check([f"{tag}/{r}"]):
                raise PeerStopped(f"{self.describe(r)} stopped (no heartbeat for {self.dead_after:.0f} s) "
                                  "before finishing its share; rerun the same command on every machine "
                                  "to resume from the score cache")

    def gather(self, obj, what: str) -> list:
        self.wait_for_all(what)
        out = [None] * self.size
        with self._collective(what):
            self.dist.all_gather_object(out, obj)
        return out

    def broadcast(self, obj, what: str):
        self.wait_for_all(what)
        box = [obj if self.rank == 0 else None]
        with self._collective(what):
            self.dist.broadcast_object_list(box, src=0)
        return box[0]

    @contextlib.contextmanager
    def _collective(self, what: str):
        """A collective that every process has reached (:meth:`wait_for_all`) fails only if one
        died in between (gloo: "Connection closed by peer"): one line, as for a heartbeat."""
        began = time.monotonic()
        try:
            yield
            self.exchange["rounds"] += 1
            self.exchange["transfer_seconds"] += time.monotonic() - began
        except Exception as exc:      # noqa: BLE001 - torch raises RuntimeError / DistError here
            raise PeerStopped(f"a process stopped during the exchange of {what} "
                              f"({' '.join(str(exc).split())[:120]}); rerun the same command on every machine "
                              "to resume from the score cache") from None

    def close(self) -> None:
        self._stop.set()
        try:
            self.state.destroy_process_group()
        except Exception:
            pass


_world: _World | None = None
_alone = False               # inside alone(): this process computes as if it ran by itself


def _save_on_every_process() -> None:
    """transformers (>= 5) makes ``save_pretrained`` write nothing, silently, on every process but
    rank 0 once torch.distributed is initialised (``should_save_on_this_rank``): right for training
    one model on many GPUs, wrong here, where each process makes and saves its own files (a
    converted GGUF copy, a zoo model) under a temporary name into the cache. In a harms worker
    ``save_pretrained`` saves as its ``is_main_process`` argument says, as it does outside a run."""
    try:
        from transformers import PreTrainedModel
    except ImportError:
        return
    if hasattr(PreTrainedModel, "should_save_on_this_rank"):
        PreTrainedModel.should_save_on_this_rank = lambda self, is_main_process: is_main_process


def is_worker() -> bool:
    """Whether this process is one worker of a launched run (:func:`launch`)."""
    return bool(os.environ.get(STATUS_ENV))


def world() -> _World | None:
    """This worker's run when it has more than one process, else None (also inside :func:`alone`)."""
    return _world if _world is not None and _world.size > 1 and not _alone else None


@contextlib.contextmanager
def alone():
    """Within, this process computes as if it ran by itself: no exchange (:func:`shard` computes
    every missing text here, :func:`barrier` returns at once). For whole-model work that each
    process does for its own models (:func:`mine`) while the others do theirs, where an exchange
    would wait for processes that never reach it. Results still go to the shared cache."""
    global _alone
    before, _alone = _alone, True
    try:
        yield
    finally:
        _alone = before


def mine(items: Sequence) -> list:
    """The items this process takes when whole items (models) are dealt round-robin between the
    run's processes: item ``i`` to process ``i mod size``; every item outside a run."""
    w = world()
    return list(items) if w is None else [x for i, x in enumerate(items) if i % w.size == w.rank]


def barrier(what: str) -> None:
    """Wait until every process of the run has reached ``what`` (nothing outside a run)."""
    w = world()
    if w is not None:
        w.wait_for_all(what)


def is_main() -> bool:
    """Whether this process writes the outputs: process 0 of a run, or any process outside one."""
    return _world is None or _world.rank == 0


def worker_device(device: str) -> str:
    """The device of this worker: ``cuda`` becomes this process's GPU (``cuda:<local rank>``)."""
    if _world is not None and device == "cuda":
        return f"cuda:{_world.state.local_process_index}"
    return device


def run_worker(body: Callable[[], None], device: str = "cpu") -> int:
    """Run ``body`` as one worker of a launched run: join the process group, run, and write this
    process's status (``ok``, or the error's type and one-line message) for the launcher."""
    global _world
    status = Path(os.environ[STATUS_ENV])
    rank = int(os.environ.get("RANK", "0"))
    report: dict = {"rank": rank, "ok": True}
    try:
        _world = _World(device)
        if _world.rank != 0:
            sys.stdout = open(os.devnull, "w")        # process 0 prints the summary
        body()
        report["exchange"] = _world.exchange
    except BaseException as exc:                        # noqa: BLE001 - reported to the launcher
        if isinstance(exc, HarmsError):
            message = " ".join(str(exc).split())
        elif isinstance(exc, KeyboardInterrupt):
            message = "interrupted"
        else:
            import traceback
            message = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
            traceback.print_exc()
        report = {"rank": rank, "ok": False, "type": type(exc).__name__, "message": message}
        if _world is not None and not isinstance(exc, PeerStopped):
            _world.fail(message)
    finally:
        atomic_write(status / f"rank-{rank}.json", json.dumps(report))
        if _world is not None:
            if report["ok"]:
                try:
                    _world.wait_for_all("end")     # no process leaves while another may still need it
                except PeerStopped:
                    pass
            _world.close()
        _world = None
    return 0


# --------------------------------------------------------------------------- the work split

def shard(key: dict, hashes: Sequence[str], todo: list[tuple[str, str]],
          compute: Callable[[list[tuple[str, str]]], dict[str, list]]) -> dict[str, list]:
    """The rows of ``todo`` (text hash, text) computed across the run's processes.

    Process 0's ``todo`` is the job (another process's view of a shared cache may lag); a process
    whose ``key``, request (``hashes``) or launch settings differ from process 0's stops the run with
    one line naming the difference. Each process computes ``compute(its contiguous share)`` (equal
in characters: :func:`share_bounds`; which
    stores its chunks in the score cache); the gathered rows must cover the job exactly once."""
    w = world()
    if w is None:
        return compute(todo)
    mine = {"key": key, "request": sha256_json(list(hashes)), "launch": asdict(w.cluster)}
    job = w.broadcast({**mine, "todo": todo}, "job")
    verdicts = w.gather(_difference(job, mine), "check")
    for rank, diff in enumerate(verdicts):
        if diff:
            raise InputError(f"{w.describe(rank)} was started with different settings than machine rank 0: "
                             f"{diff}; start every machine with the same command")
    todo = job["todo"]
    w.exchange["texts"] += len(todo)
    start, stop = share_bounds([len(text) + PER_TEXT_CHARACTERS for _, text in todo], w.size)[w.rank]
    rows = compute(todo[start:stop])
    parts = w.gather(rows, "rows")
    merged: dict[str, list] = {}
    twice = 0
    for part in parts:
        twice += sum(1 for h in part if h in merged)
        merged.update(part)
    missing = len({h for h, _ in todo} - set(merged))
    if twice or missing or len(merged) != len(todo):
        raise HarmsError(f"the processes' shares do not cover the job exactly once ({missing} texts missing, "
                         f"{twice} computed twice); rerun the same command")
    return merged


#: What one text costs beyond its characters, in characters: about two special tokens (BOS / EOS,
#: [CLS] / [SEP]) of ~4.5 characters each. Without it a job of many one-word texts (SEAT's, sorted
#: longest first) gave the share of the long texts 1.18x the mean number of tokens on 2 processes
#: and 1.29x on 8; with it 1.01x and 1.05x (benchmarks/bench_shares.py).
PER_TEXT_CHARACTERS = 10


def share_bounds(costs: Sequence[float], parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ``(start, stop)`` ranges covering ``costs`` in order, each as close to
    an equal share of the total cost as a contiguous split allows: range ``k`` ends at the first
    item whose running total reaches ``(k + 1) / parts`` of the total, or just before it when that
    is nearer. The shares' costs then differ from an equal split by at most one item's cost.

    :func:`shard` passes the texts' lengths in characters (plus :data:`PER_TEXT_CHARACTERS`): a job sorted longest first
    (``cached_rows(longest_first=True)``) split into equal counts gave process 0 the longest half.
    Contiguous ranges keep the chunks of similar lengths that the sort was for."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    if any(c < 0 for c in costs):
        raise ValueError("costs must be >= 0")
    running = list(itertools.accumulate(costs, initial=0.0))[1:]       # nondecreasing: costs >= 0
    total = running[-1] if running else 0.0
    bounds, start = [], 0
    for k in range(1, parts):
        target = total * k / parts
        stop = bisect.bisect_left(running, target, start)
        # running[stop] is the first total >= target: end after it, or before it when nearer
        if stop < len(running):
            before = running[stop - 1] if stop > 0 else 0.0
            stop += 1 if running[stop] - target <= target - before else 0
        bounds.append((start, stop))
        start = stop
    bounds.append((start, len(running)))
    return bounds


def _difference(job: dict, mine: dict) -> str:
    """'' when ``mine`` matches process 0's ``job``, else what differs, in words."""
    a, b = job["launch"], mine["launch"]
    field = next((k for k in a if k != "machine_rank" and a[k] != b[k]), None)   # each machine has its own rank
    if field:
        return f"--{field.replace('_', '-')} {b[field]} instead of {a[field]}"
    if job["key"] != mine["key"]:
        a, b = _flat(job["key"]), _flat(mine["key"])
        fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return "; ".join(f"{k} {b.get(k)!r} instead of {a.get(k)!r}" for k in fields[:3])
    if job["request"] != mine["request"]:
        return "a different list of texts (input file, sample, seed or data set)"
    return ""


def _flat(d: dict, prefix: str = "") -> dict:
    """A nested cache key as {"model.sha256": ..., "pll": ...}, to name the setting that differs."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
