"""The HLO IR: modules of computations of instructions, with XLA's opcodes and attributes.

Instructions are mutable objects compared by identity (passes rewire operands in place); the
per-opcode attributes are small frozen dataclasses, so two instructions are structurally equal
when opcode, shape, operands, attributes and literal agree.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from aotc.hlo.attrs import (
    Attributes,
    Attrs,
    CompareAttrs,
    ComparisonDirection,
    ComparisonType,
    ConvAttrs,
    ConvDims,
    Dimensions,
    DotDims,
    DynamicSliceAttrs,
    FftAttrs,
    FftType,
    FusionAttrs,
    FusionKind,
    GatherAttrs,
    IotaAttrs,
    PadAttrs,
    PadDim,
    ParameterAttrs,
    RandomAlgorithm,
    ReducePrecisionAttrs,
    ReduceWindowAttrs,
    RngBitGeneratorAttrs,
    ScatterAttrs,
    SliceAttrs,
    SortAttrs,
    TopKAttrs,
    TupleIndex,
    WhileAttrs,
    Window,
    WindowDim,
)
from aotc.hlo.opcodes import (
    BINARY_ELEMENTWISE,
    CONTROL_FLOW,
    ELEMENTWISE,
    TERNARY_ELEMENTWISE,
    UNARY_ELEMENTWISE,
    Opcode,
)
from aotc.hlo.shape import AnyShape, Shape, TupleShape

# The IR's vocabulary, importable from here (defined in attrs.py and opcodes.py).
__all__ = [
    "BINARY_ELEMENTWISE",
    "CONTROL_FLOW",
    "ELEMENTWISE",
    "TERNARY_ELEMENTWISE",
    "UNARY_ELEMENTWISE",
    "Attrs",
    "CompareAttrs",
    "ComparisonDirection",
    "ComparisonType",
    "Computation",
    "ConvAttrs",
    "ConvDims",
    "Dimensions",
    "DotDims",
    "DynamicSliceAttrs",
    "FftAttrs",
    "FftType",
    "FusionAttrs",
    "FusionKind",
    "GatherAttrs",
    "Instruction",
    "IotaAttrs",
    "ReducePrecisionAttrs",
    "Module",
    "Opcode",
    "PadAttrs",
    "PadDim",
    "ParameterAttrs",
    "ReduceWindowAttrs",
    "ScatterAttrs",
    "SliceAttrs",
    "SortAttrs",
    "TopKAttrs",
    "RandomAlgorithm",
    "RngBitGeneratorAttrs",
    "TupleIndex",
    "WhileAttrs",
    "Window",
    "WindowDim",
    "parameter_number",
    "post_order_within",
]

_A = TypeVar("_A", bound=Attributes)


# ---- instructions, computations, modules -----------------------------------------------------


@dataclass(eq=False)
class Instruction:
    """One HLO instruction. ``called`` holds the computations it calls, in the order of the
    attribute names in ``opcode.info.called`` (``to_apply``; ``condition``, ``body``), or of
    the list ``opcode.info.called_list`` names (a conditional's branches)."""

    name: str
    opcode: Opcode
    shape: AnyShape
    operands: list[Instruction] = field(default_factory=list)
    attrs: Attrs = None
    literal: np.ndarray | None = None
    called: list[Computation] = field(default_factory=list)

    @property
    def array_shape(self) -> Shape:
        """The shape, for instructions known to produce an array (not a tuple)."""
        assert isinstance(self.shape, Shape), f"{self.name} has a tuple shape"
        return self.shape

    @property
    def is_tuple(self) -> bool:
        return isinstance(self.shape, TupleShape)

    def attrs_as(self, kind: type[_A]) -> _A:
        """The attributes, typed as ``kind``; a TypeError (a bug in aotc) if they are not."""
        if not isinstance(self.attrs, kind):
            raise TypeError(
                f"{self.opcode.value} %{self.name} has attributes "
                f"{self.attrs!r}, not {kind.__name__}"
            )
        return self.attrs

    def __repr__(self) -> str:
        return f"<{self.shape} {self.opcode.value} %{self.name}>"


class Computation:
    """A named DAG of instructions with one root; parameters are numbered from 0."""

    def __init__(self, name: str, instructions: Iterable[Instruction], root: Instruction):
        self.name = name
        self.instructions = list(instructions)
        self.root = root

    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode is Opcode.PARAMETER]
        return sorted(params, key=lambda p: parameter_number(p))

    def post_order(self) -> list[Instruction]:
        """Operands before users; parameters always included, unreachable code dropped."""
        seen: set[int] = set()
        order: list[Instruction] = []
        roots = [*self.parameters, self.root]
        for start in roots:
            _visit_post_order(start, seen, order)
        return order

    def users(self) -> dict[int, list[Instruction]]:
        """Map id(instruction) -> instructions using it (in instruction order)."""
        result: dict[int, list[Instruction]] = {id(i): [] for i in self.instructions}
        for inst in self.instructions:
            for op in dict.fromkeys(inst.operands):
                result.setdefault(id(op), []).append(inst)
        return result

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)


