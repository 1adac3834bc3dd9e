"""Buffer assignment: where every value of the entry, and of the loops and branches it runs,
lives.

Arguments and results are the caller's buffers; constants are read-only globals; everything
else a kernel computes lives in the caller's temp buffer. The steps:

1. Order: the entry's program (``program.linearize``): kernels in each computation's
   instruction order (the schedule: the ``schedule`` pass sets it and buffer assignment never
   reorders), loops and conditionals expanded in place between their markers and copies.
   Instructions a root does not need get no kernel.
2. Targets (producers writing straight into another value's buffer): the producer of each
   result writes into the result buffer; a loop's initial element whose value dies at the
   loop becomes the carry buffer (no copy in); a body's result is computed straight into its
   carry buffer when every read of the element's old value in the body comes before (or is
   the producing kernel's own in-place operand); a branch's results go straight into the
   conditional's buffers. The copies made unnecessary are dropped from the program; results
   that are parameters, constants or already written to another result are copied at the
   end. ``reshape`` and ``bitcast`` alias their operand's buffer, ``tuple`` and
   ``get-tuple-element`` only name buffers, and a loop's parameter is its carry buffers.
3. Allocations and liveness: each other value gets an allocation, live from the step that
   first writes it to the last step that reads it (a carry buffer: to the loop's end at
   least, as the next iteration reads it). An elementwise kernel, a fusion or a
   dynamic-update-slice whose operand dies at it, has the same byte size and is read only at
   the output's own index (outside the update, for the last), writes *in place* into that
   operand's allocation.
4. Packing: allocations get 64-byte aligned offsets by best fit (largest first; each takes
   the smallest gap between allocations live at the same time that fits it), so allocations
   with disjoint lifetimes share bytes -- a loop body's temporaries with the code around the
   loop, a branch's with the other branches'. The packing is compared with
   ``peak_live_bytes``, the largest total of (aligned) allocations live at one time.
5. Scratch: kernels that need working memory (a GEMM's packed panels) say how much through
   ``scratch_size``; kernels run one after another, so they share one region of the largest
   size, an allocation live from the first step to the last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from aotc.abi import ALIGN
from aotc.codegen.program import (
    BranchOut,
    BranchStart,
    CarryIn,
    CarryOut,
    Kernel,
    Key,
    LoopEnd,
    LoopTest,
    Stage,
    Step,
    Values,
    element_shapes,
    linearize,
    scheduled,
)
from aotc.errors import CodegenError
from aotc.hlo.fusion_plan import recorded_plan
from aotc.hlo.ir import (
    CONTROL_FLOW,
    ELEMENTWISE,
    Computation,
    Instruction,
    Opcode,
    TupleIndex,
    parameter_number,
)
from aotc.hlo.memory import ALIASING, aligned
from aotc.hlo.shape import Shape


class BufferKind(Enum):
    ARG = "arg"
    RESULT = "result"
    TEMP = "temp"
    CONSTANT = "constant"


@dataclass(frozen=True)
class Buffer:
    """A byte range: argument/result ``index``, a temp ``offset``, or constant ``index``."""

    kind: BufferKind
    index: int = 0
    offset: int = 0
    size: int = 0

    def same_bytes(self, other: Buffer) -> bool:
        return (self.kind, self.index, self.offset) == (other.kind, other.index, other.offset)


Location = Buffer | tuple["Location", ...]


@dataclass(frozen=True)
class ResultCopy:
    result: int
    source: Buffer
    shape: Shape


@dataclass(frozen=True)
class Copy:
    """One array copied between buffers: a carry in or out, a staged element, a branch result."""

    source: Buffer
    target: Buffer
    shape: Shape


@dataclass(eq=False)
class Allocation:
    """Bytes of the temp buffer holding one or more values with chained lifetimes."""

    size: int  # aligned
    start: int  # the step that first writes it
    end: int  # the last step that reads it
    offset: int = 0
    raw: int = -1  # unaligned bytes (default: size); the last allocation needs no padding

    def __post_init__(self) -> None:
        if self.raw < 0:
            self.raw = self.size

    def overlaps(self, other: Allocation) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class BufferAssignment:
    """Where each value lives, and the program that runs: kernels, copies and the markers
    of loops and conditionals (``aotc/codegen/program.py``), in order."""

    locations: dict[int, Location] = field(default_factory=dict)
    program: list[Step] = field(default_factory=list)
    kernels: list[Instruction] = field(default_factory=list)
    constants: list[Instruction] = field(default_factory=list)
    copies: list[ResultCopy] = field(default_factory=list)
    temp_bytes: int = 0
    peak_live_bytes: int = 0  # lower bound on temp_bytes for this schedule
    allocations: list[Allocation] = field(default_factory=list)
    in_place: set[int] = field(default_factory=set)  # ids of kernels writing over an operand
    scratch: Buffer | None = None  # the kernels' shared scratch region, if any needs one
    staged: dict[tuple[int, int], Buffer] = field(default_factory=dict)  # (id(loop), element)
    entry: str = ""  # the name of the computation the program runs

    def location(self, inst: Instruction) -> Location:
        return self.locations[id(inst)]

    def buffer(self, inst: Instruction) -> Buffer:
        location = self.locations[id(inst)]
        assert isinstance(location, Buffer), f"{inst} has a tuple location"
        return location

    def element(self, inst: Instruction, k: int) -> Buffer:
        """The buffer of element ``k`` of ``inst`` (``inst``'s own for an array)."""
        location = self.locations[id(inst)]
        chosen = location[k] if isinstance(location, tuple) else location
        assert isinstance(chosen, Buffer), f"element {k} of {inst} is a tuple"
        return chosen

    def copy(self, step: CarryIn | Stage | CarryOut | BranchOut) -> Copy:
        """The buffers a copy step reads and writes."""
        k = step.element
        if isinstance(step, BranchOut):
            source = self.element(step.cond.called[step.branch].root, k)
            return Copy(source, self.element(step.cond, k), element_shapes(step.cond)[k])
        loop, shape = step.loop, element_shapes(step.loop)[k]
        staged = self.staged.get((id(loop), k))
        if isinstance(step, CarryIn):
            return Copy(self.element(loop.operands[0], k), self.element(loop, k), shape)
        if isinstance(step, Stage):
            assert staged is not None
            return Copy(self.element(loop.called[1].root, k), staged, shape)
        source = staged or self.element(loop.called[1].root, k)
        return Copy(source, self.element(loop, k), shape)


ScratchSize = Callable[[Instruction], int]


def assign_buffers(
    comp: Computation,
    scratch_size: ScratchSize | None = None,
    late: frozenset[int] = frozenset(),
) -> BufferAssignment:
    """Assign buffers for running ``comp`` (the entry) and the computations it runs, in
    instruction order (the schedule).

    ``scratch_size(kernel)`` is the scratch bytes each kernel needs (default: none). The
    results in ``late`` are copied after the last kernel, never written by one: their buffer
    is an argument (an updated variable) that kernels may still read.
    """
    root = comp.root
    if root.opcode is not Opcode.TUPLE:
        raise CodegenError(f"the entry root %{root.name} must be a tuple of the results")
    steps = linearize(comp)
    values = Values(steps)
    targets = _Targets(steps, values)
    targets.designate(root, late)
    program = [s for s in steps if not targets.needless(s)]
    result = BufferAssignment(program=program, entry=comp.name)
    result.kernels = [s.inst for s in program if isinstance(s, Kernel)]
    timeline = _Timeline(program, values, targets)
    allocs = _allocate(timeline, targets)
    result.allocations = list(dict.fromkeys(allocs.values()))
    scratch = _scratch_allocation(result.kernels, len(program), scratch_size)
    if scratch is not None:
        result.allocations.append(scratch)
    result.temp_bytes = pack(result.allocations)
    if scratch is not None:
        result.scratch = Buffer(BufferKind.TEMP, offset=scratch.offset, size=scratch.raw)
    result.peak_live_bytes = peak_live_bytes(result.allocations)
    _locate_all(comp, result, values, targets, allocs)
    _staged_buffers(result, timeline, targets, allocs)
    _result_copies(result, root, values, targets)
    result.in_place = {id(k) for k in result.kernels if _overwrites_an_operand(result, k)}
    return result


# ---- the timeline: what each step reads and writes ---------------------------------------------


@dataclass
class _Timeline:
    """Per step, the value keys it reads and writes (with their shapes); loop bounds."""

    steps: Sequence[Step]
    values: Values
    targets: _Targets | None = None
    reads: list[list[Key]] = field(default_factory=list)
    writes: list[list[tuple[Key, Shape]]] = field(default_factory=list)
    loop_end: dict[int, int] = field(default_factory=dict)  # id(loop) -> its LoopEnd step

    def __post_init__(self) -> None:
        for t, step in enumerate(self.steps):
            reads, writes = self._effects(step)
            self.reads.append([r for r in reads if r is not None])
            self.writes.append(writes)
            if isinstance(step, LoopEnd):
                self.loop_end[id(step.loop)] = t

    def _effects(self, step: Step) -> tuple[list[Key | None], list[tuple[Key, Shape]]]:
        v = self.values
        if isinstance(step, Kernel):
            inst = step.inst
            reads = [v.key(op) for op in inst.operands if not op.is_tuple]
            return reads, [((id(inst), k), s) for k, s in enumerate(element_shapes(inst))]
        if isinstance(step, LoopTest):
            return [v.key(step.loop.called[0].root)], []
        if isinstance(step, BranchStart):
            return [v.key(step.cond.operands[0])], []
        if isinstance(step, (CarryIn, Stage, CarryOut, BranchOut)):
            return self._copy_effects(step)
        return [], []

    def _copy_effects(
        self, step: CarryIn | Stage | CarryOut | BranchOut
    ) -> tuple[list[Key | None], list[tuple[Key, Shape]]]:
        v, k = self.values, step.element
        if isinstance(step, BranchOut):
            value = step.cond.called[step.branch].root
            return [v.element(value, k)], [((id(step.cond), k), _element_shape(step.cond, k))]
        carry = ((id(step.loop), k), _element_shape(step.loop, k))
        if isinstance(step, CarryIn):
            return [v.element(step.loop.operands[0], k)], [carry]
        body_root = step.loop.called[1].root
        staged = stage_key(step.loop, k)
        if isinstance(step, Stage):
            return [v.element(body_root, k)], [(staged, carry[1])]
        if self.targets is not None and self.targets.is_staged(step.loop, k):
            return [staged], [carry]
        return [v.element(body_root, k)], [carry]

    def first_writes(self) -> dict[Key, int]:
        first: dict[Key, int] = {}
        for t, writes in enumerate(self.writes):
            for key, _ in writes:
                first.setdefault(key, t)
        return first

    def last_touches(self) -> dict[Key, int]:
        """The last step reading (or writing) each key; a carry lives to its loop's end."""
        last: dict[Key, int] = {}
        for t in range(len(self.steps)):
            for key in [*self.reads[t], *(k for k, _ in self.writes[t])]:
                last[key] = t
        for key in list(last):
            loop = _carried_by(key, self.loop_end)
            if loop is not None:
                last[key] = max(last[key], self.loop_end[loop])
        return last


def _element_shape(inst: Instruction, k: int) -> Shape:
    return element_shapes(inst)[k]


def stage_key(loop: Instruction, k: int) -> Key:
    """The key of the staging copy of element ``k`` of ``loop``'s body result."""
    return ("stage", id(loop), k)


def _carried_by(key: Key, loop_end: dict[int, int]) -> int | None:
    """id(loop) when ``key`` is one of that loop's carry buffers."""
    if isinstance(key, tuple) and len(key) == 2 and key[0] in loop_end:
        return int(key[0])
    return None


# ---- targets: who writes straight into whose buffer --------------------------------------------


class _Targets:
    """``final(key)``: the buffer a value is written to -- its own, another value's, or a
    result (an ``int``) -- decided before allocation, on the full program."""

    def __init__(self, steps: Sequence[Step], values: Values) -> None:
        self.steps, self.values = steps, values
        self.target: dict[Key, Key | int] = {}
        self.staged: set[tuple[int, int]] = set()
        self.timeline = _Timeline(steps, values)

    def final(self, key: Key) -> Key | int:
        while not isinstance(key, int) and key in self.target:
            key = self.target[key]
        return key

    def is_staged(self, loop: Instruction, k: int) -> bool:
        return (id(loop), k) in self.staged

    def designate(self, root: Instruction, late: frozenset[int]) -> None:
        for j, value in enumerate(root.operands):  # results: first come, first served
            if value.is_tuple:
                raise CodegenError(f"result {j} (%{value.name}) is a tuple; results must be arrays")
            key = self.values.key(value)
            if key is not None and key not in self.target and j not in late:
                self.target[key] = j
        self._mark_staged()
        first, last = self.timeline.first_writes(), self.timeline.last_touches()
        for t, step in enumerate(self.steps):
            if isinstance(step, CarryIn):
                self._alias_initial(step, t, last)
            elif isinstance(step, CarryOut) and not self.is_staged(step.loop, step.element):
                self._direct_body_result(step, t, first)
            elif isinstance(step, BranchOut):
                self._direct_branch_result(step, t, first)

    def _mark_staged(self) -> None:
        """Body results that are another carry element are staged: copied aside before any
        carry buffer is rewritten."""
        for step in self.steps:
            if isinstance(step, Stage):
                key = self.values.element(step.loop.called[1].root, step.element)
                if isinstance(key, tuple) and key[0] == id(step.loop) and key[1] != step.element:
                    self.staged.add((id(step.loop), step.element))

    def _alias_initial(self, step: CarryIn, t: int, last: dict[Key, int]) -> None:
        """An initial value that dies at the loop becomes the carry buffer."""
        key = self.values.element(step.loop.operands[0], step.element)
        if key is None or key in self.target or self._group_last(key, last) != t:
            return
        self.target[key] = (id(step.loop), step.element)

    def _direct_body_result(self, step: CarryOut, t: int, first: dict[Key, int]) -> None:
        loop, k = step.loop, step.element
        carry = (id(loop), k)
        key = self.values.element(loop.called[1].root, k)
        if key is None or key == carry or key in self.target:
            return
        test = next(n for n, s in enumerate(self.steps) if s == LoopTest(loop))
        written = self._group_first(key, first)
        if not test < written < t or not self._reads_done(loop, carry, written):
            return
        self.target[key] = carry

    def _reads_done(self, loop: Instruction, carry: Key, written: int) -> bool:
        """Every read of the carry's old value in the body comes before ``written``, or is an
        operand the kernel at ``written`` overwrites in place."""
        group = self._group(carry)
        for t in range(written, self.timeline.loop_end[id(loop)]):
            reads = any(r in group for r in self.timeline.reads[t])
            if reads and (t > written or not self._in_place_read(self.steps[t], group)):
                return False
        return True

    def _in_place_read(self, step: Step, group: set[Key]) -> bool:
        if not isinstance(step, Kernel):
            return False
        overwritable = set(overwritable_operands(step.inst))
        reading = {n for n, op in enumerate(step.inst.operands) if self.values.key(op) in group}
        return reading <= overwritable

    def _direct_branch_result(self, step: BranchOut, t: int, first: dict[Key, int]) -> None:
        branch = step.cond.called[step.branch]
        key = self.values.element(branch.root, step.element)
        if key is None or key in self.target:
            return
        opened = max(n for n in range(t) if _opens_branch(self.steps[n], step))
        if opened < self._group_first(key, first) < t:
            self.target[key] = (id(step.cond), step.element)

    def _group(self, key: Key) -> set[Key]:
        """Every key written to the same buffer as ``key``."""
        final = self.final(key)
        return {k for k in [*self.target, final, key] if self.final(k) == final}

    def _group_first(self, key: Key, first: dict[Key, int]) -> int:
        return min((first[k] for k in self._group(key) if k in first), default=-1)

    def _group_last(self, key: Key, last: dict[Key, int]) -> int:
        return max((last[k] for k in self._group(key) if k in last), default=-1)

    def needless(self, step: Step) -> bool:
        """Copies whose source already is the target buffer; staging not needed."""
        v = self.values
        if isinstance(step, CarryIn):
            key = v.element(step.loop.operands[0], step.element)
            return key is not None and self._same(key, (id(step.loop), step.element))
        if isinstance(step, Stage):
            return not self.is_staged(step.loop, step.element)
        if isinstance(step, CarryOut):
            if self.is_staged(step.loop, step.element):
                return False
            key = v.element(step.loop.called[1].root, step.element)
            return key is not None and self._same(key, (id(step.loop), step.element))
        if isinstance(step, BranchOut):
            key = v.element(step.cond.called[step.branch].root, step.element)
            return key is not None and self._same(key, (id(step.cond), step.element))
        return False

    def _same(self, a: Key, b: Key) -> bool:
        return self.final(a) == self.final(b)


def _opens_branch(step: Step, out: BranchOut) -> bool:
    """Whether ``step`` is where branch ``out.branch`` of ``out.cond`` starts."""
    from aotc.codegen.program import BranchNext

    if out.branch == 0:
        return isinstance(step, BranchStart) and step.cond is out.cond
    return isinstance(step, BranchNext) and step.cond is out.cond and step.branch == out.branch


# ---- allocations -------------------------------------------------------------------------------


def _allocate(timeline: _Timeline, targets: _Targets) -> dict[Key, Allocation]:
    """An allocation for every final buffer not a result, sharing in place."""
    last: dict[Key, int] = {}
    for key, t in timeline.last_touches().items():
        final = targets.final(key)
        if not isinstance(final, int):
            last[final] = max(last.get(final, t), t)
    allocs: dict[Key, Allocation] = {}
    for t, step in enumerate(timeline.steps):
        for number, (key, shape) in enumerate(timeline.writes[t]):
            final = targets.final(key)
            if isinstance(final, int) or final in allocs:
                continue
            reuse = (
                _in_place_allocation(step, t, allocs, timeline, targets) if number == 0 else None
            )
            alloc = reuse or Allocation(aligned(shape.byte_size), t, t, raw=shape.byte_size)
            alloc.end = max(alloc.end, last[final])
            allocs[final] = alloc
    return allocs


def _in_place_allocation(
    step: Step,
    t: int,
    allocs: dict[Key, Allocation],
    timeline: _Timeline,
    targets: _Targets,
) -> Allocation | None:
    """The allocation of an operand the kernel may overwrite: it dies here, same size."""
    if not isinstance(step, Kernel) or step.inst.is_tuple:
        return None
    size = aligned(step.inst.array_shape.byte_size)
    for number in overwritable_operands(step.inst):
        key = timeline.values.key(step.inst.operands[number])
        final = targets.final(key) if key is not None else None
        alloc = allocs.get(final) if final is not None and not isinstance(final, int) else None
        if alloc is not None and alloc.end == t and alloc.size == size:
            return alloc
    return None


def overwritable_operands(inst: Instruction) -> list[int]:
    """Operands read only at the output element's own index, with the output's dims (a
    dynamic-update-slice reads its operand only outside the update it writes, a scatter each
    element just before it writes it)."""
    if inst.is_tuple:
        return []
    if inst.opcode in ELEMENTWISE:
        numbers = list(range(len(inst.operands)))
    elif inst.opcode is Opcode.FUSION:
        plan = recorded_plan(inst)
        numbers = sorted(plan.in_place) if plan is not None else []
    elif inst.opcode in (Opcode.DYNAMIC_UPDATE_SLICE, Opcode.SCATTER):
        numbers = [0]
    else:
        return []
    dims = inst.array_shape.dims
    return [
        n
        for n in numbers
        if inst.operands[n].array_shape.byte_size == inst.array_shape.byte_size
        and inst.operands[n].array_shape.dims == dims
    ]


def _scratch_allocation(
    kernels: Sequence[Instruction], steps: int, scratch_size: ScratchSize | None
) -> Allocation | None:
    """The shared scratch region, live throughout: the largest any kernel asks for."""
    size = max((scratch_size(k) for k in kernels), default=0) if scratch_size else 0
    if size <= 0:
        return None
    return Allocation(aligned(size), 0, steps, raw=size)


# ---- packing ---------------------------------------------------------------------------------


def pack(allocations: Sequence[Allocation]) -> int:
    """Give every allocation an aligned offset (best fit); returns the bytes used.

    Two orders are tried -- largest first, and by start time -- and the smaller kept.
    """
    orders = [
        sorted(allocations, key=lambda a: (-a.size, a.start)),
        sorted(allocations, key=lambda a: (a.start, -a.size)),
    ]
    best: tuple[int, list[int]] | None = None
    for order in orders:
        total = _best_fit(order)
        if best is None or total < best[0]:
            best = (total, [a.offset for a in allocations])
    if best is None:
        return 0
    for alloc, offset in zip(allocations, best[1], strict=True):
        alloc.offset = offset
    return best[0]


def _best_fit(order: Sequence[Allocation]) -> int:
    placed: list[Allocation] = []
    total = 0
    for alloc in order:
        alloc.offset = _best_gap(alloc, [p for p in placed if p.overlaps(alloc)])
        placed.append(alloc)
        total = max(total, alloc.offset + alloc.raw)
    return total


def _best_gap(alloc: Allocation, live: list[Allocation]) -> int:
    """The offset of the smallest gap among ``live`` allocations that holds ``alloc``."""
    best: tuple[int, int] | None = None  # (gap size, offset)
    cursor = 0
    for other in sorted(live, key=lambda a: a.offset):
        gap = other.offset - cursor
        if gap >= alloc.size and (best is None or gap < best[0]):
            best = (gap, cursor)
        cursor = max(cursor, other.offset + other.size)
    return best[1] if best is not None else cursor


def peak_live_bytes(allocations: Sequence[Allocation]) -> int:
    """The most bytes live at one step: a lower bound for any aligned packing.

    Allocations live together occupy disjoint aligned ranges; only the topmost one may skip
    its padding, so the one with the most padding is counted without it.
    """
    steps = sorted({a.start for a in allocations})
    return max(
        (_live_bytes([a for a in allocations if a.start <= t <= a.end]) for t in steps), default=0
    )


def _live_bytes(live: Sequence[Allocation]) -> int:
    return sum(a.size for a in live) - max((a.size - a.raw for a in live), default=0)


# ---- locations -------------------------------------------------------------------------------


def _locate_all(
    entry: Computation,
    result: BufferAssignment,
    values: Values,
    targets: _Targets,
    allocs: dict[Key, Allocation],
) -> None:
    """Locations of every instruction: the entry's first, then each computation it runs (a
    worklist: their parameters are located through their caller's instructions)."""
    pending = [entry]
    while pending:
        comp = pending.pop()
        for inst in scheduled(comp):
            result.locations[id(inst)] = _locate(
                inst, comp is entry, result, values, targets, allocs
            )
            if inst.opcode in CONTROL_FLOW:
                pending.extend(inst.called)


def _locate(
    inst: Instruction,
    in_entry: bool,
    result: BufferAssignment,
    values: Values,
    targets: _Targets,
    allocs: dict[Key, Allocation],
) -> Location:
    opcode = inst.opcode
    if opcode is Opcode.PARAMETER:
        if id(inst) in values.carrier:
            return result.location(values.carrier[id(inst)])
        if id(inst) in values.passed:
            return result.location(values.passed[id(inst)])
        assert in_entry, f"parameter %{inst.name} of no loop or branch"
        return Buffer(BufferKind.ARG, parameter_number(inst), size=inst.array_shape.byte_size)
    if opcode is Opcode.CONSTANT:
        result.constants.append(inst)
        return Buffer(
            BufferKind.CONSTANT, len(result.constants) - 1, size=inst.array_shape.byte_size
        )
    if opcode is Opcode.TUPLE:
        return tuple(result.location(op) for op in inst.operands)
    if opcode is Opcode.GET_TUPLE_ELEMENT:
        location = result.location(inst.operands[0])
        assert isinstance(location, tuple)
        return location[inst.attrs_as(TupleIndex).index]
    if opcode in ALIASING:
        return result.location(inst.operands[0])
    buffers = [
        _buffer(targets.final((id(inst), k)), shape, allocs)
        for k, shape in enumerate(element_shapes(inst))
    ]
    return tuple(buffers) if inst.is_tuple else buffers[0]


def _buffer(final: Key | int, shape: Shape, allocs: dict[Key, Allocation]) -> Buffer:
    if isinstance(final, int):
        return Buffer(BufferKind.RESULT, final, size=shape.byte_size)
    return Buffer(BufferKind.TEMP, offset=allocs[final].offset, size=shape.byte_size)


def _staged_buffers(
    result: BufferAssignment,
    timeline: _Timeline,
    targets: _Targets,
    allocs: dict[Key, Allocation],
) -> None:
    for t, step in enumerate(timeline.steps):
        if isinstance(step, Stage):
            key, shape = timeline.writes[t][0]
            buffer = _buffer(targets.final(key), shape, allocs)
            result.staged[(id(step.loop), step.element)] = buffer


def _result_copies(
    result: BufferAssignment, root: Instruction, values: Values, targets: _Targets
) -> None:
    for j, value in enumerate(root.operands):
        key = values.key(value)
        if key is None or targets.final(key) != j:
            result.copies.append(ResultCopy(j, result.buffer(value), value.array_shape))


def _overwrites_an_operand(result: BufferAssignment, kernel: Instruction) -> bool:
    location = result.location(kernel)
    outputs = list(location) if isinstance(location, tuple) else [location]
    operands = [result.location(op) for op in kernel.operands if not op.is_tuple]
    return any(
        isinstance(o, Buffer) and isinstance(b, Buffer) and o.same_bytes(b)
        for o in outputs
        for b in operands
    )


__all__ = [
    "ALIGN",
    "Allocation",
    "Buffer",
    "BufferAssignment",
    "BufferKind",
    "Copy",
    "assign_buffers",
    "overwritable_operands",
    "scheduled",
]
