"""Kernels that would emit another kernel's text with other weights are not emitted.

Models repeat blocks of one shape with other weights, and ``variants.py`` merges the kernel
functions that differ only in the packed weights they read once they are printed; building,
printing and merging those copies was a third of the Python time of MobileNetV2's codegen.
Here such a kernel (a *twin*) is recognised before it is emitted: its functions' text is its
first kernel's (the *model*'s) with the model's names replaced by its own, and its weights are
packed as the model packed its own. The module's text is then what emitting it would have
made, so ``variants.py`` merges it as before and the object is the same.

Twins have the same ``twin_key``: everything the emission of a kernel function reads but
names and the values of constants larger than one element. That is the call (level,
pointers and their alignment, split, scratch), the instruction, the computations it calls and
the operands as far as kernels look at them (through data movement, as ``hlo.finite``
does): opcodes, shapes, attributes, how they connect; one-element constants by value (they
become immediates), larger ones by shape and whether they are finite. What the model's
emission made is recorded (``Recording``): its functions, the weights it packed (a view of
which constant's literal, the plan) and the functions it offered ``shared.share``. A model
whose emission made anything else (a global of another kind, a function not named after it,
weights that view no constant of its own) has no twins; nor has one emitted without
``freeze`` (its text is taken from ``irtypes.freeze_functions``).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import frozen_text, set_frozen_text
from aotc.codegen.parallel import KernelFunction
from aotc.hlo.finite import ELEMENT_MOVES  # what known_finite looks through, so may a kernel
from aotc.hlo.ir import Computation, FusionAttrs, Instruction, Opcode

if TYPE_CHECKING:  # the kernels import this module
    from aotc.codegen.kernels.gemm_plan import GemmPlan


_REFERENCE = re.compile(r'@"((?:[^"\\]|\\.)*)"')


def twin_key(
    inst: Instruction, call: tuple[object, ...]
) -> tuple[tuple[object, ...], list[Instruction]]:
    """The key of emitting ``inst`` with the call's parameters ``call`` and the constants it
    may read, in the key's order (a twin's constants match the model's one for one)."""
    numbers: dict[int, int] = {}
    rows: list[object] = [call]
    constants: list[Instruction] = []

    def number(i: Instruction) -> int:
        return numbers[id(i)]

    def add(i: Instruction, operands: Sequence[Instruction], called: Sequence[int]) -> None:
        numbers[id(i)] = len(numbers)
        if i.opcode is Opcode.CONSTANT:
            constants.append(i)
        ops = tuple(number(o) for o in operands)
        rows.append((i.opcode.value, str(i.shape), repr(i.attrs), ops, tuple(called), _value(i)))

    for operand in inst.operands:
        chain = [operand]
        while chain[-1].opcode in ELEMENT_MOVES and len(chain[-1].operands) == 1:
            chain.append(chain[-1].operands[0])
        for j in range(len(chain) - 1, -1, -1):  # the deepest first: operands before users
            if id(chain[j]) not in numbers:
                add(chain[j], chain[j + 1 : j + 2], ())
    computations: list[Computation] = []
    stack = list(reversed(inst.called))
    while stack:
        comp = stack.pop()
        computations.append(comp)
        for i in comp.instructions:
            stack.extend(reversed(i.called))
    called_numbers = {id(c): k for k, c in enumerate(computations)}
    for comp in computations:
        rows.append(("computation", _number_of_root(comp)))
        for i in comp.instructions:
            add(i, i.operands, [called_numbers[id(c)] for c in i.called])
    add(inst, inst.operands, [called_numbers[id(c)] for c in inst.called])
    fusions = [i for comp in computations for i in comp.instructions] + [inst]
    for fusion in fusions:
        if fusion.opcode is Opcode.FUSION:
            rows.append(("plan", number(fusion), _plan_signature(fusion, number)))
    return tuple(rows), constants


