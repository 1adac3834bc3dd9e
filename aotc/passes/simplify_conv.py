"""Simplifier rules for ``convolution``: an explicit zero ``pad`` of the input folded into the
window's padding (XLA's ``FoldConvInputPad``).

Keras writes a strided convolution with ``padding="same"`` as ``ZeroPadding2D`` followed by a
``"valid"`` convolution (MobileNetV2, EfficientNet); folded, the padded copy of the input is
never written (it is the largest temporary of such models) and whatever computed the input
fuses into its producer's epilogue instead of into the pad. Exact: the window reads the same
zeros either way.
"""

from __future__ import annotations

from dataclasses import replace

from aotc.hlo.attrs import PadAttrs, PadDim, Window, WindowDim
from aotc.hlo.ir import ConvAttrs, Instruction, Opcode
from aotc.passes.rewrite import RewriteContext, Rule, splat_value


def _foldable(pad: Instruction, attrs: ConvAttrs) -> bool:
    """Whether ``pad`` only adds non-negative zero borders to the convolution's spatial
    dimensions, which have no base dilation (the window's padding would then dilate too)."""
    if pad.opcode is not Opcode.PAD:
        return False
    value = splat_value(pad.operands[1])
    if value is None or value != 0:
        return False
    spatial = attrs.dims.input_spatial
    for d, p in enumerate(pad.attrs_as(PadAttrs).dims):
        if p.interior or min(p.low, p.high) < 0 or (d not in spatial and (p.low or p.high)):
            return False
    return all(attrs.window.dims[k].lhs_dilation == 1 for k in range(len(spatial)))


def _widened(window: WindowDim, pad: PadDim) -> WindowDim:
    return replace(window, pad_low=window.pad_low + pad.low, pad_high=window.pad_high + pad.high)


def fold_input_pad(ctx: RewriteContext, conv: Instruction) -> Instruction | None:
    """``convolution(pad(x, 0), w)`` -> ``convolution(x, w)`` with the pad in the window."""
    pad, attrs = conv.operands[0], conv.attrs_as(ConvAttrs)
    if not _foldable(pad, attrs):
        return None
    pads, spatial = pad.attrs_as(PadAttrs).dims, attrs.dims.input_spatial
    dims = [_widened(w, pads[d]) for w, d in zip(attrs.window.dims, spatial, strict=True)]
    new = replace(attrs, window=Window(tuple(dims)))
    return ctx.b.convolution(pad.operands[0], conv.operands[1], new)


CONV_RULES: list[Rule] = [fold_input_pad]
