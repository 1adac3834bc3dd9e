"""Printer and parser for XLA's HLO text format.

The printer writes what modern XLA writes: no ``%`` sigils, no operand shapes, row-major
layouts, attributes spelled and ordered as XLA spells and orders them. The parser reads that
back, and also what XLA, JAX and TensorFlow dump: ``%`` sigils, operand shapes, tiled layouts,
computation signatures, comments, stack-frame tables, names repeated across computations, and
attributes aotc has no use for (``metadata``, ``sharding``, ``backend_config``, ...), which it
skips with a note, or refuses where they would change the results (``interchange.py``).
Result shapes are taken from the text as written; checking them is the verifier's job.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import numpy as np

from aotc.bfloat16 import is_bfloat16
from aotc.errors import HloError
from aotc.hlo.attrs import PARAMETER_NUMBER
from aotc.hlo.builder import NameUniquer
from aotc.hlo.fusion_plan import plan_fusions
from aotc.hlo.interchange import ForeignAttributes, bitcast_by_layout, parse_layout, unique_names
from aotc.hlo.ir import Attrs, Computation, Instruction, Module, Opcode, parameter_number
from aotc.hlo.shape import AnyShape, PrimitiveType, Shape, TupleShape

T = TypeVar("T")
_Layout = tuple[int, ...] | str | None

#: With ``print_large_constants=False``, constants with more elements print as ``{...}``.
ELIDE_ABOVE = 8


# ==== printing ================================================================================


@dataclass(frozen=True)
class _Style:
    large_constants: bool = True
    operand_shapes: bool = False

    @property
    def sigil(self) -> str:
        return "%" if self.operand_shapes else ""


def print_module(
    module: Module, *, print_large_constants: bool = True, operand_shapes: bool = False
) -> str:
    """The module in XLA's text format; ``operand_shapes`` selects XLA's older, verbose style."""
    style = _Style(print_large_constants, operand_shapes)
    layout = entry_computation_layout(module.entry)
    header = f"HloModule {module.name}, entry_computation_layout={{{layout}}}"
    bodies = [_computation_text(c, style, c is module.entry) for c in _module_order(module)]
    return "\n\n".join([header, *bodies]) + "\n"


def print_computation(
    comp: Computation,
    *,
    print_large_constants: bool = True,
    operand_shapes: bool = False,
    is_entry: bool = False,
) -> str:
    """One computation block, ``name {`` to ``}``, without a trailing newline."""
    return _computation_text(comp, _Style(print_large_constants, operand_shapes), is_entry)


def print_instruction(inst: Instruction, *, operand_shapes: bool = False) -> str:
    """One instruction line (without ``ROOT`` and indentation), for error messages and logs."""
    return _instruction_text(inst, _Style(False, operand_shapes), is_root=False)


def entry_computation_layout(entry: Computation) -> str:
    """XLA's ``(param, ...)->result`` with row-major layouts."""
    params = ",".join(p.shape.with_layout() for p in entry.parameters)
    return f"({params})->{entry.root.shape.with_layout()}"


def _module_order(module: Module) -> list[Computation]:
    # Callees the module's list forgot still get printed, so that the text parses back.
    listed = [c for c in module.computations if c is not module.entry]
    known = {id(c) for c in listed}
    extra = [c for c in module.called_computations() if id(c) not in known]
    return [*listed, *extra, module.entry]


def _computation_text(comp: Computation, style: _Style, is_entry: bool) -> str:
    head = ("ENTRY " if is_entry else "") + style.sigil + comp.name
    if style.operand_shapes:
        head += " " + _signature(comp)
    lines = [f"{head} {{"]
    lines += ["  " + _instruction_text(i, style, i is comp.root) for i in _print_order(comp)]
    return "\n".join([*lines, "}"])


def _signature(comp: Computation) -> str:
    params = ", ".join(f"{p.name}: {p.shape}" for p in comp.parameters)
    return f"({params}) -> {comp.root.shape}"


