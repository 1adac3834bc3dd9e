"""Convolutions: Conv2D, Conv3D, DepthwiseConv2dNative and the transposed (backprop-input) forms.

Everything becomes one HLO ``convolution`` whose dim_labels say where TF keeps batch, feature
and spatial dimensions, so no transposes are needed: the filter is always ``[spatial..., in,
out]`` (HWIO / DHWIO). The transposed convolutions follow tf2xla's ``ConvBackpropInput``:
dilate the incoming gradient by the strides, mirror the kernel and swap its in/out dims.
"""

from __future__ import annotations

from collections.abc import Sequence

from aotc.errors import ShapeError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import translates
from aotc.frontend.ops.window_attrs import Layout, check_unit, int_list, layout, padding
from aotc.frontend.translate import TranslationContext
from aotc.hlo.ir import ConvAttrs, ConvDims, Instruction, Window, WindowDim

_FORMATS_2D = ("NHWC", "NCHW")
_FORMATS_3D = ("NDHWC", "NCDHW")


def _conv_dims(lay: Layout, kernel_in: int, kernel_out: int) -> ConvDims:
    """Output layout = input layout; the kernel keeps its spatial dims first."""
    spatial = len(lay.spatial)
    return ConvDims(
        lay.batch,
        lay.feature,
        lay.spatial,
        kernel_in,
        kernel_out,
        tuple(range(spatial)),
        lay.batch,
        lay.feature,
        lay.spatial,
    )


def _groups(features: int, kernel_features: int) -> int:
    if kernel_features == 0 or features % kernel_features:
        raise ShapeError(
            f"input features {features} are not a multiple of the filter's {kernel_features}"
        )
    return features // kernel_features


def _strides_dilations(node: Node, lay: Layout, rank: int) -> tuple[list[int], list[int]]:
    strides = int_list(node, "strides", rank)
    dilations = int_list(node, "dilations", rank, default=1)
    check_unit(strides, (lay.batch, lay.feature), "strides")
    check_unit(dilations, (lay.batch, lay.feature), "dilations")
    return [strides[d] for d in lay.spatial], [dilations[d] for d in lay.spatial]


def convolve(
    ctx: TranslationContext, node: Node, x: Instruction, w: Instruction, formats: Sequence[str]
) -> Instruction:
    """The forward convolution of ``x`` with an ``[spatial..., in, out]`` filter ``w``."""
    shape, kernel = x.array_shape, w.array_shape
    lay = layout(node, formats)
    spatial = len(lay.spatial)
    if shape.rank != spatial + 2 or kernel.rank != spatial + 2:
        raise ShapeError(f"{node.op} needs rank-{spatial + 2} input and filter")
    strides, dilations = _strides_dilations(node, lay, shape.rank)
    sizes = [shape.dims[d] for d in lay.spatial]
    pads = padding(node, sizes, kernel.dims[:spatial], strides, dilations, lay.spatial)
    window = Window(
        tuple(
            WindowDim(k, s, lo, hi, 1, d)
            for k, s, (lo, hi), d in zip(
                kernel.dims[:spatial], strides, pads, dilations, strict=True
            )
        )
    )
    groups = _groups(shape.dims[lay.feature], kernel.dims[spatial])
    attrs = ConvAttrs(window, _conv_dims(lay, spatial, spatial + 1), groups)
    return ctx.builder.convolution(x, w, attrs)


@translates(
    "Conv2D",
    note="padding SAME/VALID/EXPLICIT, strides, dilations, groups; data_format NHWC or NCHW",
)
def conv2d(ctx: TranslationContext, node: Node, x: Instruction, w: Instruction) -> Instruction:
    return convolve(ctx, node, x, w, _FORMATS_2D)


@translates("Conv3D", note="padding SAME/VALID, strides, dilations; data_format NDHWC or NCDHW")
def conv3d(ctx: TranslationContext, node: Node, x: Instruction, w: Instruction) -> Instruction:
    return convolve(ctx, node, x, w, _FORMATS_3D)


@translates(
    "DepthwiseConv2dNative",
    note="channel multiplier, padding SAME/VALID/EXPLICIT, strides, dilations; NHWC or NCHW",
)
def depthwise_conv2d(
    ctx: TranslationContext, node: Node, x: Instruction, w: Instruction
) -> Instruction:
    # [h, w, in, mult] -> [h, w, 1, in * mult]: one group per input channel, whose outputs are
    # that channel's `mult` consecutive output channels, as TF orders them.
    if w.array_shape.rank != 4:
        raise ShapeError(f"{node.op} needs a rank-4 filter [h, w, in, multiplier], got {w.shape}")
    h, wd, channels, mult = w.array_shape.dims
    flat = ctx.builder.reshape(w, [h, wd, 1, channels * mult])
    return convolve(ctx, node, x, flat, _FORMATS_2D)


