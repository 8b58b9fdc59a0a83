"""helpers.cache: hits, resume after an interruption, corrupt files, key separation, adaptive
chunks (a fake clock), Ctrl-C accounting, unwritable directories, leftovers of killed writers."""

from __future__ import annotations

import errno
import json
import math
import multiprocessing as mp
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from helpers import cache, tables
from helpers.errors import HarmsError, InputError, Interrupted

KEY = {"model": "tiny", "fingerprint": "abc", "objective": "causal", "pll": "original"}


def fake_score(text: str) -> tuple[int, float]:
    """An independent deterministic 'model': tokens = words, ll = -(sum of word lengths)/3."""
    words = text.split()
    return len(words), -sum(len(w) for w in words) / 3.0


class Counter:
    """compute() that records every text it is asked to score; optionally fails after k calls."""

    def __init__(self, fail_after_calls: int | None = None):
        self.calls: list[list[str]] = []
        self.fail_after_calls = fail_after_calls

    def __call__(self, texts):
        if self.fail_after_calls is not None and len(self.calls) >= self.fail_after_calls:
            raise KeyboardInterrupt("simulated kill")
        self.calls.append(list(texts))
        rows = [fake_score(t) for t in texts]
        return pd.DataFrame({"n_tokens": [r[0] for r in rows], "log_likelihood": [r[1] for r in rows]})

    @property
    def texts(self):
        return [t for c in self.calls for t in c]


def sentences(n, prefix="s"):
    return [f"{prefix} sentence number {i} " + "x" * (i % 7) for i in range(n)]


def expected(texts):
    n = np.array([fake_score(t)[0] for t in texts])
    ll = np.array([fake_score(t)[1] for t in texts])
    return n, ll, np.exp(-ll / n)


def chunk_files(key=KEY):
    return sorted(cache.key_dir(key).glob("chunk-*.json"))


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARMS_CACHE_CHUNK_SIZE", raising=False)


def test_values_and_perplexity_match_an_independent_computation():
    texts = sentences(7)
    out = cache.cached_scores(KEY, texts, Counter(), chunk_size=3, progress=False)
    n, ll, ppl = expected(texts)
    assert list(out.columns) == ["n_tokens", "log_likelihood", "perplexity"]
    assert out["n_tokens"].tolist() == n.tolist()
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), ll)
    np.testing.assert_allclose(out["perplexity"].to_numpy(), ppl, rtol=1e-12)
    assert math.isclose(out["perplexity"][2], math.exp(-ll[2] / n[2]))


def test_second_call_is_a_pure_hit_and_layout_is_documented():
    texts = sentences(10)
    first = Counter()
    a = cache.cached_scores(KEY, texts, first, chunk_size=4, progress=False)
    assert len(first.calls) == 3 and sorted(first.texts) == sorted(texts)
    second = Counter()
    b = cache.cached_scores(KEY, texts, second, chunk_size=4, progress=False)
    assert second.calls == []
    pd.testing.assert_frame_equal(a, b)
    d = cache.key_dir(KEY)
    assert d.parent.name == "scores" and len(d.name) == 16
    assert json.loads((d / "key.json").read_text()) == KEY
    assert len(chunk_files()) == 3
    doc = json.loads(chunk_files()[0].read_text())
    assert set(doc) == {"format", "sha256", "rows"}
    assert all(len(h) == 64 for h in doc["rows"])


def test_duplicates_computed_once_and_texts_shared_across_calls():
    texts = sentences(4)
    c1 = Counter()
    out = cache.cached_scores(KEY, texts + texts[::-1] + texts[:1], c1, chunk_size=100, progress=False)
    assert c1.texts == texts                      # each unique text once, first-seen order
    n, ll, _ = expected(texts + texts[::-1] + texts[:1])
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), ll)
    more = sentences(3, prefix="new")
    c2 = Counter()
    out2 = cache.cached_scores(KEY, [texts[2], *more, texts[0]], c2, progress=False)
    assert c2.texts == more                       # texts[2], texts[0] come from the first call's chunk
    np.testing.assert_array_equal(out2["n_tokens"].to_numpy(), expected([texts[2], *more, texts[0]])[0])


