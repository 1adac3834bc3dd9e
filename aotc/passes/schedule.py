"""Instruction scheduling: an order of each computation's kernels that keeps peak memory low.

Orders are measured by the memory model of ``aotc/hlo/memory.py`` (the one buffer assignment
implements). Two candidate orders are simulated and the one with the lower peak kept: the DFS
post-order (operands first, as the computation prints) and a greedy list schedule like XLA's:
among the ready kernels, take the one that frees the most bytes net of what it allocates.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from aotc.hlo.ir import Computation, Instruction, Module
from aotc.hlo.memory import MemoryModel, peak_bytes


def greedy_schedule(comp: Computation, model: MemoryModel) -> list[Instruction]:
    """List scheduling: run the ready kernel that frees the most bytes net of its output.

    Ready kernels wait in a heap. A kernel's gain changes only when it becomes the last
    reader of a buffer; it is pushed again then and its older entry skipped when popped, so
    a wide graph costs O(n log n), not a scan of everything ready per step.
    """
    dfs = comp.post_order()
    position = {id(i): n for n, i in enumerate(dfs)}
    by_id = {id(i): i for i in dfs}
    users = Computation(comp.name, dfs, comp.root).users()  # reachable users only
    waiting = {id(i): len(set(map(id, i.operands))) for i in dfs}
    readers = _readers(model)
    heap: list[tuple[int, int, int]] = []  # (-gain, position, id): the best first

    def push(key: int) -> None:
        heapq.heappush(heap, (-_gain(by_id[key], model, readers), position[key], key))

    for i in dfs:
        if waiting[id(i)] == 0:
            push(id(i))
    order: list[Instruction] = []
    while heap:
        neg_gain, _, key = heapq.heappop(heap)
        best = by_id[key]
        if waiting[key] < 0 or -neg_gain != _gain(best, model, readers):
            continue  # scheduled already, or a stale entry: a newer one holds its gain
        waiting[key] = -1
        order.append(best)
        for o in model.reads.get(key, ()):
            readers[o].discard(key)
            last = next(iter(readers[o])) if len(readers[o]) == 1 else None
            if last is not None and waiting.get(last) == 0:
                push(last)
        for user in dict.fromkeys(users[key]):
            waiting[id(user)] -= 1
            if waiting[id(user)] == 0:
                push(id(user))
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
