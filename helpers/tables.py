"""Reading input tables, writing result tables, atomic writes and their temporaries.

Input: CSV, JSON (a list of objects), JSONL or Parquet with a text column.
Output: CSV or Parquet, chosen by extension (checked before any work with
:func:`check_writable`). Every problem with an input file
is one :class:`~helpers.errors.InputError` naming the file, the row (as the user
sees it: 1-based data row, or the line of a JSONL file) and the problem.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import shutil
import sys
import time
import uuid
from pathlib import Path

import pandas as pd

from helpers.errors import InputError

READ_FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
                ".parquet": "parquet", ".pq": "parquet"}
WRITE_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}

__all__ = ["read_table", "read_records", "write_table", "check_writable", "join_list_columns", "text_table",
           "print_csv", "atomic_write", "atomic_path", "temporary_path",
           "remove_stale_temporaries", "pid_alive", "host_id"]


# --------------------------------------------------------------------------- atomic writes

_TMP = re.compile(r"^\.(?P<name>.+)\.harms-tmp-(?P<pid>\d+)(?:@(?P<host>[A-Za-z0-9_]+))?-[0-9a-f]{8}"
                  r"(?P<suffix>\.[^.]*)?$")
#: How old another host's temporary must be before this host removes it: its pid means nothing
#: here, so only age can say it was left behind (a shared cache on NFS; clocks may differ by minutes).
FOREIGN_TEMPORARY_TTL = 3 * 24 * 3600.0


def host_id() -> str:
    """This machine's name in temporary names: ``HARMS_HOST_ID``, else the host name, letters,
    digits and ``_`` only (at most 40)."""
    import socket

    raw = os.environ.get("HARMS_HOST_ID") or socket.gethostname() or "host"
    return re.sub(r"[^A-Za-z0-9_]", "_", raw)[:40] or "host"


def temporary_path(path: str | Path) -> Path:
    """A fresh temporary name beside ``path``: ``.<name>.harms-tmp-<pid>@<host>-<random><suffix>``.

    Same directory (so ``os.replace`` is atomic), the writer's pid and host inside (so a later run
    can tell a leftover of a killed process from the work of a live one, and a temporary of
    another machine sharing the directory from its own: see :func:`remove_stale_temporaries`),
    the original suffix kept (libraries that choose a format by extension still see ``.csv``,
    ``.parquet`` ...). Works for directories too.
    """
    path = Path(path)
    return path.parent / f".{path.name}.harms-tmp-{os.getpid()}@{host_id()}-{uuid.uuid4().hex[:8]}{path.suffix}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (ours always is; one we may not signal counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temporaries(directory: str | Path, *, older_than: float = 0.0,
                             foreign_older_than: float = FOREIGN_TEMPORARY_TTL) -> int:
    """Delete the temporaries (files or directories named by :func:`temporary_path`) that a
    killed process left in ``directory``: this host's whose writer pid is no longer running (and
    that are older than ``older_than`` seconds), and another host's only when older than
    ``foreign_older_than`` (its pid is not ours to ask about: a cache shared over NFS by several
    machines keeps their live temporaries). A name without a host (written before hosts were
    named) counts as this host's. Returns how many were removed."""
    import shutil

    directory = Path(directory)
    removed = 0
    try:
        entries = list(directory.iterdir())
    except OSError:
        return 0
    now, here = time.time(), host_id()
    for p in entries:
        m = _TMP.match(p.name)
        if not m:
            continue
        ours = m["host"] in (None, here)
        if ours and pid_alive(int(m["pid"])):
            continue
        try:
            if now - p.lstat().st_mtime < (older_than if ours else max(older_than, foreign_older_than)):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed


@contextlib.contextmanager
def atomic_path(path: str | Path, *, replace_directory: bool = False, durable: bool = False):
    """The one atomic write of the package: yields a temporary path beside ``path``
    (:func:`temporary_path`) for the caller to fill (a file, or a directory of files); on a
    clean exit it is ``os.replace``-d over ``path`` in one rename, so a reader sees the old
    ``path`` or the new one, never half of one; on an exception, and after a kill, only the
    temporary is left (removed here, or by the next run's :func:`remove_stale_temporaries`).
    ``replace_directory``: an existing directory at ``path`` is removed just before the rename
    (a directory cannot be renamed over a non-empty one; without it that rename fails with
    ``OSError``). ``durable``: the file and the rename are fsync-ed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    try:
        yield tmp
        if durable and tmp.is_file():
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        if replace_directory and path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()
    if durable:
        try:  # make the rename itself durable
            fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass


def atomic_write(path: str | Path, data: str | bytes, *, durable: bool = True) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` all at once or not at all
    (:func:`atomic_path`, fsync-ed unless ``durable`` is off). ``OSError`` (full disk,
    read-only directory) propagates after the temporary is removed."""
    path = Path(path)
    with atomic_path(path, durable=durable) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _format(path: Path, formats: dict[str, str], what: str) -> str:
    fmt = formats.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: unknown {what} format {path.suffix or '(no extension)'!r}; "
                         f"use one of {', '.join(sorted(formats))}")
    return fmt