def _print_order(comp: Computation) -> list[Instruction]:
    """The instruction list, moved only as far as needed to define operands before use."""
    seen: set[int] = set()
    order: list[Instruction] = []
    for start in [*comp.instructions, comp.root]:
        if id(start) in seen:
            continue
        seen.add(id(start))
        stack = [(start, iter(start.operands))]
        while stack:  # iterative: real graphs are deeper than Python's recursion limit
            inst, operands = stack[-1]
            nxt = next((o for o in operands if id(o) not in seen), None)
            if nxt is None:
                order.append(stack.pop()[0])
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(nxt.operands)))
    return order


def _instruction_text(inst: Instruction, style: _Style, is_root: bool) -> str:
    root = "ROOT " if is_root else ""
    operands = _OPERAND_PRINTERS.get(inst.opcode, _operand_names)(inst, style)
    attrs = "".join(", " + a for a in _attribute_texts(inst, style))
    return (
        f"{root}{style.sigil}{inst.name} = {inst.shape.with_layout()} "
        f"{inst.opcode.value}({operands}){attrs}"
    )


def _operand_names(inst: Instruction, style: _Style) -> str:
    if style.operand_shapes:
        return ", ".join(f"{o.shape.with_layout()} %{o.name}" for o in inst.operands)
    return ", ".join(o.name for o in inst.operands)


def _parameter_operand(inst: Instruction, style: _Style) -> str:
    return str(parameter_number(inst))


def _constant_operand(inst: Instruction, style: _Style) -> str:
    if inst.literal is None:
        raise HloError(f"constant {inst.name} has no literal")
    return format_literal(inst.literal, elide=not style.large_constants)


_OPERAND_PRINTERS: dict[Opcode, Callable[[Instruction, _Style], str]] = {
    Opcode.PARAMETER: _parameter_operand,
    Opcode.CONSTANT: _constant_operand,
}


def _attribute_texts(inst: Instruction, style: _Style) -> list[str]:
    texts = [] if inst.attrs is None else inst.attrs.to_text()
    return texts + callee_texts(inst, style.sigil)


def callee_texts(inst: Instruction, sigil: str = "") -> list[str]:
    """The attributes naming ``inst``'s called computations: ``to_apply=f``, or a list,
    ``branch_computations={a, b}``, for an opcode with ``called_list`` not on a pred."""
    info, names = inst.opcode.info, [sigil + c.name for c in inst.called]
    if info.called_list is not None and not _selects_on_pred(inst):
        return [f"{info.called_list}={{{', '.join(names)}}}"]
    return [f"{k}={n}" for k, n in zip(info.called, names, strict=False)]  # print even if bad


def _selects_on_pred(inst: Instruction) -> bool:
    first = inst.operands[0].shape if inst.operands else None
    return isinstance(first, Shape) and first.dtype is PrimitiveType.PRED


# ---- literals --------------------------------------------------------------------------------

_CHUNK = 1 << 20  # elements formatted at a time, to bound the temporary string arrays


def format_literal(array: np.ndarray, *, elide: bool = False) -> str:
    """XLA's spelling of an array value: ``1.5``, ``{1, 2}``, ``{ { 1, 2 }, { 3, 4 } }``."""
    if elide and array.size > ELIDE_ABOVE:
        return "{...}"
    if array.size == 0:
        return _empty_nest(array.shape)
    flat = array.reshape(-1)
    if is_bfloat16(flat.dtype):  # each bf16 is an f32 exactly, printed so that it reads back
        flat = flat.astype(np.float32)
    formatter = _ELEMENT_FORMATTERS[flat.dtype.kind]
    items: list[str] = []
    for start in range(0, flat.size, _CHUNK):
        items += formatter(flat[start : start + _CHUNK]).tolist()
    return _nest(items, array.shape)


def _nest(items: list[str], dims: tuple[int, ...]) -> str:
    if not dims:
        return items[0]
    if len(dims) == 1:
        return "{" + ", ".join(items) + "}"
    level = items
    for n in reversed(dims):
        level = ["{ " + ", ".join(level[i : i + n]) + " }" for i in range(0, len(level), n)]
    return level[0]


def _empty_nest(dims: tuple[int, ...]) -> str:
    if len(dims) <= 1 or dims[0] == 0:
        return "{}"
    return "{ " + ", ".join([_empty_nest(dims[1:])] * dims[0]) + " }"