def _plan_signature(fusion: Instruction, number: Callable[[Instruction], int]) -> object:
    """What a fusion's plan tells its kernel (``FusionAttrs`` leaves the plan out of its
    repr): every field, with the instructions it names as their numbers in the key."""

    def value(v: object) -> object:
        if isinstance(v, Instruction):
            return ("instruction", number(v))
        if isinstance(v, tuple):
            return tuple(value(x) for x in v)
        if is_dataclass(v) and not isinstance(v, type):
            return (type(v).__name__, *(value(getattr(v, f.name)) for f in fields(v)))
        return v

    return value(fusion.attrs_as(FusionAttrs).plan)


def _number_of_root(comp: Computation) -> int:
    """Where ``comp``'s root is among its instructions."""
    return next(k for k, i in enumerate(comp.instructions) if i is comp.root)


def _value(inst: Instruction) -> object:
    """What a kernel may read of a constant's value: all of one element, else whether every
    element is finite."""
    if inst.opcode is not Opcode.CONSTANT or inst.literal is None:
        return None
    literal = inst.literal
    if literal.size == 1:
        return (literal.dtype.str, literal.reshape(-1)[0].tobytes())
    finite = not np.issubdtype(literal.dtype, np.inexact) or bool(np.isfinite(literal).all())
    return (literal.dtype.str, literal.shape, literal.flags.c_contiguous, finite)


@dataclass(frozen=True)
class _Pack:
    """One ``packed_weights`` call of a model: its name, plan, the weights (a view of the
    literal of the model's constant number ``constant``) and the global it returned."""

    name: str
    plan: GemmPlan
    constant: int
    view: tuple[int, tuple[int, ...], tuple[int, ...], str]  # offset, shape, strides, dtype
    result: str


@dataclass
class Recording:
    """What emitting a model made (see the module's docstring); ``valid`` False: no twins."""

    name: str
    constants: list[Instruction]
    before: int  # how many globals the module had
    packs: list[_Pack] = field(default_factory=list)
    shares: list[tuple[str, str, str]] = field(default_factory=list)  # offered, kept, its text
    created: list[str] = field(default_factory=list)  # globals it added, in order
    made: KernelFunction | None = None
    valid: bool = True


_RECORDING: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "_RECORDING", default=None
)


@contextmanager
def recording(module: ir.Module, name: str, constants: list[Instruction]) -> Iterator[Recording]:
    """Record what the emission of the model function ``name`` inside makes."""
    rec = Recording(name, constants, len(module.globals))
    token = _RECORDING.set(rec)
    try:
        yield rec
    finally:
        _RECORDING.reset(token)
    rec.created = [n for k, n in enumerate(module.globals) if k >= rec.before]
    rec.valid = rec.valid and _check(module, rec)


def _check(module: ir.Module, rec: Recording) -> bool:
    """Whether what the model made can be made again for a twin (see the module's docstring);
    drops the declarations it added from ``created`` (a twin finds them declared)."""
    packed = {p.result for p in rec.packs}
    kept = []
    for created in rec.created:
        value = module.globals[created]
        if isinstance(value, ir.Function) and not value.blocks:
            continue
        if not isinstance(value, ir.Function) and created not in packed:
            return False
        if not _renames(created, rec.name):
            return False
        kept.append(created)
    rec.created = kept
    renamed = set(kept) | packed
    for offered, found, text in rec.shares:
        # a copy share() dropped for an earlier function must be one for the twin too
        if found != offered and any(n in renamed for n in _REFERENCE.findall(text)):
            return False
    return True


def note_pack(name: str, plan: GemmPlan, weights: np.ndarray, result: str) -> None:
    """``packed_weights`` packed ``weights`` for ``plan`` as the global ``result``."""
    rec = _RECORDING.get()
    if rec is None:
        return
    pointer = weights.__array_interface__["data"][0]
    holders = []
    for k, c in enumerate(rec.constants):
        literal = c.literal
        if literal is None or not literal.flags.c_contiguous:
            continue
        start = literal.__array_interface__["data"][0]
        if start <= pointer < start + literal.nbytes:
            holders.append((k, pointer - start))
    if len(holders) != 1:  # none, or constants sharing memory: which one a twin's is, is unclear
        rec.valid = False
        return
    k, at = holders[0]
    rec.packs.append(
        _Pack(name, plan, k, (at, weights.shape, weights.strides, weights.dtype.str), result)
    )
    rec.valid = rec.valid and _renames(name, rec.name)


