"""TensorProto decoding and the TF <-> numpy dtype mapping."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from google.protobuf import text_format

from aotc.abi import SUPPORTED_DTYPES, supported_dtype
from aotc.errors import GraphError, UnsupportedError
from aotc.frontend.tensor import (
    dtype_name,
    numpy_dtype,
    shape_from_proto,
    tensor_to_numpy,
    tf_dtype,
)
from aotc.proto import aotc_tf_pb2 as pb


def tensor(text: str) -> pb.TensorProto:
    return text_format.Parse(text, pb.TensorProto())


def shape_text(dims: list[int]) -> str:
    return "tensor_shape { " + " ".join(f"dim {{ size: {d} }}" for d in dims) + " }"


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("name", SUPPORTED_DTYPES)
def test_supported_dtypes_round_trip(name: str) -> None:
    assert numpy_dtype(tf_dtype(supported_dtype(name))) == supported_dtype(name)


def test_ref_dtypes_map_like_their_value_type() -> None:
    assert numpy_dtype(pb.DT_FLOAT_REF) == np.float32
    assert numpy_dtype(pb.DT_INT64_REF) == np.int64


@pytest.mark.parametrize("dtype", [pb.DT_FLOAT8_E5M2, pb.DT_STRING, pb.DT_RESOURCE, pb.DT_QINT8])
def test_unsupported_dtypes_raise_and_name_the_place(dtype: int) -> None:
    with pytest.raises(UnsupportedError, match=rf"node 'w'.*{dtype_name(dtype)}"):
        numpy_dtype(dtype, "node 'w'")


def test_dtype_name_of_unknown_number() -> None:
    assert dtype_name(pb.DT_HALF) == "DT_HALF"
    assert dtype_name(999) == "DataType(999)"


def test_shape_from_proto() -> None:
    assert shape_from_proto(pb.TensorShapeProto()) == ()
    assert shape_from_proto(pb.TensorShapeProto(unknown_rank=True)) is None
    proto = text_format.Parse("dim { size: -1 } dim { size: 3 }", pb.TensorShapeProto())
    assert shape_from_proto(proto) == (-1, 3)


def test_shape_with_bad_negative_dim() -> None:
    proto = text_format.Parse("dim { size: -7 }", pb.TensorShapeProto())
    with pytest.raises(GraphError, match="node 'x'.*negative"):
        shape_from_proto(proto, "node 'x'")


# --------------------------------------------------------------------------- tensor_content


def test_tensor_content_is_decoded_and_read_only() -> None:
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    proto = pb.TensorProto(dtype=pb.DT_FLOAT, tensor_content=values.tobytes())
    proto.tensor_shape.dim.add(size=2)
    proto.tensor_shape.dim.add(size=3)
    array = tensor_to_numpy(proto, "w")
    np.testing.assert_array_equal(array, values)
    assert array.dtype == np.float32
    assert not array.flags.writeable


def test_tensor_content_of_wrong_size_names_the_node() -> None:
    proto = pb.TensorProto(dtype=pb.DT_FLOAT, tensor_content=b"\0" * 20)
    proto.tensor_shape.dim.add(size=2)
    proto.tensor_shape.dim.add(size=3)
    with pytest.raises(GraphError, match=r"node 'dense/kernel'.*20 bytes.*needs 24"):
        tensor_to_numpy(proto, "dense/kernel")


# --------------------------------------------------------------------------- typed fields


def test_splat_of_one_value_fills_the_shape() -> None:
    array = tensor_to_numpy(tensor(f"dtype: DT_FLOAT {shape_text([2, 3])} float_val: 1.5"))
    np.testing.assert_array_equal(array, np.full((2, 3), 1.5, np.float32))


def test_splat_repeats_the_last_value() -> None:
    array = tensor_to_numpy(tensor(f"dtype: DT_INT32 {shape_text([5])} int_val: [1, 2]"))
    np.testing.assert_array_equal(array, [1, 2, 2, 2, 2])


def test_no_values_means_zeros() -> None:
    array = tensor_to_numpy(tensor(f"dtype: DT_DOUBLE {shape_text([3])}"))
    np.testing.assert_array_equal(array, np.zeros(3))
    assert array.dtype == np.float64


def test_scalar() -> None:
    array = tensor_to_numpy(tensor("dtype: DT_INT64 tensor_shape {} int64_val: -9"))
    assert array.shape == ()
    assert array == -9


def test_more_values_than_elements_is_an_error() -> None:
    proto = tensor(f"dtype: DT_FLOAT {shape_text([2])} float_val: [1, 2, 3]")
    with pytest.raises(GraphError, match="node 'c'.*3 values.*2 elements"):
        tensor_to_numpy(proto, "c")


def test_half_val_holds_float16_bit_patterns() -> None:
    halves = np.array([1.0, -2.5, 65504.0], dtype=np.float16)
    bits = ", ".join(str(b) for b in halves.view(np.uint16))
    array = tensor_to_numpy(tensor(f"dtype: DT_HALF {shape_text([3])} half_val: [{bits}]"))
    assert array.dtype == np.float16
    np.testing.assert_array_equal(array, halves)


@pytest.mark.parametrize(
    ("dtype", "field", "values", "expected"),
    [
        ("DT_INT8", "int_val", "[-3, 127]", np.array([-3, 127], np.int8)),
        ("DT_INT16", "int_val", "[-300]", np.array([-300], np.int16)),
        ("DT_UINT8", "int_val", "[255, 0]", np.array([255, 0], np.uint8)),
        ("DT_UINT16", "int_val", "[65535]", np.array([65535], np.uint16)),
        ("DT_UINT32", "uint32_val", "[4000000000]", np.array([4000000000], np.uint32)),
        ("DT_UINT64", "uint64_val", f"[{2**63 + 5}]", np.array([2**63 + 5], np.uint64)),
        ("DT_INT64", "int64_val", f"[{-(2**62)}]", np.array([-(2**62)], np.int64)),
        ("DT_BOOL", "bool_val", "[true, false]", np.array([True, False])),
        ("DT_DOUBLE", "double_val", "[0.1]", np.array([0.1])),
        ("DT_COMPLEX64", "scomplex_val", "[1, 2, 3, -4]", np.array([1 + 2j, 3 - 4j], np.complex64)),
        ("DT_COMPLEX128", "dcomplex_val", "[0.5, 0.25]", np.array([0.5 + 0.25j])),
        ("DT_BFLOAT16", "half_val", "[16256, 49184]", np.array([1.0, -2.5], ml_dtypes.bfloat16)),
    ],
)
def test_typed_fields(dtype: str, field: str, values: str, expected: np.ndarray) -> None:
    proto = tensor(f"dtype: {dtype} {shape_text([len(expected)])} {field}: {values}")
    array = tensor_to_numpy(proto)
    assert array.dtype == expected.dtype
    np.testing.assert_array_equal(array, expected)


def test_complex_with_odd_value_count() -> None:
    proto = tensor(f"dtype: DT_COMPLEX64 {shape_text([1])} scomplex_val: [1, 2, 3]")
    with pytest.raises(GraphError, match="node 'z'.*odd"):
        tensor_to_numpy(proto, "z")


def test_values_in_the_wrong_field_are_an_error() -> None:
    proto = tensor(f"dtype: DT_FLOAT {shape_text([2])} int_val: [1, 2]")
    with pytest.raises(GraphError, match="node 'c'.*int_val.*float_val"):
        tensor_to_numpy(proto, "c")


def test_string_tensor_is_unsupported() -> None:
    proto = tensor(f"dtype: DT_STRING {shape_text([1])} string_val: 'hi'")
    with pytest.raises(UnsupportedError, match="node 's'.*DT_STRING"):
        tensor_to_numpy(proto, "s")


# --------------------------------------------------------------------------- bad shapes


def test_absurd_size_is_refused_before_allocating() -> None:
    proto = tensor(f"dtype: DT_FLOAT {shape_text([1 << 20, 1 << 20])} float_val: 1")
    with pytest.raises(GraphError, match="node 'big'.*refuses"):
        tensor_to_numpy(proto, "big")


def test_huge_dims_that_overflow_int64_products_are_refused() -> None:
    proto = tensor(f"dtype: DT_INT8 {shape_text([2**62, 4])}")
    with pytest.raises(GraphError, match="refuses"):
        tensor_to_numpy(proto, "big")


def test_zero_sized_tensor() -> None:
    assert tensor_to_numpy(tensor(f"dtype: DT_FLOAT {shape_text([0, 4])}")).shape == (0, 4)


@pytest.mark.parametrize("dims", [[-1], [2, -3]])
def test_unknown_or_negative_dims_are_refused(dims: list[int]) -> None:
    with pytest.raises(GraphError, match="node 'c'"):
        tensor_to_numpy(tensor(f"dtype: DT_FLOAT {shape_text(dims)}"), "c")


def test_unknown_rank_is_refused() -> None:
    with pytest.raises(GraphError, match="fully known shape"):
        tensor_to_numpy(tensor("dtype: DT_FLOAT tensor_shape { unknown_rank: true }"), "c")
