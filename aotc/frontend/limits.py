"""Size limits that keep compiled code in range: no tensor over ``MAX_TENSOR_BYTES``, none of
rank over ``MAX_RANK``.

Generated code indexes with 64-bit integers and the C header states byte sizes as ``size_t``
constants; a Placeholder of shape ``[2**40, 2**40]`` would overflow both and ask the caller for
petabytes. Checking the signature before translation and every HLO value after it turns such
graphs into one clear error instead of nonsense artifacts or a multi-gigabyte allocation.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from aotc.errors import ShapeError
from aotc.frontend.tensor import MAX_BYTES
from aotc.hlo.ir import Module
from aotc.hlo.shape import Shape

MAX_TENSOR_BYTES = MAX_BYTES  # 2 GiB, the same cap as for constants
MAX_RANK = 64  # numpy's: the reference evaluator (constant folding) computes with numpy arrays


def check_feed_sizes(feeds: Iterable[tuple[str, np.dtype, tuple[int, ...]]], where: str) -> None:
    """Refuse any (name, dtype, shape) over the limit; ``where`` names the graph or config."""
    for name, dtype, shape in feeds:
        _check(f"{where}: feed '{name}'", list(shape), _count(shape) * dtype.itemsize)


def check_module_sizes(module: Module, where: str) -> None:
    """Refuse any HLO value over the limit, naming the instruction (a TF node, usually)."""
    for comp in module.computations:
        for inst in comp.instructions:
            if isinstance(inst.shape, Shape):
                what = f"{where}: value '{inst.name}' ({inst.opcode.value})"
                _check(what, list(inst.shape.dims), inst.shape.byte_size)


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:  # Python ints: exact, where np.prod would wrap around
        count *= dim
    return count


def _check(what: str, dims: list[int], nbytes: int) -> None:
    if len(dims) > MAX_RANK:
        raise ShapeError(f"{what} has rank {len(dims)}; aotc supports ranks up to {MAX_RANK}")
    if nbytes > MAX_TENSOR_BYTES:
        raise ShapeError(
            f"{what} of shape {dims} needs {nbytes} bytes; aotc refuses tensors over "
            f"{MAX_TENSOR_BYTES} bytes (use smaller static shapes)"
        )
