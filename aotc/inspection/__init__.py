"""``aotc inspect``: what is in an input before anyone writes its config.

``inspect_input(path, options)`` recognizes the input by content, as the compiler does, and
summarizes it without compiling: a GraphDef (``graphdef.py``: ops, Placeholders, candidate
outputs, unsupported ops, constant bytes), a SavedModel directory (``savedmodel.py``: tag sets,
signatures with their inputs and outputs, what the compiled signature needs) or HLO text
(``hlo.py``: arguments, results, opcodes). ``emit_config`` writes the summary's starting
config; ``supported_ops`` is the table ``aotc ops`` prints.
"""

from __future__ import annotations

from pathlib import Path

from aotc.atomic import write_atomically
from aotc.errors import OutputError
from aotc.frontend.formats import Format, input_format
from aotc.frontend.ops.registry import supported_ops as supported_ops  # for `aotc ops`
from aotc.frontend.options import SourceOptions
from aotc.frontend.sources import check_options
from aotc.inspection.common import Summary
from aotc.inspection.graphdef import inspect_graph
from aotc.inspection.hlo import inspect_hlo
from aotc.inspection.savedmodel import inspect_savedmodel


def inspect_input(path: str | Path, options: SourceOptions | None = None) -> Summary:
    """Summarize ``path`` (GraphDef, SavedModel directory or HLO text); ``options`` choose a
    SavedModel's tags and signature."""
    options = options or SourceOptions()
    kind = input_format(path)
    check_options(kind, options, path)
    if kind is Format.SAVEDMODEL:
        return inspect_savedmodel(path, options)
    return inspect_hlo(path) if kind is Format.HLO else inspect_graph(path)


def emit_config(summary: Summary, path: str | Path, overwrite: bool = False) -> None:
    """Write the summary's starting config to ``path`` atomically, never clobbering by
    accident (a tfcompile config for ``*.pbtxt``/``*.pb`` where the input has one, else YAML)."""
    data = summary.config_bytes(str(path))
    if Path(path).exists() and not overwrite:
        raise OutputError(f"{path}: already exists; pass --force to overwrite it")
    write_atomically(path, data)
