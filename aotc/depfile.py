"""Make-format dependency files (``aotc compile --depfile``), as ``cc -MD -MP`` writes them.

``out/mlp.o out/mlp.h: mlp.pb mlp.yaml .../aotc/__init__.py`` tells Make, Ninja and CMake
what a compile read: the model's files (for a SavedModel, ``saved_model.pb`` and the
checkpoint under ``variables/``), the checkpoint of ``--checkpoint``, the config, and aotc's
``__init__.py``, which holds the version, so that upgrading aotc recompiles. Each prerequisite
also gets an empty rule of its own (``-MP``), so that deleting one (a config no longer used) is
not a build error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import aotc
from aotc.errors import OutputError
from aotc.frontend.freeze import checkpoint_files
from aotc.frontend.inputs import config_file, model_files


def compile_dependencies(
    model_path: str | Path, config_path: str | Path | None, checkpoint: str | None = None
) -> list[Path]:
    """Every file whose change must recompile this model, in a stable order; ``checkpoint`` is
    the prefix of ``--checkpoint`` (its index and data shards)."""
    config = config_file(model_path, config_path)
    frozen = checkpoint_files(checkpoint) if checkpoint else []
    configs = [config] if config else []
    files = [*model_files(model_path), *frozen, *configs, Path(aotc.__file__)]
    return list(dict.fromkeys(files))  # a config inside a SavedModel's folder is listed once


def depfile_text(targets: Sequence[Path], prerequisites: Sequence[Path]) -> str:
    """The rule ``targets: prerequisites`` and an empty rule per prerequisite; paths are
    written as given, escaped for Make and Ninja."""
    deps = [_escape(p) for p in prerequisites]
    head = " ".join(_escape(t) for t in targets) + ":"
    lines = [head, *(f" {d}" for d in deps)]
    rule = " \\\n".join(lines) + "\n"
    return rule + "".join(f"\n{d}:\n" for d in deps)


def _escape(path: Path) -> str:
    text = str(path)
    if "\n" in text or "\r" in text:
        raise OutputError(f"{text!r}: a path with a line break cannot go into a depfile")
    # Make reads "\ " and "\#" and "$$"; Ninja's depfile parser reads the same spellings.
    return text.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")