def _float_strings(x: np.ndarray) -> np.ndarray:
    # numpy's str() of a float is the shortest text that reads back as the same value of its
    # own width; XLA prints integral floats without ".0".
    s = x.astype(str)
    integral = np.flatnonzero(np.char.endswith(s, ".0"))
    if integral.size:
        s[integral] = np.char.replace(s[integral], ".0", "")
    s = np.where(np.isnan(x) & np.signbit(x), "-nan", s)
    if x.dtype != np.float64:  # the parser reads via float64: fall back where that rounds twice
        bad = np.flatnonzero((s.astype(np.float64).astype(x.dtype) != x) & ~np.isnan(x))
        if bad.size:
            s = s.astype(object)
            s[bad] = [repr(float(v)) for v in x[bad]]
    return s


def _complex_strings(z: np.ndarray) -> np.ndarray:
    re, im = _float_strings(z.real).astype(str), _float_strings(z.imag).astype(str)
    return np.char.add(np.char.add("(", np.char.add(np.char.add(re, ", "), im)), ")")


_ELEMENT_FORMATTERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "b": lambda x: np.where(x, "true", "false"),
    "i": lambda x: x.astype(str),
    "u": lambda x: x.astype(str),
    "f": _float_strings,
    "c": _complex_strings,  # XLA spells a complex element (re, im)
}


_LITERAL_TOKEN = re.compile(r"[^\s{},]+")
_COMPLEX_ELEMENT = re.compile(r"\(\s*([^\s(),{}]+)\s*,\s*([^\s(),{}]+)\s*\)")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_ELIDED = re.compile(r"\{\s*\.\.\.\s*\}")


def parse_literal(text: str, shape: Shape) -> np.ndarray:
    """The read-only array ``text`` spells, with ``shape``'s dtype and dims; ValueError if bad."""
    if "/*" in text:
        text = _COMMENT.sub(" ", text)
    if _ELIDED.search(text):
        raise ValueError(
            "the constant's value was elided as {...} when it was printed; "
            "print it with print_large_constants=True"
        )
    if text.count("{") != text.count("}"):
        raise ValueError("unbalanced braces in the constant")
    if shape.dtype.is_complex:
        return _parse_complex_literal(text, shape)
    tokens = np.array(_LITERAL_TOKEN.findall(text), dtype=str)
    if tokens.size != shape.size:
        raise ValueError(f"the constant has {tokens.size} values but {shape} has {shape.size}")
    dtype = shape.dtype.numpy
    array = _LITERAL_DECODERS["f" if is_bfloat16(dtype) else dtype.kind](tokens, dtype)
    array = array.reshape(shape.dims)  # a fresh array: astype copied
    array.flags.writeable = False
    return array


def _parse_complex_literal(text: str, shape: Shape) -> np.ndarray:
    """``(re, im)`` pairs: the real and imaginary parts read as the component type's."""
    pairs = _COMPLEX_ELEMENT.findall(text)
    if len(pairs) != shape.size or text.count("(") != shape.size:
        raise ValueError(
            f"the constant has {len(pairs)} (re, im) values but {shape} has {shape.size}"
        )
    parts = parse_literal(
        " ".join(f"{re} {im}" for re, im in pairs), Shape(shape.dtype.component, (2 * shape.size,))
    )
    array = np.empty(shape.size, shape.dtype.numpy)
    array.real, array.imag = parts[0::2], parts[1::2]
    array = array.reshape(shape.dims)
    array.flags.writeable = False
    return array


def _decode_pred(tokens: np.ndarray, dtype: np.dtype) -> np.ndarray:
    true = (tokens == "true") | (tokens == "1")
    valid = true | (tokens == "false") | (tokens == "0")
    if not valid.all():
        raise ValueError(f"{tokens[~valid][0]!r} is not a pred value (true, false, 1, 0)")
    return true


