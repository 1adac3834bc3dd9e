"""The per-opcode attribute classes, each printing and parsing its own HLO text.

An attribute class is a small frozen dataclass. ``to_text()`` gives the ``key=value`` items
XLA prints after the operands, in XLA's order and omitting what XLA omits; the classmethod
``from_text(reader)`` reads them back through an ``AttrReader`` (the parser's view of one
instruction's raw attributes), so the parser needs no per-opcode code. Value decoders raise
``ValueError`` on bad text; the reader turns that into an error at the value's position.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:  # the plan is an analysis over instructions (it imports this module)
    from aotc.hlo.fusion_plan import FusionPlan

T = TypeVar("T")


class AttrReader(Protocol):
    """One instruction's ``key=value`` attributes as the parser found them."""

    def need(self, key: str, decode: Callable[[str], T]) -> T:
        """``decode`` of the value of ``key``; an error naming the instruction if absent."""
        ...

    def opt(self, key: str, decode: Callable[[str], T], default: T) -> T:
        """``decode`` of the value of ``key``, or ``default`` if absent."""
        ...


# ---- value spellings (text -> value raises ValueError) ---------------------------------------


def _fullmatch(pattern: str, text: str, what: str) -> re.Match[str]:
    match = re.fullmatch(pattern, text)
    if match is None:
        raise ValueError(f"expected {what}")
    return match


def int_value(text: str) -> int:
    return int(_fullmatch(r"-?\d+", text, "an integer")[0])


def int_list(text: str) -> tuple[int, ...]:
    _fullmatch(r"\{\s*(-?\d+\s*(,\s*-?\d+\s*)*)?\}", text, "{n,n,...}")
    return tuple(int(v) for v in re.findall(r"-?\d+", text))


