"""Shared decoding of the window attributes of convolution and pooling ops.

TF gives ``strides``, ``dilations`` and ``ksize`` over every dimension in ``data_format`` order,
and ``padding`` as SAME, VALID or EXPLICIT (with ``explicit_paddings``, two ints per dimension).
This module turns them into per-dimension numbers the HLO ``Window`` wants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotc.errors import UnsupportedError
from aotc.frontend.node import Node

# data_format -> (batch dim, feature dim, spatial dims), by rank.
_LAYOUTS: dict[str, tuple[int, int, tuple[int, ...]]] = {
    "NHWC": (0, 3, (1, 2)),
    "NCHW": (0, 1, (2, 3)),
    "NDHWC": (0, 4, (1, 2, 3)),
    "NCDHW": (0, 1, (2, 3, 4)),
}


@dataclass(frozen=True)
class Layout:
    """Where batch, feature and spatial dimensions sit in a TF activation tensor."""

    batch: int
    feature: int
    spatial: tuple[int, ...]


def layout(node: Node, formats: Sequence[str]) -> Layout:
    """The layout named by the node's ``data_format``, which must be one of ``formats``."""
    data_format = node.str_attr("data_format", formats[0])
    if data_format not in formats:
        raise UnsupportedError(
            f"attribute data_format={data_format!r} is not supported; use {' or '.join(formats)}"
        )
    batch, feature, spatial = _LAYOUTS[data_format]
    return Layout(batch, feature, spatial)


def int_list(node: Node, name: str, rank: int, default: int | None = None) -> list[int]:
    """An int-list attribute with one entry per dimension (``default`` fills a missing one)."""
    if default is not None and not node.has_attr(name):
        return [default] * rank
    values = node.ints_attr(name)
    if len(values) != rank or any(v < 1 for v in values):
        raise UnsupportedError(f"attribute {name}={values} needs {rank} positive values")
    return values


def check_unit(values: Sequence[int], dims: Sequence[int], name: str) -> None:
    """TF requires strides/dilations of 1 on the batch and feature dimensions."""
    if any(values[d] != 1 for d in dims):
        raise UnsupportedError(
            f"attribute {name}={list(values)} must be 1 on the batch and feature dimensions"
        )


def padding(
    node: Node,
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    dims: Sequence[int],
) -> list[tuple[int, int]]:
    """(low, high) padding for each of ``dims`` (their sizes, kernel sizes, strides, ...)."""
    mode = node.str_attr("padding")
    if mode == "VALID":
        return [(0, 0)] * len(dims)
    if mode == "SAME":
        per_dim = zip(sizes, kernel, strides, dilations, strict=True)
        return [same_padding(n, k, s, d) for n, k, s, d in per_dim]
    if mode == "EXPLICIT" and node.has_attr("explicit_paddings"):
        pads = node.ints_attr("explicit_paddings")
        return [(pads[2 * d], pads[2 * d + 1]) for d in dims]
    raise UnsupportedError(
        f"attribute padding={mode!r} is not supported; use SAME, VALID or EXPLICIT"
    )


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TF's SAME padding: output ceil(size / stride), the odd cell of padding goes high."""
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    needed = max((out - 1) * stride + effective - size, 0)
    return needed // 2, needed - needed // 2
