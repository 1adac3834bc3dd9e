"""The HLO IR: modules of computations of instructions, with XLA's opcodes and attributes.

Instructions are mutable objects compared by identity (passes rewire operands in place); the
per-opcode attributes are small frozen dataclasses, so two instructions are structurally equal
when opcode, shape, operands, attributes and literal agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from aotc.hlo.shape import AnyShape, Shape, TupleShape


class Opcode(Enum):
    """XLA opcodes; the value is the spelling in HLO text."""

    # leaves
    PARAMETER = "parameter"
    CONSTANT = "constant"
    IOTA = "iota"
    # elementwise unary
    ABS = "abs"
    CEIL = "ceil"
    CONVERT = "convert"
    COPY = "copy"
    COSINE = "cosine"
    ERF = "erf"
    EXP = "exponential"
    EXPM1 = "exponential-minus-one"
    FLOOR = "floor"
    IS_FINITE = "is-finite"
    LOG = "log"
    LOG1P = "log-plus-one"
    LOGISTIC = "logistic"
    NEGATE = "negate"
    NOT = "not"
    ROUND_AFZ = "round-nearest-afz"
    ROUND_EVEN = "round-nearest-even"
    RSQRT = "rsqrt"
    SIGN = "sign"
    SINE = "sine"
    SQRT = "sqrt"
    TANH = "tanh"
    # elementwise binary
    ADD = "add"
    AND = "and"
    ATAN2 = "atan2"
    COMPARE = "compare"
    DIVIDE = "divide"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    MULTIPLY = "multiply"
    OR = "or"
    POWER = "power"
    REMAINDER = "remainder"
    SUBTRACT = "subtract"
    XOR = "xor"
    # elementwise ternary
    CLAMP = "clamp"
    SELECT = "select"
    # data movement
    BITCAST = "bitcast"
    BROADCAST = "broadcast"
    CONCATENATE = "concatenate"
    GATHER = "gather"
    PAD = "pad"
    RESHAPE = "reshape"
    REVERSE = "reverse"
    SLICE = "slice"
    TRANSPOSE = "transpose"
    # contractions and reductions
    CONVOLUTION = "convolution"
    DOT = "dot"
    REDUCE = "reduce"
    REDUCE_WINDOW = "reduce-window"
    # structure
    FUSION = "fusion"
    GET_TUPLE_ELEMENT = "get-tuple-element"
    TUPLE = "tuple"


UNARY_ELEMENTWISE = frozenset({
    Opcode.ABS, Opcode.CEIL, Opcode.CONVERT, Opcode.COPY, Opcode.COSINE, Opcode.ERF, Opcode.EXP,
    Opcode.EXPM1, Opcode.FLOOR, Opcode.IS_FINITE, Opcode.LOG, Opcode.LOG1P, Opcode.LOGISTIC,
    Opcode.NEGATE, Opcode.NOT, Opcode.ROUND_AFZ, Opcode.ROUND_EVEN, Opcode.RSQRT, Opcode.SIGN,
    Opcode.SINE, Opcode.SQRT, Opcode.TANH,
})  # fmt: skip
BINARY_ELEMENTWISE = frozenset({
    Opcode.ADD, Opcode.AND, Opcode.ATAN2, Opcode.COMPARE, Opcode.DIVIDE, Opcode.MAXIMUM,
    Opcode.MINIMUM, Opcode.MULTIPLY, Opcode.OR, Opcode.POWER, Opcode.REMAINDER, Opcode.SUBTRACT,
    Opcode.XOR,
})  # fmt: skip
TERNARY_ELEMENTWISE = frozenset({Opcode.CLAMP, Opcode.SELECT})
ELEMENTWISE = UNARY_ELEMENTWISE | BINARY_ELEMENTWISE | TERNARY_ELEMENTWISE


class ComparisonDirection(Enum):
    EQ = "EQ"
    NE = "NE"
    LT = "LT"
    LE = "LE"
    GT = "GT"
    GE = "GE"


# ---- per-opcode attributes -------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterAttrs:
    number: int


@dataclass(frozen=True)
class Dimensions:
    """``dimensions={...}`` of broadcast, transpose, reduce, reverse and concatenate."""

    dimensions: tuple[int, ...]


@dataclass(frozen=True)
class IotaAttrs:
    iota_dimension: int


@dataclass(frozen=True)
class TupleIndex:
    index: int


@dataclass(frozen=True)
class CompareAttrs:
    direction: ComparisonDirection


@dataclass(frozen=True)
class SliceAttrs:
    starts: tuple[int, ...]
    limits: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass(frozen=True)
class PadDim:
    low: int
    high: int
    interior: int = 0


@dataclass(frozen=True)
class PadAttrs:
    dims: tuple[PadDim, ...]


@dataclass(frozen=True)
class DotDims:
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    lhs_dilation: int = 1  # "base dilation" for reduce-window
    rhs_dilation: int = 1  # "window dilation"


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...]


@dataclass(frozen=True)
class ConvDims:
    """Convolution dimension numbers, XLA's ``dim_labels=b01f_01io->b01f``."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclass(frozen=True)
