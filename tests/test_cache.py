"""helpers.cache: hits, resume after an interruption, corrupt files, key separation."""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os

import numpy as np
import pandas as pd
import pytest

from helpers import cache

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
    with pytest.raises(KeyboardInterrupt):
        cache.cached_scores(KEY, texts, killed, chunk_size=3, progress=False)
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
    with pytest.raises(OSError):
        cache.cached_scores(KEY, sentences(3), Counter(), progress=False)
    assert list(cache.key_dir(KEY).glob("chunk-*")) == []
    assert list(cache.key_dir(KEY).glob(".tmp-*")) == []


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
    assert list(cache.key_dir(KEY).glob(".tmp-*")) == []


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
