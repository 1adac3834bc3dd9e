#!/usr/bin/env python
"""Regenerate the TF fixtures for sorting, top-k and scattering (issue 13): ``sort_topk`` and
``scatter``.

Run with the TensorFlow environment (see ``make_fixtures.py``)::

    python tests/data/make_sort_scatter_fixtures.py

It writes only its own ``NAME.{pb,yaml,npz}`` under ``tests/data/tf/``, with the same contract
as ``make_fixtures.py`` (whose helpers it uses). Seeded; reruns are byte-identical.

What TensorFlow 2.21 emits, pinned by ``sort_topk``: ``tf.sort`` and ``tf.argsort`` are
``TopKV2`` with k = the axis length, after a ``Transpose`` when the axis is not the last and,
for ascending order, between ``Neg`` ops (integers: ``Neg`` and ``Sub 1``, which keeps
INT_MIN in range). Inputs hold ties (TF keeps the lower index first) but no NaN (TF's CPU
kernel and XLA order NaN differently). ``TopK`` (v1, attr ``k``) cannot be made any more
(removed in GraphDef version 7): tests/test_sort_scatter.py builds one. Scatter indices are
in range and, for ``TensorScatterUpdate``, unique: TF's CPU kernels reject the former and
leave the latter's result unspecified.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    I32,
    I64,
    OUT_DIR,
    Fixture,
    build,
    op_types,
    rng,
    spec,
    verify_written,
    write_fixture,
)

MAX_PB_BYTES = 50 * 1024
R = tf.raw_ops


def sort_topk_fixture() -> Fixture:
    r = rng(131)
    x = r.integers(-5, 6, [3, 7]).astype(np.float32)  # many ties
    i = r.integers(-(2**31), 2**31 - 1, [4, 5], dtype=np.int64).astype(np.int32)
    i[0, 0], i[1, 1] = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    signature = [spec([3, 7], name="x"), spec([4, 5], I32, name="i")]

    @tf.function(input_signature=signature)
    def f(x, i):
        return [
            *R.TopKV2(input=x, k=tf.constant(3, I32)),
            *R.TopKV2(input=i, k=tf.constant(5, I32), sorted=True, index_type=I64),
            tf.sort(x, axis=-1),
            tf.sort(x, axis=0, direction="DESCENDING"),
            tf.sort(i, axis=1),
            tf.argsort(x, axis=-1, stable=True),
            tf.argsort(x, axis=0, direction="DESCENDING", stable=True),
            tf.argsort(i, axis=0),
        ]

    return Fixture("sort_topk", f, [x, i], {"TopKV2", "Neg", "Transpose"})


def scatter_fixture() -> Fixture:
    r = rng(132)
    t = r.standard_normal([6, 4]).astype(np.float32)
    rows = np.array([[4], [1], [4], [0], [1]], np.int32)  # repeated rows
    cells = np.array([[5, 0], [2, 3], [5, 0]], np.int64)  # repeated cells, int64 indices
    unique = np.array([[3], [0], [5]], np.int32)
    u_rows = r.standard_normal([5, 4]).astype(np.float32)
    u_cells = r.standard_normal([3]).astype(np.float32)
    k = r.integers(-50, 50, [6, 4]).astype(np.int32)
    signature = [
        spec([6, 4], name="t"),
        spec([5, 1], I32, name="rows"),
        spec([3, 2], I64, name="cells"),
        spec([3, 1], I32, name="unique"),
        spec([5, 4], name="u_rows"),
        spec([3], name="u_cells"),
        spec([6, 4], I32, name="k"),
    ]

    @tf.function(input_signature=signature)
    def f(t, rows, cells, unique, u_rows, u_cells, k):
        shape = tf.constant([6, 4], I32)
        return [
            R.ScatterNd(indices=rows, updates=u_rows, shape=shape),
            R.ScatterNd(indices=cells, updates=u_cells, shape=tf.constant([6, 4], I64)),
            R.TensorScatterUpdate(tensor=t, indices=unique, updates=u_rows[:3]),
            R.TensorScatterAdd(tensor=t, indices=rows, updates=u_rows),
            R.TensorScatterSub(tensor=t, indices=cells, updates=u_cells),
            R.TensorScatterMax(tensor=t, indices=rows, updates=u_rows),
            R.TensorScatterMin(tensor=t, indices=cells, updates=u_cells),
            R.TensorScatterAdd(tensor=k, indices=rows, updates=tf.cast(u_rows * 10, I32)),
        ]

    ops = {"ScatterNd", "TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub"}
    ops |= {"TensorScatterMax", "TensorScatterMin"}
    args = [t, rows, cells, unique, u_rows, u_cells, k]
    return Fixture("scatter", f, args, ops)


def main() -> int:
    for fx in [sort_topk_fixture(), scatter_fixture()]:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        print(f"{fx.name:<12} {size:>6} bytes  {' '.join(op_types(fx.graph_def))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
