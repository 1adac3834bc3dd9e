"""Array-op lowerings checked against numpy: StridedSlice canonicalisation on random index
expressions (converted to begin/end/strides/masks exactly as ``tf.Tensor.__getitem__`` does),
the Cumsum scan, GatherV2's batch_dims, and the small helpers."""

from __future__ import annotations

import numpy as np
import pytest

from aotc.errors import ShapeError
from aotc.frontend.ops.array import resolve_sizes
from aotc.frontend.ops.gather import gather_axis_attrs
from aotc.frontend.ops.scan import scan
from aotc.frontend.ops.shape import range_values
from aotc.frontend.ops.strided_slice import (
    StridedSliceSpec,
    emit_strided_slice,
    plan_strided_slice,
)
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import print_module
from aotc.hlo.verify import verify_module

RNG = np.random.default_rng(5)
Index = tuple[object, ...]


def spec_of(index: Index) -> StridedSliceSpec:
    """What TF's ``_slice_helper`` makes of a Python index expression."""
    begin, end, strides = [], [], []
    masks = dict.fromkeys(("begin", "end", "ellipsis", "new_axis", "shrink"), 0)
    for i, item in enumerate(index):
        bit = 1 << i
        if isinstance(item, slice):
            begin.append(0 if item.start is None else item.start)
            end.append(0 if item.stop is None else item.stop)
            strides.append(1 if item.step is None else item.step)
            masks["begin"] |= bit if item.start is None else 0
            masks["end"] |= bit if item.stop is None else 0
        elif item is Ellipsis or item is None:
            begin.append(0), end.append(0), strides.append(1)
            masks["ellipsis" if item is Ellipsis else "new_axis"] |= bit
        else:
            assert isinstance(item, int)
            begin.append(item), end.append(item + 1), strides.append(1)
            masks["shrink"] |= bit
    return StridedSliceSpec(tuple(begin), tuple(end), tuple(strides), *masks.values())


def build(
    dims: tuple[int, ...], dtype: PrimitiveType, lower: object
) -> tuple[Module, ComputationBuilder]:
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    x = b.parameter(0, Shape(dtype, dims), "x")
    root = lower(b, x)
    module = mb.build(b.build(b.tuple([root])))
    verify_module(module)
    return module, b


def strided(x: np.ndarray, index: Index) -> np.ndarray:
    plan = plan_strided_slice(x.shape, spec_of(index))
    module, _ = build(x.shape, PrimitiveType.F32, lambda b, p: emit_strided_slice(b, p, plan))
    return evaluate(module, [x])[0]


def random_item(r: np.random.Generator) -> object:
    kind = r.integers(0, 6)
    bound = lambda: None if r.random() < 0.3 else int(r.integers(-8, 9))  # noqa: E731
    if kind <= 2:
        step = None if r.random() < 0.3 else int(r.choice([-3, -2, -1, 1, 2, 3]))
        return slice(bound(), bound(), step)
    if kind == 3:
        return None  # new axis
    if kind == 4:
        return Ellipsis
    return int(r.integers(-6, 6))


def random_case(r: np.random.Generator) -> tuple[np.ndarray, Index]:
    while True:
        dims = tuple(int(n) for n in r.integers(0, 6, r.integers(1, 5)))
        x = r.standard_normal(dims).astype(np.float32)
        index = tuple(random_item(r) for _ in range(r.integers(1, 5)))
        if sum(item is Ellipsis for item in index) > 1:
            continue
        try:
            x[index]  # numpy rejects what TF rejects: out-of-range ints, too many indices
        except IndexError:
            continue
        return x, index


@pytest.mark.parametrize("seed", range(300))
def test_strided_slice_matches_numpy_indexing(seed: int) -> None:
    x, index = random_case(np.random.default_rng(seed))
    np.testing.assert_array_equal(strided(x, index), x[index], err_msg=f"x{list(x.shape)}{index}")


CASES: list[tuple[tuple[int, ...], Index]] = [
    ((4, 5, 6), (slice(3, 0, -1),)),
    ((4, 5, 6), (Ellipsis, slice(None, None, -1))),
    ((4, 5, 6), (-1, Ellipsis, None, slice(-100, 100, 2))),
    ((4, 5, 6), (None, Ellipsis, None)),
    ((4, 5, 6), (slice(2, -5, -1), slice(4, -6, -1))),
    ((4, 5, 6), (1, 2, 3)),
    ((4, 5, 6), (slice(5, 1),)),
    ((3,), (slice(None, None, -2),)),
    ((0, 3), (slice(None, None, -1), 1)),
]


@pytest.mark.parametrize(("dims", "index"), CASES)
def test_strided_slice_known_cases(dims: tuple[int, ...], index: Index) -> None:
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    np.testing.assert_array_equal(strided(x, index), x[index])


def test_new_axis_wins_over_shrink_and_shrink_ignores_masks() -> None:
    x = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    both = StridedSliceSpec((0, 1, 0), (1, 3, 1), (1, 1, 1), new_axis_mask=1, shrink_axis_mask=1)
    assert plan_strided_slice(x.shape, both).final_dims == (1, 2, 1, 6)
    masked = StridedSliceSpec((2,), (0,), (1,), begin_mask=1, shrink_axis_mask=1)
    assert plan_strided_slice(x.shape, masked).final_dims == (5, 6)
    assert plan_strided_slice(x.shape, masked).dims[0].start == 2


