"""Write a file all at once or not at all: a temporary name in the same folder, then a rename."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aotc.errors import OutputError


def write_atomically(path: str | Path, data: bytes, make_parents: bool = True) -> None:
    """Write ``data`` to ``path``; readers never see a partial file, and a failure (or Ctrl-C)
    leaves no temporary file behind. OSErrors become an ``OutputError`` naming ``path``."""
    target = Path(path)
    tmp = ""
    try:
        if make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would surprise whoever reads the file next
        os.replace(tmp, target)
    except BaseException as err:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise OutputError(f"{target}: cannot write: {err.strerror or err}") from None
        raise
