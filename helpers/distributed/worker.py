"""The runtime of one worker process of a run launched by :mod:`helpers.distributed.launch`.

A worker joins the process group (Accelerate's ``PartialState``: gloo on CPU, nccl with one process
per GPU), registers who it is in the rendezvous store and beats a heartbeat counter there each second
(:class:`_World`). Waiting is done on the rendezvous store, never inside a collective: a process that
has finished its share marks it in the store and polls for the others. A process whose heartbeat
stops for :data:`DEAD_AFTER_ENV` seconds (default 30) has died: every other copy stops with one line
naming its machine rank, process and host (:class:`PeerStopped`), and rerunning the same command on
every machine resumes from the score cache. Only process 0 writes the outputs (:func:`is_main`);
whole models can be dealt round-robin between the processes (:func:`mine`, within :func:`alone`,
then :func:`barrier`). :func:`run_worker` runs the command's body and writes this process's status
file (``ok``, or the error's type and one-line message) for the launcher.

transformers' ``save_pretrained`` is patched here, and only here: :func:`_save_on_every_process`,
called by ``_World.__init__`` right after ``PartialState`` has initialised torch.distributed, i.e. in
every worker process of a launched run (:func:`run_worker`) and in no other process. Why: transformers
(>= 5) makes ``save_pretrained`` write nothing, silently, on every process but rank 0 once
torch.distributed is initialised, while here each process makes and saves its own files (a converted
GGUF copy, a zoo model) under a temporary name into the cache.

The launcher and its workers share the run's settings (:class:`Cluster`), defined here and passed
to the workers as JSON in :data:`CLUSTER_ENV`; the launcher imports this module, never the reverse.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from helpers.errors import HarmsError, InputError
from helpers.tables import atomic_write, host_id

STATUS_ENV = "HARMS_WORKER_STATUS"           # set by the launcher: the worker's status directory
CLUSTER_ENV = "HARMS_WORKER_CLUSTER"         # set by the launcher: this machine's launch settings (JSON)
DEAD_AFTER_ENV = "HARMS_DEAD_AFTER"          # seconds without a heartbeat after which a process is dead
DEFAULT_PORT = 29500
DEFAULT_DEAD_AFTER = 30.0
HEARTBEAT_SECONDS = 1.0
POLL_SECONDS = 0.2

__all__ = ["Cluster", "PeerStopped", "env_seconds", "alone", "mine", "barrier", "is_main", "is_worker",
           "run_worker", "worker_device", "world"]


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


def env_seconds(name: str, default: float) -> float:
    """``$name`` as a positive number of seconds, ``default`` when unset; otherwise one InputError line."""
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


class _World:
    """This worker's place in the run: its Accelerate state, rendezvous store and heartbeat."""

    def __init__(self, device: str):
        from accelerate import PartialState
        import torch.distributed as dist

        self.cluster = Cluster(**json.loads(os.environ[CLUSTER_ENV]))
        self.dead_after = env_seconds(DEAD_AFTER_ENV, DEFAULT_DEAD_AFTER)
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
    ``save_pretrained`` saves as its ``is_main_process`` argument says, as it does outside a run.

    The one place ``save_pretrained`` is patched: called by ``_World.__init__`` (so in every worker
    of a launched run, :func:`run_worker`, and in no other process) right after Accelerate's
    ``PartialState`` has initialised torch.distributed; it sets ``PreTrainedModel.should_save_on_this_rank``
    for the rest of the worker's life."""
    try:
        from transformers import PreTrainedModel
    except ImportError:
        return
    if hasattr(PreTrainedModel, "should_save_on_this_rank"):
        PreTrainedModel.should_save_on_this_rank = lambda self, is_main_process: is_main_process


def is_worker() -> bool:
    """Whether this process is one worker of a launched run (:func:`helpers.distributed.launch.launch`)."""
    return bool(os.environ.get(STATUS_ENV))


def world() -> _World | None:
    """This worker's run when it has more than one process, else None (also inside :func:`alone`)."""
    return _world if _world is not None and _world.size > 1 and not _alone else None


@contextlib.contextmanager
def alone():
    """Within, this process computes as if it ran by itself: no exchange
    (:func:`helpers.distributed.split.shard` computes every missing text here, :func:`barrier`
    returns at once). For whole-model work that each
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
        atomic_write(status / f"joined-{rank}", "")       # the process group formed: the launcher stops counting
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
