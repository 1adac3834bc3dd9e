"""TensorFlow dtypes and TensorProtos as numpy values.

``numpy_dtype`` maps a TF ``DataType`` to a numpy dtype (reference types like ``DT_FLOAT_REF``
map like their value type); ``tensor_to_numpy`` decodes a ``TensorProto`` the way TensorFlow's
``Tensor::FromProto`` does, including the "splat" rule for typed value fields.

The float8/int4 families, quantized types, strings, resources and variants have no
plain numpy dtype and raise ``UnsupportedError``.
"""

from __future__ import annotations

import numpy as np

from aotc.bfloat16 import bfloat16, is_bfloat16
from aotc.errors import GraphError, UnsupportedError
from aotc.proto import aotc_tf_pb2 as pb

# Reference dtypes (TF1 variables) are the value dtype plus this offset.
_REF_OFFSET = 100

_TO_NUMPY: dict[int, np.dtype] = {
    pb.DT_HALF: np.dtype(np.float16),
    pb.DT_FLOAT: np.dtype(np.float32),
    pb.DT_DOUBLE: np.dtype(np.float64),
    pb.DT_INT8: np.dtype(np.int8),
    pb.DT_INT16: np.dtype(np.int16),
    pb.DT_INT32: np.dtype(np.int32),
    pb.DT_INT64: np.dtype(np.int64),
    pb.DT_UINT8: np.dtype(np.uint8),
    pb.DT_UINT16: np.dtype(np.uint16),
    pb.DT_UINT32: np.dtype(np.uint32),
    pb.DT_UINT64: np.dtype(np.uint64),
    pb.DT_BOOL: np.dtype(np.bool_),
    pb.DT_COMPLEX64: np.dtype(np.complex64),
    pb.DT_COMPLEX128: np.dtype(np.complex128),
}
_FROM_NUMPY: dict[np.dtype, int] = {v: k for k, v in _TO_NUMPY.items()}

# Which typed field holds the values of each dtype (TensorFlow's ProtoHelper<T>).
_VALUE_FIELD: dict[int, str] = {
    pb.DT_HALF: "half_val",
    pb.DT_BFLOAT16: "half_val",  # TF keeps bfloat16 bit patterns there too
    pb.DT_FLOAT: "float_val",
    pb.DT_DOUBLE: "double_val",
    pb.DT_INT8: "int_val",
    pb.DT_INT16: "int_val",
    pb.DT_INT32: "int_val",
    pb.DT_UINT8: "int_val",
    pb.DT_UINT16: "int_val",
    pb.DT_INT64: "int64_val",
    pb.DT_UINT32: "uint32_val",
    pb.DT_UINT64: "uint64_val",
    pb.DT_BOOL: "bool_val",
    pb.DT_COMPLEX64: "scomplex_val",
    pb.DT_COMPLEX128: "dcomplex_val",
}
_ALL_VALUE_FIELDS = frozenset(_VALUE_FIELD.values()) | {
    "string_val", "resource_handle_val", "variant_val", "float8_val",
}  # fmt: skip

# Far beyond any constant a compiled model can embed; protobuf itself caps messages at 2 GiB.
MAX_ELEMENTS = 2**31 - 1
MAX_BYTES = 2**31


def dtype_name(dtype: int) -> str:
    """``DT_FLOAT`` for 1, or ``DataType(999)`` for a number this schema does not know."""
    try:
        return pb.DataType.Name(dtype)
    except ValueError:
        return f"DataType({dtype})"


def is_ref_dtype(dtype: int) -> bool:
    """True for TF1 reference dtypes such as ``DT_FLOAT_REF``."""
    return dtype > _REF_OFFSET


def _value_dtype(dtype: int) -> int:
    return dtype - _REF_OFFSET if is_ref_dtype(dtype) else dtype


def numpy_dtype(dtype: int, where: str = "") -> np.dtype:
    """The numpy dtype of a TF ``DataType``; ``where`` ("node 'x'") prefixes the error."""
    base = _value_dtype(dtype)
    if base == pb.DT_BFLOAT16:
        return bfloat16()
    if base in _TO_NUMPY:
        return _TO_NUMPY[base]
    prefix = f"{where}: " if where else ""
    raise UnsupportedError(f"{prefix}dtype {dtype_name(dtype)} is not supported by aotc")


def tf_dtype(dtype: np.dtype | type | str) -> int:
    """The TF ``DataType`` number of a numpy dtype (``np.float32`` -> ``DT_FLOAT``)."""
    key = np.dtype(dtype)
    if is_bfloat16(key):
        return pb.DT_BFLOAT16
    if key not in _FROM_NUMPY:
        raise UnsupportedError(f"numpy dtype {key} has no TensorFlow DataType aotc supports")
    return _FROM_NUMPY[key]