def read_records(path) -> tuple[list[dict], list[str]]:
    """The rows of a JSON list, JSONL or CSV file as dicts, with where each row is (``row i``
    counted from 1, or ``line i`` of a JSONL file), for messages. CSV values are the cells
    verbatim, as strings. One :class:`InputError` for a missing file, non-UTF-8 text,
    malformed JSON (with its line and column) or a row that is not an object."""
    path = Path(path)
    fmt = _format(path, {k: v for k, v in READ_FORMATS.items() if v != "parquet"}, "input")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if fmt == "csv":
        # csv's 131,072-character limit per field would refuse long texts that read_table (pandas)
        # reads: raised for this file to its length, which no field can exceed
        limit = csv.field_size_limit(max(csv.field_size_limit(), len(text)))
        try:
            records = [dict(r) for r in csv.DictReader(io.StringIO(text))]
        finally:
            csv.field_size_limit(limit)
        return records, [f"row {i}" for i in range(1, len(records) + 1)]
    if fmt == "jsonl":
        numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    else:
        numbered = [(None, text)]
    records, where = [], []
    for lineno, chunk in numbered:
        try:
            value = json.loads(chunk)
        except json.JSONDecodeError as exc:
            at = f"line {lineno}" if lineno else f"line {exc.lineno}, column {exc.colno}"
            raise InputError(f"{path}: malformed JSON at {at}: {exc.msg}") from None
        if lineno is None and not isinstance(value, list):
            raise InputError(f"{path}: expected a JSON list of objects, got a JSON {type(value).__name__}")
        for k, rec in enumerate(value if lineno is None else [value], 1):
            label = f"line {lineno}" if lineno else f"row {k}"
            if not isinstance(rec, dict):
                raise InputError(f"{path}: {label}: expected a JSON object, got {type(rec).__name__}")
            records.append(rec)
            where.append(label)
    return records, where


def read_lines(path, what: str = "list") -> list[str]:
    """The stripped, non-empty lines of a UTF-8 text file (a word or group list). One
    :class:`InputError` naming ``what`` and the file when it is missing, unreadable or has no lines."""
    path = Path(path)
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        raise InputError(f"{what} file {path}: not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} file {path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{what} file {path}: cannot read ({exc.strerror or exc.__class__.__name__})") from None
    lines = [line for line in lines if line]
    if not lines:
        raise InputError(f"{what} file {path}: is empty")
    return lines


def read_csv_checked(path, columns, what: str = "CSV", **read_csv) -> pd.DataFrame:
    """``pandas.read_csv(path, **read_csv)`` of a data file that must hold ``columns``; cells as
    strings verbatim unless ``read_csv`` says otherwise. One :class:`InputError` naming ``what`` and
    the file when it is missing, unreadable, malformed, empty or lacks a column."""
    path = Path(path)
    read_csv = {"dtype": str, "keep_default_na": False, "encoding": "utf-8", **read_csv}
    try:
        df = pd.read_csv(path, **read_csv)
    except FileNotFoundError:
        raise InputError(f"{what} file {path}: not found") from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} file {path}: is empty") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} file {path}: not UTF-8 text (byte {exc.start})") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{what} file {path}: cannot read ({' '.join(str(exc).split())[:120]})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"{what} file {path}: missing column(s) {', '.join(map(str, missing))}")
    if df.empty:
        raise InputError(f"{what} file {path}: no rows")
    return df


