"""The sort and topk kernels: per row, positions are ordered in scratch, then gathered.

A row is every element of the sorted dimension at one index of the others. The kernel orders
the row's positions (i32, in the shared scratch) and then writes each output element from the
operand element at its position, so the operands are read in place and moved only once.

* ``sort``: insertion sort of runs of ``RUN`` positions, then bottom-up merge passes between
  the two halves of the scratch. Both are stable: an element moves before another only when
  the comparator (``to_apply``, inlined on register values) says it is less. The merge is
  branch-free (clamped reads, a select), so it costs no mispredicted branches.
* ``topk``: for a small ``k`` (``SELECT_MAX``), one pass over the row keeps the positions of
  the k best seen so far in order (an insertion into a list of k: O(n k), no full sort); for a
  larger k the row is sorted as above and the first k taken. Elements compare in XLA's total
  order (floats: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN); ties keep the lower index
  first, as ``lax.top_k`` and TF's ``TopKV2`` do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from llvmlite import ir

from aotc.codegen.irtypes import I32, I64, add_nuw, i64, store_element
from aotc.codegen.kernels.base import ElementGenerator, KernelIO
from aotc.codegen.kernels.elemental import emit_scalar_computation
from aotc.codegen.kernels.scalar_ops import total_order_key
from aotc.codegen.loops import entry_alloca, for_range, loop_nest
from aotc.codegen.vector import VectorInfo
from aotc.errors import CodegenError
from aotc.hlo.ir import Instruction, SortAttrs, TopKAttrs
from aotc.hlo.memory import output_shapes
from aotc.hlo.shape import Shape

#: Positions sorted by insertion before the merges start (and the largest row sorted so).
RUN = 16
#: The largest k that topk finds by selection; above it, the row is sorted.
SELECT_MAX = 32
#: The longest row the kernels sort: positions are i32 (as topk's indices are).
MAX_ROW = 2**31 - 1

#: ``less(b, i, j)``: whether the row's element at position ``i`` goes before the one at ``j``.
Less = Callable[[ir.IRBuilder, ir.Value, ir.Value], ir.Value]


def sort_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """Two arrays of i32 positions of a row (the merge passes go between them)."""
    shape = output_shapes(inst)[0]
    return 8 * shape.dims[inst.attrs_as(SortAttrs).dimension]


def topk_scratch_bytes(inst: Instruction, info: VectorInfo) -> int:
    """The k best positions, or two arrays of a row's positions when the row is sorted."""
    k, n = inst.attrs_as(TopKAttrs).k, inst.operands[0].array_shape.dims[-1]
    return 4 * k if k <= SELECT_MAX else 8 * n


def emit_sort_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    dim, shapes = inst.attrs_as(SortAttrs).dimension, output_shapes(inst)
    n = shapes[0].dims[dim]
    if shapes[0].size == 0:
        return
    with _rows(b, shapes[0].dims, dim) as at:
        less = _comparator_less(io, at)
        order = _sorted_positions(b, io.scratch, n, less)
        with for_range(b, n, "k") as k:
            src = _load_position(b, order, k)
            for value, out, shape in zip(io.operands, io.outputs, shapes, strict=True):
                store_element(b, value(b, at(src)), out, shape, at(k))


def emit_topk_kernel(b: ir.IRBuilder, io: KernelIO) -> None:
    inst = io.inst
    attrs, x = inst.attrs_as(TopKAttrs), inst.operands[0].array_shape
    values, indices = output_shapes(inst)
    n, k = x.dims[-1], attrs.k
    if values.size == 0:
        return
    with _rows(b, x.dims, x.rank - 1) as at:
        better = _better(io.operands[0], at, attrs.largest, x)
        if k <= SELECT_MAX:
            order = _select_best(b, io.scratch, n, k, better)
        else:
            order = _sorted_positions(b, io.scratch, n, better)
        with for_range(b, k, "j") as j:
            src = _load_position(b, order, j)
            store_element(b, io.operands[0](b, at(src)), io.outputs[0], values, at(j))
            store_element(b, b.trunc(src, I32), io.outputs[1], indices, at(j))


