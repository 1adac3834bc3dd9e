"""The compile report: kernels with their fused ops and costs, memory, and pass timings.

The driver builds it (``build_report``) from what codegen hands back (the buffer assignment:
kernels in order, every buffer's place) and the pipeline's pass timings.
``CompileReport.to_json()`` is what ``aotc compile --report FILE`` writes and ``summary()`` what
``aotc compile -v`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from aotc.codegen.buffers import BufferAssignment
from aotc.codegen.compile import CompiledModel
from aotc.codegen.program import (
    BranchEnd,
    BranchNext,
    BranchStart,
    CarryOut,
    Kernel,
    LoopEnd,
    LoopStart,
    LoopTest,
)
from aotc.codegen.sizes import ObjectSizes
from aotc.errors import OutputError
from aotc.hlo.flops import fused_instructions, kernel_flops
from aotc.hlo.ir import (
    FusionAttrs,
    Instruction,
    Opcode,
    WhileAttrs,
)
from aotc.hlo.memory import byte_size
from aotc.passes import PassTiming


@dataclass(frozen=True)
class KernelReport:
    """One emitted kernel: the entry instruction it computes and what that costs."""

    name: str
    opcode: str  # "fusion" or the unfused instruction's opcode
    kind: str  # fusion kind (kLoop, kInput, kOutput), or "" when not fused
    fused_ops: list[str]  # opcodes of the fused computation's instructions, in order
    flops: int
    bytes_read: int
    bytes_written: int
    in_place: bool


@dataclass(frozen=True)
class LoopReport:
    """One ``while`` loop: where it runs, its trip count if known, what one iteration does."""

    name: str
    computation: str  # the computation the loop is an instruction of
    trip_count: int | None  # proven by the while-loop simplifier, else None
    condition_kernels: list[str]  # kernel names, in order
    body_kernels: list[str]
    carry_bytes: int  # the carried state
    copies_per_iteration: int  # carry elements copied back (the rest are written in place)


@dataclass(frozen=True)
class PassTime:
    name: str
    seconds: float
    changed: bool


@dataclass
class CompileReport:
    """What the compiler produced: kernels (those of loop bodies and branches too, in program
    order), loops, memory, the object's sizes and cpu levels, the time each pass took, and
    the seconds each stage of the compile call took (elapsed; interpreter start-up and imports
    are not in them)."""

    kernels: list[KernelReport]
    temp_bytes: int
    peak_live_bytes: int  # lower bound on temp_bytes for the chosen schedule
    constant_bytes: int
    result_copies: int
    text_bytes: int = 0  # the object's code
    rodata_bytes: int = 0  # its read-only data: constants, packed weights, tables
    cpu_levels: list[int] = field(default_factory=list)  # what <name>_cpu_level() may return
    loops: list[LoopReport] = field(default_factory=list)
    passes: list[PassTime] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the front end dropped, and why
    stage_seconds: dict[str, float] = field(default_factory=dict)  # "front end", "passes", ...

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``json.dump(report.to_json(), f)``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompileReport:
        """The report ``to_json`` gave ``data`` for; a KeyError, TypeError or ValueError when
        ``data`` is not such a dict."""
        fields = dict(data)
        kernels = [KernelReport(**k) for k in fields.pop("kernels")]
        loops = [LoopReport(**loop) for loop in fields.pop("loops")]
        passes = [PassTime(**p) for p in fields.pop("passes")]
        return cls(kernels=kernels, loops=loops, passes=passes, **fields)

    def summary(self) -> str:
        """Short lines for ``aotc compile -v``: kernels, memory, pass time, notes."""
        fused = sum(1 for k in self.kernels if k.opcode == "fusion")
        ratio = self.temp_bytes / self.peak_live_bytes if self.peak_live_bytes else 1.0
        lines = [
            f"kernels: {len(self.kernels)} ({fused} fused)",
            f"temp bytes: {self.temp_bytes} (peak-live bound {self.peak_live_bytes}, x{ratio:.2f})",
            f"constant bytes: {self.constant_bytes}",
            f"object: .text {self.text_bytes} bytes, .rodata {self.rodata_bytes} bytes, "
            f"cpu levels {', '.join(map(str, self.cpu_levels))}",
        ]
        lines += [_loop_line(loop) for loop in self.loops]
        if self.passes:
            total = sum(p.seconds for p in self.passes)
            lines.append(f"passes: {len(self.passes)} runs, {total * 1e3:.1f} ms")
        if self.stage_seconds:
            stages = ", ".join(f"{k} {v:.2f} s" for k, v in self.stage_seconds.items())
            lines.append(f"time: {stages}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _loop_line(loop: LoopReport) -> str:
    trips = "unknown" if loop.trip_count is None else str(loop.trip_count)
    return (
        f"loop {loop.name} in {loop.computation}: trip count {trips}, "
        f"{len(loop.body_kernels)} body kernels, {loop.carry_bytes} carry bytes, "
        f"{loop.copies_per_iteration} copies per iteration"
    )


def write_report(report: CompileReport, path: str | Path) -> None:
    """Write ``report`` as JSON to ``path``."""
    try:
        Path(path).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    except OSError as err:
        raise OutputError(f"{path}: cannot write the report: {err.strerror or err}") from None


def build_report(
    assignment: BufferAssignment,
    timings: Iterable[PassTiming] = (),
    notes: Iterable[str] = (),
    model: CompiledModel | None = None,
    stage_seconds: dict[str, float] | None = None,
) -> CompileReport:
    """The report of a module compiled with ``assignment`` after passes that took ``timings``;
    ``notes`` say what the front end dropped, and why; ``model`` gives the object's sizes and
    cpu levels; ``stage_seconds`` what each stage of the compile took."""
    sizes = model.sizes if model else ObjectSizes(0, 0)
    kernels = [_kernel(k, id(k) in assignment.in_place) for k in assignment.kernels]
    return CompileReport(
        kernels=kernels,
        temp_bytes=assignment.temp_bytes,
        peak_live_bytes=assignment.peak_live_bytes,
        constant_bytes=sum(c.array_shape.byte_size for c in assignment.constants),
        result_copies=len(assignment.copies),
        text_bytes=sizes.text,
        rodata_bytes=sizes.rodata,
        cpu_levels=[level.number for level in model.levels] if model else [],
        passes=[PassTime(t.name, t.seconds, t.changed) for t in timings],
        notes=list(notes),
        loops=loop_reports(assignment),
        stage_seconds=dict(stage_seconds or {}),
    )


def loop_reports(assignment: BufferAssignment) -> list[LoopReport]:
    """The loops of the program, in the order they start, with what each iteration runs."""
    reports: list[LoopReport] = []
    running: list[_Iteration | _Branch] = []  # the loops and conditionals running, innermost last
    for step in assignment.program:
        if isinstance(step, LoopStart):
            running.append(_Iteration(step.loop, _computation(running, assignment.entry)))
        elif isinstance(step, BranchStart):
            running.append(_Branch(step.cond))
        elif isinstance(step, BranchNext):
            _top(running, _Branch).branch = step.branch
        elif isinstance(step, LoopTest):
            _top(running, _Iteration).tested = True
        elif isinstance(step, CarryOut):
            _top(running, _Iteration).copies += 1
        elif isinstance(step, Kernel):
            loops = [r for r in running if isinstance(r, _Iteration)]
            if loops:
                (loops[-1].body if loops[-1].tested else loops[-1].condition).append(step.inst.name)
        elif isinstance(step, LoopEnd):
            reports.append(_top(running, _Iteration).report())
            running.pop()
        elif isinstance(step, BranchEnd):
            running.pop()
    return reports


@dataclass
class _Branch:
    cond: Instruction
    branch: int = 0


@dataclass
class _Iteration:
    loop: Instruction
    computation: str  # where the loop runs
    condition: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    tested: bool = False
    copies: int = 0

    def report(self) -> LoopReport:
        attrs = self.loop.attrs
        trips = attrs.known_trip_count if isinstance(attrs, WhileAttrs) else None
        size = byte_size(self.loop)
        return LoopReport(
            self.loop.name, self.computation, trips, self.condition, self.body, size, self.copies
        )


_Running = TypeVar("_Running", "_Iteration", "_Branch")


def _top(running: list[_Iteration | _Branch], kind: type[_Running]) -> _Running:
    top = running[-1]
    assert isinstance(top, kind), f"{top} is not a {kind.__name__}"
    return top


def _computation(running: list[_Iteration | _Branch], entry: str) -> str:
    """The name of the computation whose steps run now."""
    if not running:
        return entry
    top = running[-1]
    if isinstance(top, _Branch):
        return top.cond.called[top.branch].name
    return top.loop.called[1 if top.tested else 0].name


def _kernel(inst: Instruction, in_place: bool) -> KernelReport:
    fused = fused_instructions(inst)
    kind = inst.attrs_as(FusionAttrs).kind.value if inst.opcode is Opcode.FUSION else ""
    return KernelReport(
        name=inst.name,
        opcode=inst.opcode.value,
        kind=kind,
        fused_ops=[i.opcode.value for i in fused] if inst.opcode is Opcode.FUSION else [],
        flops=kernel_flops(inst),
        bytes_read=sum(byte_size(op) for op in inst.operands),
        bytes_written=byte_size(inst),
        in_place=in_place,
    )
