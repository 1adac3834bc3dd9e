"""A packed, cache-blocked, register-tiled f32 GEMM emitted as LLVM IR with explicit vectors.

``emit_gemm`` adds an internal function ``void name(ptr C, ptr A, ptr B, ptr scratch,
i64 lo, i64 hi, ptr extra...)`` computing ``C[M,N] = A[M,K] @ B[K,N]`` (all row-major, static
shapes) to a module, or the part of it in units ``[lo, hi)`` of ``gemm_split``: MR row panels
(a call packs only its own panels of A), or NR column tiles where there are few row panels
(threads share a GEMM that way; each element of C is computed by one call, in the same order
as by the whole GEMM). The
loop nest is BLIS's: ``jc`` (NC columns) > ``pc`` (KC of K; pack B) > ``ic`` (MC rows; pack
A) > ``jr`` (NR) > ``ir`` (MR) > micro-kernel. Each loop runs over its full blocks,
then once more for a shorter last block specialized at compile time, so edges cost no runtime
checks: packing pads with zeros and the tile store writes only the valid part.

B is either a runtime pointer (packed per block into scratch; row-major ``[K,N]``, or
``[N,K]`` with ``b_transposed``) or a compile-time constant pre-packed by
``gemm_plan.pack_b`` (the caller emits those bytes as a read-only global and
passes its address). ``M == 1`` takes a GEMV path that streams B once with ``nv`` vector
accumulators and no packing.

A is row-major ``[M,K]`` at the ``A`` argument unless ``GemmOptions.a_packer`` says how to
pack a panel from some other source (implicit GEMM: convolution patches gathered straight
from the input, ``kernels/conv_gemm.py``); the packer writes the same ``[kc][mr]`` panel.
With ``GemmOptions.a_direct`` the micro-kernels read row-major A in place (each A element is a
broadcast load, so its address may be anywhere): for a few column panels packing A costs as
much as the tiles' work (attention's per-head dots, N = 32 or 64).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.irtypes import F32, I1, I64, PTR, VOID, add_nuw, i64
from aotc.codegen.kernels.gemm_plan import GemmPlan, a_scratch_bytes, round_up
from aotc.codegen.kernels.gemm_tile import (
    Epilogue,
    StepFn,
    TileTarget,
    fma_step,
    gep,
    k_loop,
    load_vector,
    offset,
    store_tile,
    tile_pieces,
)
from aotc.codegen.loops import (
    for_range,
    function_builder,
    leave_loops_rolled,
    loop_hint,
    mark_back_edges,
)
from aotc.codegen.shared import share
from aotc.codegen.vector import VectorInfo, mark_function

TRUE = ir.Constant(I1, 1)
FALSE = ir.Constant(I1, 0)
FIXED_ARGS = 6  # C, A, B, scratch, lo, hi
#: Row panels from which a GEMM is split by rows even when it has more column tiles.
SPLIT_ROW_PANELS = 8


@dataclass(frozen=True)
class APanel:
    """One ``mr``-row panel of packed A to fill: ``A[row : row+rows, k : k+kc]``.

    ``rows`` and ``kc`` are static; rows ``rows..mr-1`` of the panel must be zeros. ``block``
    is the K block's index (every block but the last holds ``plan.kc`` columns).
    """

    dst: ir.Value  # ptr to the panel, ``[kc][mr]`` floats
    row: ir.Value  # i64 first row of A
    rows: int
    block: ir.Value  # i64 index of the K block
    kc: int


#: pack_a(builder, A argument, panel, plan): fill ``panel.dst`` from wherever A comes from.
APacker = Callable[[ir.IRBuilder, ir.Value, APanel, GemmPlan], None]


@dataclass(frozen=True)
class GemmOptions:
    """How the function is called: constant pre-packed B or not, epilogue and its operands."""

    b_packed: bool = False
    epilogue: Epilogue | None = None
    extra_args: int = 0  # trailing ptr arguments the epilogue reads (see ``extra_args``)
    b_transposed: bool = False  # runtime B is row-major [N,K] (not for GEMV)
    a_packer: APacker | None = None  # A is not a row-major [M,K] array (not for GEMV)
    a_direct: bool = False  # micro-kernels read row-major A in place, unpacked (no a_packer)
    rolled_epilogue: bool = False  # a long epilogue, applied row by row (``store_tile``)


def extra_args(b: ir.IRBuilder, count: int) -> list[ir.Value]:
    """The epilogue's ``count`` extra pointer arguments, inside whichever function it runs."""
    args = b.function.args
    return list(args[len(args) - count :])


