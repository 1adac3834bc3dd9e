"""Run a compiled model in this process: llvmlite's MCJIT loads the model's own object file.

``JitModel.from_compiled(model)`` takes a ``CompiledModel``, links its ``object_bytes`` (the very
code ``aotc compile`` writes, so nothing is compiled twice and a cached model needs no LLVM IR)
into this process and calls the exported ``<name>_run_buffers`` entry through ctypes::

    model = compile_graph("mlp.pb", "mlp.yaml").model
    jit = JitModel.from_compiled(model)
    (probs,) = jit(np.zeros((1, 784), np.float32))

A variable the model updates is written back into the array passed for it (in place, as the C
entry points do). Each call allocates its result arrays and a fresh ``ALIGN``-aligned temp
buffer with numpy, so one ``JitModel`` may be called from several threads at once (the
generated code has no global mutable state). Arguments must match the signature exactly:
same dtype, same shape, no silent casts; a mismatch is an ``ArgumentError`` naming the
argument.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from aotc.abi import ALIGN
from aotc.codegen.compile import CompiledModel
from aotc.codegen.interface import TensorInfo
from aotc.codegen.target import PORTABLE, TargetSpec, create_target_machine, resolve_target
from aotc.errors import ArgumentError, CodegenError

_ENTRY_TYPE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


@dataclass(frozen=True)
class TensorSpec:
    """An argument or result of a JIT-compiled model as numpy sees it."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    updated: bool = False  # a variable the call writes back into the caller's array

    @classmethod
    def of(cls, info: TensorInfo) -> TensorSpec:
        dims = tuple(info.shape.dims)
        return cls(info.name, np.dtype(info.shape.dtype.numpy), dims, info.updated)

    def describe(self) -> str:
        """``x: float32[1,784]``, the way the C header comments name tensors."""
        return f"{self.name}: {self.dtype}[{','.join(map(str, self.shape))}]"


