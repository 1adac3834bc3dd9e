"""The blocks of the entry's loops and conditionals, opened and closed as the program's
markers arrive (``aotc/codegen/program.py``).

A loop is a test block (its condition's kernels, then a branch on the predicate), a body block
that jumps back to the test, and an exit block: a real loop, whatever its trip count. A
conditional switches on its selector to one block per branch (a pred: branch 0 when true;
an index out of range: the last branch), each jumping to a join block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from aotc.codegen.irtypes import I1
from aotc.hlo.ir import Instruction


@dataclass
class ControlFlow:
    """The open loops and conditionals of one function being emitted with ``builder``."""

    builder: ir.IRBuilder
    loops: dict[int, tuple[ir.Block, ir.Block, ir.Block]] = field(default_factory=dict)
    branches: dict[int, tuple[list[ir.Block], ir.Block]] = field(default_factory=dict)

    def is_open(self) -> bool:
        """Whether the builder is inside a loop or a branch."""
        return bool(self.loops or self.branches)

    def start_loop(self, loop: Instruction) -> None:
        b = self.builder
        blocks = tuple(b.append_basic_block(f"{loop.name}.{part}") for part in _LOOP_PARTS)
        b.branch(blocks[0])
        b.position_at_end(blocks[0])
        self.loops[id(loop)] = blocks  # type: ignore[assignment]

    def test(self, loop: Instruction, predicate: ir.Value) -> None:
        _, body, done = self.loops[id(loop)]
        self.builder.cbranch(predicate, body, done)
        self.builder.position_at_end(body)

    def end_loop(self, loop: Instruction) -> None:
        test, _, done = self.loops.pop(id(loop))
        self.builder.branch(test)
        self.builder.position_at_end(done)

    def start_branches(self, cond: Instruction, selector: ir.Value) -> None:
        b = self.builder
        blocks = [b.append_basic_block(f"{cond.name}.branch{k}") for k in range(len(cond.called))]
        join = b.append_basic_block(f"{cond.name}.join")
        if selector.type == I1:
            b.cbranch(selector, blocks[0], blocks[1])
        else:  # an index out of range runs the last branch
            switch = b.switch(selector, blocks[-1])
            for k, block in enumerate(blocks[:-1]):
                switch.add_case(ir.Constant(selector.type, k), block)
        b.position_at_end(blocks[0])
        self.branches[id(cond)] = (blocks, join)

    def next_branch(self, cond: Instruction, k: int) -> None:
        blocks, join = self.branches[id(cond)]
        self.builder.branch(join)
        self.builder.position_at_end(blocks[k])

    def end_branches(self, cond: Instruction) -> None:
        _, join = self.branches.pop(id(cond))
        self.builder.branch(join)
        self.builder.position_at_end(join)


_LOOP_PARTS = ("test", "body", "done")
