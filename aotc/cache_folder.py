"""The compile cache's folder: where entries live, who may write there, and its size cap.

One file per entry, ``<folder>/<key[:2]>/<key>.aotc`` (aotc/cache_entry.py), written under a
temporary name and renamed, so readers never see a partial entry and several aotc processes
can share the folder. A hit touches the entry (its modification time is its last use); after
each store the least recently used entries are removed until the folder is within its cap
(``$AOTC_CACHE_MAX_BYTES``, default 2 GiB). Files that vanish meanwhile (another process
evicting) are skipped.

A folder that another user owns, or that others may write to (group or other writable
without the sticky bit), is not used: whoever can write there could plant entries. Entries
are signed with a secret kept in the folder (``secret``, mode 0600, created on first use).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from aotc.atomic import write_atomically
from aotc.cache_entry import (
    METADATA_START,
    BadEntry,
    decode_entry,
    encode_entry,
    metadata_length,
    read_metadata,
)
from aotc.driver import CompileResult
from aotc.errors import OutputError, UsageError

DEFAULT_MAX_BYTES = 2 << 30
MAX_BYTES_ENV = "AOTC_CACHE_MAX_BYTES"
SUFFIX = ".aotc"
SECRET = "secret"
_SECRET_BYTES = 32
_STALE_TEMP_S = 3600  # a temporary file this old belongs to no running writer
_SIZE = re.compile(r"(\d+)\s*(?:([KMGT])(?:i?B)?|B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class UnsafeCacheFolder(Exception):
    """A cache folder aotc must not use; the message says why."""


def default_cache_dir() -> Path:
    """``$AOTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotc``, else ``~/.cache/aotc``."""
    if os.environ.get("AOTC_CACHE_DIR"):
        return Path(os.environ["AOTC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aotc"


def parse_size(text: str, where: str) -> int:
    """``1048576``, ``500M``, ``2G``, ``2GiB`` -> bytes (K, M, G, T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"{where}: {text!r} is not a size; e.g. 2G, 500M or 1048576 (bytes)")
    return int(match[1]) * _UNITS[(match[2] or "").upper()]


def default_max_bytes() -> int:
    """``$AOTC_CACHE_MAX_BYTES``, else 2 GiB."""
    value = os.environ.get(MAX_BYTES_ENV)
    return parse_size(value, MAX_BYTES_ENV) if value else DEFAULT_MAX_BYTES


