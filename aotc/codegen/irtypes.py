"""LLVM types and small IR helpers shared by every emitter.

Values in registers use their natural LLVM type (``pred`` is ``i1``); in memory ``pred`` is one
byte, as C's ``bool``. Pointers are opaque (``ptr``), so loads and GEPs name their element type.

``bf16`` is computed through f32 (XLA's float normalization; few targets have bf16 arithmetic):
in memory it is the ``i16`` of its bits, in a register the ``float`` of the same value. Every
op whose result is bf16 rounds it to bf16 (to nearest, ties to even), so a register always
holds a value bf16 represents; stores keep the high half of the bits.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from aotc.abi import ALIGN
from aotc.bfloat16 import bfloat16
from aotc.codegen.ir_print import function_text
from aotc.hlo.shape import PrimitiveType, Shape

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

_REGISTER_TYPES: dict[PrimitiveType, ir.Type] = {
    PrimitiveType.PRED: I1,
    PrimitiveType.S8: I8,
    PrimitiveType.S16: ir.IntType(16),
    PrimitiveType.S32: I32,
    PrimitiveType.S64: I64,
    PrimitiveType.U8: I8,
    PrimitiveType.U16: ir.IntType(16),
    PrimitiveType.U32: I32,
    PrimitiveType.U64: I64,
    PrimitiveType.F16: F16,
    PrimitiveType.BF16: F32,
    PrimitiveType.F32: F32,
    PrimitiveType.F64: F64,
}


def register_type(dtype: PrimitiveType) -> ir.Type:
    """The type an element has in a register (``i1`` for pred)."""
    return _REGISTER_TYPES[dtype]


def memory_type(dtype: PrimitiveType) -> ir.Type:
    """The type an element has in memory (``i8`` for pred, ``i16`` for bf16)."""
    return _MEMORY_TYPES.get(dtype) or _REGISTER_TYPES[dtype]


_MEMORY_TYPES = {PrimitiveType.PRED: I8, PrimitiveType.BF16: ir.IntType(16)}


def accumulator_dtype(dtype: PrimitiveType) -> PrimitiveType:
    """What sums of products of ``dtype`` accumulate in: f32 for the 16-bit floats."""
    return PrimitiveType.F32 if dtype in (PrimitiveType.F16, PrimitiveType.BF16) else dtype


def alloca(builder: ir.IRBuilder, ty: ir.Type, name: str = "") -> ir.AllocaInstr:
    """An alloca whose value has the opaque ``ptr`` type, like every other pointer here."""
    slot = builder.alloca(ty, name=name)
    slot.type = PTR  # llvmlite would give it a typed pointer type
    return slot


def i64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def constant(dtype: PrimitiveType, value: float | int | bool) -> ir.Constant:
    """A scalar constant of ``dtype``, rounded the way the element type rounds it."""
    if dtype is PrimitiveType.BF16:
        value = float(np.asarray(value, np.float64).astype(bfloat16()))
    return scalar_constant(register_type(dtype), value)


def literal_element(dtype: PrimitiveType, value: np.generic) -> ir.Constant:
    """An element of a numpy literal as an immediate of ``dtype``'s register type."""
    python_value = value.item()
    return constant(dtype, python_value)


def scalar_constant(ty: ir.Type, value: float | int | bool) -> ir.Constant:
    if isinstance(ty, ir.HalfType):
        return ir.Constant(ty, float(np.float16(value)))
    if isinstance(ty, ir.FloatType):
        return ir.Constant(ty, float(np.float32(value)))
    if isinstance(ty, ir.DoubleType):
        return ir.Constant(ty, float(value))
    assert isinstance(ty, ir.IntType)
    return ir.Constant(ty, int(value) & ((1 << ty.width) - 1))


