"""The register tile of the GEMM: the micro-kernel's K loop and the tile store.

Accumulators are ``mr * nv`` vectors carried as phi nodes through the K loop, so they live in
registers from the start (no alloca for mem2reg to find). Each K step loads ``nv`` vectors of
packed B, broadcasts ``mr`` scalars of packed A and issues ``mr * nv`` ``llvm.fmuladd`` calls (a
fused FMA where the target has one; plain ``llvm.fma`` would call libm's ``fmaf`` where not).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.irtypes import F32, I64, add_nuw, alloca, call_intrinsic, i64, mul_nuw

# epilogue(builder, values, row, col) -> values: ``values`` holds C[row, col : col + w] (w is
# the vector's lane count, narrower than the target's at the N edge). It runs after the last
# K block and must return a vector of the same type.
Epilogue = Callable[[ir.IRBuilder, ir.Value, ir.Value, ir.Value], ir.Value]


def gep(b: ir.IRBuilder, base: ir.Value, offset: ir.Value | int) -> ir.Value:
    """``base + offset`` floats (``base`` itself for a zero offset)."""
    index = i64(offset) if isinstance(offset, int) else offset
    if isinstance(index, ir.Constant) and index.constant == 0:
        return base
    return b.gep(base, [index], inbounds=True, source_etype=F32)


def offset(b: ir.IRBuilder, *terms: tuple[ir.Value, int] | int) -> ir.Value:
    """Sum of ``value * scale`` terms and integers, as ``i64`` index arithmetic (constant
    terms folded: ``add_nuw``, ``mul_nuw``)."""
    total: ir.Value = i64(sum(t for t in terms if isinstance(t, int)))
    for term in terms:
        if isinstance(term, tuple):
            value, scale = term
            total = add_nuw(b, total, mul_nuw(b, value, i64(scale)))
    return total


def splat(b: ir.IRBuilder, scalar: ir.Value, width: int) -> ir.Value:
    """``scalar`` in every lane of a ``width``-lane f32 vector (a constant one for a
    constant)."""
    vec_ty = ir.VectorType(F32, width)
    if isinstance(scalar, ir.Constant) and isinstance(scalar.constant, (int, float)):
        return ir.Constant(vec_ty, [scalar.constant] * width)
    one = b.insert_element(ir.Constant(vec_ty, None), scalar, i64(0))
    return b.shuffle_vector(
        one,
        ir.Constant(vec_ty, None),
        ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width),
    )


def load_vector(b: ir.IRBuilder, ptr: ir.Value, lanes: int, width: int) -> ir.Value:
    """``lanes`` floats at ``ptr`` as a ``width``-lane vector, zeros past ``lanes``."""
    loaded = b.load(ptr, typ=ir.VectorType(F32, lanes), align=4)
    return loaded if lanes == width else resize(b, loaded, width)


def resize(b: ir.IRBuilder, vec: ir.Value, lanes: int) -> ir.Value:
    """The first ``lanes`` lanes of ``vec``, or ``vec`` padded with zeros to ``lanes``."""
    count = vec.type.count
    if lanes == count:
        return vec
    zeros = ir.Constant(vec.type, [0.0] * count)
    mask = [i if i < count else count for i in range(lanes)]
    return b.shuffle_vector(vec, zeros, ir.Constant(ir.VectorType(ir.IntType(32), lanes), mask))


def fma_step(
    b: ir.IRBuilder,
    accs: list[list[ir.Value]],
    a_scalars: Sequence[ir.Value],
    b_vecs: Sequence[ir.Value],
) -> list[list[ir.Value]]:
    """One rank-1 update of the tile: ``acc[r][v] += a[r] * b[v]``."""
    width = b_vecs[0].type.count
    out = []
    for a_value, row in zip(a_scalars, accs, strict=True):
        a_vec = splat(b, a_value, width)
        out.append(
            [
                call_intrinsic(b, "fmuladd", [a_vec, bv, acc])
                for bv, acc in zip(b_vecs, row, strict=True)
            ]
        )
    return out


StepFn = Callable[[ir.IRBuilder, ir.Value], tuple[Sequence[ir.Value], Sequence[ir.Value]]]


def k_loop(
    b: ir.IRBuilder,
    trip: int,
    rows: int,
    nv: int,
    width: int,
    step: StepFn,
    init: Sequence[Sequence[ir.Value]] | None = None,
) -> list[list[ir.Value]]:
    """``for k < trip`` with the tile as phi nodes; ``step(b, k)`` gives (a scalars, b vectors).

    The accumulators start from ``init`` (``rows x nv`` vectors), or zero.
    """
    zero = ir.Constant(ir.VectorType(F32, width), [0.0] * width)
    start = init if init is not None else [[zero] * nv for _ in range(rows)]
    pre = b.block
    loop = b.append_basic_block("k.body")
    done = b.append_basic_block("k.end")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I64, "k")
    phis = [[b.phi(zero.type, f"acc{r}_{v}") for v in range(nv)] for r in range(rows)]
    a_scalars, b_vecs = step(b, k)
    accs = fma_step(b, [list(p) for p in phis], a_scalars, b_vecs)
    k_next = add_nuw(b, k, i64(1))
    b.cbranch(b.icmp_unsigned("<", k_next, i64(trip)), loop, done)
    k.add_incoming(i64(0), pre)
    k.add_incoming(k_next, b.block)
    for phi_row, acc_row, start_row in zip(phis, accs, start, strict=True):
        for phi, acc, first in zip(phi_row, acc_row, start_row, strict=True):
            phi.add_incoming(first, pre)
            phi.add_incoming(acc, b.block)
    b.position_at_end(done)
    return accs


def tile_pieces(rows: int, nv: int, width: int, n_eff: int) -> list[tuple[int, int, int]]:
    """(row, vector, lanes) of every stored piece of a ``rows x n_eff`` tile."""
    pieces = []
    for r in range(rows):
        for v in range(nv):
            lanes = min(width, n_eff - v * width)
            if lanes > 0:
                pieces.append((r, v, lanes))
    return pieces


@dataclass(frozen=True)
class TileTarget:
    """Where a tile goes: C at its top-left corner and what to do on the way."""

    c: ir.Value  # ptr to C[row, col]
    ldc: int  # row stride of C in floats (N)
    row: ir.Value  # i64 global row of the tile
    col: ir.Value  # i64 global column of the tile
    first: ir.Value  # i1: the first K block (else add to what C holds)
    last: ir.Value  # i1: the last K block (apply the epilogue)
    epilogue: Epilogue | None
    rolled: bool = False  # apply the epilogue in a loop over the tile's rows (see store_tile)


def store_tile(
    b: ir.IRBuilder,
    accs: list[list[ir.Value]],
    pieces: Sequence[tuple[int, int, int]],
    dst: TileTarget,
) -> None:
    """Store the tile's pieces to C: added to C after the first K block, epilogue on the last.

    A ``rolled`` epilogue (a long one: erf, tanh, exp) runs in a loop over the tile's rows
    on values parked in a stack buffer: straight-line over the whole tile, LLVM interleaves
    the pieces' polynomials and spills most of them (GELU's tile store was 57 instructions a
    vector, 34 of them arithmetic). The buffer, not C, holds them: an in-place epilogue still
    reads its operand before C is written.
    """
    width = accs[0][0].type.count
    values = [resize(b, accs[r][v], lanes) for r, v, lanes in pieces]
    values = _add_existing(b, values, pieces, width, dst)
    if dst.epilogue is None:
        _store_pieces(b, values, pieces, width, dst)
        return
    epilogue = dst.epilogue
    with b.if_else(dst.last) as (then, otherwise):
        with then:
            if dst.rolled:
                _store_rolled(b, values, pieces, width, dst)
            else:
                finals = [
                    epilogue(
                        b, value, add_nuw(b, dst.row, i64(r)), add_nuw(b, dst.col, i64(v * width))
                    )
                    for value, (r, v, _) in zip(values, pieces, strict=True)
                ]
                _store_pieces(b, finals, pieces, width, dst)
        with otherwise:
            _store_pieces(b, values, pieces, width, dst)


def _store_rolled(
    b: ir.IRBuilder,
    values: Sequence[ir.Value],
    pieces: Sequence[tuple[int, int, int]],
    width: int,
    dst: TileTarget,
) -> None:
    """The epilogue applied row by row: the tile parked in a stack buffer, then a loop."""
    assert dst.epilogue is not None
    rows, nv = pieces[-1][0] + 1, pieces[-1][1] + 1
    assert len(pieces) == rows * nv, "the tile's pieces fill its rows"
    lanes = {v: n for _, v, n in pieces}
    entry = b.function.entry_basic_block
    buf = ir.IRBuilder(entry)
    buf.position_at_start(entry)
    park = alloca(buf, ir.ArrayType(F32, rows * nv * width), "tile.park")
    for value, (r, v, _) in zip(values, pieces, strict=True):
        b.store(value, gep(b, park, (r * nv + v) * width), align=4)
    pre = b.block
    loop = b.append_basic_block("epilogue.row")
    done = b.append_basic_block("epilogue.end")
    b.branch(loop)
    b.position_at_end(loop)
    r = b.phi(I64, "r")
    for v in range(nv):
        ty = ir.VectorType(F32, lanes[v])
        at = offset(b, (r, nv * width), v * width)
        value = b.load(gep(b, park, at), typ=ty, align=4)
        final = dst.epilogue(b, value, add_nuw(b, dst.row, r), add_nuw(b, dst.col, i64(v * width)))
        b.store(final, gep(b, dst.c, offset(b, (r, dst.ldc), v * width)), align=4)
    r_next = add_nuw(b, r, i64(1))
    b.cbranch(b.icmp_unsigned("<", r_next, i64(rows)), loop, done)
    r.add_incoming(i64(0), pre)
    r.add_incoming(r_next, b.block)
    b.position_at_end(done)


def _piece_ptr(b: ir.IRBuilder, dst: TileTarget, r: int, v: int, width: int) -> ir.Value:
    return gep(b, dst.c, r * dst.ldc + v * width)


def _add_existing(
    b: ir.IRBuilder,
    values: list[ir.Value],
    pieces: Sequence[tuple[int, int, int]],
    width: int,
    dst: TileTarget,
) -> list[ir.Value]:
    """``values + C`` unless this is the first K block: one branch for the whole tile."""
    if isinstance(dst.first, ir.Constant) and dst.first.constant:
        return values
    start = b.block
    add_block = b.append_basic_block("tile.add")
    join = b.append_basic_block("tile.join")
    b.cbranch(dst.first, join, add_block)
    b.position_at_end(add_block)
    sums = []
    for value, (r, v, _) in zip(values, pieces, strict=True):
        old = b.load(_piece_ptr(b, dst, r, v, width), typ=value.type, align=4)
        sums.append(b.fadd(value, old))
    b.branch(join)
    b.position_at_end(join)
    merged = []
    for value, total in zip(values, sums, strict=True):
        phi = b.phi(value.type)
        phi.add_incoming(value, start)
        phi.add_incoming(total, add_block)
        merged.append(phi)
    return merged


def _store_pieces(
    b: ir.IRBuilder,
    values: Sequence[ir.Value],
    pieces: Sequence[tuple[int, int, int]],
    width: int,
    dst: TileTarget,
) -> None:
    for value, (r, v, _) in zip(values, pieces, strict=True):
        b.store(value, _piece_ptr(b, dst, r, v, width), align=4)