def shape_from_proto(shape: pb.TensorShapeProto, where: str = "") -> tuple[int, ...] | None:
    """A shape as a tuple, -1 for an unknown dim, or None for an unknown rank."""
    if shape.unknown_rank:
        return None
    dims = tuple(int(d.size) for d in shape.dim)
    if any(d < -1 for d in dims):
        prefix = f"{where}: " if where else ""
        raise GraphError(f"{prefix}shape {list(dims)} has a negative dimension")
    return dims


def tensor_to_numpy(tensor: pb.TensorProto, node: str = "?") -> np.ndarray:
    """Decode a ``TensorProto`` into a read-only array; errors name ``node``.

    ``tensor_content`` holds raw little-endian bytes and must match the shape exactly. The
    typed fields may hold fewer values than the shape has elements: the last value is then
    repeated, and no values at all means zeros (TensorFlow's rule). More values than
    elements is an error here, where TensorFlow silently drops the rest.
    """
    where = f"node '{node}'"
    dtype = numpy_dtype(tensor.dtype, where)
    shape = _checked_shape(tensor, dtype, where)
    content = tensor.tensor_content  # each read of the field is a copy of its bytes
    if content:
        array = _from_content(content, dtype, shape, where)
    else:
        array = _from_values(tensor, dtype, shape, where)
    array.flags.writeable = False
    return array


def _checked_shape(tensor: pb.TensorProto, dtype: np.dtype, where: str) -> tuple[int, ...]:
    shape = shape_from_proto(tensor.tensor_shape, where)
    if shape is None or -1 in shape:
        raise GraphError(f"{where}: a constant tensor must have a fully known shape")
    count = _element_count(shape)
    if count > MAX_ELEMENTS or count * dtype.itemsize > MAX_BYTES:
        raise GraphError(
            f"{where}: constant of shape {list(shape)} has {count} elements; "
            f"aotc refuses constants over {MAX_BYTES} bytes"
        )
    return shape


def _element_count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:  # Python ints: no overflow, unlike np.prod
        count *= dim
    return count


def _from_content(
    content: bytes, dtype: np.dtype, shape: tuple[int, ...], where: str
) -> np.ndarray:
    expected = _element_count(shape) * dtype.itemsize
    if len(content) != expected:
        raise GraphError(
            f"{where}: tensor_content has {len(content)} bytes but shape {list(shape)} of "
            f"{dtype} needs {expected}"
        )
    # No copy on little-endian hosts: the array views the bytes, which stay immutable.
    data = np.frombuffer(content, dtype=dtype.newbyteorder("<"))
    return data.astype(dtype, copy=False).reshape(shape)


def _from_values(
    tensor: pb.TensorProto, dtype: np.dtype, shape: tuple[int, ...], where: str
) -> np.ndarray:
    field = _VALUE_FIELD[_value_dtype(tensor.dtype)]
    _check_no_stray_values(tensor, field, where)
    values = _typed_values(tensor, field, dtype, where)
    count = _element_count(shape)
    if len(values) > count:
        raise GraphError(
            f"{where}: {field} has {len(values)} values but shape {list(shape)} has "
            f"{count} elements"
        )
    if len(values) <= 1:  # a splat: a view of one value, so a huge one costs no memory
        one = values if len(values) else np.zeros(1, dtype=values.dtype)
        return np.broadcast_to(one.reshape(()), shape)
    return _splat(values, count).reshape(shape)


def _check_no_stray_values(tensor: pb.TensorProto, field: str, where: str) -> None:
    # Values in a field that does not belong to the dtype would be silently ignored.
    for descriptor, _ in tensor.ListFields():
        if descriptor.name in _ALL_VALUE_FIELDS and descriptor.name != field:
            raise GraphError(
                f"{where}: tensor of dtype {dtype_name(tensor.dtype)} has values in "
                f"{descriptor.name} (expected {field})"
            )


def _typed_values(tensor: pb.TensorProto, field: str, dtype: np.dtype, where: str) -> np.ndarray:
    raw = getattr(tensor, field)
    if field == "half_val":
        # The 16-bit patterns of the halves, one per int32.
        return np.array(raw, dtype=np.int64).astype(np.uint16).view(dtype)
    if field in ("scomplex_val", "dcomplex_val"):
        if len(raw) % 2:
            raise GraphError(f"{where}: {field} has an odd number of values")
        # (real, imaginary) pairs are exactly numpy's complex memory layout.
        part = np.float32 if field == "scomplex_val" else np.float64
        return np.array(raw, dtype=part).view(dtype)
    # Decode at full width, then narrow: int_val carries int8..uint16 and narrowing wraps
    # out-of-range values the way TensorFlow's static_cast does.
    wide = {"uint64_val": np.uint64, "uint32_val": np.uint32}.get(field)
    return np.array(raw, dtype=wide).astype(dtype)


def _splat(values: np.ndarray, count: int) -> np.ndarray:
    if len(values) == count:
        return values
    out = np.empty(count, dtype=values.dtype)
    out[: len(values)] = values
    out[len(values) :] = values[-1]
    return out
