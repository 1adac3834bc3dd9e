"""The shape of one GEMM: register tile, cache blocks, scratch size and packed layouts.

Everything is decided at compile time from the static ``M, N, K`` and the target's
``VectorInfo``; the emitter (``gemm.py``) only follows the plan. Layouts, all f32:

* packed A (scratch, per ``ic, pc`` block): ``[mc/mr][kc][mr]``, zero rows past ``M``; or,
  with ``a_rows`` (narrow tiles), ``[mc/mr][mr][kc]``: each panel row a contiguous copy;
* packed B (scratch per ``jc, pc`` block, or the compile-time constant for all blocks):
  ``[nc_pad/pr][kc][pr]``, zero columns past ``N``, where the panel width ``pr`` is ``nr``
  or, for a constant, a multiple of it (``shared_panel``). The constant holds the blocks in
  ``jc`` then ``pc`` order; block ``(j, p)`` starts at ``j*K*nc + p*kc*nc_pad(j)`` floats,
  since every block but the last of each dimension is full.

An object carrying several cpu levels (``dispatch.py``) packs each constant B once for all
levels whose register tiles fit one layout: a level reads its ``nr`` columns out of a wider
``pr`` panel with a row stride of ``pr`` floats, so its micro-kernel is unchanged but for the
stride, and the level with the widest tile reads its own layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from aotc.abi import ALIGN
from aotc.codegen.target import TargetArch
from aotc.codegen.vector import VectorInfo

# Cache blocking (f32 elements). KC*NR*4 bytes of B micro-panel live in L1 while the MC*KC
# block of A lives in L2; NC bounds the packed B block (KC*NC*4 bytes of scratch).
KC = 256
MC_TILES = 12
NC_MAX = 2048
# Rows of a narrow (one-vector) tile: 20 accumulators hide the FMA latency on two pipes; more
# rows measured no faster on znver4 (implicit-GEMM convolutions with 16 filters).
NARROW_MR = 20


@dataclass(frozen=True)
class GemmPlan:
    """``C[m,n] = A[m,k] @ B[k,n]`` with an ``mr x (nv*vw)`` register tile and cache blocks."""

    m: int
    n: int
    k: int
    vw: int
    mr: int
    nv: int
    kc: int
    mc: int
    nc: int
    # A panels row-major ``[mr][kc]``: with one B vector per row every A element feeds one FMA,
    # so packing A costs as much as the tile's work unless it is a contiguous (vector) copy.
    a_rows: bool = False
    pr: int = 0  # floats per packed B panel row (0: nr); a multiple of nr

    @property
    def panel(self) -> int:
        """The packed B panel's width (its row stride in floats)."""
        return self.pr or self.nr

    def a_strides(self, kc: int) -> tuple[int, int]:
        """(row, k) strides in floats of a packed A panel whose K block holds ``kc``."""
        return (kc, 1) if self.a_rows else (1, self.mr)

    @property
    def nr(self) -> int:
        return self.nv * self.vw

    @property
    def gemv(self) -> bool:
        """Batch-1: no packing of A, B streamed once, the whole K in one block."""
        return self.m == 1


def plan_gemm(
    m: int, n: int, k: int, info: VectorInfo, kc: int = KC, b_constant: bool = False
) -> GemmPlan:
    """The plan for static ``m, n, k`` on a target with vector shape ``info``; a constant B
    (``b_constant``) is laid out in the panels it shares with ``info.peers``."""
    plan = _own_plan(m, n, k, info, kc)
    if not b_constant or not info.peers:
        return plan
    pr = shared_panel(plan, [_own_plan(m, n, k, peer, kc) for peer in info.peers])
    if pr == plan.nr:
        return plan
    nc = round_up(n, pr) if plan.gemv else min(round_up(n, pr), round_up(NC_MAX, pr))
    return replace(plan, pr=pr, nc=nc)


def shared_panel(plan: GemmPlan, peers: list[GemmPlan]) -> int:
    """The widest peer tile that is a whole number of ``plan``'s tiles: the panel width of
    the packed constant B ``plan`` reads (peers picking the same width share its bytes)."""
    return max([p.nr for p in peers if p.nr % plan.nr == 0], default=plan.nr)