def declare(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
    """Get or declare a function (intrinsic or external) by name."""
    existing = module.globals.get(name)
    if existing is not None:
        assert isinstance(existing, ir.Function)
        return existing
    fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    fn.attributes.add("nounwind")
    return fn


def type_suffix(ty: ir.Type) -> str:
    """The overload suffix of an intrinsic: ``f32``, ``i64``, ``v8f32``."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    return {"half": "f16", "float": "f32", "double": "f64"}[str(ty)]


def call_intrinsic(
    builder: ir.IRBuilder,
    name: str,
    args: Sequence[ir.Value],
    overloads: Sequence[ir.Type] | None = None,
    ret: ir.Type | None = None,
) -> ir.Value:
    """Call ``llvm.<name>.<suffixes>``; overloads default to the first argument's type."""
    overloads = [args[0].type] if overloads is None else overloads
    full = ".".join(["llvm", name, *(type_suffix(t) for t in overloads)])
    fn = declare(builder.module, full, ret or args[0].type, [a.type for a in args])
    return builder.call(fn, list(args))


def row_major_strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * dims[d + 1]
    return strides


def linear_index(builder: ir.IRBuilder, index: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
    """Row-major offset of a multi-index, in elements (``i64``)."""
    total: ir.Value = i64(0)
    for value, stride, size in zip(index, row_major_strides(dims), dims, strict=True):
        if size == 1:
            continue  # the index is 0 there
        term = value if stride == 1 else mul_nuw(builder, value, i64(stride))
        total = term if _is_zero(total) else add_nuw(builder, total, term)
    return total


def add_nuw(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``add nuw nsw``: index arithmetic that never wraps; folded where an operand is a
    constant it need not be (LLVM would fold it, but every instruction costs its emission,
    its text and its parse: a tenth of a model's IR was such arithmetic)."""
    return _never_wraps(add_wrap(builder, a, b), a, b)


def mul_nuw(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``mul nuw nsw``, folded as ``add_nuw``."""
    return _never_wraps(mul_wrap(builder, a, b), a, b)


def add_wrap(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``add`` that may wrap (a window's position in the padding is negative), folded as
    ``add_nuw``."""
    if _is_int(a) and _is_int(b):
        return _wrapped(a, a.constant + b.constant)
    if _is_int(b, 0):
        return a
    return b if _is_int(a, 0) else builder.add(a, b)


def sub_wrap(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``sub`` that may wrap, folded where both are constants or ``b`` is 0."""
    if _is_int(a) and _is_int(b):
        return _wrapped(a, a.constant - b.constant)
    return a if _is_int(b, 0) else builder.sub(a, b)


def mul_wrap(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> ir.Value:
    """``mul`` that may wrap, folded as ``mul_nuw``."""
    if _is_int(a) and _is_int(b):
        return _wrapped(a, a.constant * b.constant)
    if _is_int(b, 1):
        return a
    if _is_int(a, 1):
        return b
    if _is_int(a, 0) or _is_int(b, 0):
        return ir.Constant(a.type, 0)
    return builder.mul(a, b)


def _never_wraps(result: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    """``result`` of arithmetic on ``a`` and ``b``, flagged ``nuw nsw`` if it is a new
    instruction (not an operand or a constant the arithmetic folded to)."""
    if isinstance(result, ir.Instruction) and result is not a and result is not b:
        result.flags.extend(["nuw", "nsw"])
    return result


def _wrapped(like: ir.Value, value: int) -> ir.Constant:
    """``value`` as a constant of ``like``'s integer type, wrapped as the instruction would."""
    half = 1 << (like.type.width - 1)
    return ir.Constant(like.type, (value + half) % (2 * half) - half)


def _is_int(value: ir.Value, equal: int | None = None) -> bool:
    """Whether ``value`` is an integer constant (equal to ``equal`` if given)."""
    if not isinstance(value, ir.Constant) or not isinstance(value.type, ir.IntType):
        return False
    return isinstance(value.constant, int) and (equal is None or value.constant == equal)


def _is_zero(value: ir.Value) -> bool:
    return isinstance(value, ir.Constant) and value.constant == 0


def element_pointer(
    builder: ir.IRBuilder, base: ir.Value, shape: Shape, index: Sequence[ir.Value]
) -> ir.Value:
    offset = linear_index(builder, index, shape.dims)
    return builder.gep(base, [offset], inbounds=True, source_etype=memory_type(shape.dtype))


def load_element(
    builder: ir.IRBuilder, base: ir.Value, shape: Shape, index: Sequence[ir.Value]
) -> ir.Value:
    ptr = element_pointer(builder, base, shape, index)
    ty = memory_type(shape.dtype)
    value = builder.load(ptr, typ=ty, align=shape.dtype.byte_size)
    if shape.dtype is PrimitiveType.PRED:
        return builder.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    if shape.dtype is PrimitiveType.BF16:
        high = builder.shl(builder.zext(value, I32), ir.Constant(I32, 16))
        return builder.bitcast(high, F32)
    return value


def store_element(
    builder: ir.IRBuilder, value: ir.Value, base: ir.Value, shape: Shape, index: Sequence[ir.Value]
) -> None:
    ptr = element_pointer(builder, base, shape, index)
    if shape.dtype is PrimitiveType.PRED:
        value = builder.zext(value, I8)
    elif shape.dtype is PrimitiveType.BF16:
        bits = builder.bitcast(round_to_bf16(builder, value), I32)
        value = builder.trunc(builder.lshr(bits, ir.Constant(I32, 16)), memory_type(shape.dtype))
    builder.store(value, ptr, align=shape.dtype.byte_size)


def round_to_bf16(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An f32 rounded to the nearest bf16 (ties to even; a nan becomes the quiet nan of its
    sign), as an f32."""
    bits = builder.bitcast(value, I32)
    odd = builder.and_(builder.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = builder.add(bits, builder.add(ir.Constant(I32, 0x7FFF), odd))
    kept = builder.and_(rounded, ir.Constant(I32, -0x10000))
    sign = builder.and_(bits, ir.Constant(I32, -0x80000000))
    quiet = builder.or_(sign, ir.Constant(I32, 0x7FC00000))  # Eigen's (and so XLA's) nan
    is_nan = builder.fcmp_unordered("uno", value, value)
    return builder.bitcast(builder.select(is_nan, quiet, kept), F32)


#: Marks where ``module_bytes`` splices a constant's bytes into the text (llvmlite escapes
#: every control character in names and strings, so the text has none of its own).
_MARK = "\x01"
_SPLICE: contextvars.ContextVar[list[Data] | None] = contextvars.ContextVar("_SPLICE", default=None)


@dataclass(frozen=True)
class LazyBytes:
    """``size`` bytes that ``fill`` writes into a ``uint8`` array when the object is put
    together: weights packed at compile time are never held beside LLVM's work, nor beside
    the object they are written into."""

    size: int
    fill: Callable[[np.ndarray], None]

    def __len__(self) -> int:
        return self.size

    def produce(self) -> memoryview:
        """The bytes, in an array of their own."""
        out = np.empty(self.size, np.uint8)
        self.fill(out)
        return out.data


#: What a read-only global holds: bytes, a view of a literal's bytes, or bytes made later.
Data = bytes | memoryview | LazyBytes


class _Bytes(ir.Constant):  # type: ignore[misc]
    """An ``i8`` array initializer printed in one pass and never cached: each byte the
    character of its value, but NUL, ``"`` and ``\\`` escaped as ``\\hh``.

    llvmlite's own ``bytearray`` constant escapes byte by byte through a Python list (eight
    bytes of pointer per byte of data) and keeps the printed text alive with the module; for
    100 MB of weights that is most of the compile's time and memory before LLVM sees them.
    Unescaped bytes keep the text about as long as the data (three characters a byte escaped,
    which made a 550 MB model's IR text 1.7 GB): LLVM's lexer reads any byte but those three
    inside a string (NUL would end the C string it gets). Printed as text, the bytes are
    latin-1 characters (``target.parse_ir`` encodes them back); ``module_bytes`` splices
    them into the text's bytes instead.
    """

    def __init__(self, typ: ir.ArrayType, data: Data) -> None:
        self.type = typ
        self.constant = data  # a view of a literal is not copied

    def get_reference(self) -> str:
        pieces = _SPLICE.get()
        if pieces is None:
            return 'c"' + _escaped(self.constant).decode("latin-1") + '"'
        pieces.append(self.constant)
        return f'c"{_MARK}{len(pieces) - 1}{_MARK}"'

    def _get_reference(self) -> str:
        return self.get_reference()

    def _to_string(self) -> str:
        return f"{self.type} {self.get_reference()}"

    def __str__(self) -> str:
        return self._to_string()


def _escaped(data: Data) -> bytes:
    if isinstance(data, LazyBytes):
        data = data.produce()
    return bytes(data).replace(b"\\", b"\\5C").replace(b'"', b"\\22").replace(b"\0", b"\\00")


def module_bytes(
    module: ir.Module, edit: Callable[[list[str]], list[str]] | None = None
) -> bytearray:
    """``module``'s IR text as the NUL-terminated bytes LLVM parses (``target.parse_ir``),
    each constant's bytes spliced in: neither a text copy of the weights nor its encoding.

    The module is spent: its text is made one global at a time, and each function's body is
    freed once it is in the bytes (the module's text, its pieces and their bytes would have
    been three more copies of it, and printing grows every value by the reference text llvmlite
    caches on it). ``edit`` rewrites the
    texts of the defined functions (ASCII: constants are globals of their own) before they
    go in, after every other global.
    """
    if edit is None:
        return _whole_module_bytes(module)
    return module_parts(module, edit).joined()


@dataclass
class ModuleParts:
    """A module's text in three parts (``module_parts``): everything but the defined
    functions (header, globals with their bytes spliced in, declarations), the defined
    functions' texts, and the metadata with the closing NUL. Joined in this order they are
    ``module_bytes``; ``codegen/split.py`` makes several modules of them."""

    prelude: bytearray
    functions: list[str]
    tail: bytes

    def joined(self) -> bytearray:
        """The module's bytes; the parts are spent (their texts freed as they go in)."""
        out, self.prelude = self.prelude, bytearray()
        self.functions.reverse()
        while self.functions:
            out += b"\n"
            out += self.functions.pop().encode("latin-1")  # as parse_ir reads a constant
        out += self.tail
        return out


def module_parts(module: ir.Module, edit: Callable[[list[str]], list[str]]) -> ModuleParts:
    """``module_bytes`` with ``edit``, in its three parts (the module is spent the same way);
    the functions ``take_functions`` took are left out (declarations too)."""
    out = _module_header(module)
    frozen = _FROZEN.pop(module, {})
    taken = _TAKEN.pop(module, set())
    functions: list[str] = []
    for value in module.globals.values():
        if value.name in taken:
            continue
        if value.name in frozen:
            functions.append(_thawed(value, frozen.pop(value.name)).decode("latin-1"))
            continue
        if isinstance(value, ir.Function) and value.blocks:
            functions.append(function_text(value))
        else:
            out += b"\n"
            _splice_text(out, value)
        _release(value)
    functions = edit(functions)
    return ModuleParts(out, functions, _module_tail(module))


def take_functions(module: ir.Module, names: Sequence[str]) -> list[str]:
    """The texts of the defined functions ``names`` of the finished part of a module being
    emitted, their bodies freed: ``module_parts`` and ``module_prelude`` leave them out from
    now on (``codegen/stream.py`` compiles them apart). The functions stay in the module, to
    be called."""
    frozen = _FROZEN.setdefault(module, {})
    taken = _TAKEN.setdefault(module, set())
    texts = []
    for name in names:
        fn = module.globals[name]
        assert name in frozen or fn.blocks, f"{name} is not defined"
        if name in frozen:
            texts.append(_thawed(fn, frozen.pop(name)).decode("latin-1"))
        else:
            text = bytearray()
            _splice_text(text, fn)
            _release(fn)
            texts.append(text.decode("latin-1"))
        taken.add(name)
    return texts


def frozen_texts(module: ir.Module) -> list[str]:
    """The texts of the functions of ``module`` that ``freeze_functions`` printed and no one
    took (``take_functions``)."""
    return [text.decode("latin-1") for text, _ in _FROZEN.get(module, {}).values()]


def module_prelude(module: ir.Module) -> ModuleParts:
    """The prelude and tail ``module_parts`` would make of ``module`` now, with no functions
    (declarations of those not defined in it); the module is not spent, and must have no
    function being built."""
    out = _module_header(module)
    frozen = _FROZEN.get(module, {})
    taken = _TAKEN.get(module, set())
    for value in module.globals.values():
        if value.name in frozen or value.name in taken:
            continue
        assert not getattr(value, "blocks", None), f"{value.name} is being built"
        out += b"\n"
        _splice_text(out, value)
        value._clear_string_cache()
    return ModuleParts(out, [], _module_tail(module))


def _whole_module_bytes(module: ir.Module) -> bytearray:
    out = _module_header(module)
    frozen = _FROZEN.pop(module, {})
    for value in module.globals.values():
        out += b"\n"
        if value.name in frozen:
            out += _thawed(value, frozen.pop(value.name))
            continue
        _splice_text(out, value)
        _release(value)
    out += _module_tail(module)
    return out


def _module_header(module: ir.Module) -> bytearray:
    out = bytearray()
    header = [
        f'; ModuleID = "{module.name}"',
        f'target triple = "{module.triple}"',
        f'target datalayout = "{module.data_layout}"',
        "",
        *(t.get_declaration() for t in module.get_identified_types().values()),
    ]
    _splice_text(out, "\n".join(header))
    return out


def _module_tail(module: ir.Module) -> bytes:
    out = bytearray()
    _splice_text(out, "".join(f"\n{line}" for line in module._get_metadata_lines()))
    out += b"\0"
    return bytes(out)


#: module -> name -> (printed text, prototype) of each function ``freeze_functions`` freed
_FROZEN: weakref.WeakKeyDictionary[ir.Module, dict[str, tuple[bytearray, str]]] = (
    weakref.WeakKeyDictionary()
)


#: module -> names of the functions ``take_functions`` took out of its text
_TAKEN: weakref.WeakKeyDictionary[ir.Module, set[str]] = weakref.WeakKeyDictionary()


def freeze_functions(module: ir.Module, building: ir.Function | None = None) -> None:
    """Print each finished function of ``module`` (all but ``building``) now and free its
    body (``module_bytes`` puts the text in its place): a program emitted in parts holds one
    part's IR at a time. A frozen function may still be called, never changed
    (``module_bytes`` checks). Only the functions added since the last frozen one are
    looked at (newest first), so freezing after every part costs no more than printing."""
    frozen = _FROZEN.setdefault(module, {})
    for value in reversed(module.globals.values()):
        if not isinstance(value, ir.Function) or value is building:
            continue
        if value.name in frozen:
            break
        if value.blocks:
            text = bytearray()
            _splice_text(text, value)
            _release(value)
            frozen[value.name] = (text, _prototype(value))


def frozen_text(module: ir.Module, name: str) -> bytearray | None:
    """The text ``freeze_functions`` made of the function ``name``, None if it has none."""
    frozen = _FROZEN.get(module, {}).get(name)
    return frozen[0] if frozen is not None else None


def set_frozen_text(module: ir.Module, fn: ir.Function, text: bytearray) -> None:
    """Make ``text`` the frozen text of the bodiless ``fn`` (``replay``: a body made as text);
    its first line must be ``fn``'s prototype."""
    prototype = _prototype(fn)  # bodiless: a declaration
    defined = "define" + prototype.removeprefix("declare")
    assert not fn.blocks and text.startswith(defined.encode("ascii")), f"{fn.name} differs"
    _FROZEN.setdefault(module, {})[fn.name] = (text, prototype)


def _thawed(fn: ir.Function, frozen: tuple[bytearray, str]) -> bytearray:
    """The text ``freeze_functions`` made of ``fn``, which must not have changed since."""
    text, prototype = frozen
    assert not fn.blocks and _prototype(fn) == prototype, f"{fn.name} changed"
    return text


def _prototype(fn: ir.Function) -> str:
    buf: list[str] = []
    fn.descr_prototype(buf)
    return buf[0]


def _splice_text(out: bytearray, printable: object) -> None:
    """Append the ASCII bytes of ``printable``'s text to ``out``, constants' bytes spliced
    in raw."""
    pieces: list[Data] = []
    token = _SPLICE.set(pieces)
    try:
        printed = function_text(printable) if isinstance(printable, ir.Function) else str(printable)
    finally:
        _SPLICE.reset(token)
    for i, part in enumerate(printed.split(_MARK)):
        out += _escaped(pieces[int(part)]) if i % 2 else part.encode("ascii")


def _release(value: ir.GlobalValue) -> None:
    """Free a printed function's body: its instructions and blocks link to each other (so
    only a full garbage collection would free them), and printing grew each instruction by
    the reference texts llvmlite caches."""
    for block in getattr(value, "blocks", ()):
        for inst in block.instructions:
            inst.parent = None
        block.instructions = []
    if isinstance(value, ir.Function):
        value.blocks = []
    value._clear_string_cache()


def readonly_global(
    module: ir.Module, name: str, data: Data, align: int = ALIGN
) -> ir.GlobalVariable:
    """Private read-only bytes (constants, pre-packed weights): an ``i8`` array, not text
    (``data`` is kept, not copied: a view of a literal must not change)."""
    assert not isinstance(data, memoryview) or data.itemsize == 1, "a view of bytes"
    ty = ir.ArrayType(I8, len(data))
    gv = ir.GlobalVariable(module, ty, name)
    gv.initializer = _Bytes(ty, data)
    gv.global_constant = True
    gv.linkage = "private"
    gv.unnamed_addr = True
    gv.align = align
    return gv


def constant_data(gv: ir.GlobalValue) -> Data | None:
    """The bytes of a ``readonly_global``, None for any other global."""
    init = getattr(gv, "initializer", None)
    return init.constant if isinstance(init, _Bytes) else None
