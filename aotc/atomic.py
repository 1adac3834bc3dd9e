"""Write a file all at once or not at all: a temporary name in the same folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aotc.errors import OutputError


def stage(path: str | Path, data: bytes, hint: str = "") -> Path:
    """Write ``data`` to a temporary file beside ``path`` (creating folders) and return it.

    A failure, or Ctrl-C, leaves no temporary file behind; an OSError becomes an
    ``OutputError`` naming ``path``, with ``hint`` appended.
    """
    target = Path(path)
    tmp = ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would surprise whoever reads the file next
    except BaseException as err:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise OutputError(
                f"{target}: cannot write output: {err.strerror or err}{hint}"
            ) from None
        raise
    return Path(tmp)


def commit(tmp: Path, path: str | Path) -> None:
    """Rename a staged file into place; an OSError becomes an ``OutputError``."""
    try:
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write output: {err.strerror or err}") from None


def write_atomically(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path``; readers never see a partial file."""
    commit(stage(path, data), path)