def _describe(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "missing (null) text"
    if isinstance(value, str):
        return "empty text" if value == "" else "whitespace-only text"
    return f"text is not a string ({type(value).__name__} {value!r:.40})"


def read_table(path, *, text_column: str = "text") -> pd.DataFrame:
    """A table of sentences from CSV, JSON (list of objects), JSONL or Parquet, validated.

    Raises one :class:`InputError` naming the file and the first bad row for: a
    missing or unreadable file, malformed JSON/JSONL (with its line), a missing
    text column (listing the columns present), and empty, whitespace-only,
    null or non-string text. CSV cells are read verbatim as strings (``NA`` is
    a word, not a missing value). Returns the table with a fresh RangeIndex.
    """
    path = Path(path)
    fmt = _format(path, READ_FORMATS, "input")
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a file")
    where: list[str] | None = None
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        elif fmt == "csv":
            df = pd.read_csv(path, encoding="utf-8")
            if text_column in df.columns:   # the text verbatim: "NA", "null" or "" are not missing values
                df[text_column] = pd.read_csv(path, usecols=[text_column], dtype=str, keep_default_na=False,
                                              encoding="utf-8")[text_column].to_numpy(dtype=object)
        else:
            records, where = read_records(path)
            df = pd.DataFrame.from_records(records)
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the file is empty") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except (OSError, ValueError, pd.errors.ParserError, ImportError) as exc:
        msg = " ".join(str(exc).split())
        raise InputError(f"{path}: cannot read {fmt.upper()}: {msg}") from None
    if text_column not in df.columns:
        present = ", ".join(map(str, df.columns)) or "none"
        raise InputError(f"{path}: no column {text_column!r} (columns: {present}); "
                         "choose the text column with --text-column")
    if len(df) == 0:
        raise InputError(f"{path}: no rows")
    where = where or [f"row {i}" for i in range(1, len(df) + 1)]
    bad = [i for i, v in enumerate(df[text_column].tolist()) if not (isinstance(v, str) and v.strip())]
    if bad:
        first = bad[0]
        more = f" (and {len(bad) - 1} more bad rows)" if len(bad) > 1 else ""
        raise InputError(f"{path}: {where[first]}: {_describe(df[text_column].iloc[first])} "
                         f"in column {text_column!r}{more}")
    return df.reset_index(drop=True)


def write_table(df: pd.DataFrame, path) -> Path:
    """Write ``df`` (without its index) as CSV or Parquet, by extension, atomically."""
    path = Path(path)
    fmt = _format(path, WRITE_FORMATS, "output")
    try:
        with atomic_path(path) as tmp:
            if fmt == "csv":
                df.to_csv(tmp, index=False)
            else:
                df.to_parquet(tmp, index=False)
    except (OSError, ValueError, TypeError, ImportError) as exc:
        msg = " ".join(str(exc).split())
        raise InputError(f"{path}: cannot write {fmt.upper()}: {msg}") from None
    return path


def check_writable(path, *, overwrite: bool = False, formats: dict[str, str] | None = WRITE_FORMATS) -> Path:
    """Check, before any long work, that a result file can be written at ``path``.

    One :class:`InputError` if: the extension is not a known output format (``formats``;
    ``None`` skips that check), ``path`` is an existing directory, ``path`` exists and
    ``overwrite`` is false, or its directory cannot be created or written (a probe file,
    named by :func:`temporary_path`, is created and removed), or it is empty. Returns ``path``.
    """
    if path is None or not str(path).strip():
        raise InputError("--output is empty: name the file to write")
    path = Path(path)
    if formats is not None:
        _format(path, formats, "output")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a file")
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; pass --overwrite to replace it")
    probe = temporary_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{path}: cannot create or write its directory ({exc.strerror or exc})") from None
    return path


def check_writable_folder(path, *, option: str = "--output") -> Path:
    """Check, before any long work, that a folder of results can be made or written at ``path``.

    One :class:`InputError` if ``path`` is empty (it would write into the current folder), is a
    file, lies under a file, or the nearest existing folder on its way cannot be written (a probe
    file, named by :func:`temporary_path`, is created and removed there). Nothing is created.
    Returns ``path``."""
    if path is None or not str(path).strip():
        raise InputError(f"{option} is empty: name the folder to write into")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: is a file, not a folder ({option} names a folder)")
    nearest = path
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise InputError(f"{path}: {nearest} is a file, so no folder can be made under it")
    probe = temporary_path(nearest / "probe")
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"{path}: cannot write in {nearest} ({exc.strerror or exc})") from None
    return path


# --------------------------------------------------------------------------- tables as text

def join_list_columns(df: pd.DataFrame, columns=("target_groups",), sep: str = ";") -> pd.DataFrame:
    """A copy of ``df`` whose list-valued ``columns`` (those it has) hold one string each, the
    items joined by ``sep`` (``["black", "women"]`` -> ``"black;women"``), as a CSV file holds them."""
    out = df.copy()
    for column in columns:
        if column in out.columns:
            out[column] = out[column].map(sep.join)
    return out


def text_table(df: pd.DataFrame, columns=None, *, digits: int = 4, digits_of: dict[str, int] | None = None) -> str:
    """``df`` (only ``columns``, in that order, when given) as an aligned plain-text table without
    the index, for a terminal: numbers with ``digits`` decimals, or ``digits_of[column]``."""
    view = df if columns is None else df[list(columns)]
    return view.to_string(index=False, float_format=lambda v: f"{v:.{digits}f}",
                          formatters={c: (lambda v, d=d: f"{v:.{d}f}") for c, d in (digits_of or {}).items()})


def print_csv(df: pd.DataFrame) -> None:
    """``df`` as CSV (without its index) on standard output. A reader that closes the pipe early
    (``| head``) has what it wanted: the rest goes to the null device, without an error."""
    try:
        df.to_csv(sys.stdout, index=False)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