def _own_plan(m: int, n: int, k: int, info: VectorInfo, kc: int) -> GemmPlan:
    assert m > 0 and n > 0 and k > 0, (m, n, k)
    if m == 1:
        nv = 4  # four independent FMA chains hide the latency while B streams in
        return GemmPlan(m, n, k, info.width, 1, nv, k, 1, round_up(n, nv * info.width))
    vw, mr, nv = _register_tile(m, n, info)
    nr = nv * vw
    kc = min(kc, k)
    mc = mr * min(-(-m // mr), MC_TILES)
    nc = min(round_up(n, nr), round_up(NC_MAX, nr))
    return GemmPlan(m, n, k, vw, mr, nv, kc, mc, nc, a_rows=nv == 1)


def _register_tile(m: int, n: int, info: VectorInfo) -> tuple[int, int, int]:
    """(vw, mr, nv): mr*nv accumulators + nv B vectors + a broadcast fit the register file.

    Two B vectors per row keep loads at 2 per ``mr`` FMAs on x86 (the A broadcast folds into
    the FMA); NEON has no such folding and prefers 8x3. Narrow N (convolutions with few
    filters, small dots) would leave most of that tile as padding: it gets fewer and
    narrower vectors (``_narrow``) and the freed accumulators go to more rows. Short M gets
    all of its rows in one tile and wider rows instead.
    """
    nv, mr = (3, 8) if info.arch is TargetArch.AARCH64 else (2, (info.registers - 3) // 2)
    vw = info.width
    if n < nv * vw:
        vw, narrow_nv = _narrow(n, info.width)
        mr = min(mr * nv // narrow_nv, NARROW_MR)
        nv = narrow_nv
    if m < mr:
        mr = m
        nv = max(1, min(4, (info.registers - 2) // (m + 1), -(-n // vw)))
    return vw, mr, nv


def _narrow(n: int, width: int) -> tuple[int, int]:
    """(lanes, vectors) covering ``n`` columns: whole registers, or one shorter vector.

    Below a register's width the shortest power of two of at least 4 lanes holding ``n``
    wastes the fewest lanes; a 256-bit FMA costs no more than a 512-bit one per lane.
    """
    if n >= width:
        return width, -(-n // width)
    lanes = 4
    while lanes < n:
        lanes *= 2
    return min(lanes, width), 1


def round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def a_scratch_bytes(plan: GemmPlan) -> int:
    return 0 if plan.gemv else round_up(plan.mc * plan.kc * 4, ALIGN)


def gemm_scratch_bytes(plan: GemmPlan, b_constant: bool) -> int:
    """Bytes of ``ALIGN``-aligned scratch the GEMM function needs (packed A and B blocks)."""
    b_bytes = 0 if b_constant or plan.gemv else plan.kc * plan.nc * 4
    return a_scratch_bytes(plan) + b_bytes


def blocks(total: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, length) of consecutive blocks of ``size`` covering ``total``."""
    for start in range(0, total, size):
        yield start, min(size, total - start)


def pack_b(plan: GemmPlan, b: np.ndarray, into: np.ndarray | None = None) -> memoryview:
    """A constant ``B[k,n]`` in the packed panel layout the micro-kernel reads (f32 bytes),
    written in place into one array (``into``, ``packed_b_bytes`` bytes, when given): no
    block, padded or converted copy of the weights."""
    assert b.shape == (plan.k, plan.n), (b.shape, plan)
    size = packed_b_bytes(plan)
    into = np.empty(size, np.uint8) if into is None else into
    assert into.dtype == np.uint8 and into.shape == (size,), (into.dtype, into.shape, size)
    out = into.view("<f4")
    start = 0
    for jc, ncb, pc, kcb in _b_blocks(plan):
        size = kcb * round_up(ncb, plan.panel)
        _pack_b_block(plan, b[pc : pc + kcb, jc : jc + ncb], out[start : start + size])
        start += size
    return into.data


def packed_b_bytes(plan: GemmPlan) -> int:
    """The bytes of ``pack_b``'s result for ``plan``."""
    return 4 * sum(kcb * round_up(ncb, plan.panel) for _, ncb, _, kcb in _b_blocks(plan))


def _b_blocks(plan: GemmPlan) -> list[tuple[int, int, int, int]]:
    """(column start, columns, row start, rows) of each block of B, in packed order."""
    return [
        (jc, ncb, pc, kcb)
        for jc, ncb in blocks(plan.n, plan.nc)
        for pc, kcb in blocks(plan.k, plan.kc)
    ]


def _pack_b_block(plan: GemmPlan, block: np.ndarray, out: np.ndarray) -> None:
    """``block`` as ``[ncb_pad/pr][kcb][pr]`` panels into ``out``, zero columns past it."""
    kcb, ncb = block.shape
    pr = plan.panel
    panels = out.reshape(-1, kcb, pr)
    full, rest = divmod(ncb, pr)
    panels[:full] = block[:, : full * pr].reshape(kcb, full, pr).transpose(1, 0, 2)
    if rest:
        panels[full, :, :rest] = block[:, full * pr :]
        panels[full, :, rest:] = 0.0
