"""Convolution / pooling / batch-norm translators on hand-written nodes: layouts TF's CPU kernels
cannot run (NCHW), and the errors for unsupported attribute values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from google.protobuf import text_format

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.translate import TranslationContext
from aotc.hlo.builder import ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.proto import aotc_tf_pb2 as pb

RNG = np.random.default_rng(5)


def node(op: str, **attrs: str | list[int] | bool | float) -> Node:
    lines = [f'name: "n" op: "{op}"']
    for key, value in attrs.items():
        if isinstance(value, bool):
            text = f"b: {str(value).lower()}"
        elif isinstance(value, str):
            text = f's: "{value}"'
        elif isinstance(value, float):
            text = f"f: {value}"
        else:
            text = "list { " + " ".join(f"i: {v}" for v in value) + " }"
        lines.append(f'attr {{ key: "{key}" value {{ {text} }} }}')
    return Node(text_format.Parse("\n".join(lines), pb.NodeDef()))


def run(n: Node, *inputs: np.ndarray) -> np.ndarray:
    """Translate one node whose inputs are all parameters, then evaluate it."""
    mb = ModuleBuilder("t")
    b = mb.computation("main")
    ctx = TranslationContext(mb, b)
    params = [
        b.parameter(i, Shape(PrimitiveType.F32, x.shape), f"p{i}") for i, x in enumerate(inputs)
    ]
    ctx.node = n
    translator = lookup(n.op)
    assert translator is not None
    out = translator(ctx, n, *params)
    first = out if not isinstance(out, Sequence) else out[0]
    module = mb.build(b.build(b.tuple([first])))
    return evaluate(module, list(inputs))[0]


def to_nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def test_conv2d_nchw_matches_nhwc() -> None:
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    attrs = {"padding": "SAME", "dilations": [1, 1, 2, 1], "strides": [1, 2, 1, 1]}
    nhwc = run(node("Conv2D", **attrs), x, w)
    nchw_attrs = {"padding": "SAME", "dilations": [1, 1, 1, 2], "strides": [1, 1, 2, 1]}
    nchw = run(node("Conv2D", data_format="NCHW", **nchw_attrs), to_nchw(x), w)
    np.testing.assert_allclose(nchw, to_nchw(nhwc), rtol=1e-5, atol=1e-5)


def test_max_pool_nchw_matches_nhwc() -> None:
    x = RNG.standard_normal((1, 5, 6, 2)).astype(np.float32)
    nhwc = run(node("MaxPool", ksize=[1, 3, 2, 1], strides=[1, 2, 2, 1], padding="SAME"), x)
    nchw_node = node(
        "MaxPool", ksize=[1, 1, 3, 2], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW"
    )
    np.testing.assert_array_equal(run(nchw_node, to_nchw(x)), to_nchw(nhwc))


def test_avg_pool_same_counts_only_valid_cells() -> None:
    x = np.ones((1, 4, 5, 1), np.float32)
    out = run(node("AvgPool", ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"), x)
    np.testing.assert_array_equal(out, np.ones_like(out))


@pytest.mark.parametrize(
    ("n", "shapes", "message"),
    [
        (
            node("Conv2D", data_format="NCDHW", strides=[1, 1, 1, 1], padding="SAME"),
            [(1, 3, 3, 1), (1, 1, 1, 1)],
            "data_format='NCDHW' is not supported; use NHWC or NCHW",
        ),
        (
            node("Conv2D", strides=[1, 1, 1, 1], padding="REFLECT"),
            [(1, 3, 3, 1), (1, 1, 1, 1)],
            "padding='REFLECT' is not supported; use SAME, VALID or EXPLICIT",
        ),
        (
            node("FusedBatchNormV3", is_training=True, epsilon=0.001),
            [(1, 2, 2, 3), (3,), (3,), (3,), (3,)],
            "is_training=true is not supported",
        ),
        (
            node("Conv2D", strides=[2, 1, 1, 1], padding="SAME"),
            [(1, 3, 3, 1), (1, 1, 1, 1)],
            "strides=.* must be 1 on the batch and feature dimensions",
        ),
    ],
)
def test_unsupported_attributes_are_named(
    n: Node, shapes: list[tuple[int, ...]], message: str
) -> None:
    inputs = [np.zeros(s, np.float32) for s in shapes]
    with pytest.raises(UnsupportedError, match=message):
        run(n, *inputs)