def emit_gemm(
    module: ir.Module, name: str, plan: GemmPlan, info: VectorInfo, options: GemmOptions
) -> ir.Function:
    """Add the internal GEMM function ``name`` for ``plan`` to ``module`` and return it."""
    fn = _new_function(module, name, FIXED_ARGS + options.extra_args)
    mark_function(fn, info)
    b = function_builder(fn)
    c, a, b_ptr, scratch, lo, hi, *_ = fn.args
    if plan.gemv:
        _emit_gemv(b, plan, options, (c, a, b_ptr), (lo, hi))
        # LLVM unrolled the loop over column panels, a copy of the K loop per panel (GRU
        # b1's 6 panels: 23 ms of LLVM time at x86-64-v4, 9 ms rolled); the K loops are
        # LLVM's to unroll.
        _leave_rolled(fn, "gv.cond")
    else:
        _Gemm(module, name, plan, info, options, b).emit(c, a, b_ptr, scratch, (lo, hi))
        # Its loops block the work and pack panels around calls of the micro-kernels: LLVM
        # unrolled the loop over row panels, a copy of the vectorized packing loop per panel
        # (the transformer's compile: 0.8 of 2.9 CPU s), for no run time.
        leave_loops_rolled(fn)
    b.ret_void()
    return share(module, fn)


def _leave_rolled(fn: ir.Function, cond: str) -> None:
    """``llvm.loop.unroll.disable`` on the ``for_range`` loop whose test is the block named
    ``cond`` (if there is one), not on the loops inside it."""
    blocks = list(fn.blocks)
    test = next((k for k, block in enumerate(blocks) if block.name == cond), None)
    if test is not None:
        hint = loop_hint(fn.module, "llvm.loop.unroll.disable")
        mark_back_edges(blocks[test:], hint, header=blocks[test])