def test_resume_after_interruption_computes_only_remaining_chunks():
    texts = sentences(10)
    killed = Counter(fail_after_calls=2)
    with pytest.raises(Interrupted) as info:          # Ctrl-C becomes an exact account, never a traceback
        cache.cached_scores(KEY, texts, killed, chunk_size=3, progress=False)
    assert (info.value.saved, info.value.total) == (6, 10)
    assert killed.texts == texts[:6]
    assert len(chunk_files()) == 2                # the two finished chunks are on disk
    rerun = Counter()
    out = cache.cached_scores(KEY, texts, rerun, chunk_size=3, progress=False)
    assert rerun.texts == texts[6:]
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(texts)[1])


def test_crash_during_write_leaves_no_partial_file(monkeypatch):
    def boom(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(cache.os, "replace", boom)
    with pytest.raises(HarmsError, match="cannot write the score cache.*disk gone"):
        cache.cached_scores(KEY, sentences(3), Counter(), progress=False)
    assert list(cache.key_dir(KEY).glob("chunk-*")) == []
    assert list(cache.key_dir(KEY).glob(".*harms-tmp*")) == []


@pytest.mark.parametrize("damage", ["truncate", "garble-value", "not-json"])
def test_corrupt_chunk_is_detected_deleted_and_recomputed(damage):
    texts = sentences(9)
    cache.cached_scores(KEY, texts, Counter(), chunk_size=3, progress=False)
    files = chunk_files()
    victim = files[1]
    doc = json.loads(victim.read_text())
    victim_hashes = set(doc["rows"])
    raw = victim.read_text()
    if damage == "truncate":
        victim.write_text(raw[: len(raw) // 2])
    elif damage == "garble-value":             # still valid JSON, but the payload no longer matches its sha256
        h = next(iter(doc["rows"]))
        doc["rows"][h][1] += 1.0
        victim.write_text(json.dumps(doc))
    else:
        victim.write_bytes(b"\x00\xff garbage")
    rerun = Counter()
    with pytest.warns(cache.CorruptCacheWarning, match=victim.name):
        out = cache.cached_scores(KEY, texts, rerun, chunk_size=3, progress=False)
    assert {cache.text_hash(t) for t in rerun.texts} == victim_hashes
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(texts)[1])
    again = Counter()
    cache.cached_scores(KEY, texts, again, chunk_size=3, progress=False)
    assert again.calls == []


def test_different_keys_do_not_share():
    texts = sentences(5)
    cache.cached_scores(KEY, texts, Counter(), progress=False)
    other = dict(KEY, pll="word-l2r")
    c = Counter()
    cache.cached_scores(other, texts, c, progress=False)
    assert c.texts == texts
    assert cache.key_dir(other) != cache.key_dir(KEY)
    # key order does not matter (canonical JSON)
    assert cache.key_dir(dict(reversed(list(KEY.items())))) == cache.key_dir(KEY)


def test_disabled_cache_neither_reads_nor_writes(tmp_path):
    texts = sentences(4)
    cache.cached_scores(KEY, texts, Counter(), progress=False)
    c = Counter()
    out = cache.cached_scores(KEY, texts + sentences(2, "z"), c, enabled=False, progress=False)
    assert c.texts == texts + sentences(2, "z")
    assert len(out) == 6 and len(chunk_files()) == 1


def test_chunk_size_from_environment(monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", "2")
    c = Counter()
    cache.cached_scores(KEY, sentences(5), c, progress=False)
    assert [len(x) for x in c.calls] == [2, 2, 1]


def _worker(texts, cache_dir):
    os.environ["HARMS_CACHE_DIR"] = cache_dir
    cache.cached_scores(KEY, texts, Counter(), chunk_size=2, progress=False)


def test_two_processes_fill_one_directory(tmp_path):
    texts = sentences(20)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(part, os.environ["HARMS_CACHE_DIR"]))
             for part in (texts[:12], texts[8:])]      # overlapping shards
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    c = Counter()
    out = cache.cached_scores(KEY, texts, c, progress=False)
    assert c.calls == []
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(texts)[1])
    assert list(cache.key_dir(KEY).glob(".*harms-tmp*")) == []


