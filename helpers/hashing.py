"""The package's one SHA-256 helper: of bytes, text, files (memoised) and JSON-able settings.

Every checksum and cache key of the package comes from here, so two places can never
disagree on how a thing is hashed:

- :func:`sha256_bytes`, :func:`sha256_text` (UTF-8): plain hex digests;
- :func:`sha256_file`: streamed, memoised in ``cache_dir()/fingerprints.json`` under what no
  copy of another file can keep (see :func:`file_key`), so a damaged or replaced file is
  hashed again even when a copy preserved its size and modification time;
- :func:`canonical_json` and :func:`sha256_json`: a stable digest of a dict of settings
  (sorted keys, no whitespace), used for cache keys.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from helpers import paths
from helpers.tables import atomic_write

__all__ = ["sha256_bytes", "sha256_text", "sha256_file", "file_key", "canonical_json", "sha256_json", "sha256_frame"]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(obj) -> str:
    """One spelling of a JSON-able object: sorted keys, no spaces, non-JSON values via ``str``."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_json(obj) -> str:
    """SHA-256 of :func:`canonical_json` of ``obj`` (cache keys, configuration keys)."""
    return sha256_text(canonical_json(obj))


def sha256_frame(df) -> str:
    """SHA-256 of a DataFrame's columns, index and values: its CSV, in which pandas writes every
    float round-trippably (list cells as their repr); the key of results computed from a table."""
    return sha256_text(df.to_csv())


def _store() -> Path:
    return paths.cache_dir() / "fingerprints.json"


_SAMPLE = 1 << 16


def file_key(path: str | Path) -> str:
    """What :func:`sha256_file` remembers a digest under: the resolved path, size, modification
    time, change time (``st_ctime_ns``: set by the kernel at every write or metadata change,
    which no copy can carry over), device and inode, and the SHA-256 of the first, middle and
    last 64 KiB. A checkpoint of the same shape copied over the old one with its mtime kept
    (``cp -p``, ``rsync -t``, ``tar x``) changes the change time or the inode, and its bytes."""
    f = Path(path)
    st = f.stat()
    h = hashlib.sha256()
    with f.open("rb") as fh:
        for at in sorted({0, max(0, st.st_size // 2 - _SAMPLE // 2), max(0, st.st_size - _SAMPLE)}):
            fh.seek(at)
            h.update(fh.read(_SAMPLE))
    return (f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{st.st_dev}|{st.st_ino}|"
            f"{h.hexdigest()[:16]}")


def sha256_file(path: str | Path, *, memoise: bool = True) -> str:
    """SHA-256 of a file's bytes, streamed in 1 MiB blocks.

    With ``memoise`` (default) the digest is remembered in ``cache_dir()/fingerprints.json``
    under :func:`file_key`, so a multi-GB weight file is read once, not at every load, and a
    file replaced or rewritten in any way is hashed again. A cache directory that cannot be
    written only costs a re-hash next time.
    """
    f = Path(path)
    key = file_key(f)
    known: dict = {}
    if memoise:
        try:
            known = json.loads(_store().read_text())
        except (OSError, ValueError):
            known = {}
        if isinstance(known, dict) and key in known:
            return known[key]
    h = hashlib.sha256()
    with f.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    if memoise:
        known = known if isinstance(known, dict) else {}
        known[key] = digest
        try:
            atomic_write(_store(), json.dumps(known, indent=0), durable=False)
        except OSError:
            pass
    return digest