def _decode_number(tokens: np.ndarray, dtype: np.dtype) -> np.ndarray:
    # strings convert to float64 exactly once
    wide = np.float64 if dtype.kind == "f" or is_bfloat16(dtype) else dtype
    try:
        return tokens.astype(wide).astype(dtype)
    except (ValueError, OverflowError) as e:
        raise ValueError(f"not a valid {dtype} literal: {e}") from None


_LITERAL_DECODERS: dict[str, Callable[[np.ndarray, np.dtype], np.ndarray]] = {
    "b": _decode_pred,
    "i": _decode_number,
    "u": _decode_number,
    "f": _decode_number,
}


# ==== parsing =================================================================================


@functools.cache
def _punct(text: str) -> re.Pattern[str]:
    return re.compile(re.escape(text))


def _keyword(word: str) -> re.Pattern[str]:
    return re.compile(word + r"(?![\w.\-])")


_SKIP = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_ATTR_NAME = re.compile(r"[A-Za-z_][\w\-]*")
_INT = re.compile(r"-?\d+")
_ARRAY_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_LAYOUT = re.compile(r"\{[\d,\s]*(?::[^{}]*)?\}")
_FRAME_TABLE = re.compile(r"(?:FileNames|FunctionNames|FileLocations|StackFrames)(?![\w.\-])")
_FRAME_ROW = re.compile(r'\d+\s+(?:"(?:[^"\\]|\\.)*"|\{[^{}]*\})')
_SHAPE_START = re.compile(r"\(|[a-z][a-z0-9]*\[")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_FOUND = re.compile(r"\S{1,24}")
_PLAIN = re.compile(r'[^\s,{}\[\]()"]+')
_HLO_MODULE, _ENTRY, _ROOT = _keyword("HloModule"), _keyword("ENTRY"), _keyword("ROOT")
_BRACKETS = {"{": "}", "[": "]", "(": ")"}
_OPCODES = {op.value: op for op in Opcode}
_DTYPES = {t.value: t for t in PrimitiveType}