@contextmanager
def _rows(
    b: ir.IRBuilder, dims: Sequence[int], dim: int
) -> Iterator[Callable[[ir.Value], list[ir.Value]]]:
    """Loop over the rows along ``dim``; yields ``at(p)``, the index of position ``p``."""
    outer = [n for d, n in enumerate(dims) if d != dim]
    with loop_nest(b, outer, "row") as row:
        yield lambda p: [*row[:dim], p, *row[dim:]]


def _comparator_less(io: KernelIO, at: Callable[[ir.Value], list[ir.Value]]) -> Less:
    comp = io.inst.called[0]

    def less(b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        args = [value(b, at(p)) for value in io.operands for p in (i, j)]
        return emit_scalar_computation(b, comp, args)[0]

    return less


def _better(
    value: ElementGenerator, at: Callable[[ir.Value], list[ir.Value]], largest: bool, x: Shape
) -> Less:
    """Strictly larger (smaller) in XLA's total order: ties keep the earlier position first."""
    op = ">" if largest else "<"

    def key(b: ir.IRBuilder, p: ir.Value) -> ir.Value:
        element = value(b, at(p))
        return total_order_key(b, element) if x.dtype.is_float else element

    def better(b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        compare = b.icmp_signed if x.dtype.is_float or x.dtype.is_signed_int else b.icmp_unsigned
        return compare(op, key(b, i), key(b, j))

    return better


# ---- position arrays ---------------------------------------------------------------------------


def _position_array(b: ir.IRBuilder, scratch: ir.Value | None, offset: int) -> ir.Value:
    assert scratch is not None
    return b.gep(scratch, [i64(offset)], inbounds=True, source_etype=I32)


def _load_position(b: ir.IRBuilder, array: ir.Value, k: ir.Value) -> ir.Value:
    ptr = b.gep(array, [k], inbounds=True, source_etype=I32)
    return b.zext(b.load(ptr, typ=I32, align=4), I64)


def _store_position(b: ir.IRBuilder, position: ir.Value, array: ir.Value, k: ir.Value) -> None:
    ptr = b.gep(array, [k], inbounds=True, source_etype=I32)
    b.store(b.trunc(position, I32) if position.type == I64 else position, ptr, align=4)


@contextmanager
def _while(b: ir.IRBuilder, test: Callable[[ir.IRBuilder], ir.Value], name: str) -> Iterator[None]:
    """``while (test()) { body }``; the body is what the ``with`` block emits."""
    cond = b.append_basic_block(f"{name}.cond")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(cond)
    b.position_at_end(cond)
    b.cbranch(test(b), body, end)
    b.position_at_end(body)
    yield
    b.branch(cond)
    b.position_at_end(end)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


# ---- sorting -----------------------------------------------------------------------------------


def _sorted_positions(b: ir.IRBuilder, scratch: ir.Value | None, n: int, less: Less) -> ir.Value:
    """Sort the positions 0..n-1 of a row stably by ``less``; returns the array holding them."""
    if n > MAX_ROW:
        raise CodegenError(f"sorting rows of {n} elements: positions are i32, at most {MAX_ROW}")
    first, second = _position_array(b, scratch, 0), _position_array(b, scratch, n)
    with for_range(b, n, "p") as p:
        _store_position(b, p, first, p)
    with for_range(b, -(-n // RUN), "run") as run:
        lo = b.mul(run, i64(RUN))
        hi = _min(b, add_nuw(b, lo, i64(RUN)), i64(n))
        with for_range(b, b.sub(hi, lo), "ins") as offset:
            i = add_nuw(b, lo, offset)
            _shift_in(b, first, lo, i, _load_position(b, first, i), less)
    passes = max(n - 1, 0).bit_length() - (RUN - 1).bit_length()  # widths RUN, 2 RUN, ... < n
    if passes > 0:
        _merge_passes(b, first, second, n, less)
    return second if passes > 0 and passes % 2 else first


def _shift_in(
    b: ir.IRBuilder, array: ir.Value, lo: ir.Value, start: ir.Value, x: ir.Value, less: Less
) -> None:
    """Insert position ``x`` into the sorted ``array[lo:start]`` (``array[start]`` is free):
    the positions whose elements ``x`` is less than shift one right. Stable: ``x`` stays after
    the ones it is not less than."""
    j = entry_alloca(b, I64, "shift.j")
    b.store(start, j)

    def shifts(b: ir.IRBuilder) -> ir.Value:
        at = b.load(j, typ=I64)
        inside = b.icmp_signed(">", at, lo)
        before = b.select(inside, b.sub(at, i64(1)), lo)  # clamped: read in bounds
        return b.and_(inside, less(b, x, _load_position(b, array, before)))

    with _while(b, shifts, "shift"):
        at = b.load(j, typ=I64)
        previous = b.sub(at, i64(1))
        _store_position(b, _load_position(b, array, previous), array, at)
        b.store(previous, j)
    _store_position(b, x, array, b.load(j, typ=I64))


def _merge_passes(b: ir.IRBuilder, first: ir.Value, second: ir.Value, n: int, less: Less) -> None:
    """Merge runs of ``RUN``, 2 ``RUN``, ... from one array into the other until one run is
    left (a loop over the widths: one copy of the inlined comparator, whatever n is)."""
    width = entry_alloca(b, I64, "merge.width")
    source, target = (
        entry_alloca(b, first.type, "merge.src"),
        entry_alloca(b, first.type, "merge.dst"),
    )
    b.store(i64(RUN), width)
    b.store(first, source)
    b.store(second, target)
    with _while(b, lambda b: b.icmp_signed("<", b.load(width, typ=I64), i64(n)), "merge.pass"):
        w = b.load(width, typ=I64)
        src, dst = b.load(source, typ=first.type), b.load(target, typ=first.type)
        pair = b.shl(w, i64(1))
        with for_range(b, b.udiv(b.add(i64(n - 1), pair), pair), "merge.pair") as k:
            lo = b.mul(k, pair)
            mid, hi = _min(b, b.add(lo, w), i64(n)), _min(b, b.add(lo, pair), i64(n))
            _merge(b, src, dst, (lo, mid, hi), n, less)
        b.store(pair, width)
        b.store(dst, source)
        b.store(src, target)


def _merge(
    b: ir.IRBuilder,
    src: ir.Value,
    dst: ir.Value,
    bounds: tuple[ir.Value, ir.Value, ir.Value],
    n: int,
    less: Less,
) -> None:
    """``dst[lo:hi]`` = the stable merge of ``src[lo:mid]`` and ``src[mid:hi]``."""
    lo, mid, hi = bounds
    left, right = entry_alloca(b, I64, "merge.i"), entry_alloca(b, I64, "merge.j")
    b.store(lo, left)
    b.store(mid, right)
    with for_range(b, b.sub(hi, lo), "merge.k") as offset:
        i, j = b.load(left, typ=I64), b.load(right, typ=I64)
        last = i64(n - 1)
        a = _load_position(b, src, _min(b, i, last))
        c = _load_position(b, src, _min(b, j, last))
        right_first = b.and_(
            b.icmp_signed("<", j, hi), b.or_(b.icmp_signed(">=", i, mid), less(b, c, a))
        )
        _store_position(b, b.select(right_first, c, a), dst, add_nuw(b, lo, offset))
        b.store(b.select(right_first, i, add_nuw(b, i, i64(1))), left)
        b.store(b.select(right_first, add_nuw(b, j, i64(1)), j), right)


# ---- selecting ---------------------------------------------------------------------------------


def _select_best(
    b: ir.IRBuilder, scratch: ir.Value | None, n: int, k: int, better: Less
) -> ir.Value:
    """The positions of the ``k`` best elements of a row, best first, in one pass: each
    element better than the k-th kept so far is inserted in order, the k-th dropped."""
    best = _position_array(b, scratch, 0)
    with for_range(b, k, "best") as j:
        _store_position(b, i64(0), best, j)  # never read before written; keeps reads in bounds
    count = entry_alloca(b, I64, "best.count")
    b.store(i64(0), count)
    with for_range(b, n, "x") as x:
        kept = b.load(count, typ=I64)
        full = b.icmp_signed(">=", kept, i64(k))
        admit = b.or_(b.not_(full), better(b, x, _load_position(b, best, i64(k - 1))))
        with b.if_then(admit):
            b.store(b.select(full, kept, add_nuw(b, kept, i64(1))), count)
            _shift_in(b, best, i64(0), b.select(full, i64(k - 1), kept), x, better)
    return best