def note_share(offered: str, kept: str, text: str) -> None:
    """``shared.share`` was offered the function ``offered`` (its text ``text``) and kept
    ``kept`` (itself, or the identical function emitted before)."""
    rec = _RECORDING.get()
    if rec is not None:
        rec.shares.append((offered, kept, text))


def _renames(name: str, model: str) -> bool:
    return name == model or name.startswith(model + ".")


#: Packs weights again: (module, name, plan, weights) -> the global (``packed_weights``).
Packer = Callable[[ir.Module, str, "GemmPlan", np.ndarray], ir.GlobalVariable]
#: Looks up or registers a function's text with ``shared``: (module, name, text) -> kept.
Sharer = Callable[[ir.Module, str, str], str]


def replay(
    module: ir.Module,
    model: Recording,
    name: str,
    constants: list[Instruction],
    tools: tuple[Packer, Sharer],
) -> KernelFunction | None:
    """The function ``name`` of a twin of ``model`` (``constants`` in key order), its text
    made from the model's; None where the model's text is not at hand."""
    pack, share = tools
    assert model.made is not None and model.valid
    packs = {p.result for p in model.packs}
    texts = {n: frozen_text(module, n) for n in model.created if n not in packs}
    if any(t is None for t in texts.values()):
        return None
    renamed: dict[str, str] = {}
    for created in texts:
        renamed[created] = name + created[len(model.name) :]
        _clone(module, module.globals[created], renamed[created])
    for p in model.packs:
        weights = _view(constants[p.constant], p.view)
        renamed[p.result] = pack(module, name + p.name[len(model.name) :], p.plan, weights).name
    dropped = set()
    for offered, found, printed in model.shares:
        if found != offered:
            continue  # the twin's copy is dropped for the same function (``_check``)
        mine = renamed[offered]
        kept = share(module, mine, _rename(printed, renamed))
        if kept != mine:  # the twin's copy is an earlier function: dropped, as share() does
            del module.globals[mine]
            dropped.add(offered)
            renamed[offered] = kept
    for created, text in texts.items():
        if created not in dropped:
            fn = module.globals[renamed[created]]
            set_frozen_text(module, fn, _rename_bytes(text, renamed))  # type: ignore[arg-type]
    made = module.globals[renamed[model.name]]
    assert isinstance(made, ir.Function)
    return replace(model.made, fn=made)


def _view(
    constant: Instruction, view: tuple[int, tuple[int, ...], tuple[int, ...], str]
) -> np.ndarray:
    """The twin's weights: the view of its constant's literal that the model's weights were
    of the model's (``twin_key`` makes the literals alike in shape, type and layout)."""
    literal = constant.literal
    assert literal is not None and literal.flags.c_contiguous
    offset, shape, strides, dtype = view
    return np.ndarray(shape, np.dtype(dtype), buffer=literal, offset=offset, strides=strides)


def _clone(module: ir.Module, model: ir.GlobalValue, name: str) -> ir.Function:
    """A bodiless function ``name`` with ``model``'s prototype (its text is set later)."""
    assert isinstance(model, ir.Function)
    fn = ir.Function(module, model.ftype, name)
    fn.linkage = model.linkage
    set.update(fn.attributes, model.attributes)
    fn.attributes.__dict__.update(model.attributes.__dict__)
    for arg, original in zip(fn.args, model.args, strict=True):
        set.update(arg.attributes, original.attributes)
        arg.attributes.__dict__.update(original.attributes.__dict__)
    return fn


def _rename(text: str, renamed: dict[str, str]) -> str:
    return _REFERENCE.sub(lambda m: f'@"{renamed.get(m.group(1), m.group(1))}"', text)


def _rename_bytes(text: bytearray, renamed: dict[str, str]) -> bytearray:
    return bytearray(_rename(text.decode("ascii"), renamed), "ascii")
