"""What the HLO parser does with the parts of XLA's text that aotc's IR does not keep.

XLA prints more than an instruction's semantics: source metadata, sharding, backend configs,
layouts, and instruction names that repeat across computations (its tools accept them). The
parser hands every attribute its opcode's class did not read to ``ForeignAttributes``: those
that cannot change the values computed are counted and reported in one note; any other is an
error naming the instruction, since ignoring it could compile something else. Layouts matter
to one opcode only, ``bitcast``, which reinterprets its operand's bytes: ``bitcast_by_layout``
spells one between non-row-major layouts as the transposes and reshape it amounts to.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from aotc.errors import HloError
from aotc.hlo.attrs import Dimensions
from aotc.hlo.builder import NameUniquer
from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.shape import Shape

#: Attributes that never change what an instruction computes (on a CPU, in one process), and
#: why, for the note.
IGNORED_ATTRIBUTES: dict[str, str] = {
    "metadata": "source locations",
    "frontend_attributes": "front-end annotations",
    "sharding": "SPMD placement",
    "parameter_replication": "SPMD replication",
    "backend_config": "backend tuning",
    "origin": "provenance",
    "statistics": "profile statistics",
    "control-predecessors": "ordering (aotc's IR is side-effect free)",
    "operand_precision": "accelerator precision hints (CPUs compute at full precision)",
    "precision_config": "accelerator precision hints (CPUs compute at full precision)",
    "result_accuracy": "accuracy requests (aotc's math library has its own bounds)",
    "output_to_operand_aliasing": "buffer aliasing hints",
    "indices_are_sorted": "gather/scatter hints",
    "unique_indices": "gather/scatter hints",
    "schedule": "scheduling hints",
}

#: Attributes whose meaning depends on their value: accepted where it is aotc's semantics.
_VALUE_CHECKED: dict[str, Callable[[Instruction, str], bool]] = {
    "algorithm": lambda inst, value: value == "unset",
}


class ForeignAttributes:
    """Attributes of one module that its opcodes' attribute classes did not read."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ignored: Counter[str] = Counter()
        self._pending: list[tuple[Instruction, str, str]] = []

    def add(self, inst: Instruction, key: str, value: str) -> None:
        """Ignore ``key`` if it cannot change ``inst``'s values; decide the rest later (a
        value check needs the operands, which are linked once the computation is read)."""
        if key in IGNORED_ATTRIBUTES:
            self.ignored[key] += 1
        else:
            self._pending.append((inst, key, value))

    def check(self) -> None:
        """An error naming the first attribute that would change the meaning."""
        for inst, key, value in self._pending:
            accepts = _VALUE_CHECKED.get(key)
            if accepts is not None and accepts(inst, value):
                continue
            raise HloError(
                f"{self.source}: {inst.opcode.value} '{inst.name}': attribute "
                f"'{key}={value[:60]}' changes what it computes and aotc does not support it"
            )

    def note(self) -> str | None:
        """One line naming what was ignored, or None."""
        if not self.ignored:
            return None
        items = ", ".join(
            f"{k} ({IGNORED_ATTRIBUTES[k]}; {n} instruction{'s' * (n != 1)})"
            for k, n in sorted(self.ignored.items())
        )
        return f"{self.source}: ignored XLA attributes that do not change the results: {items}"


def unique_names(module: Module, names: NameUniquer) -> int:
    """Rename instructions whose names repeat in another computation (XLA's tools scope names
    by computation; aotc's passes and dumps need them module-wide). The entry computation
    keeps its names (its parameters name the arguments). Returns how many were renamed."""
    comps = [module.entry, *(c for c in module.computations if c is not module.entry)]
    renamed = 0
    for comp in comps:
        for inst in comp.instructions:
            unique = names.get(inst.name)
            renamed += unique != inst.name
            inst.name = unique
    return renamed


# ---- layouts -------------------------------------------------------------------------------

_LAYOUT_TEXT = re.compile(r"\{([\d,\s]*)(:[^{}]*)?\}")


def parse_layout(text: str | None, rank: int) -> tuple[int, ...] | str | None:
    """A layout's ``minor_to_major`` order; None for row-major (or none written); the text
    itself for what changes the bytes beyond an order (tiles, element sizes)."""
    if not text:
        return None
    match = _LAYOUT_TEXT.fullmatch(text)
    if match is None:
        return text
    order = tuple(int(d) for d in re.findall(r"\d+", match[1]))
    extra = re.sub(r"S\(\d+\)", "", match[2] or ":").strip(": ")  # a memory space: no change
    if extra:
        return text
    if not order or order == tuple(range(rank - 1, -1, -1)):
        return None
    return order


def bitcast_by_layout(
    inst: Instruction,
    layouts: dict[int, tuple[int, ...] | str | None],
    names: NameUniquer,
) -> list[Instruction]:
    """Rewrite the bitcast ``inst`` (in place) between the layouts recorded for it and its
    operand into transpose -> reshape -> transpose on logical shapes; returns the
    instructions to insert before it. Nothing to do when both are row-major."""
    operand = inst.operands[0]
    src, dst = layouts.get(id(operand)), layouts.get(id(inst))
    if src is None and dst is None:
        return []
    where = f"bitcast '{inst.name}'"
    if isinstance(src, str) or isinstance(dst, str):
        raise HloError(f"{where}: layout {src if isinstance(src, str) else dst} is unsupported")
    if not isinstance(operand.shape, Shape) or not isinstance(inst.shape, Shape):
        raise HloError(f"{where}: bitcast of a tuple is unsupported")
    if operand.shape.dtype is not inst.shape.dtype:
        raise HloError(f"{where}: changes the element type (that is bitcast-convert)")
    src_major = _major_to_minor(src, operand.shape.rank)
    dst_major = _major_to_minor(dst, inst.shape.rank)
    physical = _transposed(operand, src_major, names)
    new = [] if physical is operand else [physical]
    if dst_major == tuple(range(len(dst_major))):
        inst.opcode, inst.operands, inst.attrs = Opcode.RESHAPE, [physical], None
        return new
    dims = tuple(inst.shape.dims[d] for d in dst_major)
    reshaped = Instruction(names.get("bitcast_reshape"), Opcode.RESHAPE,
                           Shape(inst.shape.dtype, dims), [physical])  # fmt: skip
    inverse = tuple(dst_major.index(d) for d in range(len(dst_major)))
    inst.opcode, inst.operands, inst.attrs = Opcode.TRANSPOSE, [reshaped], Dimensions(inverse)
    return [*new, reshaped]


def _major_to_minor(order: tuple[int, ...] | None, rank: int) -> tuple[int, ...]:
    return tuple(range(rank)) if order is None else tuple(reversed(order))


def _transposed(value: Instruction, perm: tuple[int, ...], names: NameUniquer) -> Instruction:
    assert isinstance(value.shape, Shape)
    if perm == tuple(range(len(perm))):
        return value
    dims = tuple(value.shape.dims[p] for p in perm)
    return Instruction(names.get("bitcast_transpose"), Opcode.TRANSPOSE,
                       Shape(value.shape.dtype, dims), [value], Dimensions(perm))  # fmt: skip
