"""The Python API: compile a model in-process and call it with numpy arrays.

::

    import aotc
    fn = aotc.compile("model.pb", config="model.yaml")     # or a SavedModel dir, or model.hlo
    y = fn(x=np.ones((1, 784), np.float32))                 # keywords, a dict, or positional
    fn.header, fn.object_bytes, fn.report                    # what the CLI would write
    # cpp_class="ns::Name" adds fn.cpp_header (the CLI's --cpp-class)

A call returns a single numpy array when the model has one result, else a list in result
order. Compilation is cached in memory: compiling the same model again (same file contents,
config, options and aotc version) returns the same ``CompiledFunction`` at once. Pass
``cache_dir=`` to also keep compiled models on disk across processes (the CLI's cache).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aotc import cache as compile_cache
from aotc.cache import CachePolicy, compile_cached
from aotc.driver import CompileResult, SourceOptions
from aotc.errors import ArgumentError
from aotc.jit import JitModel
from aotc.report import CompileReport

# The function made for each result of the memory cache, by id (the cache keeps them alive).
_FUNCTIONS: dict[int, CompiledFunction] = {}


class CompiledFunction:
    """A compiled model loaded into this process; call it like a function."""

    def __init__(self, result: CompileResult, cache_hit: bool = False) -> None:
        self.result = result
        self.model = result.model
        self.cache_hit = cache_hit
        self._jit = JitModel.from_compiled(result.model)

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def header(self) -> str:
        """The C header the CLI would write."""
        return self.model.header

    @property
    def cpp_header(self) -> str:
        """The C++ class header the CLI would write (``cpp_class=``); empty without one."""
        return self.model.cpp_header

    @property
    def object_bytes(self) -> bytes:
        """The object file the CLI would write."""
        return self.model.object_bytes

    @property
    def report(self) -> CompileReport:
        """The compiler's report: kernels, memory, pass timings (``aotc compile --report``)."""
        return self.result.report

    @property
    def arg_names(self) -> list[str]:
        return [a.name for a in self._jit.args]

    @property
    def result_names(self) -> list[str]:
        return [r.name for r in self._jit.results]

    def __call__(self, *args: Any, **kwargs: Any) -> np.ndarray | list[np.ndarray]:
        """Run on positional arrays, keyword arrays, or one dict; see the module docstring."""
        results = self._jit(*self._arguments(args, kwargs))
        return results[0] if len(results) == 1 else results

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[np.ndarray]:
        if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
            kwargs, args = dict(args[0]), ()
        if args and kwargs:
            raise ArgumentError(f"{self.name}: pass arguments by position or by name, not both")
        if kwargs:
            args = tuple(self._by_name(kwargs))
        if len(args) != len(self._jit.args):
            return list(args)  # the JIT reports the wrong count with the argument list
        return [_as_array(spec, a) for spec, a in zip(self._jit.args, args, strict=True)]

    def _by_name(self, kwargs: dict[str, Any]) -> list[Any]:
        names = self.arg_names
        unknown = sorted(set(kwargs) - set(names))
        missing = [n for n in names if n not in kwargs]
        if unknown or missing:
            raise ArgumentError(
                f"{self.name} takes ({', '.join(names)}); "
                + "; ".join(
                    p for p in (_listing("unknown", unknown), _listing("missing", missing)) if p
                )
            )
        return [kwargs[n] for n in names]

    def __repr__(self) -> str:
        args = ", ".join(a.describe() for a in self._jit.args)
        results = ", ".join(r.describe() for r in self._jit.results)
        return f"<aotc.CompiledFunction {self.name}({args}) -> ({results})>"


def _listing(what: str, names: Sequence[str]) -> str:
    return f"{what}: {', '.join(names)}" if names else ""


def _as_array(spec: Any, value: Any) -> Any:
    # Python lists and scalars take the argument's dtype; numpy arrays must already match
    # (JitModel rejects silent casts of real arrays).
    if isinstance(value, np.ndarray | np.generic):
        return value
    try:
        return np.asarray(value, dtype=spec.dtype)
    except (TypeError, ValueError):
        return value


def compile(  # noqa: A001 - aotc.compile mirrors the CLI's `aotc compile`
    model: str | Path,
    config: str | Path | None = None,
    *,
    signature: str | None = None,
    tags: Sequence[str] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    cpp_class: str | None = None,
    multicore: bool | None = None,
    cache_dir: str | Path | None = None,
    cache: bool = True,
) -> CompiledFunction:
    """Compile ``model`` (GraphDef, SavedModel directory or HLO text) for this machine.

    ``signature``, ``tags`` and ``shapes`` are the SavedModel options (``--signature``,
    ``--tag``, ``--shape``); ``cpp_class`` (``"ns::Name"``, ``--cpp-class``) also makes the C++
    class header (``fn.cpp_header``); ``multicore=False`` leaves the multi-core entry points out
    of the object (``--no-multicore``; default: the config's ``multicore:``). ``cache=False``
    always recompiles; ``cache_dir`` adds the on-disk cache the CLI uses.
    """
    options = SourceOptions(
        signature,
        tuple(tags) if tags else None,
        {k: tuple(int(d) for d in v) for k, v in (shapes or {}).items()},
        cpp_class=cpp_class,
        multicore=multicore,
        api=True,
    )
    policy = CachePolicy(enabled=cache, disk=cache_dir is not None, folder=cache_dir, memory=True)
    result, outcome = compile_cached(model, config, options=options, policy=policy)
    for line in outcome.warnings:
        warnings.warn(line, RuntimeWarning, stacklevel=2)
    if not cache:
        return CompiledFunction(result, outcome.hit)
    fn = _FUNCTIONS.get(id(result))
    if fn is None or fn.result is not result:
        fn = _FUNCTIONS[id(result)] = CompiledFunction(result, outcome.hit)
    return fn


def clear_memory_cache() -> None:
    """Forget every model compiled in this process (the disk cache is untouched)."""
    compile_cache.clear_memory_cache()
    _FUNCTIONS.clear()