def test_negative_strides_lower_to_slice_and_reverse() -> None:
    plan = plan_strided_slice((4, 6), spec_of((slice(None, None, -2), 1)))
    module, _ = build((4, 6), PrimitiveType.F32, lambda b, p: emit_strided_slice(b, p, plan))
    text = print_module(module)
    assert "slice={[1:4:2], [1:2]}" in text and "reverse(" in text and "dimensions={0}" in text


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (StridedSliceSpec((0, 0), (0, 0), (1, 1), ellipsis_mask=3), "one ellipsis"),
        (StridedSliceSpec((4,), (5,), (1,), shrink_axis_mask=1), "out of bounds"),
        (StridedSliceSpec((0,), (2,), (0,)), "stride of dimension 0 is 0"),
        (StridedSliceSpec((0, 0, 0), (1, 1, 1), (1, 1, 1)), "more than"),
        (StridedSliceSpec((1,), (2,), (-1,), shrink_axis_mask=1), "only stride 1"),
    ],
)
def test_strided_slice_errors(spec: StridedSliceSpec, message: str) -> None:
    with pytest.raises(ShapeError, match=message):
        plan_strided_slice((4, 5), spec)


# ---- Cumsum / Cumprod ----------------------------------------------------------------------


def cumulative(
    x: np.ndarray, dim: int, opcode: Opcode, identity: int, exclusive: bool
) -> np.ndarray:
    dtype = PrimitiveType.from_numpy(x.dtype)

    def lower(b: ComputationBuilder, p: Instruction) -> Instruction:
        return scan(b, p, dim, opcode, b.constant(identity, dtype), exclusive)

    module, _ = build(x.shape, dtype, lower)
    return evaluate(module, [x])[0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 33])
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_is_an_exact_integer_cumsum(n: int, exclusive: bool) -> None:
    x = RNG.integers(2**24, 2**31 - 1, (3, n)).astype(np.int32)  # sums wrap, as in TF
    with np.errstate(over="ignore"):
        want = np.cumsum(x, axis=1, dtype=np.int32)
        if exclusive:
            want = np.concatenate([np.zeros((3, min(n, 1)), np.int32), want[:, :-1]], axis=1)
    np.testing.assert_array_equal(cumulative(x, 1, Opcode.ADD, 0, exclusive), want)


def test_scan_products_along_the_first_axis() -> None:
    x = RNG.uniform(0.5, 1.5, (6, 4)).astype(np.float32)
    np.testing.assert_allclose(cumulative(x, 0, Opcode.MULTIPLY, 1, False), np.cumprod(x, 0), 1e-6)


# ---- GatherV2 batch_dims, Range, SplitV sizes ----------------------------------------------


@pytest.mark.parametrize(
    ("params", "indices", "axis", "batch_dims"),
    [((5, 4), (2, 3), 0, 0), ((5, 4), (3,), 1, 0), ((2, 5, 3), (2, 4), 1, 1),
     ((2, 3, 5, 2), (2, 3, 4), 2, 2), ((2, 3, 5, 2), (2, 4, 1), 2, 1), ((4,), (), 0, 0)],
)  # fmt: skip
def test_gather_axis_attrs_match_numpy(
    params: tuple[int, ...], indices: tuple[int, ...], axis: int, batch_dims: int
) -> None:
    p = RNG.standard_normal(params).astype(np.float32)
    i = RNG.integers(0, params[axis], indices).astype(np.int32)
    p_shape, i_shape = Shape(PrimitiveType.F32, params), Shape(PrimitiveType.S32, indices)
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    attrs = gather_axis_attrs(p_shape, i_shape, axis, batch_dims)
    g = b.gather(b.parameter(0, p_shape), b.parameter(1, i_shape), attrs)
    module = mb.build(b.build(b.tuple([g])))
    verify_module(module)
    batches = list(np.ndindex(*params[:batch_dims]))
    rows = [np.take(p[k], i[k], axis=axis - batch_dims) for k in batches]
    want = np.stack(rows).reshape(g.array_shape.dims)
    np.testing.assert_array_equal(evaluate(module, [p, i])[0], want)


def test_range_values_follow_tf() -> None:
    i32, f32 = np.dtype(np.int32), np.dtype(np.float32)
    np.testing.assert_array_equal(
        range_values(np.int32(0), np.int32(10), np.int32(3), i32), [0, 3, 6, 9]
    )
    np.testing.assert_array_equal(
        range_values(np.int32(5), np.int32(-4), np.int32(-2), i32), [5, 3, 1, -1, -3]
    )
    np.testing.assert_array_equal(
        range_values(np.float32(1.5), np.float32(4), np.float32(0.5), f32), [1.5, 2, 2.5, 3, 3.5]
    )
    assert range_values(np.int32(3), np.int32(3), np.int32(1), i32).shape == (0,)
    with pytest.raises(ShapeError):
        range_values(np.int32(0), np.int32(3), np.int32(0), i32)


def test_resolve_sizes() -> None:
    assert resolve_sizes(7, [1, -1, 2]) == [1, 4, 2]
    assert resolve_sizes(3, [2, 0, 1]) == [2, 0, 1]
    for bad in ([1, -1, -1], [5, 5], [1, 1]):
        with pytest.raises(ShapeError):
            resolve_sizes(7, bad)
