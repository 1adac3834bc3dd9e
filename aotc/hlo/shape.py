"""Element types and shapes, spelled as XLA spells them (``f32[2,3]{1,0}``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from aotc.bfloat16 import bfloat16, is_bfloat16
from aotc.errors import UnsupportedError


class PrimitiveType(Enum):
    """XLA element types; the value is the spelling in HLO text."""

    PRED = "pred"
    S8 = "s8"
    S16 = "s16"
    S32 = "s32"
    S64 = "s64"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"
    C64 = "c64"  # (re, im) pairs of f32, interleaved as C's float _Complex
    C128 = "c128"

    @property
    def numpy(self) -> np.dtype:
        return bfloat16() if self is PrimitiveType.BF16 else _TO_NUMPY[self]

    @property
    def byte_size(self) -> int:
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self in (PrimitiveType.F16, PrimitiveType.BF16, PrimitiveType.F32, PrimitiveType.F64)

    @property
    def is_complex(self) -> bool:
        return self in (PrimitiveType.C64, PrimitiveType.C128)

    @property
    def is_complex_part(self) -> bool:
        """f32 or f64: a type complex numbers are made of."""
        return self in (PrimitiveType.F32, PrimitiveType.F64)

    @property
    def complex_type(self) -> PrimitiveType:
        """The complex type made of this one (c64 of f32); KeyError for other types."""
        return {PrimitiveType.F32: PrimitiveType.C64, PrimitiveType.F64: PrimitiveType.C128}[self]

    @property
    def component(self) -> PrimitiveType:
        """A complex type's real and imaginary part type (f32 for c64); others: itself."""
        return _COMPONENT.get(self, self)

    @property
    def float_bits(self) -> tuple[int, int]:
        """A float type's exponent and explicit mantissa bit counts (IEEE layout)."""
        return _FLOAT_BITS[self]

    @property
    def is_signed_int(self) -> bool:
        return self in (PrimitiveType.S8, PrimitiveType.S16, PrimitiveType.S32, PrimitiveType.S64)

    @property
    def is_unsigned_int(self) -> bool:
        return self in (PrimitiveType.U8, PrimitiveType.U16, PrimitiveType.U32, PrimitiveType.U64)

    @property
    def is_integral(self) -> bool:
        return self.is_signed_int or self.is_unsigned_int

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> PrimitiveType:
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise UnsupportedError(f"{dtype!r} is not a dtype") from None
        if is_bfloat16(dt):
            return PrimitiveType.BF16
        for ptype, np_dtype in _TO_NUMPY.items():
            if np_dtype == dt:
                return ptype
        raise UnsupportedError(f"dtype {dt} is not supported; aotc supports {supported_dtypes()}")

    @classmethod
    def parse(cls, text: str) -> PrimitiveType:
        return cls(text)


# bf16: ``bfloat16()``, numpy's kind "V" (test ``is_float``, not the kind)
_TO_NUMPY: dict[PrimitiveType, np.dtype] = {
    PrimitiveType.PRED: np.dtype(np.bool_),
    PrimitiveType.S8: np.dtype(np.int8),
    PrimitiveType.S16: np.dtype(np.int16),
    PrimitiveType.S32: np.dtype(np.int32),
    PrimitiveType.S64: np.dtype(np.int64),
    PrimitiveType.U8: np.dtype(np.uint8),
    PrimitiveType.U16: np.dtype(np.uint16),
    PrimitiveType.U32: np.dtype(np.uint32),
    PrimitiveType.U64: np.dtype(np.uint64),
    PrimitiveType.F16: np.dtype(np.float16),
    PrimitiveType.F32: np.dtype(np.float32),
    PrimitiveType.F64: np.dtype(np.float64),
    PrimitiveType.C64: np.dtype(np.complex64),
    PrimitiveType.C128: np.dtype(np.complex128),
}

_COMPONENT = {PrimitiveType.C64: PrimitiveType.F32, PrimitiveType.C128: PrimitiveType.F64}


_FLOAT_BITS = {
    PrimitiveType.F16: (5, 10),
    PrimitiveType.BF16: (8, 7),
    PrimitiveType.F32: (8, 23),
    PrimitiveType.F64: (11, 52),
}


def supported_dtypes() -> str:
    return ", ".join([*(str(dt) for dt in _TO_NUMPY.values()), "bfloat16"])


@dataclass(frozen=True)
class Shape:
    """An array shape: element type and static dimensions, row-major."""

    dtype: PrimitiveType
    dims: tuple[int, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def byte_size(self) -> int:
        return self.size * self.dtype.byte_size

    def with_dims(self, dims: tuple[int, ...]) -> Shape:
        return Shape(self.dtype, tuple(dims))

    def with_dtype(self, dtype: PrimitiveType) -> Shape:
        return Shape(dtype, self.dims)

    def __str__(self) -> str:
        return f"{self.dtype.value}[{','.join(map(str, self.dims))}]"

    def with_layout(self) -> str:
        """XLA's spelling with the row-major layout, e.g. ``f32[2,3]{1,0}``."""
        if not self.dims:
            return str(self)
        return f"{self}{{{','.join(map(str, reversed(range(self.rank))))}}}"


@dataclass(frozen=True)
class TupleShape:
    """A tuple of shapes, as produced by ``tuple`` and consumed by ``get-tuple-element``."""

    elements: tuple[AnyShape, ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"

    def with_layout(self) -> str:
        return "(" + ", ".join(e.with_layout() for e in self.elements) + ")"


AnyShape = Shape | TupleShape


def real_form(shape: Shape) -> Shape:
    """How a shape lies in memory as reals: ``c64[d...]`` is ``f32[d..., 2]`` (``(re, im)``
    pairs, C's ``float _Complex``); a real shape is itself."""
    if not shape.dtype.is_complex:
        return shape
    return Shape(shape.dtype.component, (*shape.dims, 2))


def storage_form(shape: AnyShape) -> AnyShape:
    """``real_form`` of every array in ``shape`` (tuples nest a bounded depth)."""
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(storage_form(e) for e in shape.elements))
    return real_form(shape)


def has_complex(shape: AnyShape) -> bool:
    """Whether ``shape`` is complex or a tuple holding one (tuples nest a bounded depth)."""
    if isinstance(shape, TupleShape):
        return any(has_complex(e) for e in shape.elements)
    return shape.dtype.is_complex


def scalar(dtype: PrimitiveType) -> Shape:
    return Shape(dtype, ())
