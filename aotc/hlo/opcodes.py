"""Every fact about an opcode that is not its semantics, in one row per opcode.

As XLA's ``HLO_OPCODE_LIST``: each ``Opcode`` member is its HLO spelling (the enum value) and
an ``OpcodeInfo`` row (``opcode.info``): category, operand count, attribute class, the
attributes that name called computations, and the properties passes ask about. Every other
opcode table (``ELEMENTWISE``, the verifier's arity and attribute checks, the parser's
attribute classes, "expensive" for fusion) is derived from these rows.

Adding an opcode is one row here plus its semantics: a shape rule
(``shape_inference.SHAPE_RULES``), an evaluator (``evaluate.EVALUATORS``), for a called
computation a signature check (``verify.CALL_CHECKS``), and a kernel; ``tests/test_opcodes.py``
fails until each is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from aotc.hlo.attrs import (
    Attributes,
    CompareAttrs,
    ConvAttrs,
    Dimensions,
    DotDims,
    DynamicSliceAttrs,
    FftAttrs,
    FusionAttrs,
    GatherAttrs,
    IotaAttrs,
    PadAttrs,
    ParameterAttrs,
    ReducePrecisionAttrs,
    ReduceWindowAttrs,
    RngBitGeneratorAttrs,
    ScatterAttrs,
    SliceAttrs,
    SortAttrs,
    TopKAttrs,
    TupleIndex,
    WhileAttrs,
)


class Category(Enum):
    """What kind of work an opcode does, as fusion, codegen and the dumps group them."""

    LEAF = "leaf"  # no operands: parameter, constant, iota
    UNARY = "elementwise unary"
    BINARY = "elementwise binary"
    TERNARY = "elementwise ternary"
    DATA_MOVEMENT = "data movement"  # index remapping only
    CONTRACTION = "contraction"  # sums of products over operand dimensions
    REDUCTION = "reduction"  # folds with a called computation
    STRUCTURE = "structure"  # tuples and fusions
    CONTROL = "control flow"  # calls, loops and conditionals: run called computations
    UPDATE = "update"  # writes part of its operand: not elemental (computed in place)
    SORT = "sorting"  # orders (or selects) along a dimension: every output reads a whole row
    TRANSFORM = "transform"  # Fourier transforms: every output reads whole rows
    RANDOM = "random bits"  # a counter-based generator: (new state, bits) of a state


class ElementTypes(Enum):
    """The operand element types an opcode is defined for (XLA's type constraints)."""

    ANY = "any"
    FLOAT = "floating-point"
    REAL_FLOAT = "f32 or f64"  # the parts of a complex number
    INEXACT = "floating-point or complex"
    NOT_FLOAT = "integers or pred"
    INTEGER = "integers"
    NOT_PRED = "not pred"


@dataclass(frozen=True)
class OpcodeInfo:
    """One opcode's row.

    ``arity`` is the number of operands, or the least number when ``variadic``. ``called``
    names the attributes that each name one called computation, in ``Instruction.called``
    order (``to_apply``; ``("condition", "body")`` for a while loop). ``called_list`` names an
    attribute that lists any number of them instead (``branch_computations={a, b, c}``); an
    opcode with both uses the ``called`` keys when its first operand is a pred (XLA's
    conditional: ``true_computation``/``false_computation`` on a pred, a list on an index).
    ``expensive`` work must not be recomputed for every use of one element (fusion never
    duplicates it).
    """

    category: Category
    arity: int
    variadic: bool = False
    attrs: type[Attributes] | None = None
    called: tuple[str, ...] = ()
    called_list: str | None = None
    expensive: bool = False
    commutative: bool = False
    operand_types: ElementTypes = ElementTypes.ANY


_ARITY = {Category.UNARY: 1, Category.BINARY: 2, Category.TERNARY: 3}
ANY, FLOAT, REAL_FLOAT = ElementTypes.ANY, ElementTypes.FLOAT, ElementTypes.REAL_FLOAT
INEXACT = ElementTypes.INEXACT
NOT_FLOAT, NOT_PRED = ElementTypes.NOT_FLOAT, ElementTypes.NOT_PRED
INTEGER = ElementTypes.INTEGER


def _elementwise(
    category: Category,
    types: ElementTypes = ANY,
    *,
    attrs: type[Attributes] | None = None,
    expensive: bool = False,
    commutative: bool = False,
) -> OpcodeInfo:
    return OpcodeInfo(
        category,
        _ARITY[category],
        attrs=attrs,
        expensive=expensive,
        commutative=commutative,
        operand_types=types,
    )


def _unary(types: ElementTypes = ANY, *, expensive: bool = False) -> OpcodeInfo:
    return _elementwise(Category.UNARY, types, expensive=expensive)


def _binary(
    types: ElementTypes = ANY, *, expensive: bool = False, commutative: bool = False
) -> OpcodeInfo:
    return _elementwise(Category.BINARY, types, expensive=expensive, commutative=commutative)


def _reduction(attrs: type[Attributes]) -> OpcodeInfo:
    """N arrays and N init values, folded by the ``to_apply`` computation."""
    return OpcodeInfo(
        Category.REDUCTION, 2, variadic=True, attrs=attrs, called=("to_apply",), expensive=True
    )


_LEAF, _MOVE = Category.LEAF, Category.DATA_MOVEMENT
_CONTRACT, _STRUCT, _CONTROL = Category.CONTRACTION, Category.STRUCTURE, Category.CONTROL


class Opcode(Enum):
    """XLA opcodes; the value is the spelling in HLO text, ``info`` the opcode's row."""

    _value_: str
    info: OpcodeInfo

    def __new__(cls, spelling: str, info: OpcodeInfo) -> Opcode:
        member = object.__new__(cls)
        member._value_ = spelling
        member.info = info
        return member

    # leaves
    PARAMETER = "parameter", OpcodeInfo(_LEAF, 0, attrs=ParameterAttrs)
    CONSTANT = "constant", OpcodeInfo(_LEAF, 0)  # the value is the instruction's literal
    IOTA = "iota", OpcodeInfo(_LEAF, 0, attrs=IotaAttrs)
    # elementwise unary
    ABS = "abs", _unary()
    CEIL = "ceil", _unary(FLOAT)
    CONVERT = "convert", _unary()  # the result's element type is the instruction's
    COPY = "copy", _unary()
    COSINE = "cosine", _unary(FLOAT, expensive=True)
    ERF = "erf", _unary(FLOAT, expensive=True)
    EXP = "exponential", _unary(INEXACT, expensive=True)
    EXPM1 = "exponential-minus-one", _unary(FLOAT, expensive=True)
    FLOOR = "floor", _unary(FLOAT)
    IMAG = "imag", _unary()  # of a complex number (XLA: 0 for a real one)
    IS_FINITE = "is-finite", _unary(FLOAT)
    LOG = "log", _unary(FLOAT, expensive=True)
    LOG1P = "log-plus-one", _unary(FLOAT, expensive=True)
    LOGISTIC = "logistic", _unary(FLOAT, expensive=True)
    NEGATE = "negate", _unary()
    NOT = "not", _unary(NOT_FLOAT)
    REAL = "real", _unary()  # of a complex number (XLA: a real number itself)
    ROUND_AFZ = "round-nearest-afz", _unary(FLOAT)
    ROUND_EVEN = "round-nearest-even", _unary(FLOAT)
    RSQRT = "rsqrt", _unary(FLOAT, expensive=True)
    SIGN = "sign", _unary()
    SINE = "sine", _unary(FLOAT, expensive=True)
    SQRT = "sqrt", _unary(FLOAT, expensive=True)
    TANH = "tanh", _unary(FLOAT, expensive=True)
    # elementwise binary; add, multiply, maximum, minimum act as or / and on pred
    ADD = "add", _binary(commutative=True)
    AND = "and", _binary(NOT_FLOAT, commutative=True)
    ATAN2 = "atan2", _binary(FLOAT, expensive=True)
    COMPARE = "compare", _elementwise(Category.BINARY, attrs=CompareAttrs)
    COMPLEX = "complex", _binary(REAL_FLOAT)  # real and imaginary parts -> c64 / c128
    DIVIDE = "divide", _binary(NOT_PRED, expensive=True)
    MAXIMUM = "maximum", _binary(commutative=True)
    MINIMUM = "minimum", _binary(commutative=True)
    MULTIPLY = "multiply", _binary(commutative=True)
    OR = "or", _binary(NOT_FLOAT, commutative=True)
    POWER = "power", _binary(NOT_PRED, expensive=True)
    REMAINDER = "remainder", _binary(NOT_PRED, expensive=True)
    SUBTRACT = "subtract", _binary(NOT_PRED)
    XOR = "xor", _binary(NOT_FLOAT, commutative=True)
    # bit operations on integers (shift amounts >= the bit width, read as unsigned, give 0,
    # or the sign in every bit for an arithmetic right shift); bitcast-convert reinterprets
    # the bits of an element as the instruction's element type of the same width
    BITCAST_CONVERT = "bitcast-convert", _unary()
    CLZ = "count-leading-zeros", _unary(INTEGER)
    POPCNT = "popcnt", _unary(INTEGER)
    SHIFT_LEFT = "shift-left", _binary(INTEGER)
    SHIFT_RIGHT_ARITHMETIC = "shift-right-arithmetic", _binary(INTEGER)
    SHIFT_RIGHT_LOGICAL = "shift-right-logical", _binary(INTEGER)
    # rounds to a float format of fewer exponent / mantissa bits, staying in the operand's type
    REDUCE_PRECISION = (
        "reduce-precision",
        _elementwise(Category.UNARY, FLOAT, attrs=ReducePrecisionAttrs),
    )
    # elementwise ternary
    CLAMP = "clamp", _elementwise(Category.TERNARY)
    SELECT = "select", _elementwise(Category.TERNARY)
    # data movement
    BITCAST = "bitcast", OpcodeInfo(_MOVE, 1)
    BROADCAST = "broadcast", OpcodeInfo(_MOVE, 1, attrs=Dimensions)
    CONCATENATE = "concatenate", OpcodeInfo(_MOVE, 1, variadic=True, attrs=Dimensions)
    # operand, then one scalar start index per dimension (clamped to keep the slice inside)
    DYNAMIC_SLICE = "dynamic-slice", OpcodeInfo(_MOVE, 1, variadic=True, attrs=DynamicSliceAttrs)
    # operand, update, then one scalar start index per dimension (clamped likewise)
    DYNAMIC_UPDATE_SLICE = "dynamic-update-slice", OpcodeInfo(Category.UPDATE, 2, variadic=True)
    GATHER = "gather", OpcodeInfo(_MOVE, 2, attrs=GatherAttrs)
    PAD = "pad", OpcodeInfo(_MOVE, 2, attrs=PadAttrs)
    RESHAPE = "reshape", OpcodeInfo(_MOVE, 1)
    REVERSE = "reverse", OpcodeInfo(_MOVE, 1, attrs=Dimensions)
    SLICE = "slice", OpcodeInfo(_MOVE, 1, attrs=SliceAttrs)
    TRANSPOSE = "transpose", OpcodeInfo(_MOVE, 1, attrs=Dimensions)
    # contractions and reductions
    CONVOLUTION = "convolution", OpcodeInfo(_CONTRACT, 2, attrs=ConvAttrs, expensive=True)
    DOT = "dot", OpcodeInfo(_CONTRACT, 2, attrs=DotDims, expensive=True)
    REDUCE = "reduce", _reduction(Dimensions)
    REDUCE_WINDOW = "reduce-window", _reduction(ReduceWindowAttrs)
    # sorting, selecting and scattering: a comparator orders N operands along one dimension;
    # topk keeps the k largest (or smallest) of the last dimension, with their indices;
    # scatter folds update windows into N operands (N operands, the indices, N updates)
    SORT = (
        "sort",
        OpcodeInfo(
            Category.SORT, 1, variadic=True, attrs=SortAttrs, called=("to_apply",), expensive=True
        ),
    )
    TOPK = "topk", OpcodeInfo(Category.SORT, 1, attrs=TopKAttrs, expensive=True)
    # the discrete Fourier transform of the last len(fft_length) dimensions
    FFT = "fft", OpcodeInfo(Category.TRANSFORM, 1, attrs=FftAttrs, expensive=True)
    SCATTER = (
        "scatter",
        OpcodeInfo(
            Category.UPDATE,
            3,
            variadic=True,
            attrs=ScatterAttrs,
            called=("to_apply",),
            expensive=True,
        ),
    )
    # random bits: a u64 state (key, counter) -> (the advanced state, bits of an unsigned
    # type); expanded into integer ops before codegen (passes/rng_bit_generator.py)
    RNG_BIT_GENERATOR = (
        "rng-bit-generator",
        OpcodeInfo(Category.RANDOM, 1, attrs=RngBitGeneratorAttrs, expensive=True),
    )
    # structure
    FUSION = "fusion", OpcodeInfo(_STRUCT, 0, variadic=True, attrs=FusionAttrs, called=("calls",))
    GET_TUPLE_ELEMENT = "get-tuple-element", OpcodeInfo(_STRUCT, 1, attrs=TupleIndex)
    TUPLE = "tuple", OpcodeInfo(_STRUCT, 0, variadic=True)
    # control flow
    CALL = "call", OpcodeInfo(_CONTROL, 0, variadic=True, called=("to_apply",))
    # a selector (pred: branch 0 if true, else 1; s32: that branch, out of range the last),
    # then one operand per branch
    CONDITIONAL = (
        "conditional",
        OpcodeInfo(
            _CONTROL,
            2,
            variadic=True,
            called=("true_computation", "false_computation"),
            called_list="branch_computations",
        ),
    )
    # the carry: condition(carry) -> pred[], body(carry) -> carry
    WHILE = "while", OpcodeInfo(_CONTROL, 1, attrs=WhileAttrs, called=("condition", "body"))


def opcodes_in(*categories: Category) -> frozenset[Opcode]:
    """The opcodes of ``categories``."""
    return frozenset(op for op in Opcode if op.info.category in categories)


LEAVES = opcodes_in(Category.LEAF)
UNARY_ELEMENTWISE = opcodes_in(Category.UNARY)
BINARY_ELEMENTWISE = opcodes_in(Category.BINARY)
TERNARY_ELEMENTWISE = opcodes_in(Category.TERNARY)
ELEMENTWISE = opcodes_in(Category.UNARY, Category.BINARY, Category.TERNARY)
#: Index remapping only: computing them per use costs an index computation and a load.
DATA_MOVEMENT = opcodes_in(Category.DATA_MOVEMENT)
#: Opcodes that run their called computations (zero or more times), not code of their own.
CONTROL_FLOW = opcodes_in(Category.CONTROL)
#: The opcodes an output fusion is built around.
CONTRACTIONS = opcodes_in(Category.CONTRACTION)
#: Work that must not be recomputed for one element of its value.
EXPENSIVE = frozenset(op for op in Opcode if op.info.expensive)
#: Operand order does not matter (also for floats: IEEE a + b == b + a).
COMMUTATIVE = frozenset(op for op in Opcode if op.info.commutative)