class ConvAttrs:
    window: Window
    dims: ConvDims
    feature_group_count: int = 1
    batch_group_count: int = 1


@dataclass(frozen=True)
class ReduceWindowAttrs:
    window: Window


@dataclass(frozen=True)
class GatherAttrs:
    """XLA's ``GatherDimensionNumbers`` plus ``slice_sizes``.

    Each index vector of ``indices`` (along ``index_vector_dim``; equal to the indices' rank
    means an implicit trailing dimension of size 1) gives the start, in the operand dims
    ``start_index_map``, of a slice of ``slice_sizes``. The output holds the indices' other
    dims (batch dims) and, at ``offset_dims``, the slice dims not in ``collapsed_slice_dims``
    or ``operand_batching_dims``. Operand batching dim ``operand_batching_dims[i]`` is indexed
    by the output's batch dim that comes from indices dim ``start_indices_batching_dims[i]``.
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    index_vector_dim: int
    slice_sizes: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


@dataclass(frozen=True)
class FusionAttrs:
    kind: str  # kLoop, kInput, kOutput


Attrs = (
    ParameterAttrs
    | Dimensions
    | IotaAttrs
    | TupleIndex
    | CompareAttrs
    | SliceAttrs
    | PadAttrs
    | DotDims
    | ConvAttrs
    | ReduceWindowAttrs
    | GatherAttrs
    | FusionAttrs
    | None
)


# ---- instructions, computations, modules -----------------------------------------------------


@dataclass(eq=False)
class Instruction:
    """One HLO instruction. ``called`` holds ``to_apply`` / ``calls`` computations."""

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


def _visit_post_order(start: Instruction, seen: set[int], order: list[Instruction]) -> None:
    # Iterative DFS: real graphs are deeper than Python's recursion limit.
    stack: list[tuple[Instruction, int]] = [(start, 0)]
    while stack:
        inst, next_operand = stack.pop()
        if next_operand == 0 and id(inst) in seen:
            continue
        if next_operand < len(inst.operands):
            stack.append((inst, next_operand + 1))
            operand = inst.operands[next_operand]
            if id(operand) not in seen:
                stack.append((operand, 0))
            continue
        seen.add(id(inst))
        order.append(inst)


def parameter_number(inst: Instruction) -> int:
    assert isinstance(inst.attrs, ParameterAttrs)
    return inst.attrs.number


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
        seen: set[int] = set()

        def visit(comp: Computation) -> None:
            for inst in comp.instructions:
                for callee in inst.called:
                    if id(callee) not in seen:
                        seen.add(id(callee))
                        visit(callee)
                        order.append(callee)

        visit(self.entry)
        return order
