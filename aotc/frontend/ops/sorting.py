"""Sorting and selecting: TopKV2 and TopK (HLO ``topk``), which ``tf.sort`` and
``tf.argsort`` also lower to (TopKV2 with k = n, after a transpose and, ascending, a negation).

Values are ordered as XLA's ``topk`` orders them: a total order in which NaN is the largest
float and -0 ranks below +0; equal values keep the lower index first, as in TensorFlow. The
values come out sorted whatever ``sorted`` says (TF leaves the order unspecified otherwise).
"""

from __future__ import annotations

import numpy as np

from aotc.errors import ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.array import constant_ints
from aotc.frontend.ops.registry import translates
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import Instruction
from aotc.hlo.shape import PrimitiveType

_NOTE = "the k largest of the last dim, ties by index, NaN largest; index_type int32/int64"


@translates("TopKV2", note=f"constant k; {_NOTE}")
def top_k_v2(
    ctx: TranslationContext, node: Node, x: Instruction, k: Instruction
) -> list[Instruction]:
    values = constant_ints(ctx, k, "k input (input 1)")
    if len(values) != 1:
        raise ShapeError(f"the k input must hold one value, got {len(values)}")
    return _top_k(ctx, node, x, values[0])


@translates("TopK", note=_NOTE)
def top_k_v1(ctx: TranslationContext, node: Node, x: Instruction) -> list[Instruction]:
    return _top_k(ctx, node, x, node.int_attr("k"))


def _top_k(ctx: TranslationContext, node: Node, x: Instruction, k: int) -> list[Instruction]:
    b, shape = ctx.builder, x.array_shape
    if shape.rank == 0 or not 0 <= k <= shape.dims[-1]:
        raise ShapeError(f"k={k} must be between 0 and the last dimension of {shape}")
    pair = b.topk(x, k)
    values, indices = b.get_tuple_element(pair, 0), b.get_tuple_element(pair, 1)
    index_type = PrimitiveType.from_numpy(node.dtype_attr("index_type", np.dtype(np.int32)))
    if index_type is not PrimitiveType.S32:
        indices = b.convert(indices, index_type)
    return [values, indices]
