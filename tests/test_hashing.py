"""helpers.hashing.sha256_file's memo (issue 24, wrong number 3): a weight file replaced by one of
the same size and modification time (``cp -p``, ``rsync -t``, ``tar x``) must be hashed again, so
cached scores are never reused for other weights. Checked against hashlib on the file's bytes."""

from __future__ import annotations

import hashlib
import os
import shutil

import numpy as np
import pytest

from helpers import hashing, models
from helpers.lm import scoring

from conftest import SENTENCES


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _overwrite_keeping_times(path, data: bytes) -> None:
    """Write ``data`` over ``path`` in place (same inode) and put its times back, as ``cp -p``
    does; then wait until the kernel's change time has moved on from the old one (it always
    does: a condition, not a delay), so the test also covers the change time alone."""
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    while path.stat().st_ctime_ns == st.st_ctime_ns:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_size == st.st_size


@pytest.fixture
def private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_hashed_again(private_cache):
    rng = np.random.default_rng(0)
    f = private_cache / "weights.bin"
    f.write_bytes(rng.bytes(3 << 20))
    assert hashing.sha256_file(f) == _digest(f)
    _overwrite_keeping_times(f, rng.bytes(3 << 20))
    assert hashing.sha256_file(f) == _digest(f)          # the old memo key (path, size, mtime) returned the old hash


def test_a_change_outside_the_sampled_bytes_is_caught_by_the_change_time(private_cache):
    f = private_cache / "weights.bin"
    data = bytearray(np.random.default_rng(1).bytes(1 << 20))
    f.write_bytes(bytes(data))
    assert hashing.sha256_file(f) == _digest(f)
    data[1 << 18] ^= 0xFF                                 # a byte in none of the three sampled 64 KiB
    _overwrite_keeping_times(f, bytes(data))
    assert hashing.sha256_file(f) == _digest(f)


def test_a_file_replaced_by_rename_with_its_times_kept_is_hashed_again(private_cache):
    """``tar x`` / ``rsync -t``: a new file (new inode) moved into place with the old times."""
    f, new = private_cache / "weights.bin", private_cache / "incoming.bin"
    data = bytearray(np.random.default_rng(2).bytes(1 << 20))
    f.write_bytes(bytes(data))
    old = hashing.sha256_file(f)
    data[1 << 18] ^= 0xFF
    new.write_bytes(bytes(data))
    st = f.stat()
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, f)
    assert hashing.sha256_file(f) == _digest(f) != old


def test_cached_scores_are_not_reused_after_the_weights_are_copied_over_with_cp_p(private_cache, tiny_gpt2,
                                                                                    tiny_gpt2_bos):
    """The issue's case: the rerun returned the old weights' scores (off by 2.09 on a tiny model).
    Two tiny GPT-2s of the same shape; the second's weights copied over the first's with
    ``shutil.copy2`` (content, then mtime: ``cp -p``)."""
    d = private_cache / "model"
    shutil.copytree(tiny_gpt2, d)
    texts = SENTENCES[:4]
    first = scoring.score(models.lazy(d), texts, progress=False)["log_likelihood"].to_numpy()
    other = private_cache / "other"
    shutil.copytree(tiny_gpt2, other)
    import torch
    from transformers import AutoModelForCausalLM

    m = AutoModelForCausalLM.from_pretrained(other)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn_like(p, generator=torch.Generator().manual_seed(3)))
    m.save_pretrained(other)
    assert (other / "model.safetensors").stat().st_size == (d / "model.safetensors").stat().st_size
    st = (d / "model.safetensors").stat()
    shutil.copy2(other / "model.safetensors", d / "model.safetensors")
    os.utime(d / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))   # same size, same mtime
    rerun = scoring.score(models.lazy(d), texts, progress=False)["log_likelihood"].to_numpy()
    fresh = scoring.score(models.load(d), texts, progress=False, cache=False)["log_likelihood"].to_numpy()
    assert np.abs(first - fresh).max() > 0.1                # the weights really differ
    np.testing.assert_allclose(rerun, fresh, atol=1e-5)