class _Cursor:
    """A position in the text; every match first skips whitespace and comments."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0

    def skip(self) -> None:
        self.pos = _SKIP.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        self.skip()
        return pattern.match(self.text, self.pos)

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def accept(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        match = self.at(pattern)
        if match:
            self.pos = match.end()
        return match

    def expect(self, pattern: re.Pattern[str], what: str) -> re.Match[str]:
        match = self.accept(pattern)
        if match is None:
            raise self.error(f"expected {what}, found {self.found()}")
        return match

    def found(self) -> str:
        if self.at_end():
            return "end of input"
        return repr(_FOUND.match(self.text, self.pos).group())  # type: ignore[union-attr]

    def error(self, message: str, pos: int | None = None) -> HloError:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - self.text.rfind("\n", 0, pos)
        return HloError(f"{self.source}:{line}:{column}: {message}")


class _Raw(NamedTuple):
    text: str
    pos: int


@dataclass
class _Head:
    """What an instruction's parentheses hold: operand names, a literal or a parameter number
    (handed to ``ParameterAttrs`` as the attribute ``parameter_number``)."""

    operands: list[tuple[str, int]] = field(default_factory=list)
    literal: np.ndarray | None = None
    attrs: dict[str, _Raw] = field(default_factory=dict)


@dataclass
class _PendingInstruction:
    inst: Instruction
    operands: list[tuple[str, int]]
    callees: list[_Raw]
    is_root: bool
    pos: int


@dataclass
class _PendingComputation:
    name: str
    pos: int
    is_entry: bool
    body: list[_PendingInstruction]


def parse_module(text: str, source: str = "<hlo>", notes: list[str] | None = None) -> Module:
    """Parse HLO text; errors are ``HloError`` naming ``source``, line and column. What XLA
    prints that aotc ignores, or renames, is said in ``notes`` (``interchange.py``)."""
    return _Parser(text, source).module(notes if notes is not None else [])


# Tuple shapes nest a few levels in practice; the parser and everything that walks a shape
# recurse once per level, so deeper nesting is refused before it can exhaust the stack.
MAX_TUPLE_NESTING = 64


class _Parser:
    def __init__(self, text: str, source: str) -> None:
        self.cur = _Cursor(text, source)
        self._tuple_depth = 0
        self._layout: str | None = None  # of the last array shape read
        self._layouts: dict[int, tuple[int, ...] | str | None] = {}  # bitcasts and operands
        self._foreign = ForeignAttributes(source)
        self._unknown: dict[str, list[int]] = {}  # opcode -> positions

    # ---- module and computations -------------------------------------------------------------

    def module(self, notes: list[str]) -> Module:
        name = self._header()
        self._stack_frames()
        pending: list[_PendingComputation] = []
        while not self.cur.at_end():
            pending.append(self._computation())
        if not pending:
            raise self.cur.error("expected a computation, found end of input")
        self._refuse_unknown_opcodes()
        comps = {p.name: self._build_computation(p) for p in self._unique(pending)}
        for p in pending:
            self._resolve_callees(p, comps)
        entry = comps[self._entry(pending).name]
        module = Module(name, entry, comps.values())
        self._foreign.check()
        names = NameUniquer()
        renamed = unique_names(module, names)
        self._bitcasts(module, names)
        plan_fusions(module)  # deterministic: a printed fusion parses back to its plan
        notes += [n for n in [self._foreign.note()] if n]
        if renamed:
            notes.append(f"{self.cur.source}: renamed {renamed} instruction(s) whose names "
                         "repeat in another computation")  # fmt: skip
        return module

    def _stack_frames(self) -> None:
        """Skip XLA's stack-frame index (``FileNames``, ``FileLocations``, ...: tables that
        ``metadata={stack_frame_id=N}`` points into)."""
        while self.cur.accept(_FRAME_TABLE):
            while self.cur.accept(_FRAME_ROW):
                pass

    def _bitcasts(self, module: Module, names: NameUniquer) -> None:
        for comp in module.computations:
            for inst in list(comp.instructions):
                if inst.opcode is Opcode.BITCAST and id(inst) in self._layouts:
                    try:
                        added = bitcast_by_layout(inst, self._layouts, names)
                    except HloError as e:
                        raise HloError(f"{self.cur.source}: {e}") from None
                    at = comp.instructions.index(inst)
                    comp.instructions[at:at] = added

    def _header(self) -> str:
        if not self.cur.accept(_HLO_MODULE):
            return "module"
        name = self.cur.expect(_NAME, "a module name")[1]
        self._attributes()  # entry_computation_layout, is_scheduled, ...: all derivable or moot
        return name

    def _computation(self) -> _PendingComputation:
        is_entry = self.cur.accept(_ENTRY) is not None
        name = self.cur.expect(_NAME, "a computation name")
        if self.cur.at(_punct("(")):
            self._signature()
        self.cur.expect(_punct("{"), "'{' to open the computation")
        body: list[_PendingInstruction] = []
        while not self.cur.accept(_punct("}")):
            body.append(self._instruction())
        self._attributes()  # e.g. execution_thread="..."
        return _PendingComputation(name[1], name.start(), is_entry, body)

    def _signature(self) -> None:
        def parameter() -> None:
            self.cur.expect(_NAME, "a parameter name")
            self.cur.expect(_punct(":"), "':'")
            self.shape()

        self.cur.expect(_punct("("), "'('")
        self._sequence(parameter, ")")
        self.cur.expect(_punct("->"), "'->'")
        self.shape()

    def _unique(self, pending: list[_PendingComputation]) -> list[_PendingComputation]:
        seen: set[str] = set()
        for p in pending:
            if p.name in seen:
                raise self.cur.error(f"computation '{p.name}' is defined twice", p.pos)
            seen.add(p.name)
        return pending

    def _entry(self, pending: list[_PendingComputation]) -> _PendingComputation:
        entries = [p for p in pending if p.is_entry]
        if len(entries) > 1:
            raise self.cur.error("more than one ENTRY computation", entries[1].pos)
        return entries[0] if entries else pending[-1]

    def _build_computation(self, p: _PendingComputation) -> Computation:
        if not p.body:
            raise self.cur.error(f"computation '{p.name}' has no instructions", p.pos)
        by_name: dict[str, Instruction] = {}
        for pi in p.body:
            if pi.inst.name in by_name:
                raise self.cur.error(f"instruction '{pi.inst.name}' is defined twice", pi.pos)
            by_name[pi.inst.name] = pi.inst
        for pi in p.body:
            pi.inst.operands = [
                self._operand_ref(by_name, name, pos, p.name) for name, pos in pi.operands
            ]
        return Computation(p.name, [pi.inst for pi in p.body], self._root(p))

    def _operand_ref(
        self, by_name: dict[str, Instruction], name: str, pos: int, comp: str
    ) -> Instruction:
        if name not in by_name:
            raise self.cur.error(f"operand '{name}' is not defined in computation '{comp}'", pos)
        return by_name[name]

    def _root(self, p: _PendingComputation) -> Instruction:
        roots = [pi for pi in p.body if pi.is_root]
        if len(roots) > 1:
            raise self.cur.error(f"computation '{p.name}' has more than one ROOT", roots[1].pos)
        return (roots[0] if roots else p.body[-1]).inst

    def _resolve_callees(self, p: _PendingComputation, comps: dict[str, Computation]) -> None:
        for pi in p.body:
            pi.inst.called = [self._callee(raw, comps) for raw in pi.callees]

    def _callee(self, raw: _Raw, comps: dict[str, Computation]) -> Computation:
        name = _decode(self.cur, "computation name", raw, _callee_name)
        if name not in comps:
            raise self.cur.error(f"computation '{name}' is not defined", raw.pos)
        return comps[name]

    # ---- instructions ------------------------------------------------------------------------

    def _instruction(self) -> _PendingInstruction:
        is_root = self.cur.accept(_ROOT) is not None
        name = self.cur.expect(_NAME, "an instruction name or '}'")
        self.cur.expect(_punct("="), "'='")
        shape = self.shape()
        layout = self._layout if isinstance(shape, Shape) else None
        opcode = self._opcode()
        if opcode is None:
            return self._unknown_instruction(name, shape, is_root)
        self.cur.expect(_punct("("), "'('")
        head = _OPERAND_READERS.get(opcode, _Parser._operand_list)(self, shape)
        raw = self._attributes(head.attrs)
        attrs = _InstructionAttrs(self.cur, raw, f"{opcode.value} '{name[1]}'", name.start())
        kind = opcode.info.attrs
        decoded: Attrs = None if kind is None else kind.from_text(attrs)
        callees = self._callee_names(opcode, attrs)
        inst = Instruction(name[1], opcode, shape, [], decoded, head.literal)
        for key in attrs.unread(opcode):
            self._foreign.add(inst, key, raw[key].text)
        if isinstance(shape, Shape):
            self._record_layout(inst, opcode, parse_layout(layout, shape.rank))
        return _PendingInstruction(inst, head.operands, callees, is_root, name.start())

    def _record_layout(self, inst: Instruction, opcode: Opcode, layout: _Layout) -> None:
        """Layouts matter to bitcasts only (``interchange.bitcast_by_layout``); any
        instruction may be a bitcast's operand, so only row-major ones are not recorded."""
        if layout is not None or opcode is Opcode.BITCAST:
            self._layouts[id(inst)] = layout

    def _callee_names(self, opcode: Opcode, attrs: _InstructionAttrs) -> list[_Raw]:
        """The raw names of the called computations, from the list form if it is given."""
        key = opcode.info.called_list
        if key is None or not attrs.has(key):
            return [attrs.raw(k) for k in opcode.info.called]
        raw = attrs.raw(key)
        if not re.fullmatch(r"\{.*\}", raw.text, re.S):
            raise self.cur.error(f"bad '{key}' value: expected {{name, ...}}", raw.pos)
        names = re.finditer(r"[^\s,{}]+", raw.text)
        return [_Raw(m[0], raw.pos + m.start()) for m in names]

    def _opcode(self) -> Opcode | None:
        """The opcode; None for one aotc lacks, recorded so one error can list them all."""
        match = self.cur.expect(_OPCODE, "an opcode")
        if match[0] not in _OPCODES:
            self._unknown.setdefault(match[0], []).append(match.start())
            return None
        return _OPCODES[match[0]]

    def _unknown_instruction(self, name: re.Match[str], shape: AnyShape, is_root: bool
                             ) -> _PendingInstruction:  # fmt: skip
        """Skip the operands and attributes of an instruction whose opcode aotc lacks."""
        self.cur.expect(_punct("("), "'('")
        self.cur.pos -= 1
        self._raw_value()  # the balanced parentheses
        self._attributes()
        inst = Instruction(name[1], Opcode.TUPLE, shape)  # never built: module() refuses
        return _PendingInstruction(inst, [], [], is_root, name.start())

    def _refuse_unknown_opcodes(self) -> None:
        if not self._unknown:
            return
        first = min(at[0] for at in self._unknown.values())
        listing = ", ".join(
            f"'{op}' ({len(at)}x, first at line {self.cur.text.count(chr(10), 0, at[0]) + 1})"
            for op, at in sorted(self._unknown.items())
        )
        raise self.cur.error(f"unsupported opcode(s) {listing}", first)

    def _operand_list(self, shape: AnyShape) -> _Head:
        return _Head(operands=self._sequence(self._operand, ")"))

    def _operand(self) -> tuple[str, int]:
        if self.cur.at(_SHAPE_START):
            self.shape()  # XLA's older style repeats each operand's shape
        match = self.cur.expect(_NAME, "an operand name")
        return match[1], match.start()

    def _parameter(self, shape: AnyShape) -> _Head:
        number = self.cur.expect(_INT, "a parameter number")
        self.cur.expect(_punct(")"), "')'")
        return _Head(attrs={PARAMETER_NUMBER: _Raw(number[0], number.start())})

    def _constant(self, shape: AnyShape) -> _Head:
        self.cur.skip()
        start = self.cur.pos
        if not isinstance(shape, Shape):
            raise self.cur.error("tuple constants are unsupported", start)
        array_shape = shape
        end = _literal_end(self.cur.text, start, shape.dtype.is_complex)
        if end < 0:
            raise self.cur.error("unterminated constant: expected ')'", start)
        literal = _decode(
            self.cur,
            "constant",
            _Raw(self.cur.text[start:end], start),
            lambda text: parse_literal(text, array_shape),
        )
        self.cur.pos = end + 1
        return _Head(literal=literal)

    def _sequence(self, item: Callable[[], T], close: str) -> list[T]:
        items: list[T] = []
        if self.cur.accept(_punct(close)):
            return items
        while True:
            items.append(item())
            if self.cur.accept(_punct(close)):
                return items
            self.cur.expect(_punct(","), f"',' or '{close}'")

    # ---- attributes --------------------------------------------------------------------------

    def _attributes(self, given: dict[str, _Raw] | None = None) -> dict[str, _Raw]:
        attrs = dict(given or {})
        while self.cur.accept(_punct(",")):
            key = self.cur.expect(_ATTR_NAME, "an attribute name")
            self.cur.expect(_punct("="), "'='")
            if key[0] in attrs:
                raise self.cur.error(f"attribute '{key[0]}' given twice", key.start())
            attrs[key[0]] = self._raw_value()
        return attrs

    def _raw_value(self) -> _Raw:
        """An attribute value as text: up to a ',' or space outside brackets and strings."""
        text, pos = self.cur.text, self.cur.pos  # no skip: "padding=" may be empty
        start, open_at = pos, []
        while pos < len(text):
            char = text[pos]
            if plain := _PLAIN.match(text, pos):
                pos = plain.end()
                continue
            if char == '"':
                pos = self._string_end(pos)
                continue
            if char in _BRACKETS:
                open_at.append(pos)
            elif char in "}])":
                if not open_at:
                    break
                opener = text[open_at.pop()]
                if _BRACKETS[opener] != char:
                    raise self.cur.error(f"'{char}' does not close '{opener}'", pos)
            elif not open_at:  # ',' or whitespace at the top level
                break
            pos += 1
        if open_at:
            raise self.cur.error(f"'{text[open_at[-1]]}' is never closed", open_at[-1])
        self.cur.pos = pos
        return _Raw(text[start:pos], start)

    def _string_end(self, pos: int) -> int:
        match = _STRING.match(self.cur.text, pos)
        if match is None:
            raise self.cur.error("unterminated string", pos)
        return match.end()

    # ---- shapes ------------------------------------------------------------------------------

    def shape(self) -> AnyShape:
        if self.cur.accept(_punct("(")):
            if self._tuple_depth == MAX_TUPLE_NESTING:
                raise self.cur.error(f"tuple shape nested deeper than {MAX_TUPLE_NESTING} levels")
            self._tuple_depth += 1
            try:
                return TupleShape(tuple(self._sequence(self.shape, ")")))
            finally:
                self._tuple_depth -= 1
        match = self.cur.expect(_ARRAY_SHAPE, "a shape")
        dtype = _DTYPES.get(match[1])
        if dtype is None:
            raise self.cur.error(
                f"element type '{match[1]}' in {match[0]} is unsupported; "
                f"aotc supports {', '.join(_DTYPES)}",
                match.start(),
            )
        dims = self._dims(match[2], match.start())
        layout = self.cur.accept(_LAYOUT)  # aotc assigns its own (row-major); see _bitcasts
        self._layout = layout[0] if layout else None
        return Shape(dtype, dims)

    def _dims(self, text: str, pos: int) -> tuple[int, ...]:
        parts = [p.strip() for p in text.split(",")] if text.strip() else []
        if any("<=" in p or "?" in p for p in parts):
            raise self.cur.error(f"dynamic shapes are unsupported: [{text}]", pos)
        if not all(p.isdigit() for p in parts):
            raise self.cur.error(f"bad dimensions [{text}]", pos)
        return tuple(int(p) for p in parts)


