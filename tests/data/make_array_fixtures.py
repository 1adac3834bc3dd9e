#!/usr/bin/env python
"""Regenerate the TF fixtures for shape and data-movement ops (pads, concatenation, slicing,
shape queries, gathers, depth <-> space, cumulative sums).

Run with the TensorFlow environment (see ``make_fixtures.py``)::

    python tests/data/make_array_fixtures.py

It writes only its own ``NAME.{pb,yaml,npz}`` under ``tests/data/tf/``, with the same contract
as ``make_fixtures.py`` (whose helpers it uses). Seeded; reruns are byte-identical.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    I32,
    I64,
    OUT_DIR,
    Fixture,
    build,
    normal,
    op_types,
    rng,
    spec,
    verify_written,
    write_fixture,
)

MAX_PB_BYTES = 50 * 1024
R = tf.raw_ops


def c32(values) -> tf.Tensor:
    return tf.constant(values, I32)


def pad_concat_fixture() -> Fixture:
    r = rng(101)
    x, y, z = normal(r, [2, 3, 4]), normal(r, [2, 3, 4]), normal(r, [2, 5, 4])
    k = r.integers(-1000, 1000, [2, 3]).astype(np.int32)
    s = np.array(-2.5, np.float32)
    signature = [
        spec([2, 3, 4], name="x"),
        spec([2, 3, 4], name="y"),
        spec([2, 5, 4], name="z"),
        spec([2, 3], I32, name="k"),
        spec([], name="s"),
    ]

    @tf.function(input_signature=signature)
    def f(x, y, z, k, s):
        pads = c32([[1, 0], [0, 2], [1, 1]])
        return [
            R.Pad(input=x, paddings=pads),
            R.Pad(input=k, paddings=c32([[0, 1], [2, 0]])),
            R.PadV2(input=x, paddings=pads, constant_values=tf.constant(-1.5, F32)),
            R.PadV2(input=x, paddings=c32([[0, 0], [1, 1], [0, 2]]), constant_values=s),
            R.MirrorPad(input=x, paddings=c32([[1, 1], [2, 0], [0, 3]]), mode="REFLECT"),
            R.MirrorPad(input=x, paddings=c32([[2, 1], [3, 0], [0, 4]]), mode="SYMMETRIC"),
            R.MirrorPad(input=k, paddings=c32([[1, 0], [1, 2]]), mode="SYMMETRIC"),
            R.ConcatV2(values=[x, z], axis=c32(1)),
            R.ConcatV2(values=[x, y, x], axis=c32(-1)),
            R.ConcatV2(values=[k, k], axis=c32(0)),
            R.Pack(values=[x, y], axis=0),
            R.Pack(values=[x, y, x], axis=-1),
            R.Pack(values=[s, s], axis=0),
            *R.Unpack(value=x, num=3, axis=1),
            *R.Unpack(value=k, num=3, axis=-1),
            *R.Split(axis=c32(2), value=x, num_split=2),
            *R.SplitV(value=z, size_splits=c32([1, -1, 2]), axis=c32(-2), num_split=3),
            *R.SplitV(value=k, size_splits=tf.constant([2, 0, 1], I64), axis=c32(1), num_split=3),
        ]

    ops = {"Pad", "PadV2", "MirrorPad", "ConcatV2", "Pack", "Unpack", "Split", "SplitV"}
    return Fixture("pad_concat", f, [x, y, z, k, s], ops)


def slicing_fixture() -> Fixture:
    r = rng(102)
    x = normal(r, [4, 5, 6])
    m = r.integers(-(2**30), 2**30, [5, 6]).astype(np.int32)
    u = normal(r, [1, 5, 1, 3])

    @tf.function(
        input_signature=[
            spec([4, 5, 6], name="x"),
            spec([5, 6], I32, name="m"),
            spec([1, 5, 1, 3], name="u"),
        ]
    )
    def f(x, m, u):
        ss = R.StridedSlice
        b, e, st = c32([1, 0, 2]), c32([3, 4, 5]), c32([1, 2, 1])
        return [
            R.Slice(input=x, begin=c32([1, 0, 2]), size=c32([2, -1, 3])),
            R.Slice(input=m, begin=c32([0, 1]), size=c32([-1, -1])),
            x[1:3, ::-2, 4],
            x[..., 1],
            x[:, tf.newaxis, 2:],
            x[-1, ..., ::-1],
            x[::2, 1:-1, -3:],
            x[3:0:-1],
            x[tf.newaxis, ..., tf.newaxis],
            x[1, 2, 3],
            x[:, -100:100, 7:],
            x[..., 1:2, tf.newaxis],
            x[:, 3:0:-2, ::-4],
            x[-2:-5:-1, 4:-6:-1],
            x[1:2, ..., 3:4],
            m[::-1, 1::2],
            m[-1],
            # explicit masks: begin masked, end masked, shrink on a masked dim, new axis and
            # shrink both set (new axis wins), ellipsis in the middle
            ss(input=x, begin=b, end=e, strides=st, begin_mask=0b101, end_mask=0b010),
            ss(
                input=x,
                begin=c32([2, 9, 1]),
                end=c32([0, 0, 0]),
                strides=c32([1, 1, 1]),
                shrink_axis_mask=0b001,
                begin_mask=0b001,
            ),
            ss(
                input=x,
                begin=c32([0, 1, 0]),
                end=c32([1, 3, 1]),
                strides=c32([1, 1, 1]),
                new_axis_mask=0b001,
                shrink_axis_mask=0b001,
            ),
            ss(
                input=u,
                begin=c32([0, 0, -1]),
                end=c32([0, 0, 0]),
                strides=c32([1, 1, -1]),
                ellipsis_mask=0b010,
                end_mask=0b100,
            ),
            ss(
                input=x,
                begin=c32([-1, 0, 5]),
                end=c32([-5, 0, 0]),
                strides=c32([-1, 1, -2]),
                end_mask=0b001,
                ellipsis_mask=0b010,
            ),
            R.Squeeze(input=u),
            R.Squeeze(input=u, axis=[-2]),
            R.ExpandDims(input=m, axis=c32(-1)),
            R.ExpandDims(input=x, axis=tf.constant(1, I64)),
            R.Reverse(tensor=x, dims=tf.constant([True, False, True])),
            R.ReverseV2(tensor=x, axis=c32([0, -1])),
            R.ReverseV2(tensor=m, axis=c32([1])),
        ]

    ops = {"Slice", "StridedSlice", "Squeeze", "ExpandDims", "Reverse", "ReverseV2"}
    return Fixture("slicing", f, [x, m, u], ops)


def shape_ops_fixture() -> Fixture:
    r = rng(103)
    x = normal(r, [2, 3, 4])
    c = normal(r, [3, 1])
    k = r.integers(-100, 100, [2, 3]).astype(np.int64)
    s = np.array(1.25, np.float32)

    @tf.function(
        input_signature=[
            spec([2, 3, 4], name="x"),
            spec([3, 1], name="c"),
            spec([2, 3], I64, name="k"),
            spec([], name="s"),
        ]
    )
    def f(x, c, k, s):
        # Keras' Flatten: the batch size from Shape + StridedSlice, packed with -1.
        batch = R.StridedSlice(
            input=R.Shape(input=x),
            begin=c32([0]),
            end=c32([1]),
            strides=c32([1]),
            shrink_axis_mask=1,
        )
        flat_shape = R.Pack(values=[batch, c32(-1)], axis=0)
        return [
            R.Transpose(x=x, perm=c32([2, 0, 1])),
            R.Transpose(x=k, perm=tf.constant([1, 0], I64)),
            R.Tile(input=x, multiples=c32([2, 1, 3])),
            R.Tile(input=k, multiples=c32([1, 2])),
            R.BroadcastTo(input=c, shape=c32([2, 3, 4])),
            R.BroadcastTo(input=s, shape=c32([2, 2])),
            R.Fill(dims=c32([2, 3]), value=s),
            R.Fill(dims=c32([3]), value=tf.constant(7, I64)),
            R.ZerosLike(x=x),
            R.OnesLike(x=k),
            R.Shape(input=x),
            R.Shape(input=k, out_type=I64),
            R.Size(input=x),
            R.Size(input=k, out_type=I64),
            R.Rank(input=x),
            R.Range(start=c32(0), limit=c32(10), delta=c32(3)),
            R.Range(
                start=tf.constant(1.5, F32),
                limit=tf.constant(4.0, F32),
                delta=tf.constant(0.5, F32),
            ),
            R.Range(
                start=tf.constant(5, I64), limit=tf.constant(-4, I64), delta=tf.constant(-2, I64)
            ),
            R.Reshape(tensor=x, shape=flat_shape),
            R.AddV2(
                x=R.Reshape(tensor=x, shape=flat_shape),
                y=R.Cast(x=R.Range(start=c32(0), limit=c32(12), delta=c32(1)), DstT=F32),
            ),
        ]

    ops = {
        "Transpose", "Tile", "BroadcastTo", "Fill", "ZerosLike", "OnesLike", "Shape", "Size",
        "Rank", "Range", "Reshape", "StridedSlice", "Pack",
    }  # fmt: skip
    return Fixture("shape_ops", f, [x, c, k, s], ops)


def gather_fixture() -> Fixture:
    r = rng(104)
    params = normal(r, [5, 4])
    p3 = normal(r, [2, 5, 3])
    ids = r.integers(0, 5, [2, 3]).astype(np.int32)
    ids64 = r.integers(0, 4, [4]).astype(np.int64)
    bidx = r.integers(0, 5, [2, 4]).astype(np.int32)
    nd = np.array([[4, 3], [0, 0], [2, 1]], np.int32)
    hot = np.array([[0, 4, -1], [7, 2, 2]], np.int64)
    table = normal(rng(1040), [10, 8])

    @tf.function(
        input_signature=[
            spec([5, 4], name="params"),
            spec([2, 5, 3], name="p3"),
            spec([2, 3], I32, name="ids"),
            spec([4], I64, name="ids64"),
            spec([2, 4], I32, name="bidx"),
            spec([3, 2], I32, name="nd"),
            spec([2, 3], I64, name="hot"),
        ]
    )
    def f(params, p3, ids, ids64, bidx, nd, hot):
        G = R.GatherV2
        return [
            G(params=params, indices=ids, axis=c32(0)),
            G(params=params, indices=ids64, axis=c32(1)),
            G(params=params, indices=ids64, axis=tf.constant(-1, I64)),
            G(params=p3, indices=bidx, axis=c32(1), batch_dims=1),
            G(params=p3, indices=bidx, axis=c32(-2), batch_dims=-1),
            G(params=p3, indices=ids, axis=c32(1)),
            tf.nn.embedding_lookup(tf.constant(table), ids),  # embedding lookup: GatherV2
            G(params=R.Cast(x=bidx, DstT=I64), indices=ids64, axis=c32(1)),
            R.GatherNd(params=params, indices=nd),
            R.GatherNd(params=p3, indices=tf.constant([[1, 4], [0, 2]], I64)),
            R.GatherNd(params=params, indices=nd[:, :1]),
            R.OneHot(
                indices=hot,
                depth=c32(5),
                on_value=tf.constant(1.0, F32),
                off_value=tf.constant(0.0, F32),
            ),
            R.OneHot(indices=ids, depth=c32(6), on_value=c32(3), off_value=c32(-1), axis=0),
            R.OneHot(
                indices=ids64,
                depth=c32(4),
                on_value=tf.constant(2.5, F32),
                off_value=tf.constant(-0.5, F32),
                axis=1,
            ),
        ]

    return Fixture(
        "gather", f, [params, p3, ids, ids64, bidx, nd, hot], {"GatherV2", "GatherNd", "OneHot"}
    )


def space_depth_fixture() -> Fixture:
    r = rng(105)
    x = normal(r, [2, 4, 6, 8])
    big = r.integers(2**24, 2**25, [3, 7]).astype(np.int32)  # sums beyond f32's exact range
    wide = r.integers(-(2**40), 2**40, [2, 9]).astype(np.int64)
    small = (r.uniform(0.5, 1.5, [3, 5])).astype(np.float32)

    @tf.function(
        input_signature=[
            spec([2, 4, 6, 8], name="x"),
            spec([3, 7], I32, name="big"),
            spec([2, 9], I64, name="wide"),
            spec([3, 5], name="small"),
        ]
    )
    def f(x, big, wide, small):
        C = R.Cumsum
        return [
            R.DepthToSpace(input=x, block_size=2),
            R.SpaceToDepth(input=x, block_size=2),
            R.DepthToSpace(input=R.SpaceToDepth(input=x, block_size=2), block_size=2),
            C(x=x, axis=c32(1)),
            C(x=x, axis=c32(-1), exclusive=True),
            C(x=x, axis=c32(2), reverse=True),
            C(x=x, axis=c32(3), exclusive=True, reverse=True),
            C(x=big, axis=c32(1)),
            C(x=big, axis=c32(0), exclusive=True, reverse=True),
            C(x=wide, axis=tf.constant(-1, I64), reverse=True),
            R.Cumprod(x=small, axis=c32(1)),
            R.Cumprod(x=small, axis=c32(0), exclusive=True, reverse=True),
        ]

    ops = {"DepthToSpace", "SpaceToDepth", "Cumsum", "Cumprod"}
    return Fixture("space_depth", f, [x, big, wide, small], ops)


def main() -> int:
    fixtures = [
        pad_concat_fixture(),
        slicing_fixture(),
        shape_ops_fixture(),
        gather_fixture(),
        space_depth_fixture(),
    ]
    for fx in fixtures:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        print(f"{fx.name:<12} {size:>6} bytes  {' '.join(op_types(fx.graph_def))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
