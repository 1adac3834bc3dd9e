"""One topological sort (Kahn's algorithm) for every graph aotc orders: GraphDefs, the
functionalizer's graph and nesting, the HTML dump's layers."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def topological_order(
    preds: Mapping[K, Iterable[K]], rank: Callable[[K], int]
) -> tuple[list[K], list[K]]:
    """The keys of ``preds``, each after its predecessors (which must be keys too); among the
    keys ready at the same time the lowest ``rank`` first, so the order is deterministic.
    Returns the order and the keys it could not place (on or behind a cycle), in key order."""
    waiting: dict[K, int] = {}
    succs: dict[K, list[K]] = {key: [] for key in preds}
    for key, inputs in preds.items():
        unique = set(inputs)
        waiting[key] = len(unique)
        for p in unique:
            succs[p].append(key)
    ready = [(rank(key), i, key) for i, (key, n) in enumerate(waiting.items()) if n == 0]
    heapq.heapify(ready)
    order: list[K] = []
    while ready:
        _, _, key = heapq.heappop(ready)
        order.append(key)
        for s in succs[key]:
            waiting[s] -= 1
            if waiting[s] == 0:
                heapq.heappush(ready, (rank(s), len(order), s))
    return order, [key for key, n in waiting.items() if n > 0]
