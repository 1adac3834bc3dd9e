"""Attention per (batch, head) in one kernel: ``softmax(scale * Q K^T + mask) V``.

The fusion's plan (``hlo/attention_plan.py``) gives each operand as strided terms, so the
kernel reads the heads where the Q/K/V GEMM left them and writes its rows where the next GEMM
reads them. Per batch index g (the multi-core split's unit: each head on one thread), it
packs the head into scratch with its terms added: Q as rows ``[S, D]``, K transposed
``[D, Tp]`` and V ``[T, Ep]`` (``Tp``, ``Ep``: padded to whole vectors; the padding is zeroed
once per call). Then per panel of ``R`` query rows: the scores ``R x Tp`` on a register tile
(the GEMM's ``k_loop``: a broadcast Q element times K vectors) go to a row buffer, each row
is scaled, masked, its padded lanes set to -inf, exponentiated after its max (mathlib's
``softmax_exp``) and normalized (the evaluator's ``exp(x - max) * (1 / sum)`` or
``/ sum``), and the panel's output ``R x E`` is a second register tile (a broadcast P
element times V vectors), stored through the output term. The score rows never leave the
cache; no kernel runs between the two products.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen import mathlib
from aotc.codegen.irtypes import F32, add_nuw, i64, mul_nuw
from aotc.codegen.kernels.base import KernelIO
from aotc.codegen.kernels.gemm_tile import StepFn, gep, k_loop, resize, splat
from aotc.codegen.loops import entry_alloca, for_range
from aotc.codegen.vector import VectorInfo
from aotc.errors import CodegenError
from aotc.hlo.attention_plan import AttentionPlan, Term

_ALIGN = 16  # floats: each scratch array starts on a 64-byte line


@dataclass(frozen=True)
class _Layout:
    """Sizes of one target's kernel: vector width, padded lengths, panel rows, scratch."""

    width: int
    keys_padded: int  # Tp
    width_padded: int  # Ep
    rows: int  # R: query rows per register tile
    block: int  # vectors per column block of a tile

    @staticmethod
    def of(plan: AttentionPlan, info: VectorInfo) -> _Layout:
        w = info.width
        block = 4 if info.registers >= 32 else 2
        rows = max(1, min(plan.rows, (info.registers - block - 1) // block, 8))
        return _Layout(w, _padded(plan.keys, w), _padded(plan.width, w), rows, block)

    def offsets(self, plan: AttentionPlan) -> tuple[int, int, int, int, int]:
        """Float offsets of Qp, Kp, Vp, the score rows, and the end."""
        q = 0
        k = q + _padded(plan.rows * plan.depth, _ALIGN)
        v = k + _padded(plan.depth * self.keys_padded, _ALIGN)
        p = v + _padded(plan.keys * self.width_padded, _ALIGN)
        return q, k, v, p, p + self.rows * self.keys_padded


def _padded(n: int, m: int) -> int:
    return -(-n // m) * m


def attention_scratch_bytes(plan: AttentionPlan, info: VectorInfo) -> int:
    """Scratch of one call: the packed head and a panel's score rows."""
    return 4 * _Layout.of(plan, info).offsets(plan)[4]


@dataclass
class _Ctx:
    b: ir.IRBuilder
    plan: AttentionPlan
    lay: _Layout
    io: KernelIO
    qp: ir.Value
    kp: ir.Value
    vp: ir.Value
    pp: ir.Value
    scores: ScoreFn

    @property
    def vec(self) -> ir.VectorType:
        return ir.VectorType(F32, self.lay.width)


#: (builder, score vector, index in the softmax input's shape) -> that input's vector.
ScoreFn = Callable[[ir.IRBuilder, ir.Value, Sequence[ir.Value]], ir.Value]


def emit_attention_kernel(
    b: ir.IRBuilder, io: KernelIO, plan: AttentionPlan, scores: ScoreFn
) -> None:
    """Emit the kernel of an attention fusion (see the module docstring); ``scores`` computes
    the fusion's elementwise ops between the score dot and the softmax on vectors."""
    if io.scratch is None:
        raise CodegenError(f"fusion %{io.inst.name}: attention needs scratch")
    lay = _Layout.of(plan, io.vector)
    q, k, v, p, _ = lay.offsets(plan)
    qp, kp, vp, pp = (gep(b, io.scratch, o) for o in (q, k, v, p))
    ctx = _Ctx(b, plan, lay, io, qp, kp, vp, pp, scores)
    _zero_padding(ctx)
    lo, hi = io.split.claim(plan.batch) if io.split is not None else (i64(0), i64(plan.batch))
    with for_range(b, hi, "g", lo) as g:
        _pack(ctx, g)
        full = plan.rows // lay.rows
        if full:
            with for_range(b, full, "panel") as panel:
                _panel(ctx, g, mul_nuw(b, panel, i64(lay.rows)), lay.rows)
        if plan.rows % lay.rows:
            _panel(ctx, g, i64(full * lay.rows), plan.rows % lay.rows)


# ---- reading the terms ------------------------------------------------------------------------


def _base(ctx: _Ctx, term: Term, g: ir.Value) -> ir.Value:
    """The pointer to element (g, 0, 0) of ``term``."""
    b = ctx.b
    pointer = ctx.io.outputs[0] if term.param < 0 else ctx.io.pointer(term.param)
    if pointer is None:
        raise CodegenError(
            f"fusion %{ctx.io.inst.name}: attention operand {term.param} is no buffer"
        )
    total: ir.Value = i64(term.offset)
    inner = 1
    for size, stride in reversed(term.batch):
        part = b.urem(b.udiv(g, i64(inner)), i64(size)) if inner > 1 else b.urem(g, i64(size))
        total = add_nuw(b, total, mul_nuw(b, part, i64(stride)))
        inner *= size
    return gep(b, pointer, total)


def _sum_at(
    ctx: _Ctx, bases: Sequence[tuple[ir.Value, Term]], row: ir.Value, col: ir.Value
) -> ir.Value:
    """The sum of the terms' elements at (row, col), in term order (the fused adds')."""
    b = ctx.b
    total: ir.Value | None = None
    for base, term in bases:
        index = add_nuw(
            b, mul_nuw(b, row, i64(term.row_stride)), mul_nuw(b, col, i64(term.col_stride))
        )
        value = b.load(gep(b, base, index), typ=F32)
        total = value if total is None else b.fadd(total, value)
    assert total is not None
    return total


def _pack(ctx: _Ctx, g: ir.Value) -> None:
    """Qp[i, d], Kp[d, t] (transposed) and Vp[t, e] of head g, terms added."""
    plan, lay = ctx.plan, ctx.lay
    q = [(_base(ctx, t, g), t) for t in plan.q]
    _pack_rows(ctx, q, ctx.qp, (0, plan.rows), (0, plan.depth), lambda i, d: (i, plan.depth, d))
    k = [(_base(ctx, t, g), t) for t in plan.k]
    _pack_transposed(ctx, k)
    v = [(_base(ctx, t, g), t) for t in plan.v]
    _pack_rows(
        ctx, v, ctx.vp, (0, plan.keys), (0, plan.width), lambda t, e: (t, lay.width_padded, e)
    )


Place = Callable[[ir.Value, ir.Value], tuple[ir.Value, int, ir.Value]]


def _pack_rows(
    ctx: _Ctx,
    bases: Sequence[tuple[ir.Value, Term]],
    dst: ir.Value,
    rows: tuple[int, int],
    cols: tuple[int, int],
    place: Place,
) -> None:
    """dst[place(r, c)] = the terms' sum at (r, c) over the ranges (LLVM vectorizes the
    inner loop where the terms are contiguous along it)."""
    b = ctx.b
    if rows[0] >= rows[1] or cols[0] >= cols[1]:
        return
    with (
        for_range(b, rows[1], "r", i64(rows[0])) as r,
        for_range(b, cols[1], "c", i64(cols[0])) as c,
    ):
        outer, stride, inner = place(r, c)
        at = add_nuw(b, mul_nuw(b, outer, i64(stride)), inner)
        b.store(_sum_at(ctx, bases, r, c), gep(b, dst, at))


def _pack_transposed(ctx: _Ctx, bases: Sequence[tuple[ir.Value, Term]]) -> None:
    """Kp[d, t] = k[t, d]: whole W x W blocks as W row vectors transposed in registers (where
    every term is contiguous or broadcast along d), the edges element by element."""
    b, plan, lay, w = ctx.b, ctx.plan, ctx.lay, ctx.lay.width
    place: Place = lambda t, d: (d, lay.keys_padded, t)  # noqa: E731
    blocked = w & (w - 1) == 0 and all(t.col_stride in (0, 1) for _, t in bases)
    tb, db = (plan.keys // w, plan.depth // w) if blocked else (0, 0)
    if tb and db:
        with for_range(b, tb, "tb") as t_block, for_range(b, db, "db") as d_block:
            t0, d0 = mul_nuw(b, t_block, i64(w)), mul_nuw(b, d_block, i64(w))
            rows = [_sum_vector(ctx, bases, add_nuw(b, t0, i64(j)), d0) for j in range(w)]
            for j, column in enumerate(_transposed(b, rows)):
                at = add_nuw(b, mul_nuw(b, add_nuw(b, d0, i64(j)), i64(lay.keys_padded)), t0)
                b.store(column, gep(b, ctx.kp, at), align=4)
    done_t, done_d = (tb * w, db * w) if tb and db else (0, 0)
    _pack_rows(ctx, bases, ctx.kp, (0, done_t), (done_d, plan.depth), place)
    _pack_rows(ctx, bases, ctx.kp, (done_t, plan.keys), (0, plan.depth), place)


def _sum_vector(
    ctx: _Ctx, bases: Sequence[tuple[ir.Value, Term]], row: ir.Value, col: ir.Value
) -> ir.Value:
    """The terms' sum at (row, col .. col + W), each term contiguous or broadcast along cols."""
    b, w = ctx.b, ctx.lay.width
    total: ir.Value | None = None
    for base, term in bases:
        at = add_nuw(
            b, mul_nuw(b, row, i64(term.row_stride)), mul_nuw(b, col, i64(term.col_stride))
        )
        if term.col_stride == 1:
            value = _load_vec(b, base, at, w)
        else:
            value = splat(b, _load(b, base, at), w)
        total = value if total is None else b.fadd(total, value)
    assert total is not None
    return total


def _transposed(b: ir.IRBuilder, rows: list[ir.Value]) -> list[ir.Value]:
    """The columns of the W x W matrix whose rows are ``rows``: per bit k of the index, rows
    a and a + 2^k swap that bit of the row with that bit of the lane (two-source shuffles)."""
    w = len(rows)
    rows = list(rows)
    d = 1
    while d < w:
        for a in range(w):
            if a & d:
                continue
            low = [(w if c & d else 0) + (c & ~d) for c in range(w)]
            high = [(w if c & d else 0) + (c | d) for c in range(w)]
            rows[a], rows[a + d] = (
                b.shuffle_vector(rows[a], rows[a + d], _lanes_of(low)),
                b.shuffle_vector(rows[a], rows[a + d], _lanes_of(high)),
            )
        d *= 2
    return rows


def _lanes_of(indices: list[int]) -> ir.Constant:
    return ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), indices)


def _zero_padding(ctx: _Ctx) -> None:
    """Zeros in Kp's columns past T and Vp's past E (what the packing never writes)."""
    b, plan, lay = ctx.b, ctx.plan, ctx.lay
    pads = (
        (ctx.kp, plan.depth, lay.keys_padded, plan.keys),
        (ctx.vp, plan.keys, lay.width_padded, plan.width),
    )
    for dst, rows, stride, start in pads:
        if stride == start:
            continue
        with for_range(b, rows, "zr") as r, for_range(b, stride, "zc", i64(start)) as c:
            b.store(ir.Constant(F32, 0.0), gep(b, dst, add_nuw(b, mul_nuw(b, r, i64(stride)), c)))


# ---- one panel of query rows --------------------------------------------------------------------


def _panel(ctx: _Ctx, g: ir.Value, i0: ir.Value, rows: int) -> None:
    vectors = ctx.lay.keys_padded // ctx.lay.width
    if vectors <= ctx.lay.block:
        _softmax_in_registers(ctx, g, i0, rows, vectors)
    else:
        _scores(ctx, i0, rows)
        with for_range(ctx.b, rows, "row") as r:
            _softmax_row(ctx, g, i0, r)
    _values(ctx, g, i0, rows)


def _score_step(ctx: _Ctx, i0: ir.Value, rows: int, col: ir.Value, nv: int) -> StepFn:
    """The scores tile's K step: Qp[i0 + r, k] broadcast times Kp[k, col..] vectors."""
    plan, lay, w = ctx.plan, ctx.lay, ctx.lay.width

    def step(b: ir.IRBuilder, k: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
        a = [_load(b, ctx.qp, add_nuw(b, mul_nuw(b, add_nuw(b, i0, i64(r)), i64(plan.depth)), k))
             for r in range(rows)]  # fmt: skip
        kbase = add_nuw(b, mul_nuw(b, k, i64(lay.keys_padded)), col)
        return a, [_load_vec(b, ctx.kp, add_nuw(b, kbase, i64(v * w)), w) for v in range(nv)]

    return step


def _softmax_in_registers(ctx: _Ctx, g: ir.Value, i0: ir.Value, rows: int, nv: int) -> None:
    """Short rows (one tile wide): the panel's scores stored once, then per row (a loop
    whose iterations the cpu overlaps) its vectors are loaded and softmaxed in registers:
    few values live, so the exp constants stay in registers too."""
    b, plan, lay, w = ctx.b, ctx.plan, ctx.lay, ctx.lay.width
    accs = k_loop(b, plan.depth, rows, nv, w, _score_step(ctx, i0, rows, i64(0), nv))
    for r in range(rows):
        for v in range(nv):
            b.store(accs[r][v], gep(b, ctx.pp, r * lay.keys_padded + v * w), align=4)
    with for_range(b, rows, "row") as r:
        row = gep(b, ctx.pp, mul_nuw(b, r, i64(lay.keys_padded)))
        prefix = _row_index(ctx, g, add_nuw(b, i0, r))
        xs = [
            _scored(ctx, prefix, v * w, _load_vec(b, row, i64(v * w), w), min(w, plan.keys - v * w))
            for v in range(nv)
        ]
        top = splat(b, _across(b, "max", _folded(b, "max", xs)), w)
        es = [mathlib.softmax_exp(b, x, top) for x in xs]
        total = _across(b, "add", _folded(b, "add", es))
        if plan.divide:
            ps = [b.fdiv(e, splat(b, total, w)) for e in es]
        else:
            inverse = splat(b, b.fdiv(ir.Constant(F32, 1.0), total), w)
            ps = [b.fmul(e, inverse) for e in es]
        for v, p in enumerate(ps):
            b.store(p, gep(b, row, v * w), align=4)


def _folded(b: ir.IRBuilder, op: str, values: list[ir.Value]) -> ir.Value:
    """``values`` folded lanewise by ``op`` as a balanced tree."""
    while len(values) > 1:
        pairs = [_combine(b, op, values[k], values[k + 1]) for k in range(0, len(values) - 1, 2)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]


BlockFn = Callable[[ir.Value, int, int | None], None]


def _blocks(ctx: _Ctx, vectors: int, full: int, body: BlockFn) -> None:
    """``body(first vector, count, first as an int or None)`` over column blocks of ``vectors``:
    blocks of whole vectors (the first ``full``) in a loop, then the rest unrolled (the first
    vector known, so a partial one is stored in part)."""
    b = ctx.b
    per = min(ctx.lay.block, vectors)
    looped = full // per
    if looped > 1:
        with for_range(b, looped, "blk") as k:
            body(mul_nuw(b, k, i64(per)), per, None)
    start = per if looped == 1 else looped * per
    if looped == 1:
        body(i64(0), per, 0)
    while start < vectors:
        n = min(per, vectors - start)
        body(i64(start), n, start)
        start += n


def _scores(ctx: _Ctx, i0: ir.Value, rows: int) -> None:
    """The panel's scores ``Qp[i0 + r] . Kp`` into the score rows (all Tp columns)."""
    b, plan, lay = ctx.b, ctx.plan, ctx.lay
    w = lay.width

    def block(first: ir.Value, nv: int, _known: int | None) -> None:
        col = mul_nuw(b, first, i64(w))
        accs = k_loop(b, plan.depth, rows, nv, w, _score_step(ctx, i0, rows, col, nv))
        for r in range(rows):
            for v in range(nv):
                at = add_nuw(b, col, i64(r * lay.keys_padded + v * w))
                b.store(accs[r][v], gep(b, ctx.pp, at), align=4)

    vectors = lay.keys_padded // w
    _blocks(ctx, vectors, vectors, block)


def _softmax_row(ctx: _Ctx, g: ir.Value, i0: ir.Value, r: ir.Value) -> None:
    b, plan, lay = ctx.b, ctx.plan, ctx.lay
    w, vectors = lay.width, lay.keys_padded // lay.width
    row = gep(b, ctx.pp, mul_nuw(b, r, i64(lay.keys_padded)))
    prefix = _row_index(ctx, g, add_nuw(b, i0, r))
    tail = plan.keys % w

    def scored(col: ir.Value | int, x: ir.Value) -> ir.Value:
        return _scored(ctx, prefix, col, x, tail if isinstance(col, int) else w)

    top = _fold_row(ctx, row, vectors, scored, "max", tail)
    top_v = splat(b, top, w)
    total = _fold_row(ctx, row, vectors, lambda _, x: mathlib.softmax_exp(b, x, top_v), "add")
    total_v = splat(b, total, w)
    if plan.divide:
        _map_row(ctx, row, vectors, lambda x: b.fdiv(x, total_v))
    else:
        inverse = splat(b, b.fdiv(ir.Constant(F32, 1.0), total), w)
        _map_row(ctx, row, vectors, lambda x: b.fmul(x, inverse))


RowFn = Callable[[ir.Value | int, ir.Value], ir.Value]


def _fold_row(ctx: _Ctx, row: ir.Value, vectors: int, f: RowFn, op: str, tail: int = 0) -> ir.Value:
    """Replace each vector x of a score row (at column col) by ``f(col, x)`` and fold those by
    ``op`` ("max" from -inf, "add" from 0) lanewise, then across the lanes. With a ``tail``,
    the last vector is done apart, its column an int (only its first ``tail`` lanes are
    keys)."""
    b, w = ctx.b, ctx.lay.width
    slot = entry_alloca(b, ctx.vec, "fold")
    b.store(splat(b, ir.Constant(F32, -math.inf if op == "max" else 0.0), w), slot)

    def one(col: ir.Value | int) -> None:
        at = i64(col) if isinstance(col, int) else col
        y = f(col, _load_vec(b, row, at, w))
        b.store(y, gep(b, row, at), align=4)
        b.store(_combine(b, op, b.load(slot, typ=ctx.vec), y), slot)

    with for_range(b, vectors - (1 if tail else 0), "j") as j:
        one(mul_nuw(b, j, i64(w)))
    if tail:
        one((vectors - 1) * w)
    return _across(b, op, b.load(slot, typ=ctx.vec))


def _across(b: ir.IRBuilder, op: str, vec: ir.Value) -> ir.Value:
    """The lanes of ``vec`` folded by ``op``, halves at a time."""
    n = vec.type.count
    while n > 1:
        n //= 2
        lo = b.shuffle_vector(vec, vec, _lanes_of(list(range(n))))
        hi = b.shuffle_vector(vec, vec, _lanes_of(list(range(n, 2 * n))))
        vec = _combine(b, op, lo, hi)
    return b.extract_element(vec, i64(0))


def _combine(b: ir.IRBuilder, op: str, acc: ir.Value, x: ir.Value) -> ir.Value:
    if op == "max":  # a nan is passed over (vmaxps); it makes its row's sum nan all the same
        return b.select(b.fcmp_ordered(">", x, acc), x, acc)
    return b.fadd(acc, x)


def _map_row(ctx: _Ctx, row: ir.Value, vectors: int, f: Callable[[ir.Value], ir.Value]) -> None:
    b, w = ctx.b, ctx.lay.width
    with for_range(b, vectors, "j") as j:
        at = mul_nuw(b, j, i64(w))
        b.store(f(_load_vec(b, row, at, w)), gep(b, row, at), align=4)


def _row_index(ctx: _Ctx, g: ir.Value, i: ir.Value) -> list[ir.Value]:
    """The index of score row (g, i) in the softmax input's shape, less its last dimension
    (row-major: the row is number g * S + i)."""
    b = ctx.b
    flat = add_nuw(b, mul_nuw(b, g, i64(ctx.plan.rows)), i)
    dims = ctx.plan.scores.array_shape.dims[:-1]
    index: list[ir.Value] = []
    for size in reversed(dims):
        index.append(b.urem(flat, i64(size)) if size > 1 else i64(0))
        flat = b.udiv(flat, i64(size)) if size > 1 else flat
    return index[::-1]


def _scored(
    ctx: _Ctx, prefix: list[ir.Value], col: ir.Value | int, x: ir.Value, lanes: int
) -> ir.Value:
    """The softmax input at columns col.. of a score row (index ``prefix``) from the scores
    ``x``: the fusion's elementwise ops on the first ``lanes`` lanes, -inf past T."""
    b, w = ctx.b, ctx.lay.width
    at = i64(col) if isinstance(col, int) else col
    value = ctx.scores(b, resize(b, x, lanes), [*prefix, at])
    if lanes == w:
        return value
    ninf = ir.Constant(value.type, [-math.inf] * lanes)
    return b.shuffle_vector(value, ninf, _lanes_of([min(k, lanes) for k in range(w)]))


def _values(ctx: _Ctx, g: ir.Value, i0: ir.Value, rows: int) -> None:
    """The panel's output: score rows times Vp, stored through the output term."""
    b, plan, lay = ctx.b, ctx.plan, ctx.lay
    w = lay.width
    out = ctx.plan.out
    base = _base(ctx, out, g)

    def block(first: ir.Value, nv: int, known: int | None) -> None:
        col = mul_nuw(b, first, i64(w))

        def step(b: ir.IRBuilder, t: ir.Value) -> tuple[list[ir.Value], list[ir.Value]]:
            a = [_load(b, ctx.pp, add_nuw(b, t, i64(r * lay.keys_padded))) for r in range(rows)]
            vbase = add_nuw(b, mul_nuw(b, t, i64(lay.width_padded)), col)
            return a, [_load_vec(b, ctx.vp, add_nuw(b, vbase, i64(v * w)), w) for v in range(nv)]

        accs = k_loop(b, plan.keys, rows, nv, w, step)
        for r in range(rows):
            i = add_nuw(b, i0, i64(r))
            for v in range(nv):
                lanes = w if known is None else min(w, plan.width - (known + v) * w)
                _store_out(ctx, base, i, add_nuw(b, col, i64(v * w)), accs[r][v], lanes)

    _blocks(ctx, lay.width_padded // w, plan.width // w, block)


def _store_out(
    ctx: _Ctx, base: ir.Value, i: ir.Value, col: ir.Value, value: ir.Value, lanes: int
) -> None:
    """Store the first ``lanes`` lanes of ``value``: columns col.. of output row i."""
    b, out = ctx.b, ctx.plan.out
    row = gep(b, base, mul_nuw(b, i, i64(out.row_stride)))
    if out.col_stride == 1:
        b.store(resize(b, value, lanes), gep(b, row, col), align=4)
        return
    for lane in range(lanes):
        at = mul_nuw(b, add_nuw(b, col, i64(lane)), i64(out.col_stride))
        b.store(b.extract_element(value, i64(lane)), gep(b, row, at))


def _load(b: ir.IRBuilder, base: ir.Value, at: ir.Value) -> ir.Value:
    return b.load(gep(b, base, at), typ=F32)


def _load_vec(b: ir.IRBuilder, base: ir.Value, at: ir.Value, w: int) -> ir.Value:
    return b.load(gep(b, base, at), typ=ir.VectorType(F32, w), align=4)
