"""Instruction scheduling: an order of each computation's kernels that keeps peak memory low.

Orders are measured by the memory model of ``aotc/hlo/memory.py`` (the one buffer assignment
implements). Two candidate orders are simulated and the one with the lower peak kept: the DFS
post-order (operands first, as the computation prints) and a greedy list schedule like XLA's:
among the ready kernels, take the one that frees the most bytes net of what it allocates.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotc.hlo.ir import Computation, Instruction, Module
from aotc.hlo.memory import MemoryModel, peak_bytes


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