def _literal_end(text: str, start: int, is_complex: bool) -> int:
    """The position of the ``)`` closing a constant's literal: the first one, but past the
    ``(re, im)`` pairs of a complex literal; -1 if there is none."""
    if not is_complex:
        return text.find(")", start)  # literals of other types hold no parentheses
    depth = 0
    for match in _PAREN.finditer(text, start):
        depth += 1 if match[0] == "(" else -1
        if depth < 0:
            return match.start()
    return -1


_PAREN = re.compile(r"[()]")


_OPERAND_READERS: dict[Opcode, Callable[[_Parser, AnyShape], _Head]] = {
    Opcode.PARAMETER: _Parser._parameter,
    Opcode.CONSTANT: _Parser._constant,
}


def _decode(cur: _Cursor, what: str, raw: _Raw, decode: Callable[[str], T]) -> T:
    """``decode(raw.text)``, turning its ValueError into an HloError at ``raw``'s position."""
    try:
        return decode(raw.text)
    except ValueError as e:
        raise cur.error(f"bad {what} {raw.text[:60]!r}: {e}", raw.pos) from None


class _InstructionAttrs:
    """The raw ``key=value`` attributes of one instruction, decoded on demand."""

    def __init__(self, cur: _Cursor, raw: dict[str, _Raw], where: str, pos: int) -> None:
        self.cur, self._raw, self.where, self.pos = cur, raw, where, pos
        self._read: set[str] = {PARAMETER_NUMBER}

    def has(self, key: str) -> bool:
        return key in self._raw

    def raw(self, key: str) -> _Raw:
        if key not in self._raw:
            raise self.cur.error(f"{self.where} needs a '{key}' attribute", self.pos)
        self._read.add(key)
        return self._raw[key]

    def unread(self, opcode: Opcode) -> list[str]:
        """The keys neither the attribute class nor the callee names read."""
        called = {*opcode.info.called, opcode.info.called_list}
        return [k for k in self._raw if k not in self._read and k not in called]

    def need(self, key: str, decode: Callable[[str], T]) -> T:
        return _decode(self.cur, f"'{key}' value", self.raw(key), decode)

    def opt(self, key: str, decode: Callable[[str], T], default: T) -> T:
        return self.need(key, decode) if key in self._raw else default


def _callee_name(text: str) -> str:
    match = re.fullmatch(r"%?([A-Za-z_][\w.\-]*)", text)
    if match is None:
        raise ValueError("expected a computation name")
    return match[1]