def int_list_text(values: Sequence[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


# ---- attribute classes -----------------------------------------------------------------------


@dataclass(frozen=True)
class ParameterAttrs:
    """A parameter's number; XLA prints it as the operand text, ``parameter(0)``."""

    number: int

    def to_text(self) -> list[str]:
        return []

    @classmethod
    def from_text(cls, a: AttrReader) -> ParameterAttrs:
        return cls(a.need(PARAMETER_NUMBER, int_value))


#: The key under which the parser hands a parameter's ``(n)`` to ``ParameterAttrs``.
PARAMETER_NUMBER = "parameter_number"


@dataclass(frozen=True)
class Dimensions:
    """``dimensions={...}`` of broadcast, transpose, reduce, reverse and concatenate."""

    dimensions: tuple[int, ...]

    def to_text(self) -> list[str]:
        return [f"dimensions={int_list_text(self.dimensions)}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> Dimensions:
        return cls(a.need("dimensions", int_list))


@dataclass(frozen=True)
class IotaAttrs:
    iota_dimension: int

    def to_text(self) -> list[str]:
        return [f"iota_dimension={self.iota_dimension}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> IotaAttrs:
        return cls(a.need("iota_dimension", int_value))


@dataclass(frozen=True)
class TupleIndex:
    index: int

    def to_text(self) -> list[str]:
        return [f"index={self.index}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> TupleIndex:
        return cls(a.need("index", int_value))


@dataclass(frozen=True)
class ReducePrecisionAttrs:
    """The float format ``reduce-precision`` rounds to: exponent and mantissa bit counts."""

    exponent_bits: int
    mantissa_bits: int

    def to_text(self) -> list[str]:
        return [f"exponent_bits={self.exponent_bits}", f"mantissa_bits={self.mantissa_bits}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> ReducePrecisionAttrs:
        return cls(a.need("exponent_bits", int_value), a.need("mantissa_bits", int_value))


class RandomAlgorithm(Enum):
    """XLA's ``RandomAlgorithm``: ``rng_default`` is the backend's choice (Philox on CPU)."""

    DEFAULT = "rng_default"
    PHILOX = "rng_philox"
    THREE_FRY = "rng_three_fry"


@dataclass(frozen=True)
class RngBitGeneratorAttrs:
    """``algorithm=``: the generator ``rng-bit-generator`` runs (``rng_bits.py`` has how)."""

    algorithm: RandomAlgorithm = RandomAlgorithm.DEFAULT

    def to_text(self) -> list[str]:
        return [f"algorithm={self.algorithm.value}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> RngBitGeneratorAttrs:
        return cls(a.opt("algorithm", RandomAlgorithm, RandomAlgorithm.DEFAULT))

    @property
    def philox(self) -> bool:
        """Whether it runs Philox (``rng_default`` does, as XLA's CPU backend picks)."""
        return self.algorithm is not RandomAlgorithm.THREE_FRY


class ComparisonDirection(Enum):
    EQ = "EQ"
    NE = "NE"
    LT = "LT"
    LE = "LE"
    GT = "GT"
    GE = "GE"


class ComparisonType(Enum):
    """XLA's comparison types; ``None`` on ``CompareAttrs`` is the element type's default
    (``FLOAT`` for floats, ``SIGNED``/``UNSIGNED`` for integers), which XLA does not print.
    ``TOTALORDER`` orders floats -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""

    FLOAT = "FLOAT"
    TOTALORDER = "TOTALORDER"
    SIGNED = "SIGNED"
    UNSIGNED = "UNSIGNED"


@dataclass(frozen=True)
class CompareAttrs:
    direction: ComparisonDirection
    type: ComparisonType | None = None

    def to_text(self) -> list[str]:
        typed = [] if self.type is None else [f"type={self.type.value}"]
        return [f"direction={self.direction.value}", *typed]

    @classmethod
    def from_text(cls, a: AttrReader) -> CompareAttrs:
        return cls(a.need("direction", ComparisonDirection), a.opt("type", ComparisonType, None))


_BOUND = r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]"


@dataclass(frozen=True)
class SliceAttrs:
    starts: tuple[int, ...]
    limits: tuple[int, ...]
    strides: tuple[int, ...]

    def to_text(self) -> list[str]:
        spans = zip(self.starts, self.limits, self.strides, strict=False)  # print even if bad
        bounds = (f"[{s}:{lim}{'' if st == 1 else f':{st}'}]" for s, lim, st in spans)
        return [f"slice={{{', '.join(bounds)}}}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> SliceAttrs:
        return a.need("slice", cls.parse)

    @classmethod
    def parse(cls, text: str) -> SliceAttrs:
        """``{[0:2], [1:7:2]}``."""
        body = _fullmatch(r"\{(.*)\}", text, "{[start:limit:stride], ...}")[1]
        parts = [p.strip() for p in body.split(",")] if body.strip() else []
        triples = [
            _fullmatch(_BOUND, p, "[start:limit] or [start:limit:stride]").groups() for p in parts
        ]
        return cls(
            tuple(int(a) for a, _, _ in triples),
            tuple(int(b) for _, b, _ in triples),
            tuple(int(c or 1) for _, _, c in triples),
        )


@dataclass(frozen=True)
class PadDim:
    low: int
    high: int
    interior: int = 0


@dataclass(frozen=True)
class PadAttrs:
    dims: tuple[PadDim, ...]

    def to_text(self) -> list[str]:
        # XLA's low_high[_interior] per dimension joined by x; interior for all or none.
        interior = any(d.interior for d in self.dims)
        dims = (f"{d.low}_{d.high}" + (f"_{d.interior}" if interior else "") for d in self.dims)
        return [f"padding={'x'.join(dims)}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> PadAttrs:
        return a.need("padding", cls.parse)

    @classmethod
    def parse(cls, text: str) -> PadAttrs:
        dims = []
        for part in text.split("x") if text else []:
            match = _fullmatch(r"(-?\d+)_(-?\d+)(?:_(-?\d+))?", part, "low_high[_interior]x...")
            dims.append(PadDim(int(match[1]), int(match[2]), int(match[3] or 0)))
        return cls(tuple(dims))


@dataclass(frozen=True)
class DotDims:
    lhs_contracting: tuple[int, ...]
    rhs_contracting: tuple[int, ...]
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()

    def to_text(self) -> list[str]:
        # XLA omits empty batch dimensions but always prints the contracting ones.
        fields = [
            ("lhs_batch_dims", self.lhs_batch, False),
            ("lhs_contracting_dims", self.lhs_contracting, True),
            ("rhs_batch_dims", self.rhs_batch, False),
            ("rhs_contracting_dims", self.rhs_contracting, True),
        ]
        return [f"{key}={int_list_text(dims)}" for key, dims, always in fields if dims or always]

    @classmethod
    def from_text(cls, a: AttrReader) -> DotDims:
        return cls(
            a.opt("lhs_contracting_dims", int_list, ()),
            a.opt("rhs_contracting_dims", int_list, ()),
            a.opt("lhs_batch_dims", int_list, ()),
            a.opt("rhs_batch_dims", int_list, ()),
        )


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    pad_low: int = 0
    pad_high: int = 0
    lhs_dilation: int = 1  # "base dilation" for reduce-window
    rhs_dilation: int = 1  # "window dilation"


# XLA's window fields: how each prints per dimension, and its all-default spelling.
_WINDOW_FIELDS: tuple[tuple[str, Callable[[WindowDim], str], str | None], ...] = (
    ("size", lambda d: str(d.size), None),
    ("stride", lambda d: str(d.stride), "1"),
    ("pad", lambda d: f"{d.pad_low}_{d.pad_high}", "0_0"),
    ("lhs_dilate", lambda d: str(d.lhs_dilation), "1"),
    ("rhs_dilate", lambda d: str(d.rhs_dilation), "1"),
)
_WINDOW_KEYS: dict[str, tuple[str, ...]] = {
    "size": ("size",),
    "stride": ("stride",),
    "pad": ("pad_low", "pad_high"),
    "lhs_dilate": ("lhs_dilation",),
    "rhs_dilate": ("rhs_dilation",),
}


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...]

    def to_text(self) -> list[str]:
        """``window={...}``, omitted for a window of rank 0."""
        return [f"window={{{self._fields_text()}}}"] if self.dims else []

    def _fields_text(self) -> str:
        """``size=3x3 stride=2x2 ...``: a field is printed only when a dimension is not default."""
        fields = []
        for key, get, default in _WINDOW_FIELDS:
            values = [get(d) for d in self.dims]
            if any(v != default for v in values):
                fields.append(f"{key}={'x'.join(values)}")
        return " ".join(fields)

    @classmethod
    def from_text(cls, a: AttrReader) -> Window:
        return a.opt("window", cls.parse, cls(()))

    @classmethod
    def parse(cls, text: str) -> Window:
        body = _fullmatch(r"\{(.*)\}", text, "{size=... stride=...}")[1]
        fields: dict[str, list[int]] = {}
        for item in body.split():
            _read_window_field(item, fields)
        return cls._from_fields(fields)

    @classmethod
    def _from_fields(cls, fields: dict[str, list[int]]) -> Window:
        if "size" not in fields:
            raise ValueError("a window needs size=")
        rank = len(fields["size"])
        if any(len(values) != rank for values in fields.values()):
            raise ValueError("window fields have different numbers of dimensions")
        dims = [WindowDim(**{k: values[i] for k, values in fields.items()}) for i in range(rank)]
        return cls(tuple(dims))


def _read_window_field(item: str, fields: dict[str, list[int]]) -> None:
    """Add ``pad=0_1x1_1`` to ``fields`` as ``pad_low: [0, 1], pad_high: [1, 1]``."""
    key, _, value = item.partition("=")
    if key == "rhs_reversal" and set(value.split("x")) <= {"0"}:
        return
    if key not in _WINDOW_KEYS:
        raise ValueError(f"window field '{key}' is unsupported")
    names = _WINDOW_KEYS[key]
    for dim in value.split("x"):
        numbers = dim.split("_")
        if len(numbers) != len(names) or not all(re.fullmatch(r"-?\d+", n) for n in numbers):
            raise ValueError(f"bad window field {item}")
        for name, number in zip(names, numbers, strict=True):
            fields.setdefault(name, []).append(int(number))


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

    def labels_text(self) -> str:
        """XLA's ``dim_labels``, e.g. ``b01f_01io->b01f``."""
        lhs = _labels({self.input_batch: "b", self.input_feature: "f"}, self.input_spatial)
        kernel = {self.kernel_input_feature: "i", self.kernel_output_feature: "o"}
        rhs = _labels(kernel, self.kernel_spatial)
        out = _labels({self.output_batch: "b", self.output_feature: "f"}, self.output_spatial)
        return f"{lhs}_{rhs}->{out}"

    @classmethod
    def parse(cls, text: str) -> ConvDims:
        match = _fullmatch(r"([0-9bf]+)_([0-9io]+)->([0-9bf]+)", text, "e.g. b01f_01io->b01f")
        groups = ((1, "bf"), (2, "io"), (3, "bf"))
        lhs, rhs, out = (_label_positions(match[i], named) for i, named in groups)
        return cls(
            lhs["b"],
            lhs["f"],
            lhs["spatial"],
            rhs["i"],
            rhs["o"],
            rhs["spatial"],
            out["b"],
            out["f"],
            out["spatial"],
        )


def _labels(named: dict[int, str], spatial: Sequence[int]) -> str:
    chars = ["?"] * (max([*named, *spatial], default=-1) + 1)
    for dim, char in named.items():
        chars[dim] = char
    for index, dim in enumerate(spatial):
        chars[dim] = str(index)
    return "".join(chars)


def _label_positions(labels: str, named: str) -> dict[str, Any]:
    """``b01f`` -> {"b": 0, "f": 3, "spatial": (1, 2)}."""
    letters = sorted(c for c in labels if not c.isdigit())
    spatial = sorted((int(c), dim) for dim, c in enumerate(labels) if c.isdigit())
    if letters != sorted(named) or [i for i, _ in spatial] != list(range(len(spatial))):
        raise ValueError(f"'{labels}' needs one each of {', '.join(named)} and digits 0..n-1")
    return {c: labels.index(c) for c in named} | {"spatial": tuple(d for _, d in spatial)}


@dataclass(frozen=True)
class ConvAttrs:
    window: Window
    dims: ConvDims
    feature_group_count: int = 1
    batch_group_count: int = 1

    def to_text(self) -> list[str]:
        texts = [*self.window.to_text(), f"dim_labels={self.dims.labels_text()}"]
        if self.feature_group_count != 1:
            texts.append(f"feature_group_count={self.feature_group_count}")
        if self.batch_group_count != 1:
            texts.append(f"batch_group_count={self.batch_group_count}")
        return texts

    @classmethod
    def from_text(cls, a: AttrReader) -> ConvAttrs:
        return cls(
            Window.from_text(a),
            a.need("dim_labels", ConvDims.parse),
            a.opt("feature_group_count", int_value, 1),
            a.opt("batch_group_count", int_value, 1),
        )


@dataclass(frozen=True)
class ReduceWindowAttrs:
    window: Window

    def to_text(self) -> list[str]:
        return self.window.to_text()

    @classmethod
    def from_text(cls, a: AttrReader) -> ReduceWindowAttrs:
        return cls(Window.from_text(a))


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

    def to_text(self) -> list[str]:
        lists = [
            ("offset_dims", self.offset_dims),
            ("collapsed_slice_dims", self.collapsed_slice_dims),
            ("start_index_map", self.start_index_map),
        ]
        if self.operand_batching_dims:  # XLA prints the batching dims only when there are some
            lists += [
                ("operand_batching_dims", self.operand_batching_dims),
                ("start_indices_batching_dims", self.start_indices_batching_dims),
            ]
        return [
            *(f"{key}={int_list_text(dims)}" for key, dims in lists),
            f"index_vector_dim={self.index_vector_dim}",
            f"slice_sizes={int_list_text(self.slice_sizes)}",
        ]

    @classmethod
    def from_text(cls, a: AttrReader) -> GatherAttrs:
        return cls(
            a.opt("offset_dims", int_list, ()),
            a.opt("collapsed_slice_dims", int_list, ()),
            a.opt("start_index_map", int_list, ()),
            a.need("index_vector_dim", int_value),
            a.need("slice_sizes", int_list),
            a.opt("operand_batching_dims", int_list, ()),
            a.opt("start_indices_batching_dims", int_list, ()),
        )


def bool_value(text: str) -> bool:
    return _fullmatch(r"true|false", text, "true or false")[0] == "true"


@dataclass(frozen=True)
class SortAttrs:
    """``dimensions={d}`` (the one dimension sorted along) and ``is_stable``, which XLA prints
    only when true."""

    dimension: int
    is_stable: bool = False

    def to_text(self) -> list[str]:
        stable = ["is_stable=true"] if self.is_stable else []
        return [f"dimensions={{{self.dimension}}}", *stable]

    @classmethod
    def from_text(cls, a: AttrReader) -> SortAttrs:
        return cls(a.need("dimensions", _one_int), a.opt("is_stable", bool_value, False))


def _one_int(text: str) -> int:
    values = int_list(text)
    if len(values) != 1:
        raise ValueError("expected exactly one dimension, {d}")
    return values[0]


@dataclass(frozen=True)
class TopKAttrs:
    """XLA's ``topk``: the ``k`` largest (or smallest) along the last dimension."""

    k: int
    largest: bool = True

    def to_text(self) -> list[str]:
        return [f"k={self.k}", f"largest={'true' if self.largest else 'false'}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> TopKAttrs:
        return cls(a.need("k", int_value), a.opt("largest", bool_value, True))


class FftType(Enum):
    """XLA's ``fft_type``: complex forward and inverse, real to complex (the ``n // 2 + 1``
    non-negative frequencies of the last dimension) and back (``fft_length`` gives ``n``)."""

    FFT = "FFT"
    IFFT = "IFFT"
    RFFT = "RFFT"
    IRFFT = "IRFFT"


@dataclass(frozen=True)
class FftAttrs:
    """XLA's ``fft``: the transform of the last ``len(fft_length)`` dimensions."""

    fft_type: FftType
    fft_length: tuple[int, ...]

    def to_text(self) -> list[str]:
        return [f"fft_type={self.fft_type.value}", f"fft_length={int_list_text(self.fft_length)}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> FftAttrs:
        return cls(a.need("fft_type", FftType), a.need("fft_length", int_list))


@dataclass(frozen=True)
class ScatterAttrs:
    """XLA's ``ScatterDimensionNumbers`` and its hints.

    Each index vector of the scatter indices (along ``index_vector_dim``; equal to their rank
    means an implicit trailing dimension of size 1) gives the start, in the operand dims
    ``scatter_dims_to_operand_dims``, of one update window: the updates' dims
    ``update_window_dims``, placed in the operand dims that are neither
    ``inserted_window_dims`` nor ``input_batching_dims`` (those have size 1 in the window).
    The updates' other dims are the indices' dims but the index vector's. Operand batching
    dim ``input_batching_dims[i]`` is indexed like the indices' dim
    ``scatter_indices_batching_dims[i]``. ``indices_are_sorted`` and ``unique_indices`` are
    hints that never change the result aotc computes.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()
    indices_are_sorted: bool = False
    unique_indices: bool = False

    def to_text(self) -> list[str]:
        lists = [
            ("update_window_dims", self.update_window_dims),
            ("inserted_window_dims", self.inserted_window_dims),
            ("scatter_dims_to_operand_dims", self.scatter_dims_to_operand_dims),
        ]
        if self.input_batching_dims:  # XLA prints the batching dims only when there are some
            lists += [
                ("input_batching_dims", self.input_batching_dims),
                ("scatter_indices_batching_dims", self.scatter_indices_batching_dims),
            ]
        hints = [("indices_are_sorted", self.indices_are_sorted)]
        hints.append(("unique_indices", self.unique_indices))
        return [
            *(f"{key}={int_list_text(dims)}" for key, dims in lists),
            f"index_vector_dim={self.index_vector_dim}",
            *(f"{key}=true" for key, on in hints if on),
        ]

    @classmethod
    def from_text(cls, a: AttrReader) -> ScatterAttrs:
        return cls(
            a.opt("update_window_dims", int_list, ()),
            a.opt("inserted_window_dims", int_list, ()),
            a.opt("scatter_dims_to_operand_dims", int_list, ()),
            a.need("index_vector_dim", int_value),
            a.opt("input_batching_dims", int_list, ()),
            a.opt("scatter_indices_batching_dims", int_list, ()),
            a.opt("indices_are_sorted", bool_value, False),
            a.opt("unique_indices", bool_value, False),
        )


class FusionKind(Enum):
    """XLA's fusion kinds, as the fused emitter compiles them (``aotc/hlo/fusion_plan.py``)."""

    LOOP = "kLoop"  # elementwise and data movement, one loop nest over the root
    INPUT = "kInput"  # rooted at a reduce, or rows of reduces (softmax, layer norm)
    OUTPUT = "kOutput"  # a dot or convolution with its elementwise epilogue
    # XLA's custom fusions (a library call on its CPU backend): the computation says what it
    # computes; aotc plans it like any other, or the call inliner inlines it.
    CUSTOM = "kCustom"


@dataclass(frozen=True)
class DynamicSliceAttrs:
    """``dynamic_slice_sizes={...}``: the size of the slice in every operand dimension."""

    sizes: tuple[int, ...]

    def to_text(self) -> list[str]:
        return [f"dynamic_slice_sizes={int_list_text(self.sizes)}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> DynamicSliceAttrs:
        return cls(a.need("dynamic_slice_sizes", int_list))


@dataclass(frozen=True)
class WhileAttrs:
    """What is known about a loop: ``known_trip_count`` when a pass proved it (XLA records it
    in the loop's ``backend_config``, and so does the printer); it never changes semantics."""

    known_trip_count: int | None = None

    def to_text(self) -> list[str]:
        if self.known_trip_count is None:
            return []
        config = {"known_trip_count": {"n": str(self.known_trip_count)}}
        return ["backend_config=" + json.dumps(config, separators=(",", ":"))]

    @classmethod
    def from_text(cls, a: AttrReader) -> WhileAttrs:
        return cls(a.opt("backend_config", _trip_count_of_config, None))


def _trip_count_of_config(text: str) -> int | None:
    """``known_trip_count.n`` of a loop's backend config, if it has one (other backends'
    configs hold other things: those are not aotc's to check)."""
    try:
        count = json.loads(text)["known_trip_count"]["n"]
        return int(count) if int(count) >= 0 else None
    except (ValueError, TypeError, KeyError):
        return None


@dataclass(frozen=True)
class FusionAttrs:
    """A fusion's kind, and the plan codegen follows (the fusion pass records it; the parser
    derives it from the fused computation). The plan refers to instructions of the fused
    computation, which passes therefore leave alone; it is neither printed nor compared."""

    kind: FusionKind
    plan: FusionPlan | None = field(default=None, compare=False, repr=False)

    def to_text(self) -> list[str]:
        return [f"kind={self.kind.value}"]

    @classmethod
    def from_text(cls, a: AttrReader) -> FusionAttrs:
        return cls(a.need("kind", FusionKind))


#: Every attribute class (what ``OpcodeInfo.attrs`` names).
Attributes = (
    ParameterAttrs
    | Dimensions
    | IotaAttrs
    | TupleIndex
    | ReducePrecisionAttrs
    | RngBitGeneratorAttrs
    | CompareAttrs
    | SliceAttrs
    | PadAttrs
    | DotDims
    | ConvAttrs
    | ReduceWindowAttrs
    | GatherAttrs
    | SortAttrs
    | TopKAttrs
    | FftAttrs
    | ScatterAttrs
    | DynamicSliceAttrs
    | WhileAttrs
    | FusionAttrs
)

#: An instruction's attributes: None for opcodes that take none.
Attrs = Attributes | None