def test_many_small_chunks_are_compacted_without_loss():
    texts = sentences(cache._COMPACT_ABOVE + 5)
    cache.cached_scores(KEY, texts, Counter(), chunk_size=1, progress=False)
    assert len(chunk_files()) == len(texts)
    c = Counter()
    out = cache.cached_scores(KEY, texts, c, progress=False)
    assert c.calls == [] and len(chunk_files()) == 1
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(texts)[1])


def test_memoize_reuses_detects_corruption_and_separates_keys(tmp_path, monkeypatch):
    import pandas as pd

    from helpers.cache import memoize

    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [1.5, 2.5]}), {"n": len(calls)}

    first = memoize({"model": "a", "k": 1}, compute)
    again = memoize({"k": 1, "model": "a"}, compute)          # key order does not matter
    assert len(calls) == 1 and again[1] == {"n": 1}
    pd.testing.assert_frame_equal(first[0], again[0])
    memoize({"model": "b", "k": 1}, compute)                   # another key: computed
    assert len(calls) == 2
    for f in (tmp_path / "results").glob("*.pkl"):             # garble every stored payload
        raw = f.read_bytes()
        f.write_bytes(raw[:-3] + b"xyz")
    with pytest.warns(cache.CorruptCacheWarning, match="checksum"):
        redone = memoize({"model": "a", "k": 1}, compute)
    assert len(calls) == 3 and redone[1] == {"n": 3}
    assert memoize({"model": "a", "k": 1}, compute)[1] == {"n": 3} and len(calls) == 3
    memoize({"model": "a", "k": 1}, compute, enabled=False)
    assert len(calls) == 4


# ---------------------------------------------------------------- adaptive chunks (a fake clock, no real timing)

