"""Dead code elimination: instructions no root needs, and computations nothing calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aotc.hlo.ir import Module
from aotc.passes.rewrite import remove_dead


@dataclass(frozen=True)
class DCE:
    """Remove unused instructions from every computation (parameters stay, so signatures do
    not change), then computations the entry no longer reaches."""

    name: ClassVar[str] = "dce"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in module.computations:
            changed |= remove_dead(comp)
        return remove_unreachable_computations(module) or changed


def remove_unreachable_computations(module: Module) -> bool:
    """Drop the computations the entry does not reach; returns whether any went."""
    reachable = {id(c) for c in module.called_computations()} | {id(module.entry)}
    kept = [c for c in module.computations if id(c) in reachable]
    changed = len(kept) != len(module.computations)
    module.computations = kept
    return changed
