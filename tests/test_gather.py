"""The gather opcode end to end: text round trip, verifier, evaluator and elemental codegen.

The evaluator is checked against a literal, element-by-element reading of XLA's gather
semantics; the compiled generator must then agree with the evaluator exactly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from codegen_testing import run_fused

from aotc.errors import HloError
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import GatherAttrs
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module

RNG = np.random.default_rng(11)


def module_text(operand: str, indices: str, result: str, attrs: str) -> str:
    return f"""HloModule m
ENTRY main {{
  a = {operand} parameter(0)
  i = {indices} parameter(1)
  g = {result} gather(a, i), {attrs}
  ROOT out = ({result}) tuple(g)
}}"""


# name: (operand shape, indices shape, result shape, attrs, index values)
CASES: dict[str, tuple[str, str, str, str, list[int] | None]] = {
    "rows": (
        "f32[5,3]",
        "s32[4]",
        "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,3}",
        [4, 0, 2, 2],
    ),
    "columns_2d_indices": (
        "f32[3,6]",
        "s64[2,2]",
        "f32[3,2,2]",
        "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, "
        "slice_sizes={3,1}",
        [5, 0, 1, 3],
    ),
    "gather_nd": (
        "f32[4,5,2]",
        "s32[3,2]",
        "f32[3,2]",
        "offset_dims={1}, collapsed_slice_dims={0,1}, start_index_map={0,1}, "
        "index_vector_dim=1, slice_sizes={1,1,2}",
        [3, 4, 0, 0, 2, 1],
    ),
    "index_vector_dim_first": (
        "s32[4,5]",
        "u8[2,3]",
        "s32[3]",
        "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={1,0}, "
        "index_vector_dim=0, slice_sizes={1,1}",
        [4, 0, 2, 3, 1, 0],
    ),
    "windows_not_collapsed": (
        "f32[6,4]",
        "s32[3,1]",
        "f32[3,2,4]",
        "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={2,4}",
        [0, 4, 3],
    ),
    "clamped_out_of_range": (
        "f32[5,3]",
        "s32[4]",
        "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,3}",
        [-1, 5, -2147483648, 2147483647],
    ),
    "scalar_result": (
        "f32[4]",
        "s32[]",
        "f32[]",
        "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=0, "
        "slice_sizes={1}",
        [2],
    ),
    "batching_dims": (
        "f32[2,5,3]",
        "s32[2,4]",
        "f32[2,4,3]",
        "offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, "
        "operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, "
        "slice_sizes={1,1,3}",
        [0, 4, 1, 2, 3, 3, 0, 1],
    ),
    "offset_dims_between_batch_dims": (
        "f32[4,3]",
        "s32[2,5]",
        "f32[2,3,5]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, "
        "slice_sizes={1,3}",
        None,
    ),
}


def case_inputs(name: str) -> tuple[object, list[np.ndarray]]:
    operand, indices, result, attrs, values = CASES[name]
    module = parse_module(module_text(operand, indices, result, attrs))
    params = module.entry.parameters
    a_shape, i_shape = params[0].array_shape, params[1].array_shape
    a = (RNG.standard_normal(a_shape.dims) * 10).astype(a_shape.dtype.numpy)
    if values is None:
        values = list(RNG.integers(0, a_shape.dims[0], i_shape.size))
    i = np.array(values, dtype=np.int64).astype(i_shape.dtype.numpy).reshape(i_shape.dims)
    return module, [a, i]


def literal_gather(a: np.ndarray, indices: np.ndarray, g: GatherAttrs, out: tuple) -> np.ndarray:
    """XLA's gather semantics read literally, one output element at a time."""
    result = np.zeros(out, dtype=a.dtype)
    ivd = g.index_vector_dim
    batch_dims = [d for d in range(len(out)) if d not in g.offset_dims]
    dropped = {*g.collapsed_slice_dims, *g.operand_batching_dims}
    kept = [d for d in range(a.ndim) if d not in dropped]
    for index in itertools.product(*map(range, out)):
        batch = [index[d] for d in batch_dims]
        start = [0] * a.ndim
        for k, d in enumerate(g.start_index_map):
            where = list(batch)
            if ivd < indices.ndim:
                where.insert(ivd, k)
            start[d] = min(max(int(indices[tuple(where)]), 0), a.shape[d] - g.slice_sizes[d])
        for o, i in zip(g.operand_batching_dims, g.start_indices_batching_dims, strict=True):
            start[o] = batch[i if i < ivd else i - 1]
        for j, d in enumerate(kept):
            start[d] += index[g.offset_dims[j]]
        result[index] = a[tuple(start)]
    return result


@pytest.mark.parametrize("name", list(CASES))
def test_text_round_trip(name: str) -> None:
    module, _ = case_inputs(name)
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    assert ("operand_batching_dims" in text) == ("operand_batching_dims" in CASES[name][3])


@pytest.mark.parametrize("name", list(CASES))
def test_evaluator_matches_the_literal_semantics(name: str) -> None:
    module, args = case_inputs(name)
    verify_module(module)
    g = module.entry.root.operands[0]
    expected = literal_gather(*args, g.attrs_as(GatherAttrs), g.array_shape.dims)
    np.testing.assert_array_equal(evaluate(module, args)[0], expected)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_generator_matches_the_evaluator(name: str) -> None:
    module, args = case_inputs(name)
    np.testing.assert_array_equal(run_fused(module, args), evaluate(module, args)[0])


BAD = {
    "wrong_vector_length": (
        "f32[5,3]", "s32[4,2]", "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,3}",
        "elements",
    ),
    "float_indices": (
        "f32[5,3]", "f32[4]", "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,3}",
        "integers",
    ),
    "slice_too_big": (
        "f32[5,3]", "s32[4]", "f32[4,4]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,4}",
        "exceed",
    ),
    "collapsed_not_one": (
        "f32[5,3]", "s32[4]", "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={2,3}",
        "must be 1",
    ),
    "wrong_result_shape": (
        "f32[5,3]", "s32[4]", "f32[3,4]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
        "slice_sizes={1,3}",
        "does not match",
    ),
    "offset_dims_unsorted": (
        "f32[5,3,2]", "s32[4]", "f32[4,3,2]",
        "offset_dims={2,1}, collapsed_slice_dims={0}, start_index_map={0}, "
        "index_vector_dim=1, slice_sizes={1,3,2}",
        "sorted",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD))
def test_verifier_rejects(name: str) -> None:
    operand, indices, result, attrs, message = BAD[name]
    module = parse_module(module_text(operand, indices, result, attrs))
    with pytest.raises(HloError, match=message):
        verify_module(module)


def test_parser_needs_slice_sizes() -> None:
    text = module_text(
        "f32[5,3]", "s32[4]", "f32[4,3]",
        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1",
    )  # fmt: skip
    with pytest.raises(HloError, match="slice_sizes"):
        parse_module(text)