class JitModel:
    """A compiled model loaded into this process; call it with numpy arrays."""

    def __init__(self, model: CompiledModel) -> None:
        _check_host_target(model)
        self.name = model.name
        self.args = [TensorSpec.of(a) for a in model.args]
        self.results = [TensorSpec.of(r) for r in model.results]
        self.temp_bytes = model.temp_bytes
        self._engine = _create_engine(model)
        address = self._engine.get_function_address(f"{model.name}_run_buffers")
        if not address:
            raise CodegenError(f"JIT: entry point {model.name}_run_buffers not found")
        self._entry = _ENTRY_TYPE(address)

    @classmethod
    def from_compiled(cls, model: CompiledModel) -> JitModel:
        """JIT-compile ``model``; it must have been compiled for the host (the default)."""
        return cls(model)

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Run the model on ``arrays`` (one per argument, in order); returns new result arrays."""
        args = self.check_arguments(arrays)
        results = [np.empty(r.shape, r.dtype) for r in self.results]
        temp = aligned_empty(self.temp_bytes)
        code = self._entry(_pointers(args), _pointers(results), temp.ctypes.data)
        if code != 0:
            raise CodegenError(f"{self.name}_run_buffers returned {code}")
        return results

    def check_arguments(self, arrays: Sequence[object]) -> list[np.ndarray]:
        """C-contiguous views of ``arrays``; ArgumentError on a wrong count, dtype or shape."""
        if len(arrays) != len(self.args):
            names = ", ".join(a.describe() for a in self.args)
            raise ArgumentError(
                f"{self.name} takes {len(self.args)} argument(s) ({names}); got {len(arrays)}"
            )
        return [_checked(spec, array) for spec, array in zip(self.args, arrays, strict=True)]


def aligned_empty(nbytes: int, align: int = ALIGN) -> np.ndarray:
    """An uninitialized uint8 array of ``nbytes`` (at least 1, so that even an empty temp
    buffer has a real, aligned address) whose data starts on an ``align`` boundary."""
    size = max(nbytes, 1)
    raw = np.empty(size + align, dtype=np.uint8)
    offset = -raw.ctypes.data % align
    return raw[offset : offset + size]


def _checked(spec: TensorSpec, array: object) -> np.ndarray:
    if not isinstance(array, np.ndarray | np.generic):
        raise ArgumentError(f"argument {spec.describe()}: expected a numpy array, got {array!r}")
    in_place = isinstance(array, np.ndarray) and array.flags.c_contiguous
    array = np.asarray(array)
    if array.dtype != spec.dtype:
        raise ArgumentError(f"argument {spec.describe()}: got dtype {array.dtype}; cast it first")
    if array.shape != spec.shape:
        raise ArgumentError(f"argument {spec.describe()}: got shape {list(array.shape)}")
    if spec.updated and not (in_place and array.flags.writeable):
        raise ArgumentError(
            f"argument {spec.describe()}: a variable the model updates in place needs a "
            "writable C-contiguous array (np.ascontiguousarray makes one)"
        )
    return np.ascontiguousarray(array)


def _pointers(arrays: Sequence[np.ndarray]) -> ctypes.Array[ctypes.c_void_p]:
    # The arrays outlive the call (the caller holds them), so raw addresses are safe here.
    table = (ctypes.c_void_p * max(len(arrays), 1))()
    for i, array in enumerate(arrays):
        table[i] = array.ctypes.data
    return table


def _check_host_target(model: CompiledModel) -> None:
    """Refuse code this process cannot run: another architecture, OS or ABI (calling
    convention), or cpu features the host lacks (an illegal instruction at the first call)."""
    host, target = resolve_target(type(model.target)()), model.target
    problem = _host_mismatch(host, target)
    if problem:
        raise CodegenError(
            f"{model.name} was compiled for {target.triple} (cpu {target.cpu}); the JIT runs "
            f"only code for this machine ({host.triple}, cpu {host.cpu}): {problem}; compile "
            "for the host target, or use `aotc compile` to cross-compile"
        )


def _host_mismatch(host: TargetSpec, target: TargetSpec) -> str | None:
    if _triple_parts(target.triple) != _triple_parts(host.triple):
        return "another architecture, OS or ABI"
    if target.cpu not in (host.cpu, "generic", "x86-64", PORTABLE):
        return f"cpu '{target.cpu}' may imply features this machine lacks"
    host_features = {f for f in host.features.split(",") if f.startswith("+")}
    missing = sorted({f for f in target.features.split(",") if f.startswith("+")} - host_features)
    return f"this machine lacks {','.join(missing)}" if missing else None


def _triple_parts(triple: str) -> tuple[str, ...]:
    """Architecture, OS and environment: the vendor field ("unknown", "pc") does not matter,
    and may be left out ("x86_64-linux-gnu")."""
    parts = triple.split("-")
    if len(parts) >= 4 or (len(parts) == 3 and parts[1] in ("unknown", "pc", "apple", "none")):
        parts = [parts[0], *parts[2:]]
    return tuple(parts)


@functools.cache
def _load_compiler_runtime() -> None:
    """Make libgcc's helpers visible to the JIT's linker. Code for a cpu without F16C (the
    portable x86-64 baseline) converts f16 through ``__extendhfsf2``/``__truncsfhf2``, which a
    C link takes from libgcc; this process may not have loaded it, and MCJIT would call
    through a null address instead of failing."""
    name = ctypes.util.find_library("gcc_s")
    if name is not None:
        # Not loadable: the helpers stay unresolved and _check_runtime_helpers says so.
        with contextlib.suppress(RuntimeError):
            llvm.load_library_permanently(name)


# libgcc / compiler-rt helpers LLVM may call from host code (half and bfloat16 conversions,
# integer powers).
RUNTIME_HELPERS = (
    "__extendhfsf2", "__truncsfhf2", "__truncdfhf2", "__truncsfbf2", "__truncdfbf2",
    "__powisf2", "__powidf2",
)  # fmt: skip


def _check_runtime_helpers(object_bytes: bytes) -> None:
    """A clear error, not a crash, when the object calls a helper this process lacks (the
    symbol table holds the names of the functions the object calls)."""
    missing = [
        name
        for name in RUNTIME_HELPERS
        if name.encode() + b"\0" in object_bytes and not llvm.address_of_symbol(name)
    ]
    if missing:
        raise CodegenError(
            f"the object calls {', '.join(missing)} (compiler runtime), which this process "
            "cannot resolve: link the object into a C program, or compile with "
            "--target-cpu host"
        )


def _create_engine(model: CompiledModel) -> llvm.ExecutionEngine:
    tm, _ = create_target_machine(model.target)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _load_compiler_runtime()
    _check_runtime_helpers(model.object_bytes)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)  # MCJIT needs a module
    engine.add_object_file(llvm.ObjectFileRef.from_data(model.object_bytes))
    engine.finalize_object()
    return engine