class FakeClock:
    """``clock()`` for cached_scores: time moves only when the fake model 'works'."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def timed(clock: FakeClock, seconds_per_sentence) -> Counter:
    """A Counter whose k-th call costs ``seconds_per_sentence(k)`` fake seconds per text."""
    plain = Counter.__call__

    class Timed(Counter):
        def __call__(self, texts):
            clock.now += seconds_per_sentence(len(self.calls)) * len(texts)
            return plain(self, texts)

    return Timed()


def chunk_sizes(counter) -> list[int]:
    return [len(c) for c in counter.calls]


def test_default_chunk_is_32_sentences_when_work_is_fast():
    clock = FakeClock()
    c = timed(clock, lambda k: 0.01)
    out = cache.cached_scores(KEY, sentences(70), c, clock=clock, progress=False)
    assert chunk_sizes(c) == [32, 32, 6] and len(chunk_files()) == 3
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(sentences(70))[1])


@pytest.mark.parametrize("cost,sizes", [
    (2.0, [32, 15, 15, 8]),          # 32 x 2 s = 64 s > 30 s: next chunks hold 30 // 2 = 15
    (100.0, [32, 1, 1, 1, 1, 1]),    # slower than 30 s a sentence: one sentence per store
    (0.9375, [32, 32, 6]),           # 32 x 0.9375 s = exactly 30 s: stays at 32
])
def test_chunks_are_sized_to_store_at_least_every_30_seconds(cost, sizes):
    clock = FakeClock()
    c = timed(clock, lambda k: cost)
    cache.cached_scores(KEY, sentences(sum(sizes)), c, clock=clock, progress=False)
    assert chunk_sizes(c) == sizes
    assert all(n * cost <= cache.SAVE_EVERY_SECONDS or n == 1 for n in sizes[1:])


def test_chunk_size_follows_the_measured_speed_both_ways(monkeypatch):
    monkeypatch.setattr(cache, "SAVE_EVERY_SECONDS", 3.0)      # the budget is a module constant
    clock = FakeClock()
    costs = {0: 1.0, 1: 1.0, 2: 0.01}                           # slow, then fast again, then medium
    c = timed(clock, lambda k: costs.get(k, 0.5))
    cache.cached_scores(KEY, sentences(32 + 3 + 3 + 32 + 6 + 2), c, clock=clock, progress=False)
    # 32 s for 32 -> 3; 3 s for 3 -> 3; 0.03 s for 3 -> 32 (the cap); 16 s for 32 -> 6; 3 s for 6 -> 6
    assert chunk_sizes(c) == [32, 3, 3, 32, 6, 2]


def test_a_model_load_before_the_first_chunk_is_not_timed_so_the_chunks_do_not_depend_on_it():
    """Issue 38: a load timed with the first chunk (a 40-s GGUF conversion inside the first call)
    shrinks the chunks after it, and with them which texts share a batch; ``prepare`` loads before
    the first chunk, untimed, once, and not at all when every text is cached."""
    loads = []

    def load_in_first_call(k):
        return 0.01 + (40.0 / 32 if k == 0 else 0.0)            # 40 s of loading inside the first chunk
    clock = FakeClock()
    c = timed(clock, load_in_first_call)
    cache.cached_scores(KEY, sentences(70), c, clock=clock, progress=False)
    assert chunk_sizes(c) == [32, 23, 15]                       # 40.3 s for 32 -> 23: the load shrank them
    clock2 = FakeClock()
    c2 = timed(clock2, lambda k: 0.01)

    def prepare():
        loads.append(1)
        clock2.now += 40.0
    out = cache.cached_scores({**KEY, "run": 2}, sentences(70), c2, clock=clock2, progress=False, prepare=prepare)
    assert chunk_sizes(c2) == [32, 32, 6] and loads == [1]      # the chunks of a model loaded beforehand
    np.testing.assert_array_equal(out["log_likelihood"].to_numpy(), expected(sentences(70))[1])
    cache.cached_scores({**KEY, "run": 2}, sentences(70), c2, clock=clock2, progress=False, prepare=prepare)
    assert loads == [1]                                         # all cached: nothing loaded


def test_environment_chunk_size_overrides_the_32_and_the_clock_still_applies(monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", "5")
    clock = FakeClock()
    c = timed(clock, lambda k: 0.0)
    cache.cached_scores(KEY, sentences(12), c, clock=clock, progress=False)
    assert chunk_sizes(c) == [5, 5, 2]
    clock2 = FakeClock()
    c2 = timed(clock2, lambda k: 10.0)
    cache.cached_scores(KEY, sentences(9, "slow"), c2, clock=clock2, progress=False)
    assert chunk_sizes(c2) == [5, 3, 1]


@pytest.mark.parametrize("value", ["abc", "0", "-3", "2.5", "32 sentences"])
def test_bad_chunk_size_environment_is_one_input_error_line(monkeypatch, value):
    monkeypatch.setenv("HARMS_CACHE_CHUNK_SIZE", value)
    c = Counter()
    with pytest.raises(InputError) as info:
        cache.cached_scores(KEY, sentences(3), c, progress=False)
    msg = str(info.value)
    assert "HARMS_CACHE_CHUNK_SIZE" in msg and repr(value) in msg and "\n" not in msg
    assert c.calls == []


# ---------------------------------------------------------------- Ctrl-C: an exact account of what is saved

def test_interrupt_counts_sentences_found_at_start_plus_stored_this_run():
    texts = sentences(10)
    cache.cached_scores(KEY, texts[:3] + sentences(2, "other"), Counter(), chunk_size=2, progress=False)
    killed = Counter(fail_after_calls=2)
    with pytest.raises(Interrupted) as info:
        cache.cached_scores(KEY, texts + texts[:4], killed, chunk_size=2, progress=False)
    on_disk = {h for f in chunk_files() for h in json.loads(f.read_text())["rows"]}
    saved = len(on_disk & {cache.text_hash(t) for t in texts})
    assert saved == 3 + 4 and (info.value.saved, info.value.total) == (7, 10)
    assert str(info.value) == (f"interrupted: 7 of 10 sentences are saved in the score cache "
                               f"({cache.key_dir(KEY)}); rerun the same command to resume")


def test_interrupt_right_after_a_chunk_was_written_counts_that_chunk(monkeypatch):
    real = cache._write_chunk
    writes = []

    def write_then_ctrl_c(directory, rows):
        path = real(directory, rows)
        writes.append(path)
        if len(writes) == 2:
            raise KeyboardInterrupt         # after os.replace, before cached_scores saw the return
        return path

    monkeypatch.setattr(cache, "_write_chunk", write_then_ctrl_c)
    with pytest.raises(Interrupted, match=r"^interrupted: 6 of 9 sentences are saved") as info:
        cache.cached_scores(KEY, sentences(9), Counter(), chunk_size=3, progress=False)
    assert info.value.saved == 6 and len(chunk_files()) == 2


def test_interrupt_with_the_cache_off_says_nothing_was_saved():
    with pytest.raises(Interrupted) as info:
        cache.cached_scores(KEY, sentences(5), Counter(fail_after_calls=1), chunk_size=2, enabled=False,
                            progress=False)
    assert str(info.value) == "interrupted: nothing was saved (the score cache is off)"
    assert (info.value.saved, info.value.total) == (0, 5)
    assert not cache.key_dir(KEY).exists()


# ---------------------------------------------------------------- unwritable or full cache directory

def _disk_full(monkeypatch, when=lambda path: True):
    real = cache.atomic_write

    def full(path, data, **kw):
        if when(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, data, **kw)

    monkeypatch.setattr(cache, "atomic_write", full)


def _one_line(exc, *fragments):
    msg = str(exc)
    assert "\n" not in msg and isinstance(exc, HarmsError)
    for f in fragments:
        assert f in msg, (f, msg)


def test_full_disk_is_one_error_line_for_scores_and_results(monkeypatch):
    _disk_full(monkeypatch, when=lambda path: os.path.basename(path).startswith("chunk-"))
    with pytest.raises(HarmsError) as info:
        cache.cached_scores(KEY, sentences(3), Counter(), progress=False)
    _one_line(info.value, f"cannot write the score cache in {cache.key_dir(KEY)}: ",
              os.strerror(errno.ENOSPC), "set HARMS_CACHE_DIR to a writable directory or pass --no-cache")
    _disk_full(monkeypatch)
    with pytest.raises(HarmsError) as info:
        cache.memoize({"m": 1}, lambda: 42)
    _one_line(info.value, "cannot write the result cache in ", os.strerror(errno.ENOSPC), "HARMS_CACHE_DIR")


def test_cache_dir_below_a_regular_file_is_one_error_line(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HARMS_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(HarmsError) as info:
        cache.cached_scores(KEY, sentences(3), Counter(), progress=False)
    _one_line(info.value, f"cannot write the score cache in {blocker / 'cache'}", "--no-cache")
    with pytest.raises(HarmsError) as info:
        cache.memoize({"m": 1}, lambda: 42)
    _one_line(info.value, f"cannot write the result cache in {blocker / 'cache'}")
    assert cache.cached_scores(KEY, sentences(3), Counter(), enabled=False, progress=False).shape == (3, 3)


def test_memoize_treats_an_unpicklable_file_like_a_corrupt_one(tmp_path):
    key = {"model": "a", "k": 2}
    cache.memoize(key, lambda: "first")
    [path] = (tmp_path / "cache" / "results").glob("*.pkl")
    payload = b"cno_such_module_xyz\nThing\n."                 # a class that no longer exists
    path.write_bytes(tables_digest(payload) + b"\n" + payload)   # checksum is right
    with pytest.warns(cache.CorruptCacheWarning, match="does not unpickle"):
        assert cache.memoize(key, lambda: "recomputed") == "recomputed"
    assert cache.memoize(key, lambda: "never") == "recomputed"


def tables_digest(payload: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(payload).hexdigest().encode("ascii")


# ---------------------------------------------------------------- leftovers of killed writers

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_temporaries_of_killed_writers_are_removed_at_the_next_run():
    texts = sentences(4)
    cache.cached_scores(KEY, texts[:2], Counter(), progress=False)
    d = cache.key_dir(KEY)
    dead = d / f".chunk-0123.json.harms-tmp-{_dead_pid()}-0badc0de.json"
    live = d / f".chunk-4567.json.harms-tmp-{os.getppid()}-0123abcd.json"      # a running writer's
    dead.write_text('{"half": ')
    live.write_text('{"half": ')
    c = Counter()
    cache.cached_scores(KEY, texts, c, progress=False)                          # fresh files, any age
    assert c.texts == texts[2:]
    assert not dead.exists() and live.exists()
    assert tables.remove_stale_temporaries(d) == 0


def test_frame_hash_changes_with_any_value_and_only_then():
    from helpers.hashing import sha256_frame

    df = pd.DataFrame({"id": [0, 1], "perplexity": [0.1 + 0.2, 1 / 3], "target_groups": [["women"], ["jewish", "women"]]})
    assert sha256_frame(df) == sha256_frame(df.copy())
    nudged = df.assign(perplexity=[np.nextafter(0.1 + 0.2, 1.0), 1 / 3])          # one ulp
    assert sha256_frame(nudged) != sha256_frame(df)
    assert sha256_frame(df.assign(target_groups=[["women"], ["jewish"]])) != sha256_frame(df)
    assert sha256_frame(df[["perplexity", "id", "target_groups"]]) != sha256_frame(df)


def test_two_hosts_temporaries_in_one_cache_folder_are_not_reaped_by_each_other(tmp_path, monkeypatch):
    """A shared cache (NFS): host b's temporary with a pid that is dead *here* is b's business
    until it is older than the foreign TTL; host a's own dead-pid temporary goes at once; a
    name from before hosts were named counts as this host's."""
    monkeypatch.setenv("HARMS_HOST_ID", "a")
    mine = tables.temporary_path(tmp_path / "chunk-1.json")
    assert mine.name.startswith(f".chunk-1.json.harms-tmp-{os.getpid()}@a-") and mine.suffix == ".json"
    dead = _dead_pid()
    ours_dead = tmp_path / mine.name.replace(f"-{os.getpid()}@", f"-{dead}@")
    theirs = tmp_path / f".chunk-2.json.harms-tmp-{dead}@b-0123abcd.json"
    legacy = tmp_path / f".chunk-3.json.harms-tmp-{dead}-0badc0de.json"
    for p in (ours_dead, theirs, legacy):
        p.write_text("{}")
    assert tables.remove_stale_temporaries(tmp_path) == 2
    assert theirs.exists() and not ours_dead.exists() and not legacy.exists()
    old = time.time() - tables.FOREIGN_TEMPORARY_TTL - 60
    os.utime(theirs, (old, old))                                     # b's leftover, days old
    assert tables.remove_stale_temporaries(tmp_path) == 1 and not theirs.exists()
    monkeypatch.setenv("HARMS_HOST_ID", "node-07.cluster")
    assert tables.host_id() == "node_07_cluster"                     # no '-' or '.': the name parses
    assert tables._TMP.match(tables.temporary_path(tmp_path / "x.csv").name)["host"] == "node_07_cluster"


