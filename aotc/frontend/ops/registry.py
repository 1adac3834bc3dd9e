"""The registry of TF op translators: the ``REGISTER_XLA_OP`` idea.

A translator is a plain function ``rule(ctx, node, *inputs) -> Instruction | Sequence[...]``
registered under one or more TF op names; it receives the HLO values of the node's data inputs
in order and returns the HLO value of each of the node's outputs.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable, Generator, Sequence
from typing import Any

from aotc.hlo.ir import Instruction
from aotc.registry import Registry

Outputs = Instruction | Sequence[Instruction]
# A control-flow translator is a generator: it yields the steps translating its bodies.
Translator = Callable[..., Outputs | Generator[Any, Any, Any]]

_TRANSLATORS: Registry[str, Translator] = Registry("translator")
_NOTES: dict[str, str] = {}


def translates(*op_names: str, note: str = "") -> Callable[[Translator], Translator]:
    """Register the decorated function as the translator of each TF op in ``op_names``."""
    if note:
        _NOTES.update(dict.fromkeys(op_names, note))
    return _TRANSLATORS.register(*op_names)


def lookup(op: str) -> Translator | None:
    _load_op_modules()
    return _TRANSLATORS.get(op)


def supported_ops() -> dict[str, str]:
    """TF op name -> note on supported attributes, sorted by name."""
    _load_op_modules()
    return {op: _NOTES.get(op, "") for op in sorted(_TRANSLATORS)}


@functools.cache  # once: lookup runs per node, and listing the package costs milliseconds
def _load_op_modules() -> None:
    # Importing every module of the ops package runs its @translates decorators.
    import aotc.frontend.ops as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "registry":
            importlib.import_module(f"{package.__name__}.{info.name}")
