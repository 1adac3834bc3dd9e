"""Instruction scheduling: an order of each computation's kernels that keeps peak memory low.

Memory model (the one buffer assignment uses): each kernel output owns a buffer of its byte
size, except outputs written straight into a result buffer; parameters and constants own none;
``reshape``, ``bitcast``, ``tuple`` and ``get-tuple-element`` only name a buffer that exists
already. A buffer is live from the kernel that writes it to the last kernel that reads it,
through any of its aliases.

Two candidate orders are simulated and the one with the lower peak kept: the DFS post-order
(operands first, as the computation prints) and a greedy list schedule like XLA's: among the
ready kernels, take the one that frees the most bytes net of what it allocates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotc.abi import ALIGN
from aotc.hlo.ir import Computation, Instruction, Module, Opcode, TupleIndex
from aotc.hlo.shape import Shape, TupleShape

#: Instructions that run no kernel and own no memory.
NO_BUFFER = frozenset({
    Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT,
    Opcode.RESHAPE, Opcode.BITCAST,
})  # fmt: skip


def aligned(size: int) -> int:
    """``size`` rounded up to the temp buffer's alignment."""
    return -(-size // ALIGN) * ALIGN


def byte_size(inst: Instruction) -> int:
    """Bytes of every array ``inst`` writes (all elements of a tuple shape)."""
    shape = inst.shape
    if isinstance(shape, TupleShape):
        return sum(s.byte_size for s in shape.elements if isinstance(s, Shape))
    return shape.byte_size


def owner(inst: Instruction) -> Instruction | None:
    """The kernel whose buffer ``inst``'s value is, or None for parameters and constants."""
    while inst.opcode in (Opcode.RESHAPE, Opcode.BITCAST, Opcode.GET_TUPLE_ELEMENT):
        if inst.opcode is Opcode.GET_TUPLE_ELEMENT and inst.operands[0].opcode is Opcode.TUPLE:
            assert isinstance(inst.attrs, TupleIndex)
            inst = inst.operands[0].operands[inst.attrs.index]
        else:
            inst = inst.operands[0]
    return None if inst.opcode in NO_BUFFER else inst


@dataclass
class MemoryModel:
    """For each kernel: the buffers it reads (by owner id) and the bytes it allocates."""

    sizes: dict[int, int]
    reads: dict[int, set[int]]
    results: set[int]  # owners of result values: they live in the caller's result buffers

    @staticmethod
    def of(comp: Computation) -> MemoryModel:
        root = comp.root  # a loop body's or branch's results live in its caller's buffers too
        values = root.operands if root.opcode is Opcode.TUPLE else [root]
        results = {id(o) for v in values if (o := owner(v)) is not None}
        sizes: dict[int, int] = {}
        reads: dict[int, set[int]] = {}
        for inst in comp.instructions:
            if inst.opcode in NO_BUFFER:
                continue
            sizes[id(inst)] = 0 if id(inst) in results else aligned(byte_size(inst))
            reads[id(inst)] = {id(o) for op in inst.operands if (o := owner(op)) is not None}
        return MemoryModel(sizes, reads, results)


def peak_bytes(order: Sequence[Instruction], model: MemoryModel) -> int:
    """Peak of the live temp bytes when the kernels run in ``order``."""
    kernels = [i for i in order if id(i) in model.sizes]
    last_use = {id(k): t for t, k in enumerate(kernels)}
    for t, k in enumerate(kernels):
        for o in model.reads[id(k)]:
            last_use[o] = t
    live = peak = 0
    dying: dict[int, int] = {}
    for t, k in enumerate(kernels):
        live += model.sizes[id(k)]
        peak = max(peak, live)
        dying[last_use[id(k)]] = dying.get(last_use[id(k)], 0) + model.sizes[id(k)]
        live -= dying.pop(t, 0)
    return peak


def greedy_schedule(comp: Computation, model: MemoryModel) -> list[Instruction]:
    """List scheduling: run the ready kernel that frees the most bytes net of its output."""
    dfs = comp.post_order()
    position = {id(i): n for n, i in enumerate(dfs)}
    users = Computation(comp.name, dfs, comp.root).users()  # reachable users only
    waiting = {id(i): len(set(map(id, i.operands))) for i in dfs}
    readers = _readers(model)
    order: list[Instruction] = []
    ready = [i for i in dfs if waiting[id(i)] == 0]
    while ready:
        best = max(ready, key=lambda i: (_gain(i, model, readers), -position[id(i)]))
        ready.remove(best)
        order.append(best)
        for o in model.reads.get(id(best), ()):
            readers[o].discard(id(best))
        for user in dict.fromkeys(users[id(best)]):
            waiting[id(user)] -= 1
            if waiting[id(user)] == 0:
                ready.append(user)
    return order


def _readers(model: MemoryModel) -> dict[int, set[int]]:
    readers: dict[int, set[int]] = {o: set() for o in model.sizes}
    for k, owners in model.reads.items():
        for o in owners:
            readers.setdefault(o, set()).add(k)
    return readers


def _gain(inst: Instruction, model: MemoryModel, readers: dict[int, set[int]]) -> int:
    """Bytes freed minus bytes allocated; instructions without kernels go first."""
    if id(inst) not in model.sizes:
        return 1 << 62
    freed = sum(model.sizes.get(o, 0) for o in model.reads[id(inst)] if readers[o] == {id(inst)})
    return freed - model.sizes[id(inst)]


def choose_schedule(comp: Computation) -> list[Instruction]:
    """The better (lower peak) of the DFS post-order and the greedy list schedule."""
    model = MemoryModel.of(comp)
    dfs = comp.post_order()
    greedy = greedy_schedule(comp, model)
    return greedy if peak_bytes(greedy, model) < peak_bytes(dfs, model) else dfs


@dataclass(frozen=True)
class Schedule:
    """Reorder the instructions of the entry, loop bodies and branches by ``choose_schedule``.

    A computation's instruction order is its schedule (as XLA's ``HloSchedule``): buffer
    assignment and the emitted code follow it and never reorder, the printer keeps it (so
    ``--dump`` shows it and the text parses back to it), and passes after this one must too.
    """

    name: str = "schedule"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.sequential_computations():
            order = choose_schedule(comp)
            changed |= [id(i) for i in order] != [id(i) for i in comp.instructions]
            comp.instructions = order
        return changed