def post_order_within(root: Instruction, members: Collection[Instruction]) -> list[Instruction]:
    """The ``members`` reachable from ``root`` through members, operands before users.

    The walk never leaves the members, so it costs their size, not the size of the graph
    below them (the fusion pass orders each candidate group with it).
    """
    ids = {id(m) for m in members}
    order: list[Instruction] = []
    _visit_post_order(root, set(), order, ids)
    return order


def _visit_post_order(
    start: Instruction,
    seen: set[int],
    order: list[Instruction],
    within: set[int] | None = None,
) -> None:
    # Iterative DFS: real graphs are deeper than Python's recursion limit.
    stack: list[tuple[Instruction, int]] = [(start, 0)]
    while stack:
        inst, next_operand = stack.pop()
        if next_operand == 0 and id(inst) in seen:
            continue
        if next_operand < len(inst.operands):
            stack.append((inst, next_operand + 1))
            operand = inst.operands[next_operand]
            if id(operand) not in seen and (within is None or id(operand) in within):
                stack.append((operand, 0))
            continue
        seen.add(id(inst))
        order.append(inst)


def parameter_number(inst: Instruction) -> int:
    return inst.attrs_as(ParameterAttrs).number


def is_width_changing_bitcast(inst: Instruction) -> bool:
    """A ``bitcast-convert`` whose element types differ in size (it adds or drops a dim)."""
    if inst.opcode is not Opcode.BITCAST_CONVERT:
        return False
    return inst.operands[0].array_shape.dtype.byte_size != inst.array_shape.dtype.byte_size


class Module:
    """An HLO module: the entry computation plus the computations it calls."""

    def __init__(self, name: str, entry: Computation, computations: Iterable[Computation] = ()):
        self.name = name
        self.entry = entry
        self.computations = [c for c in computations if c is not entry] + [entry]

    def add_computation(self, comp: Computation) -> Computation:
        self.computations.insert(len(self.computations) - 1, comp)
        return comp

    def called_computations(self) -> list[Computation]:
        """Every non-entry computation reachable from the entry, callees before callers."""
        order: list[Computation] = []
        seen: set[int] = {id(self.entry)}
        stack: list[tuple[Computation, Iterator[Computation]]] = [
            (self.entry, _callees(self.entry))
        ]
        while stack:  # iterative: loops nest computations arbitrarily deep
            comp, callees = stack[-1]
            callee = next((c for c in callees if id(c) not in seen), None)
            if callee is None:
                stack.pop()
                if stack:
                    order.append(comp)
                continue
            seen.add(id(callee))
            stack.append((callee, _callees(callee)))
        return order

    def sequential_computations(self) -> list[Computation]:
        """The entry, then every computation control flow runs (loop conditions and bodies,
        branches, calls): those whose instructions run one after another, each its own kernel.
        Fused computations and reducers are embedded in one instruction's kernel instead
        (XLA's call contexts: kControlFlow and kEmbedded)."""
        order, seen, pending = [], {id(self.entry)}, [self.entry]
        while pending:
            comp = pending.pop()
            order.append(comp)
            for inst in comp.instructions:
                if inst.opcode in CONTROL_FLOW:
                    fresh = [c for c in inst.called if id(c) not in seen]
                    seen.update(id(c) for c in fresh)
                    pending.extend(reversed(fresh))
        return order


def _callees(comp: Computation) -> Iterator[Computation]:
    return (callee for inst in comp.instructions for callee in inst.called)
