"""A function's LLVM IR text, the same bytes as llvmlite prints, in 0.6x its time.

Printing was a sixteenth of a big model's compile (MobileNetV2: about 0.45 s of 7 CPU seconds),
all of it on the one core that also emits the IR. llvmlite formats each instruction through
several layers of ``str.format`` and prints a vector constant element by element, each
element a ``Constant`` of its own (a splat of 16 lanes formats its value 16 times).
``function_text`` prints the instruction kinds aotc emits with one f-string each and each
constant element's text once per function; any other instruction, and any call with
attributes, goes through llvmlite's own printer. ``tests/test_codegen_ir_print.py`` holds
the two printers to the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir
from llvmlite.ir import instructions as ins

_VOID = ir.VoidType
_SEQUENCES = (ir.VectorType, ir.ArrayType)


class _Printer:
    """The text of one function; ``_refs`` memoizes its constants' texts by identity."""

    def __init__(self) -> None:
        self._refs: dict[int, tuple[object, str]] = {}
        self._elements: dict[tuple[str, float, float], str] = {}

    def ref(self, value: ir.Value) -> str:
        """``value.get_reference()``, vector and array constants from memoized elements."""
        if type(value) is not ir.Constant or not isinstance(value.type, _SEQUENCES):
            return value.get_reference()
        if not isinstance(value.constant, (list, tuple)):  # zeroinitializer, undef, bytes
            return value.get_reference()
        known = self._refs.get(id(value))
        if known is None:
            items = ", ".join([self._element(x) for x in value.constant])
            text = f"<{items}>" if isinstance(value.type, ir.VectorType) else f"[{items}]"
            known = self._refs[id(value)] = (value, text)  # holds value: its id stays its own
        return known[1]

    def _element(self, value: ir.Value) -> str:
        """``typed(value)``; a number's text once per type and value (-0.0 apart from 0.0;
        NaNs, whose payloads differ, each by itself)."""
        number = value.constant if type(value) is ir.Constant else None
        if not isinstance(number, (int, float)) or type(number) is bool or number != number:
            return self.typed(value)
        key = (str(value.type), number, math.copysign(1.0, number))
        text = self._elements.get(key)
        if text is None:
            text = self._elements[key] = self.typed(value)
        return text

    def typed(self, value: ir.Value) -> str:
        """``"<type> <reference>"``, as llvmlite spells an operand."""
        return f"{value.type} {self.ref(value)}"

    def line(self, inst: ins.Instruction) -> str:
        """The instruction's line (without its indent and newline)."""
        spell = _SPELLINGS.get(type(inst))
        body = spell(self, inst) if spell is not None else None
        if body is None:
            return str(inst)
        if isinstance(inst.type, _VOID):
            return body.rstrip()
        return f"{inst.get_reference()} = {body}".rstrip()


def function_text(fn: ir.Function) -> str:
    """``str(fn)``, faster (see the module docstring)."""
    printer = _Printer()
    buf: list[str] = []
    fn.descr_prototype(buf)
    if fn.blocks:
        buf.append("{\n")
        for block in fn.blocks:
            buf.append(f"{block._format_name()}:\n")
            buf += [f"  {printer.line(inst)}\n" for inst in block.instructions]
        buf.append("}\n")
    return "".join(buf)


def _meta(inst: ins.Instruction) -> str:
    return inst._stringify_metadata(leading_comma=True) if inst.metadata else ""


def _plain(p: _Printer, inst: ins.Instruction) -> str:
    opname = " ".join([inst.opname, *inst.flags]) if inst.flags else inst.opname
    operands = ", ".join([p.ref(op) for op in inst.operands])
    return f"{opname} {inst.type} {operands}{_meta(inst)}"


def _gep(p: _Printer, inst: ins.GEPInstr) -> str:
    op = "getelementptr inbounds" if inst.inbounds else "getelementptr"
    indices = ", ".join([p.typed(i) for i in inst.indices])
    return f"{op} {inst.source_etype}, {p.typed(inst.pointer)}, {indices} {_meta(inst)}"