# ---- transposed convolution (gradient of the input) ------------------------------------------


@translates(
    "Conv2DBackpropInput",
    note="input_sizes constant; padding SAME/VALID/EXPLICIT, strides, dilations; NHWC or NCHW",
)
def conv2d_backprop_input(
    ctx: TranslationContext, node: Node, sizes: Instruction, w: Instruction, dy: Instruction
) -> Instruction:
    return backprop_input(ctx, node, sizes, w, dy, _FORMATS_2D)


@translates(
    "Conv3DBackpropInputV2",
    note="input_sizes constant; padding SAME/VALID, strides, dilations; NDHWC or NCDHW",
)
def conv3d_backprop_input(
    ctx: TranslationContext, node: Node, sizes: Instruction, w: Instruction, dy: Instruction
) -> Instruction:
    return backprop_input(ctx, node, sizes, w, dy, _FORMATS_3D)


def backprop_input(
    ctx: TranslationContext,
    node: Node,
    sizes: Instruction,
    w: Instruction,
    dy: Instruction,
    formats: Sequence[str],
) -> Instruction:
    """The input gradient of a convolution: what Keras' ConvNDTranspose layers compute."""
    lay = layout(node, formats)
    spatial = len(lay.spatial)
    in_dims = [int(d) for d in ctx.constant_value(sizes, "input_sizes input").reshape(-1)]
    kernel, grad = w.array_shape, dy.array_shape
    if len(in_dims) != spatial + 2 or kernel.rank != spatial + 2 or grad.rank != spatial + 2:
        raise ShapeError(f"{node.op} needs rank-{spatial + 2} input_sizes, filter and gradient")
    strides, dilations = _strides_dilations(node, lay, len(in_dims))
    in_sizes = [in_dims[d] for d in lay.spatial]
    forward = padding(node, in_sizes, kernel.dims[:spatial], strides, dilations, lay.spatial)
    grad_sizes = [grad.dims[d] for d in lay.spatial]
    dims = zip(
        in_sizes, kernel.dims[:spatial], strides, dilations, forward, grad_sizes, strict=True
    )
    window = Window(tuple(_backprop_window_dim(*d) for d in dims))
    groups = _groups(in_dims[lay.feature], kernel.dims[spatial])
    mirrored = ctx.builder.reverse(_swap_io(ctx, w, groups), list(range(spatial)))
    attrs = ConvAttrs(window, _conv_dims(lay, spatial, spatial + 1), groups)
    result = ctx.builder.convolution(dy, mirrored, attrs)
    if list(result.array_shape.dims) != in_dims:
        raise ShapeError(f"{node.op} computes {result.shape}, not input_sizes {in_dims}")
    return result


def _backprop_window_dim(
    size: int,
    kernel: int,
    stride: int,
    dilation: int,
    forward: tuple[int, int],
    grad_size: int,
) -> WindowDim:
    """tf2xla's ConvBackpropComputeDimensionsV2 for one spatial dimension."""
    effective = (kernel - 1) * dilation + 1
    forward_out = (size + forward[0] + forward[1] - effective) // stride + 1
    if forward_out != grad_size:
        raise ShapeError(
            f"gradient size {grad_size} does not match the forward "
            f"convolution's output size {forward_out}"
        )
    expanded = (grad_size - 1) * stride + 1
    low = effective - 1 - forward[0]
    high = size + effective - 1 - expanded - low
    return WindowDim(kernel, 1, low, high, stride, dilation)


def _swap_io(ctx: TranslationContext, w: Instruction, groups: int) -> Instruction:
    """``[s..., in/G, out]`` -> ``[s..., out/G, in]``: group g's block transposed, in place."""
    dims = w.array_shape.dims
    spatial, per_group_in, out = dims[:-2], dims[-2], dims[-1]
    n = len(spatial)
    b = ctx.builder
    grouped = b.reshape(w, [*spatial, per_group_in, groups, out // groups])
    swapped = b.transpose(grouped, [*range(n), n + 2, n + 1, n])
    return b.reshape(swapped, [*spatial, out // groups, groups * per_group_in])
