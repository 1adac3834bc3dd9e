"""Attention in one kernel: which fused computations are ``softmax(f(Q K^T)) V``.

``plan_attention`` accepts a fused computation (made by ``aotc/passes/attention.py``, or read
from HLO text) whose root is data movement of ``dot(P, V)`` (or JAX's ``dot(V, P)``); ``P``
is reshapes of a softmax over the last dimension of ``x = f(s)``, ``s`` reshapes of
``dot(Q, K)`` and ``f`` any elementwise ops of it and of parameters (a scale, a mask added,
Keras' ``select(mask, s, -big)``; the kernel computes them with the fused emitter's vector
generators, in the fusion's own order). ``Q``, ``K`` and ``V`` are parameters moved by
reshapes, transposes, slices and broadcasts, plus other such terms (a bias added per head):
each is a sum of strided *terms* over (batch, row, column), so the kernel
(``aotc/codegen/kernels/attention.py``) reads the heads where the Q/K/V GEMM left them and
writes its rows where the output projection reads them, with no transpose kernels between.
The softmax is ``exp(x - max) * (1 / sum)`` or ``exp(x - max) / sum``, as the evaluator
computes it; each (batch, head) is computed whole by one thread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from aotc.hlo.ir import Computation, Dimensions, DotDims, Instruction, Opcode, SliceAttrs
from aotc.hlo.ir import parameter_number as _number
from aotc.hlo.opcodes import DATA_MOVEMENT, ELEMENTWISE
from aotc.hlo.shape import PrimitiveType
from aotc.hlo.views import Atom, View

#: Data movement a term may pass through (``add`` joins terms).
MOVES = frozenset((Opcode.RESHAPE, Opcode.BITCAST, Opcode.COPY, Opcode.TRANSPOSE, Opcode.SLICE,
                   Opcode.BROADCAST))  # fmt: skip
#: Data movement that keeps every element (the output and P chains).
BIJECTIONS = frozenset((Opcode.RESHAPE, Opcode.BITCAST, Opcode.COPY, Opcode.TRANSPOSE))
#: What the scores' elementwise ops may read besides the score dot: elemental ops (the
#: fused emitter's vector generators compute them), at most this many.
_ELEMENTAL = ELEMENTWISE | DATA_MOVEMENT | {Opcode.IOTA, Opcode.CONSTANT, Opcode.PARAMETER}
_MAX_SCORE_OPS = 64
#: At most this many terms per operand (a bias or two); sums of more are left to other kernels.
MAX_TERMS = 4
#: The kernel keeps one head (Q, K, V and a panel of score rows) in scratch: up to 4 MiB.
MAX_HEAD_FLOATS = 1 << 20


@dataclass(frozen=True)
class Term:
    """One addend of an operand: parameter ``param`` (the output's buffer: -1) at element
    ``offset + batch part of g + row * row_stride + col * col_stride``; ``batch`` holds the
    atoms of the flattened batch index g, outer first."""

    param: int
    offset: int
    batch: tuple[Atom, ...]
    row_stride: int
    col_stride: int


@dataclass(frozen=True)
class AttentionPlan:
    """``out[g, i, e] = sum_t softmax_t(x[g, i, t]) v[g, t, e]``, x computed by the fused
    computation's elementwise ops (a scale, a mask added or selected) from ``s[g, i, t] =
    sum_d q[g, i, d] k[g, t, d]``; each of q [g, i, d], k [g, t, d], v [g, t, e] a sum of
    terms."""

    batch: int
    rows: int
    keys: int
    depth: int
    width: int
    q: tuple[Term, ...]
    k: tuple[Term, ...]
    v: tuple[Term, ...]
    out: Term
    divide: bool  # exp / sum rather than exp * (1 / sum)
    dots: tuple[Instruction, Instruction]
    scores: Instruction  # the softmax's input x, elementwise in the read of the score dot
    score_read: Instruction  # (reshapes of) the score dot in x's shape, as x's ops read it

    def named(self) -> tuple[Instruction, ...]:
        return (*self.dots, self.scores, self.score_read)

    def remapped(self, copies: Mapping[int, Instruction]) -> AttentionPlan:
        dots = (copies[id(self.dots[0])], copies[id(self.dots[1])])
        return replace(self, dots=dots, scores=copies[id(self.scores)],
                       score_read=copies[id(self.score_read)])  # fmt: skip


def plan_attention(comp: Computation) -> AttentionPlan | None:
    """The attention plan of ``comp``, or None when it is not one (see the module docstring)."""
    dot2, out = _output_chain(comp.root)
    if dot2 is None or out is None or not _f32(dot2):
        return None
    for side in (0, 1):  # P is the value dot's lhs (TF), or its rhs (JAX: dot(V, P))
        parts = _softmax(_below(dot2.operands[side], BIJECTIONS - {Opcode.TRANSPOSE}))
        read = None if parts is None else _score_read(parts[0])
        if parts is not None and read is not None:
            return _assemble(read, parts[0], dot2, side, out, parts[1])
    return None


def _assemble(
    read: Instruction, x: Instruction, dot2: Instruction, side: int, out: View, divide: bool
) -> AttentionPlan | None:
    dot1 = _below(read, BIJECTIONS - {Opcode.TRANSPOSE})
    if not _f32(dot1) or x.array_shape.dims[-1] != dot1.array_shape.dims[-1]:
        return None
    dims1, dims2 = dot1.attrs_as(DotDims), dot2.attrs_as(DotDims)
    s_dims = dot1.array_shape.dims
    nb = len(dims1.lhs_batch)
    p_batch, v_batch = (dims2.lhs_batch, dims2.rhs_batch)[:: 1 - 2 * side]
    p_contracting, v_contracting = (dims2.lhs_contracting, dims2.rhs_contracting)[:: 1 - 2 * side]
    if p_batch != tuple(range(nb)) or p_contracting != (nb + 1,):
        return None
    if tuple(dot2.operands[side].array_shape.dims) != tuple(s_dims):
        return None
    q = _operand(dot1.operands[0], dims1.lhs_batch, dims1.lhs_contracting)
    k = _operand(dot1.operands[1], dims1.rhs_batch, dims1.rhs_contracting)
    v = _operand(dot2.operands[1 - side], v_batch, v_contracting, swap=True)
    row, col = (
        (nb, nb + 1) if side == 0 else (nb + 1, nb)
    )  # dot2's output: (batch, i, e) or (batch, e, i)
    out_term = _flat(-1, out, tuple(range(nb)), row, col)
    if q is None or k is None or v is None or out_term is None:
        return None
    batch, rows, keys = math.prod(s_dims[:nb]), s_dims[nb], s_dims[nb + 1]
    depth = dot1.operands[0].array_shape.dims[dims1.lhs_contracting[0]]
    width = dot2.array_shape.dims[col]
    head = rows * depth + depth * keys + keys * width + 8 * keys
    if min(batch, rows, keys, depth, width) == 0 or head > MAX_HEAD_FLOATS:
        return None
    return AttentionPlan(batch, rows, keys, depth, width, q, k, v, out_term, divide,
                         (dot1, dot2), x, read)  # fmt: skip


def _f32(inst: Instruction) -> bool:
    return not inst.is_tuple and inst.array_shape.dtype is PrimitiveType.F32


def _below(inst: Instruction, through: frozenset[Opcode]) -> Instruction:
    """``inst`` with the unary ops of ``through`` on top of it peeled off."""
    while inst.opcode in through and _f32(inst) and _f32(inst.operands[0]):
        inst = inst.operands[0]
    return inst


# ---- the output: data movement of dot(P, V) -----------------------------------------------------


def _output_chain(root: Instruction) -> tuple[Instruction | None, View | None]:
    """The dot under the root's data movement and the view of the root's buffer in the dot's
    index space."""
    if root.is_tuple:
        return None, None
    view: View | None = View.row_major(root.array_shape.dims)
    inst = root
    while inst.opcode in BIJECTIONS and view is not None and _f32(inst):
        operand = inst.operands[0]
        if inst.opcode is Opcode.TRANSPOSE:
            perm = inst.attrs_as(Dimensions).dimensions
            inverse = [0] * len(perm)
            for k, p in enumerate(perm):
                inverse[p] = k
            view = view.transpose(inverse)
        else:
            view = view.reshape(operand.array_shape.dims)
        inst = operand
    return (inst, view) if inst.opcode is Opcode.DOT else (None, None)


# ---- the softmax and the scores under it ------------------------------------------------------


def _softmax(y: Instruction) -> tuple[Instruction, bool] | None:
    """(x, divide) for ``y = softmax(x)`` over x's last dimension, else None."""
    if y.opcode is Opcode.DIVIDE:
        e, total = y.operands[0], _row_broadcast(y.operands[1])
        divide = True
    elif y.opcode is Opcode.MULTIPLY:
        e, inverse = _exp_first(y.operands)
        inverse = _row_broadcast(inverse)
        ones = inverse.operands[0] if inverse.opcode is Opcode.DIVIDE else None
        if ones is None or _splat(ones) != 1.0:
            return None
        total, divide = inverse.operands[1], False
    else:
        return None
    if e.opcode is not Opcode.EXP or not _row_reduce(total, e, Opcode.ADD, 0.0):
        return None
    if not (_f32(y) and _f32(e)):  # the kernel computes the softmax in f32
        return None
    d = e.operands[0]
    if d.opcode is not Opcode.SUBTRACT:
        return None
    x, top = d.operands[0], _row_broadcast(d.operands[1])
    if top.opcode is Opcode.MAXIMUM:  # JAX: max(reduce_max(x), -inf), the same value
        a, b = top.operands
        top = a if _splat(b) == -math.inf else b if _splat(a) == -math.inf else top
    return (x, divide) if _row_reduce(top, x, Opcode.MAXIMUM, -math.inf) else None


def _exp_first(operands: list[Instruction]) -> tuple[Instruction, Instruction]:
    a, b = operands
    return (a, b) if a.opcode is Opcode.EXP else (b, a)


def _row_broadcast(inst: Instruction) -> Instruction:
    """The row value a ``broadcast(dimensions={0..r-2})`` spreads over its last dimension
    (returned as is when it is no such broadcast: the reduce checks then fail)."""
    if inst.opcode is not Opcode.BROADCAST:
        return inst
    rank = len(inst.array_shape.dims)
    if inst.attrs_as(Dimensions).dimensions != tuple(range(rank - 1)):
        return inst
    return inst.operands[0]


def _row_reduce(inst: Instruction, of: Instruction, opcode: Opcode, init: float) -> bool:
    """Whether ``inst`` folds ``of``'s last dimension by ``opcode`` from ``init``."""
    if inst.opcode is not Opcode.REDUCE or inst.operands[0] is not of or len(inst.operands) != 2:
        return False
    rank = len(of.array_shape.dims)
    if inst.attrs_as(Dimensions).dimensions != (rank - 1,) or _splat(inst.operands[1]) != init:
        return False
    reducer = inst.called[0].root
    params = {_number(p) for p in reducer.operands if p.opcode is Opcode.PARAMETER}
    return reducer.opcode is opcode and params == {0, 1} and len(reducer.operands) == 2


def _splat(inst: Instruction) -> float | None:
    """The one value of a scalar constant (broadcast or not), else None."""
    while inst.opcode is Opcode.BROADCAST:
        inst = inst.operands[0]
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None or inst.literal.size != 1:
        return None
    return float(inst.literal.reshape(-1)[0])


def _score_read(x: Instruction) -> Instruction | None:
    """The one read of the score dot under ``x`` (reshapes of it, in x's shape) when x is
    elementwise in it: every op on a path from x down to it elementwise on x's shape (a
    scale, a mask added, a select of masked positions), the rest elemental ops of parameters
    and constants (a mask broadcast over the heads). None otherwise."""
    dims = x.array_shape.dims
    reads: list[Instruction] = []
    on_path: set[int] = set()
    seen: set[int] = set()
    stack = [(x, False)]
    while stack:
        inst, expanded = stack.pop()
        if id(inst) in seen and not expanded:
            continue
        if _below(inst, BIJECTIONS - {Opcode.TRANSPOSE}).opcode is Opcode.DOT:
            if inst.array_shape.dims != dims or not _f32(inst):
                return None
            seen.add(id(inst))
            reads.append(inst)
            on_path.add(id(inst))
            continue
        if inst.opcode not in _ELEMENTAL or len(seen) > _MAX_SCORE_OPS:
            return None
        if not expanded:
            seen.add(id(inst))
            stack.append((inst, True))
            stack.extend((op, False) for op in inst.operands if id(op) not in seen)
            continue
        if any(id(op) in on_path for op in inst.operands):
            if inst.opcode not in ELEMENTWISE or inst.array_shape.dims != dims:
                return None
            on_path.add(id(inst))
    return reads[0] if len(reads) == 1 and id(x) in on_path else None


# ---- operands as terms ------------------------------------------------------------------------


def _operand(
    inst: Instruction,
    batch: tuple[int, ...],
    contracting: tuple[int, ...],
    swap: bool = False,
) -> tuple[Term, ...] | None:
    """A dot operand's terms over (batch, free, contracting), or (batch, contracting, free)
    with ``swap`` (V: rows are the keys)."""
    rank = len(inst.array_shape.dims)
    free = [d for d in range(rank) if d not in batch and d not in contracting]
    if len(free) != 1 or len(contracting) != 1:
        return None
    row, col = (contracting[0], free[0]) if swap else (free[0], contracting[0])
    terms = _terms(inst)
    if terms is None:
        return None
    flat = [_flat(p, view, batch, row, col) for p, view in terms]
    return tuple(t for t in flat if t is not None) if None not in flat else None


def _flat(param: int, view: View, batch: tuple[int, ...], row: int, col: int) -> Term | None:
    row_stride, col_stride = view.simple(row), view.simple(col)
    if row_stride is None or col_stride is None:
        return None
    atoms = tuple(a for d in batch for a in view.dims[d])
    return Term(param, view.offset, atoms, row_stride, col_stride)


def _terms(top: Instruction) -> list[tuple[int, View]] | None:
    """``top`` as a sum of (parameter, view) terms, or None (an op that is not data movement
    or add, another type, too many terms)."""
    memo: dict[int, list[tuple[int, View]]] = {}
    stack = [top]
    while stack:
        inst = stack[-1]
        if id(inst) in memo:
            stack.pop()
            continue
        if not _f32(inst):
            return None
        if inst.opcode is Opcode.PARAMETER:
            memo[id(inst)] = [(_number(inst), View.row_major(inst.array_shape.dims))]
            continue
        if inst.opcode not in MOVES and inst.opcode is not Opcode.ADD:
            return None
        missing = [op for op in inst.operands if id(op) not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        terms = []
        for op in inst.operands:
            for p, view in memo[id(op)]:
                moved = view if inst.opcode is Opcode.ADD else _moved(inst, view)
                if moved is None:
                    return None
                terms.append((p, moved))
        if len(terms) > MAX_TERMS:
            return None
        memo[id(inst)] = terms
    return memo[id(top)]


def _moved(inst: Instruction, view: View) -> View | None:
    dims = inst.array_shape.dims
    if inst.opcode is Opcode.TRANSPOSE:
        return view.transpose(inst.attrs_as(Dimensions).dimensions)
    if inst.opcode is Opcode.BROADCAST:
        return view.broadcast(dims, inst.attrs_as(Dimensions).dimensions)
    if inst.opcode is Opcode.SLICE:
        s = inst.attrs_as(SliceAttrs)
        return view.slice(s.starts, s.limits, s.strides)
    return view.reshape(dims)