_SAME_CHUNK = """
import os, sys
from pathlib import Path
from helpers import cache
directory, go = Path(sys.argv[1]), Path(sys.argv[2])
rows = {f"{i:064x}": [i % 7 + 1, -1.5 * i] for i in range(2000)}       # a large chunk: a long write
while not go.exists():
    pass
for _ in range(20):
    cache._write_chunk(directory, rows)
"""


def test_two_hosts_writing_the_same_chunk_at_once_leave_one_correct_copy(tmp_path):
    """Two processes with different host names (a shared cache over NFS) write the same chunk
    over and over at the same moment: one chunk file remains, it passes its checksum, and no
    temporary is left (the name is the content's checksum and every write is an atomic rename)."""
    directory, go = tmp_path / "scores" / "key", tmp_path / "go"
    directory.mkdir(parents=True)
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    procs = [subprocess.Popen([sys.executable, "-c", _SAME_CHUNK, str(directory), str(go)],
                              env={**os.environ, "PYTHONPATH": root, "HARMS_HOST_ID": host})
             for host in ("a", "b")]
    go.touch()                                        # both start writing together
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    files = sorted(p.name for p in directory.iterdir())
    assert len(files) == 1 and files[0].startswith("chunk-")
    rows = cache._read_chunk(directory / files[0])
    assert rows == {f"{i:064x}": [i % 7 + 1, -1.5 * i] for i in range(2000)}
