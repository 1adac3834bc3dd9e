"""The shape of one GEMM: register tile, cache blocks, scratch size and packed layouts.

Everything is decided at compile time from the static ``M, N, K`` and the target's
``VectorInfo``; the emitter (``gemm.py``) only follows the plan. Layouts, all f32:

* packed A (scratch, per ``ic, pc`` block): ``[mc/mr][kc][mr]``, zero rows past ``M``;
* packed B (scratch per ``jc, pc`` block, or the compile-time constant for all blocks):
  ``[nc_pad/nr][kc][nr]``, zero columns past ``N``. The constant holds the blocks in ``jc``
  then ``pc`` order; block ``(j, p)`` starts at ``j*K*nc + p*kc*nc_pad(j)`` floats, since
  every block but the last of each dimension is full.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from aotc.codegen.vector import VectorInfo

# Cache blocking (f32 elements). KC*NR*4 bytes of B micro-panel live in L1 while the MC*KC
# block of A lives in L2; NC bounds the packed B block (KC*NC*4 bytes of scratch).
KC = 256
MC_TILES = 12
NC_MAX = 2048
ALIGN = 64


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

    @property
    def nr(self) -> int:
        return self.nv * self.vw

    @property
    def gemv(self) -> bool:
        """Batch-1: no packing of A, B streamed once, the whole K in one block."""
        return self.m == 1


def plan_gemm(m: int, n: int, k: int, info: VectorInfo, kc: int = KC) -> GemmPlan:
    """The plan for static ``m, n, k`` on a target with vector shape ``info``."""
    assert m > 0 and n > 0 and k > 0, (m, n, k)
    if m == 1:
        nv = 4  # four independent FMA chains hide the latency while B streams in
        return GemmPlan(m, n, k, info.width, 1, nv, k, 1, round_up(n, nv * info.width))
    mr, nv = _register_tile(m, info)
    nr = nv * info.width
    kc = min(kc, k)
    mc = mr * min(-(-m // mr), MC_TILES)
    nc = min(round_up(n, nr), round_up(NC_MAX, nr))
    return GemmPlan(m, n, k, info.width, mr, nv, kc, mc, nc)


def _register_tile(m: int, info: VectorInfo) -> tuple[int, int]:
    """(mr, nv): mr*nv accumulators + nv B vectors + a broadcast fit the register file.

    Two B vectors per row keep loads at 2 per ``mr`` FMAs on x86 (the A broadcast folds into
    the FMA); NEON has no such folding and prefers 8x3. Short M gets all of its rows in one
    tile and wider rows instead.
    """
    nv, mr = (3, 8) if info.arch == "aarch64" else (2, (info.registers - 3) // 2)
    if m < mr:
        mr = m
        nv = max(1, min(4, (info.registers - 2) // (m + 1)))
    return mr, nv


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


def pack_b(plan: GemmPlan, b: np.ndarray) -> bytes:
    """A constant ``B[k,n]`` in the packed panel layout the micro-kernel reads (f32 bytes)."""
    assert b.shape == (plan.k, plan.n), (b.shape, plan)
    parts = []
    for jc, ncb in blocks(plan.n, plan.nc):
        for pc, kcb in blocks(plan.k, plan.kc):
            parts.append(_pack_b_block(plan, b[pc : pc + kcb, jc : jc + ncb]))
    return np.concatenate(parts).astype("<f4").tobytes()


def _pack_b_block(plan: GemmPlan, block: np.ndarray) -> np.ndarray:
    kcb, ncb = block.shape
    padded = np.zeros((kcb, round_up(ncb, plan.nr)), np.float32)
    padded[:, :ncb] = block
    panels = padded.reshape(kcb, -1, plan.nr).transpose(1, 0, 2)
    return np.ascontiguousarray(panels).reshape(-1)