def gemm_split(plan: GemmPlan, b_packed: bool = False) -> tuple[bool, int]:
    """How the GEMM's calls may share it: (by rows, number of units).

    Units are MR row panels (each call packs only its own panels of A) unless there are few
    of them and more NR column tiles (late, small-image layers); GEMV always splits columns:
    its NR panels, or the vectors of its one panel of packed B (a squeeze-and-excitation
    dense layer of 20-48 outputs, streaming 100-300 KB of weights).
    """
    rows = -(-plan.m // plan.mr)
    tiles = -(-plan.n // plan.nr)
    if plan.gemv and b_packed and tiles == 1:
        return False, -(-plan.n // plan.vw)
    by_rows = not plan.gemv and (rows >= SPLIT_ROW_PANELS or rows >= tiles)
    return by_rows, rows if by_rows else tiles


def _new_function(module: ir.Module, name: str, n_args: int) -> ir.Function:
    args = [PTR] * 4 + [I64] * 2 + [PTR] * (n_args - FIXED_ARGS)
    fn = ir.Function(module, ir.FunctionType(VOID, args), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for arg in fn.args[:4]:
        arg.add_attribute("noalias")
    return fn


def _in_range(b: ir.IRBuilder, index: ir.Value, bounds: tuple[ir.Value, ir.Value]) -> ir.Value:
    """Whether the unit ``index`` is one this call computes (``lo <= index < hi``)."""
    lo, hi = bounds
    return b.and_(b.icmp_signed(">=", index, lo), b.icmp_signed("<", index, hi))


@dataclass(frozen=True)
class _Block:
    """One block of a blocked loop: its index (``i64``), static length and position flags."""

    index: ir.Value
    size: int
    first: ir.Value
    last: ir.Value


def _each_block(b: ir.IRBuilder, total: int, size: int, name: str) -> Iterator[_Block]:
    """The full blocks as one loop, then the short last block; the body is emitted per kind.

    The caller's loop body runs once per kind of block with the builder inside that block's
    code, so block sizes are compile-time constants there.
    """
    full, rem = divmod(total, size)
    if full > 1:
        with for_range(b, full, name) as i:
            last = FALSE if rem else b.icmp_unsigned("==", i, i64(full - 1))
            yield _Block(i, size, b.icmp_unsigned("==", i, i64(0)), last)
    elif full == 1:
        yield _Block(i64(0), size, TRUE, FALSE if rem else TRUE)
    if rem:
        yield _Block(i64(full), rem, TRUE if full == 0 else FALSE, TRUE)


class _Gemm:
    """Emits the blocked loop nest of one GEMM function and its micro-kernels."""

    def __init__(
        self,
        module: ir.Module,
        name: str,
        plan: GemmPlan,
        info: VectorInfo,
        options: GemmOptions,
        b: ir.IRBuilder,
    ) -> None:
        self.module, self.name, self.plan, self.info = module, name, plan, info
        self.options, self.b = options, b
        self.kernels: dict[tuple[int, int, int], ir.Function] = {}
        self.by_rows = gemm_split(plan)[0]
        self.bounds: tuple[ir.Value, ir.Value] = (i64(0), i64(0))

    def emit(
        self,
        c: ir.Value,
        a: ir.Value,
        b_src: ir.Value,
        scratch: ir.Value,
        bounds: tuple[ir.Value, ir.Value],
    ) -> None:
        p, b = self.plan, self.b
        self.bounds = bounds
        a_pack = scratch
        b_pack = gep(b, scratch, a_scratch_bytes(p) // 4)
        for jb in _each_block(b, p.n, p.nc, "jc"):
            nc_pad = round_up(jb.size, p.panel)
            for pb in _each_block(b, p.k, p.kc, "pc"):
                if self.options.b_packed:
                    block = offset(b, (jb.index, p.k * p.nc), (pb.index, p.kc * nc_pad))
                    bp = gep(b, b_src, block)
                else:
                    self._pack_b(b_src, b_pack, jb, pb)
                    bp = b_pack
                for ib in _each_block(b, p.m, p.mc, "ic"):
                    with b.if_then(self._has_panels(ib)):
                        if self.options.a_direct:
                            block = offset(b, (ib.index, p.mc * p.k), (pb.index, p.kc))
                            self._tiles(c, gep(b, a, block), bp, jb, pb, ib)
                        else:
                            self._pack_a(a, a_pack, ib, pb)
                            self._tiles(c, a_pack, bp, jb, pb, ib)

    def _has_panels(self, ib: _Block) -> ir.Value:
        """Whether this call computes any row panel of the MC block (always, by columns)."""
        p, b = self.plan, self.b
        if not self.by_rows:
            return TRUE
        lo, hi = self.bounds
        first = offset(b, (ib.index, p.mc // p.mr))
        stop = b.add(first, i64(-(-ib.size // p.mr)))
        return b.and_(b.icmp_signed("<", first, hi), b.icmp_signed(">", stop, lo))

    def _mine(self, ib: _Block, qb: _Block) -> ir.Value:
        """Whether this call computes row panel ``qb`` of the MC block ``ib``."""
        if not self.by_rows:
            return TRUE
        panel = offset(self.b, (ib.index, self.plan.mc // self.plan.mr), (qb.index, 1))
        return _in_range(self.b, panel, self.bounds)

    def _tiles(
        self, c: ir.Value, ap: ir.Value, bp: ir.Value, jb: _Block, pb: _Block, ib: _Block
    ) -> None:
        """The ``jr``/``ir`` loops over register tiles of one packed block pair."""
        p, b = self.plan, self.b
        extras = extra_args(b, self.options.extra_args)
        for rb in _each_block(b, jb.size, p.nr, "jr"):
            tile = offset(b, (jb.index, p.nc // p.nr), (rb.index, 1))
            mine = TRUE if self.by_rows else _in_range(b, tile, self.bounds)
            with b.if_then(mine):
                self._row_tiles(c, (ap, bp), (jb, pb, ib), rb, extras)

    def _row_tiles(
        self,
        c: ir.Value,
        packed: tuple[ir.Value, ir.Value],
        blocks: tuple[_Block, _Block, _Block],
        rb: _Block,
        extras: list[ir.Value],
    ) -> None:
        """The ``ir`` loop of micro-kernel calls down one ``nr`` column tile."""
        p, b = self.plan, self.b
        ib = blocks[2]
        for qb in _each_block(b, ib.size, p.mr, "ir"):
            with b.if_then(self._mine(ib, qb)):
                self._tile(c, packed, blocks, (rb, qb), extras)

    def _tile(
        self,
        c: ir.Value,
        packed: tuple[ir.Value, ir.Value],
        blocks: tuple[_Block, _Block, _Block],
        tile: tuple[_Block, _Block],
        extras: list[ir.Value],
    ) -> None:
        """One micro-kernel call: the ``mr x nr`` tile ``tile`` (column, row block)."""
        p, b = self.plan, self.b
        (ap, bp), (jb, pb, ib), (rb, qb) = packed, blocks, tile
        kernel = self._kernel(qb.size, rb.size, pb.size)
        row = offset(b, (ib.index, p.mc), (qb.index, p.mr))
        col = offset(b, (jb.index, p.nc), (rb.index, p.nr))
        panel = p.mr * (p.k if self.options.a_direct else pb.size)  # floats apart
        args = [
            gep(b, ap, offset(b, (qb.index, panel))),
            gep(b, bp, strip(b, p, rb.index, pb.size)),
            gep(b, c, offset(b, (row, p.n), (col, 1))),
            row,
            col,
            pb.first,
            pb.last,
            *extras,
        ]
        b.call(kernel, args)

    def _kernel(self, rows: int, cols: int, kc: int) -> ir.Function:
        key = (rows, cols, kc)
        if key not in self.kernels:
            self.kernels[key] = share(self.module, self._emit_kernel(rows, cols, kc))
        return self.kernels[key]

    def _emit_kernel(self, rows: int, cols: int, kc: int) -> ir.Function:
        """The micro-kernel for a ``rows x cols`` tile (of ``mr x nr``) over ``kc`` steps."""
        p = self.plan
        fn_type = ir.FunctionType(VOID, [PTR, PTR, PTR, *[ir.IntType(64)] * 2, I1, I1])
        fn_type = ir.FunctionType(VOID, [*fn_type.args, *[PTR] * self.options.extra_args])
        fn = ir.Function(self.module, fn_type, f"{self.name}.tile{rows}x{cols}k{kc}")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")  # one copy per tile kind; inlining only bloats callers
        mark_function(fn, self.info)
        for arg in fn.args[:3]:
            arg.add_attribute("noalias")
        ap, bp, c, row, col, first, last = fn.args[:7]
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        row_stride, k_stride = (p.k, 1) if self.options.a_direct else p.a_strides(kc)

        def step(b: ir.IRBuilder, k: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
            a_row = gep(b, ap, offset(b, (k, k_stride)))
            b_row = gep(b, bp, offset(b, (k, p.panel)))
            scalars = [b.load(gep(b, a_row, r * row_stride), typ=F32, align=4) for r in range(rows)]
            vecs = [load_vector(b, gep(b, b_row, v * p.vw), p.vw, p.vw) for v in range(p.nv)]
            return scalars, vecs

        accs = k_loop(b, kc, rows, p.nv, p.vw, step)
        epilogue, rolled = self.options.epilogue, self.options.rolled_epilogue
        dst = TileTarget(c, p.n, row, col, first, last, epilogue, rolled and rows > 1)
        store_tile(b, accs, tile_pieces(rows, p.nv, p.vw, cols), dst)
        b.ret_void()
        return fn

    def _pack_a(self, a: ir.Value, dst: ir.Value, ib: _Block, pb: _Block) -> None:
        """A[ic : ic+mc, pc : pc+kc] -> ``[mc/mr][kc][mr]`` panels, zero rows past the block."""
        for qb in _each_block(self.b, ib.size, self.plan.mr, "pa"):
            with self.b.if_then(self._mine(ib, qb)):
                self._pack_panel(a, dst, (ib, qb), pb)

    def _pack_panel(
        self, a: ir.Value, dst: ir.Value, blocks: tuple[_Block, _Block], pb: _Block
    ) -> None:
        """One ``[kc][mr]`` panel of packed A: row panel ``qb`` of the MC block ``ib``."""
        p, b = self.plan, self.b
        ib, qb = blocks
        src_row = offset(b, (ib.index, p.mc), (qb.index, p.mr))
        panel = gep(b, dst, offset(b, (qb.index, p.mr * pb.size)))
        if self.options.a_packer is not None:
            self.options.a_packer(b, a, APanel(panel, src_row, qb.size, pb.index, pb.size), p)
            return
        src = gep(b, a, offset(b, (src_row, p.k), (pb.index, p.kc)))
        row_stride, k_stride = p.a_strides(pb.size)
        with for_range(b, pb.size, "pak") as k:
            out = gep(b, panel, offset(b, (k, k_stride)))
            for r in range(p.mr):
                value = (
                    b.load(gep(b, src, offset(b, (k, 1), r * p.k)), typ=F32, align=4)
                    if r < qb.size
                    else ir.Constant(F32, 0.0)
                )
                b.store(value, gep(b, out, r * row_stride), align=4)

    def _pack_b(self, src: ir.Value, dst: ir.Value, jb: _Block, pb: _Block) -> None:
        """B[pc : pc+kc, jc : jc+nc] -> ``[nc/nr][kc][nr]`` panels, zero columns past N."""
        p, b = self.plan, self.b
        if self.options.b_transposed:
            self._pack_b_transposed(src, dst, jb, pb)
            return
        for rb in _each_block(b, jb.size, p.nr, "pb"):
            col = offset(b, (jb.index, p.nc), (rb.index, p.nr))
            panel = gep(b, dst, offset(b, (rb.index, p.nr * pb.size)))
            with for_range(b, pb.size, "pbk") as k:
                row = gep(b, src, offset(b, (pb.index, p.kc * p.n), (k, p.n), (col, 1)))
                out = gep(b, panel, offset(b, (k, p.nr)))
                for v in range(p.nv):
                    lanes = min(p.vw, rb.size - v * p.vw)
                    vec = (
                        load_vector(b, gep(b, row, v * p.vw), lanes, p.vw)
                        if lanes > 0
                        else ir.Constant(ir.VectorType(F32, p.vw), [0.0] * p.vw)
                    )
                    b.store(vec, gep(b, out, v * p.vw), align=4)

    def _pack_b_transposed(self, src: ir.Value, dst: ir.Value, jb: _Block, pb: _Block) -> None:
        """Like ``_pack_b`` from B^T ``[N,K]``: each column of a panel is a contiguous row."""
        p, b = self.plan, self.b
        for rb in _each_block(b, jb.size, p.nr, "pt"):
            col = offset(b, (jb.index, p.nc), (rb.index, p.nr))
            panel = gep(b, dst, offset(b, (rb.index, p.nr * pb.size)))
            for j in range(p.nr):  # static: the panel's columns, zeros past the block
                with for_range(b, pb.size, "ptk") as k:
                    value = (
                        b.load(
                            gep(b, src, offset(b, (col, p.k), (pb.index, p.kc), (k, 1), j * p.k)),
                            typ=F32,
                            align=4,
                        )
                        if j < rb.size
                        else ir.Constant(F32, 0.0)
                    )
                    b.store(value, gep(b, panel, offset(b, (k, p.nr), j)), align=4)


def strip(b: ir.IRBuilder, p: GemmPlan, index: ir.Value, kc: int) -> ir.Value:
    """Where the ``index``-th ``nr``-column strip of a packed B block starts (floats): in
    panel ``index // q`` of ``q = pr / nr`` strips, at column ``(index % q) * nr``."""
    q = p.panel // p.nr
    if q == 1:
        return offset(b, (index, p.nr * kc))
    if isinstance(index, ir.Constant):
        return i64(index.constant // q * p.panel * kc + index.constant % q * p.nr)
    panel = b.udiv(index, i64(q))
    return offset(b, (panel, p.panel * kc), (b.urem(index, i64(q)), p.nr))


Pointers3 = tuple[ir.Value, ir.Value, ir.Value]


def _emit_gemv(
    b: ir.IRBuilder,
    p: GemmPlan,
    options: GemmOptions,
    ptrs: Pointers3,
    bounds: tuple[ir.Value, ir.Value],
) -> None:
    """``C[1,N] = A[1,K] @ B``: per panel of ``nr`` columns (those in ``bounds``), stream K
    rows of B."""
    if not options.b_packed:
        _emit_gemv_rows(b, p, options, ptrs, bounds)
        return
    vectors = gemm_split(p, True)[1]
    if p.n <= p.nr and vectors > 1:
        _emit_gemv_vectors(b, p, options, ptrs, bounds, vectors)
        return
    for rb in _each_block(b, p.n, p.nr, "gv"):
        with b.if_then(_in_range(b, rb.index, bounds)):
            _gemv_panel(b, p, options, ptrs, rb)


def _gemv_panel(
    b: ir.IRBuilder, p: GemmPlan, options: GemmOptions, ptrs: Pointers3, rb: _Block
) -> None:
    """One panel of ``nr`` columns of GEMV on packed B."""
    c, a, b_src = ptrs
    nv = -(-rb.size // p.vw)
    step = _gemv_step(p, options.b_packed, a, b_src, rb, nv)
    col = offset(b, (rb.index, p.nr))
    accs = k_loop(b, p.k, 1, nv, p.vw, step)
    dst = TileTarget(gep(b, c, col), p.n, i64(0), col, TRUE, TRUE, options.epilogue)
    store_tile(b, accs, tile_pieces(1, nv, p.vw, rb.size), dst)


def _emit_gemv_vectors(
    b: ir.IRBuilder,
    p: GemmPlan,
    options: GemmOptions,
    ptrs: Pointers3,
    bounds: tuple[ir.Value, ir.Value],
    vectors: int,
) -> None:
    """GEMV of one panel of packed B in units of its vectors: the vectors ``[lo, hi)`` in one
    K loop, a loop per range (each lane accumulates as in the whole panel's)."""
    lo, hi = bounds
    for first in range(vectors):
        for stop in range(first + 1, vectors + 1):
            mine = b.and_(b.icmp_signed("==", lo, i64(first)), b.icmp_signed("==", hi, i64(stop)))
            with b.if_then(mine):
                _gemv_vectors(b, p, options, ptrs, (first, stop))


def _gemv_vectors(
    b: ir.IRBuilder, p: GemmPlan, options: GemmOptions, ptrs: Pointers3, span: tuple[int, int]
) -> None:
    """Vectors ``[first, stop)`` of the one panel of GEMV on packed B."""
    c, a, b_src = ptrs
    first, stop = span
    count, lanes = stop - first, min(p.n, stop * p.vw) - first * p.vw

    def step(b: ir.IRBuilder, k: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
        row = gep(b, b_src, offset(b, (k, p.panel), first * p.vw))
        vecs = [load_vector(b, gep(b, row, v * p.vw), p.vw, p.vw) for v in range(count)]
        return [b.load(gep(b, a, k), typ=F32, align=4)], vecs

    accs = k_loop(b, p.k, 1, count, p.vw, step)
    col = i64(first * p.vw)
    dst = TileTarget(gep(b, c, col), p.n, i64(0), col, TRUE, TRUE, options.epilogue)
    store_tile(b, accs, tile_pieces(1, count, p.vw, lanes), dst)


GEMV_ROWS = 4


def _emit_gemv_rows(
    b: ir.IRBuilder,
    p: GemmPlan,
    options: GemmOptions,
    ptrs: Pointers3,
    bounds: tuple[ir.Value, ir.Value],
) -> None:
    """GEMV on a runtime row-major B: sweep ``GEMV_ROWS`` rows of B at a time across N.

    Walking a column panel down K would stride N floats per step and defeat the hardware
    prefetchers (they stop at page boundaries); a few rows side by side are a few sequential
    streams. C holds the partial sums between sweeps (it stays in L1/L2 for a GEMV).
    """
    a = ptrs[1]
    for gb in _each_block(b, p.k, GEMV_ROWS, "gk"):
        k0 = offset(b, (gb.index, GEMV_ROWS))
        a_vals = [
            b.load(gep(b, a, offset(b, (k0, 1), r)), typ=F32, align=4) for r in range(gb.size)
        ]
        for rb in _each_block(b, p.n, p.nr, "gn"):
            with b.if_then(_in_range(b, rb.index, bounds)):
                _gemv_sweep(b, p, options, ptrs, (gb, rb), a_vals)


def _gemv_sweep(
    b: ir.IRBuilder,
    p: GemmPlan,
    options: GemmOptions,
    ptrs: Pointers3,
    blocks: tuple[_Block, _Block],
    a_vals: list[ir.Value],
) -> None:
    """One panel of ``nr`` columns of a GEMV sweep over ``GEMV_ROWS`` rows of runtime B."""
    c, _, b_src = ptrs
    gb, rb = blocks
    k0 = offset(b, (gb.index, GEMV_ROWS))
    col = offset(b, (rb.index, p.nr))
    nv = -(-rb.size // p.vw)
    zero = ir.Constant(ir.VectorType(F32, p.vw), [0.0] * p.vw)
    accs = [[zero] * nv]
    for r, a_value in enumerate(a_vals):
        row = gep(b, b_src, offset(b, (k0, p.n), (col, 1), r * p.n))
        lanes = [min(p.vw, rb.size - v * p.vw) for v in range(nv)]
        vecs = [load_vector(b, gep(b, row, v * p.vw), n, p.vw) for v, n in enumerate(lanes)]
        accs = fma_step(b, accs, [a_value], vecs)
    dst = TileTarget(gep(b, c, col), p.n, i64(0), col, gb.first, gb.last, options.epilogue)
    store_tile(b, accs, tile_pieces(1, nv, p.vw, rb.size), dst)


def _gemv_step(
    p: GemmPlan, packed: bool, a: ir.Value, b_src: ir.Value, rb: _Block, nv: int
) -> StepFn:
    """One K step of GEMV: a[k] and the ``nv`` vectors of B's row k in this panel."""
    # packed panels are zero-padded to whole vectors; runtime B ends exactly at N
    lanes = [p.vw if packed else min(p.vw, rb.size - v * p.vw) for v in range(nv)]

    def step(b: ir.IRBuilder, k: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
        if packed:
            row = gep(b, b_src, add_nuw(b, strip(b, p, rb.index, p.k), offset(b, (k, p.panel))))
        else:
            row = gep(b, b_src, offset(b, (k, p.n), (rb.index, p.nr)))
        vecs = [load_vector(b, gep(b, row, v * p.vw), n, p.vw) for v, n in enumerate(lanes)]
        return [b.load(gep(b, a, k), typ=F32, align=4)], vecs

    return step
