"""Where one compile's files go, and writing them all or none.

``PREFIX.o`` (``--emit obj``) or ``libPREFIX.a`` (``--emit lib``, aotc/archive.py), the header
``PREFIX.h``, with ``--cpp-class`` the C++ class header ``PREFIX.hpp``, and with ``--depfile``
a dependency file (aotc/depfile.py). Every file is staged under a temporary name first and
renamed only when all of them are complete.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aotc import progress
from aotc.archive import Member, archive_bytes
from aotc.atomic import commit, stage
from aotc.codegen.compile import CompiledModel
from aotc.codegen.cpp_class import CPP_HEADER_MARK
from aotc.depfile import compile_dependencies, depfile_text
from aotc.errors import OutputError
from aotc.frontend.signature import model_stem

EMITS = ("obj", "lib")


@dataclass(frozen=True)
class Outputs:
    """The files of one compile: ``prefix`` + ``.o`` or ``lib`` + name + ``.a``, + ``.h``
    (+ ``.hpp`` for a model with a C++ class)."""

    prefix: Path
    emit: str = "obj"
    depfile: Path | None = None

    @property
    def binary(self) -> Path:
        """The object file or the static library."""
        name = self.prefix.name
        return self.prefix.with_name(f"lib{name}.a" if self.emit == "lib" else f"{name}.o")

    @property
    def header(self) -> Path:
        return self.prefix.with_name(self.prefix.name + ".h")

    @property
    def cpp_header(self) -> Path:
        """The C++ class header, written when the model has one (``--cpp-class``)."""
        return self.prefix.with_name(self.prefix.name + ".hpp")

    def written(self, model: CompiledModel) -> list[Path]:
        """The files ``write_outputs`` writes for ``model``, the depfile aside."""
        cpp = [self.cpp_header] if model.cpp_header else []
        return [self.binary, self.header, *cpp]


def output_prefix(
    graph_path: str | Path, out: str | Path | None, folder: str | Path | None = None
) -> Path:
    """``-o build/mlp`` -> build/mlp; ``-o build/`` or an existing folder: the graph's stem
    inside it; no ``-o``: the graph's stem in ``folder`` (``-d``) or here."""
    stem = model_stem(graph_path)
    if not out:
        return Path(folder or "", stem)
    if str(out).endswith(("/", os.sep)) or Path(out).is_dir():
        return Path(out, stem)
    return Path(out)


def write_outputs(
    model: CompiledModel,
    outputs: Outputs,
    graph_path: str | Path,
    config_path: str | Path | None = None,
    checkpoint: str | None = None,
) -> None:
    """Write the binary, the headers and the depfile (listing what the compile read)."""
    binary = model.object_bytes
    if outputs.emit == "lib":
        binary = archive_bytes([Member(outputs.prefix.name + ".o", model.object_bytes)])
    files = [(outputs.binary, binary), (outputs.header, model.header.encode())]
    if model.cpp_header:
        files.append((outputs.cpp_header, model.cpp_header.encode()))
    if outputs.depfile is not None:
        deps = compile_dependencies(graph_path, config_path, checkpoint)
        text = depfile_text(outputs.written(model), deps)
        files.append((outputs.depfile, text.encode()))
    with progress.stage("emit"):
        write_files(files)
    if not model.cpp_header:
        _remove_stale_cpp_header(outputs.cpp_header)


def _remove_stale_cpp_header(path: Path) -> None:
    """A class header aotc wrote for this prefix before would describe an older model (other
    sizes, the same C symbol): remove it when this model has none."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return
    if CPP_HEADER_MARK in head:
        path.unlink(missing_ok=True)


def write_files(files: Sequence[tuple[Path, bytes]]) -> None:
    """Write every file or none: each goes to a temporary name, renamed when all are done."""
    staged: list[tuple[Path, Path]] = []
    # BaseException: Ctrl-C while writing must not leave temporary files behind either.
    try:
        for final, data in files:
            if final.is_dir():  # up front: a rename would fail after the other files moved
                raise OutputError(f"{final}: is a directory; choose another output prefix with -o")
            staged.append((stage(final, data, "; choose a writable folder with -o"), final))
        for tmp, final in staged:
            commit(tmp, final)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