def format_size(size: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    if size < 1024:
        return f"{size} B"
    value, units = size / 1024, ["KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 and len(units) > 1:
        value, units = value / 1024, units[1:]
    return f"{value:.1f} {units[0]}"


@dataclass(frozen=True)
class EntryFile:
    """One entry on disk: its file, size and last use (ns since the epoch)."""

    path: Path
    size: int
    last_use_ns: int

    @property
    def key(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    def model_name(self) -> str:
        """The compiled model's name, read from the entry's metadata; ``?`` if unreadable."""
        try:
            with self.path.open("rb") as f:
                prefix = f.read(METADATA_START)
                data = prefix + f.read(metadata_length(prefix) - len(prefix))
            return str(read_metadata(data)["model"]["name"])
        except (OSError, BadEntry, KeyError, TypeError):
            return "?"


class DiskCache:
    """Compiled models in files named by key under ``folder``, at most ``max_bytes`` in all
    (None: ``default_max_bytes()``)."""

    def __init__(self, folder: str | Path | None = None, max_bytes: int | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self.where = str(self.folder)
        self._secret = b""

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}{SUFFIX}"

    def check(self) -> None:
        """``UnsafeCacheFolder`` when others could write to the folder (a missing one is
        fine: ``open`` creates it private)."""
        try:
            info = self.folder.stat()
        except OSError:
            return
        problem = _unsafe(info)
        if problem:
            raise UnsafeCacheFolder(f"cache folder {self.folder} {problem}")

    def open(self) -> None:
        """Check the folder, create it if missing and read (or make) its secret. Raises
        ``UnsafeCacheFolder``, or ``OSError`` when the folder cannot be used."""
        self.check()
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._secret = _secret(self.folder / SECRET)

    def secret(self) -> bytes:
        """The folder's signing secret (``open`` first, if not yet done)."""
        if not self._secret:
            self.open()
        return self._secret

    def get(self, key: str, notes: list[str]) -> CompileResult | None:
        """The stored result (touched as just used), or None: missing, unreadable, damaged,
        tampered with or stored for another key (said in ``notes``)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            notes.append(f"cache: cannot read {path}: {err.strerror or err}")
            return None
        try:
            result = decode_entry(data, key, self.secret())
        except BadEntry as why:
            notes.append(f"cache: ignored entry {key[:12]}: {why}; rebuilding it")
            return None
        _touch(path)
        return result

    def put(self, key: str, result: CompileResult, notes: list[str]) -> None:
        """Store ``result`` atomically, then evict down to the cap; a failure is a note."""
        path = self.path(key)
        try:
            data = encode_entry(key, result, self.secret())
            path.parent.mkdir(mode=0o700, exist_ok=True)
            write_atomically(path, data)
        except (OSError, OutputError, ValueError) as err:
            notes.append(f"cache: not stored: {err}")
            return
        notes.append(f"cache: stored entry {key[:12]} ({format_size(len(data))})")
        evicted = self.evict(self.max_bytes)
        if evicted:
            freed = format_size(sum(e.size for e in evicted))
            notes.append(f"cache: evicted {len(evicted)} least recently used entries ({freed})")

    def entries(self) -> list[EntryFile]:
        """Every entry, in no particular order."""
        return [e for sub in _subfolders(self.folder) for e in _entries_in(sub)]

    def evict(self, max_bytes: int) -> list[EntryFile]:
        """Remove the least recently used entries until at most ``max_bytes`` remain, and
        temporary files no writer owns any more; returns the entries removed."""
        entries = sorted(self.entries(), key=lambda e: (e.last_use_ns, e.path.name))
        total = sum(e.size for e in entries)
        removed = []
        for entry in entries:
            if total <= max_bytes:
                break
            _remove(entry.path)
            total -= entry.size
            removed.append(entry)
        self._remove_stale_temporaries()
        return removed

    def clear(self) -> list[EntryFile]:
        """Remove every entry (the secret stays); returns what was removed."""
        removed = self.evict(-1)
        for sub in _subfolders(self.folder):
            with contextlib.suppress(OSError):  # not empty: another process is writing there
                sub.rmdir()
        return removed

    def _remove_stale_temporaries(self) -> None:
        old = time.time() - _STALE_TEMP_S
        for sub in _subfolders(self.folder):
            for item in _scan(sub):
                if item.name.startswith(".") and _mtime(item) < old:
                    _remove(Path(item.path))


def _unsafe(info: os.stat_result) -> str | None:
    if not stat.S_ISDIR(info.st_mode):
        return None  # not a folder: storing fails, and says so
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return f"is owned by another user (uid {info.st_uid})"
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        mode = oct(stat.S_IMODE(info.st_mode))[2:]
        return f"is writable by other users (mode {mode}; chmod go-w it)"
    return None


def _secret(path: Path) -> bytes:
    """The folder's signing secret, made on first use; ``UnsafeCacheFolder`` when the file
    is not this user's own private 32 bytes."""
    if not path.exists():
        _create_secret(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        info, data = os.fstat(f.fileno()), f.read(_SECRET_BYTES + 1)
    owner_ok = not hasattr(os, "geteuid") or info.st_uid == os.geteuid()
    if not (stat.S_ISREG(info.st_mode) and owner_ok and not info.st_mode & 0o077):
        raise UnsafeCacheFolder(f"cache secret {path} is not private to this user")
    if len(data) != _SECRET_BYTES:
        raise UnsafeCacheFolder(f"cache secret {path} is damaged (delete it)")
    return data


def _create_secret(path: Path) -> None:
    # Written in full under another name, then linked: a concurrent aotc never reads a
    # partial secret, and the first link wins (the loser uses the winner's secret).
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(_SECRET_BYTES))
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


def _subfolders(folder: Path) -> list[Path]:
    return [
        Path(d.path) for d in _scan(folder) if len(d.name) == 2 and d.is_dir(follow_symlinks=False)
    ]


def _entries_in(sub: Path) -> list[EntryFile]:
    found = []
    for item in _scan(sub):
        if item.name.startswith(".") or not item.name.endswith(SUFFIX):
            continue
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:  # evicted by another process meanwhile
            continue
        if stat.S_ISREG(info.st_mode):
            found.append(EntryFile(Path(item.path), info.st_size, info.st_mtime_ns))
    return found


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as items:
            return list(items)
    except OSError:
        return []


def _mtime(item: os.DirEntry[str]) -> float:
    try:
        return item.stat(follow_symlinks=False).st_mtime
    except OSError:
        return time.time()


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # evicted meanwhile, or not ours: the hit stands
        os.utime(path)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
