"""HLO programs and builders that several test modules share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.ir import ConvDims, Instruction, Module, Window, WindowDim
from aotc.hlo.shape import Shape
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module

REDUCERS = """
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = f32[] add(a, b) }
max { ma = f32[] parameter(0)  mb = f32[] parameter(1)  ROOT mc = f32[] maximum(ma, mb) }
"""


SOFTMAX = (
    REDUCERS
    + """
ENTRY main {
  x = f32[8,1000] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[8] reduce(x, ninf), dimensions={1}, to_apply=max
  mbc = f32[8,1000] broadcast(m), dimensions={0}
  d = f32[8,1000] subtract(x, mbc)
  e = f32[8,1000] exponential(d)
  zero = f32[] constant(0)
  s = f32[8] reduce(e, zero), dimensions={1}, to_apply=add
  sb = f32[8,1000] broadcast(s), dimensions={0}
  y = f32[8,1000] divide(e, sb)
  ROOT t = (f32[8,1000]) tuple(y)
}"""
)


DENSE_RELU = """
ENTRY main {
  x = f32[4,32] parameter(0)
  w = f32[32,16] parameter(1)
  b = f32[16] parameter(2)
  d = f32[4,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[4,16] broadcast(b), dimensions={1}
  a = f32[4,16] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[4,16] broadcast(zero), dimensions={}
  r = f32[4,16] maximum(a, zb)
  ROOT t = (f32[4,16]) tuple(r)
}"""


Body = Callable[[ModuleBuilder, ComputationBuilder, list[Instruction]], list[Instruction]]


def build(shapes: Sequence[Shape], body: Body) -> Module:
    mb = ModuleBuilder("m")
    b = mb.computation("main")
    params = [b.parameter(i, s, f"p{i}") for i, s in enumerate(shapes)]
    module = mb.build(b.build(b.tuple(body(mb, b, params))))
    for comp in module.called_computations():  # custom reducers the builder does not track
        if comp not in module.computations:
            module.add_computation(comp)
    verify_module(module)
    return parse_module(print_module(module))  # the text round trip is part of the contract


def labels(text: str) -> ConvDims:
    """``b01f_01io->b01f`` as ConvDims."""
    lhs, rest = text.split("_")
    rhs, out = rest.split("->")

    def spatial(s: str) -> tuple[int, ...]:
        digits = sorted((c, i) for i, c in enumerate(s) if c.isdigit())
        return tuple(i for _, i in digits)

    return ConvDims(
        lhs.index("b"), lhs.index("f"), spatial(lhs),
        rhs.index("i"), rhs.index("o"), spatial(rhs),
        out.index("b"), out.index("f"), spatial(out),
    )  # fmt: skip


def window(*dims: tuple[int, ...]) -> Window:
    """Each dim: (size, stride, pad_low, pad_high, lhs_dilation, rhs_dilation), tail optional."""
    return Window(tuple(WindowDim(*d) for d in dims))


def same(k: int, stride: int = 1) -> tuple[int, ...]:
    """A ``window`` dim of size ``k`` with TF's SAME padding at stride 1 (pad_low, pad_high)."""
    return (k, stride, (k - 1) // 2, k // 2)
