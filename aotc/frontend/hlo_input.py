"""HLO text as a compiler input: XLA's text format, as JAX and TensorFlow print it.

``jax.jit(f).lower(*args).as_text(dialect="hlo")`` and TensorFlow's
``experimental_get_compiler_ir(*args)(stage="hlo")`` both print an ``HloModule``; aotc parses it
with its own HLO parser (metadata, sharding and the other attributes that do not change the
results are skipped with a note, see ``aotc/hlo/interchange.py``), verifies it,
and compiles it. The arguments are the entry computation's parameters in order; the results
are the elements of the root tuple, or the root itself (wrapped in a one-element tuple).

Names: an argument is named after its parameter, without XLA's ``.N`` uniquing suffix
(``x.1`` -> ``x``) where that stays unique; results are ``result0``, ``result1``, ... A config
may rename them with ``feeds:``/``fetches:`` (one entry per argument/result, in order); a
``shape:`` or ``dtype:`` there must match the module.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aotc.abi import c_identifier
from aotc.config import Config
from aotc.errors import ConfigError, InputFileError
from aotc.frontend.signature import FetchSpec, Signature, TensorSpec, model_stem
from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.shape import TupleShape
from aotc.hlo.text import parse_module
from aotc.hlo.verify import verify_module
from aotc.tensor_ref import TensorRef

_UNIQUING_SUFFIX = re.compile(r"\.\d+$")


@dataclass
class HloInput:
    """A parsed and verified HLO module with the names of its arguments and results."""

    module: Module
    signature: Signature
    notes: list[str]  # what the parser ignored or renamed (XLA's metadata, sharding, ...)


def load_hlo(path: str | Path, config: Config | None = None) -> HloInput:
    """Parse, normalize (tuple root) and verify the HLO text in ``path``."""
    config = config or Config()
    notes: list[str] = []
    module = parse_module(_read_text(Path(path)), str(path), notes)
    _tuple_root(module)
    verify_module(module)
    name = c_identifier(config.name or model_stem(path))
    return HloInput(module, _signature(module, config, name, str(path)), notes)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise InputFileError(f"{path}: not HLO text (byte {e.start} is not UTF-8)") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None


def _tuple_root(module: Module) -> None:
    """aotc's entry convention: the root is a tuple of the results."""
    entry = module.entry
    if entry.root.opcode is Opcode.TUPLE and not any(o.is_tuple for o in entry.root.operands):
        return
    if entry.root.is_tuple:
        raise InputFileError(
            f"{module.name}: the entry root %{entry.root.name} is a tuple but not a tuple "
            "instruction of arrays; aotc compiles flat results only"
        )
    names = {i.name for i in entry.instructions}
    name = next(n for n in (f"result_tuple.{k}" for k in range(len(names) + 1)) if n not in names)
    root = Instruction(name, Opcode.TUPLE, TupleShape((entry.root.shape,)), [entry.root])
    entry.instructions.append(root)
    entry.root = root


def _signature(module: Module, config: Config, name: str, path: str) -> Signature:
    params = module.entry.parameters
    results = module.entry.root.operands
    arg_names = _names(config.feeds, _param_names(params), "feeds", "parameter", path)
    res_names = _names(config.fetches, [f"result{i}" for i in range(len(results))], "fetches",
                       "result", path)  # fmt: skip
    feeds = tuple(
        TensorSpec(n, TensorRef(p.name), np.dtype(p.array_shape.dtype.numpy), p.array_shape.dims)
        for n, p in zip(arg_names, params, strict=True)
    )
    _check_config_shapes(config, feeds, path)
    fetches = tuple(
        FetchSpec(n, TensorRef(r.name)) for n, r in zip(res_names, results, strict=True)
    )
    return Signature(name, feeds, fetches)


def _param_names(params: Sequence[Instruction]) -> list[str]:
    stripped = [_UNIQUING_SUFFIX.sub("", p.name) for p in params]
    if len(set(stripped)) == len(stripped):
        return stripped
    return [p.name for p in params]


def _names(
    entries: Sequence[object], defaults: list[str], key: str, what: str, path: str
) -> list[str]:
    if not entries:
        return defaults
    if len(entries) != len(defaults):
        raise ConfigError(
            f"{path}: the config lists {len(entries)} {key} but the HLO entry has "
            f"{len(defaults)} {what}(s); for HLO input, {key} only name them, in order"
        )
    return [str(e.ref) for e in entries]  # type: ignore[attr-defined]


def _check_config_shapes(config: Config, feeds: tuple[TensorSpec, ...], path: str) -> None:
    for i, (entry, spec) in enumerate(zip(config.feeds, feeds, strict=False)):  # no feeds: none
        if entry.shape is not None and tuple(entry.shape) != tuple(spec.shape):
            raise ConfigError(
                f"{config.path or path}: feeds[{i}] '{spec.name}': shape {list(entry.shape)} "
                f"does not match the HLO parameter's {list(spec.shape)}"
            )
        if entry.dtype is not None and entry.dtype != spec.dtype:
            raise ConfigError(
                f"{config.path or path}: feeds[{i}] '{spec.name}': dtype {entry.dtype} does not "
                f"match the HLO parameter's {spec.dtype}"
            )