def _load(p: _Printer, inst: ins.LoadInstr) -> str:
    align = "" if inst.align is None else f", align {inst.align}"
    return f"load {inst.type}, {p.typed(inst.operands[0])}{align}{_meta(inst)}"


def _store(p: _Printer, inst: ins.StoreInstr) -> str:
    value, pointer = inst.operands
    align = "" if inst.align is None else f", align {inst.align}"
    return f"store {p.typed(value)}, {p.typed(pointer)}{align}{_meta(inst)}"


def _select(p: _Printer, inst: ins.SelectInstr) -> str:
    cond, lhs, rhs = inst.operands
    flags = " ".join(inst.flags)
    return f"select {flags} {p.typed(cond)}, {p.typed(lhs)}, {p.typed(rhs)} {_meta(inst)}"


def _compare(p: _Printer, inst: ins.CompareInstr) -> str:
    lhs, rhs = inst.operands
    flags = "".join([" " + f for f in inst.flags])
    return f"{inst.opname}{flags} {inst.op} {lhs.type} {p.ref(lhs)}, {p.ref(rhs)} {_meta(inst)}"


def _cast(p: _Printer, inst: ins.CastInstr) -> str:
    return f"{inst.opname} {p.typed(inst.operands[0])} to {inst.type} {_meta(inst)}"


def _alloca(p: _Printer, inst: ins.AllocaInstr) -> str:
    count = f", {p.typed(inst.operands[0])}" if inst.operands else ""
    align = "" if inst.align is None else f", align {inst.align}"
    return f"{inst.opname} {inst.allocated_type}{count}{align}{_meta(inst)}"


def _phi(p: _Printer, inst: ins.PhiInstr) -> str:
    incoming = ", ".join([f"[{p.ref(v)}, {b.get_reference()}]" for v, b in inst.incomings])
    return f"phi {' '.join(inst.flags)} {inst.type} {incoming} {_meta(inst)}"


def _branch(p: _Printer, inst: ins.Terminator) -> str:
    return f"{inst.opname} {', '.join([p.typed(op) for op in inst.operands])}{_meta(inst)}"


def _ret(p: _Printer, inst: ins.Ret) -> str:
    value = inst.return_value
    returned = "" if value is None else f" {p.typed(value)}"
    return f"{inst.opname}{returned}{_meta(inst)}"


def _vector_op(p: _Printer, inst: ins.Instruction) -> str:
    return f"{inst.opname} {', '.join([p.typed(op) for op in inst.operands])}"


def _shuffle(p: _Printer, inst: ins.ShuffleVector) -> str:
    return f"shufflevector {', '.join([p.typed(op) for op in inst.operands])} {_meta(inst)}"


def _call(p: _Printer, inst: ins.CallInstr) -> str | None:
    """A plain call; None (llvmlite prints it) for one with attributes, a calling
    convention, a tail marker, fast-math flags, variadic or inline-asm callees."""
    callee = inst.callee
    if (
        inst.arg_attributes or inst.cconv or inst.tail or inst.attributes or inst.fastmath
        or not isinstance(callee, ir.Function) or callee.function_type.var_arg
    ):  # fmt: skip
        return None
    args = ", ".join([p.typed(a) for a in inst.args])
    return f"call {callee.function_type.return_type} {callee.get_reference()}({args}){_meta(inst)}"


_SPELLINGS: dict[type, Callable[[_Printer, ins.Instruction], str | None]] = {
    ins.Instruction: _plain,
    ins.GEPInstr: _gep,
    ins.LoadInstr: _load,
    ins.StoreInstr: _store,
    ins.SelectInstr: _select,
    ins.ICMPInstr: _compare,
    ins.FCMPInstr: _compare,
    ins.CastInstr: _cast,
    ins.AllocaInstr: _alloca,
    ins.PhiInstr: _phi,
    ins.Branch: _branch,
    ins.ConditionalBranch: _branch,
    ins.Ret: _ret,
    ins.InsertElement: _vector_op,
    ins.ExtractElement: _vector_op,
    ins.ShuffleVector: _shuffle,
    ins.CallInstr: _call,
}  # exact classes: a subclass may print otherwise (InvokeInstr is a CallInstr)
