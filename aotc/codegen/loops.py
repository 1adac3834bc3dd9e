"""Loop helpers for IRBuilder code: counted loops and loop nests over a shape.

Loop counters and accumulators are allocas hoisted to the function's entry block (as clang
and numba do), so ``mem2reg``/SROA turn them into SSA values and the vectorizer sees canonical
loops.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.irtypes import I64, add_nuw, alloca, i64


def function_builder(fn: ir.Function) -> ir.IRBuilder:
    """A builder for a new function body, whose entry block is reserved for allocas.

    The entry block holds only allocas and a branch to the body, so hoisting an alloca never
    moves an instruction under the feet of the builder that is writing the body.
    """
    allocas = fn.append_basic_block("allocas")
    body = fn.append_basic_block("body")
    ir.IRBuilder(allocas).branch(body)
    return ir.IRBuilder(body)


def entry_alloca(builder: ir.IRBuilder, ty: ir.Type, name: str = "") -> ir.AllocaInstr:
    """An alloca in the current function's entry block (made by ``function_builder``)."""
    entry = builder.function.entry_basic_block
    assert entry.is_terminated and entry.name == "allocas", "use loops.function_builder"
    hoisted = ir.IRBuilder(entry)
    hoisted.position_before(entry.terminator)
    return alloca(hoisted, ty, name)


@dataclass
class Split:
    """The part of a kernel's outer loop one call computes: iterations ``[lo, hi)`` (``i64``
    arguments of the kernel's function) of the ``units`` the loop has.

    The emitter offers a split to a kernel large enough to share among threads; the kernel
    claims it (``claim``) at the one loop whose iterations are independent (each output
    element computed by one iteration), or leaves it unclaimed and runs whole. The multi-core
    entry point then calls the function once per thread with consecutive ranges.
    """

    lo: ir.Value
    hi: ir.Value
    units: int | None = None  # set by ``claim``

    def claim(self, units: int) -> tuple[ir.Value, ir.Value]:
        """The range to run of a loop of ``units`` iterations: one loop per kernel, or several
        over the same dimension (a concatenation's parts)."""
        assert self.units in (None, units), "a kernel splits one loop"
        self.units = units
        return self.lo, self.hi


@contextmanager
def for_range(
    builder: ir.IRBuilder,
    count: int | ir.Value,
    name: str = "i",
    start: int | ir.Value = 0,
) -> Iterator[ir.Value]:
    """``for (i64 i = start; i < count; ++i)``; yields ``i`` with the builder inside the body."""
    counter = entry_alloca(builder, I64, f"{name}.addr")
    builder.store(i64(start) if isinstance(start, int) else start, counter)
    trip = i64(count) if isinstance(count, int) else count
    cond = builder.append_basic_block(f"{name}.cond")
    body = builder.append_basic_block(f"{name}.body")
    end = builder.append_basic_block(f"{name}.end")
    builder.branch(cond)
    builder.position_at_end(cond)
    index = builder.load(counter, name=name, typ=I64)
    builder.cbranch(builder.icmp_signed("<", index, trip), body, end)
    builder.position_at_end(body)
    yield index
    builder.store(add_nuw(builder, index, i64(1)), counter)
    builder.branch(cond)
    builder.position_at_end(end)


@contextmanager
def loop_nest(
    builder: ir.IRBuilder, dims: Sequence[int], name: str = "d", split: Split | None = None
) -> Iterator[list[ir.Value]]:
    """Nested ``for_range`` loops over ``dims`` (outermost first); yields the multi-index.

    Dimensions of size 1 get no loop (their index is the constant 0). With ``split``, the
    outermost loop runs only the split's range (claimed here). The loops are entered on one
    ``ExitStack``, so a nest costs no recursion whatever its rank.
    """
    outer = next((d for d, size in enumerate(dims) if size > 1), None)
    with ExitStack() as loops:
        index = []
        for d, size in enumerate(dims):
            if size == 1:
                index.append(i64(0))
                continue
            start, stop = (0, size) if split is None or d != outer else split.claim(size)
            loop = for_range(builder, stop, f"{name}{d}", start)
            index.append(loops.enter_context(loop))
        yield index


def loop_hint(module: ir.Module, option: str) -> ir.MDValue:
    """The loop ID ``!{self, !{option}}`` (one per module: ``add_metadata`` caches)."""
    value = module.add_metadata([ir.MetaDataString(module, option)])
    loop_id = module.add_metadata([ir.MetaDataString(module, "aotc.loop"), value])
    loop_id.operands = (loop_id, value)  # loop IDs refer to themselves
    return loop_id


def mark_back_edges(
    blocks: Sequence[ir.Block],
    hint: ir.MDValue,
    replace: bool = True,
    header: ir.Block | None = None,
) -> None:
    """Give ``hint`` to each loop closed within ``blocks`` (in function order), or only to
    those with no hint yet (``replace=False``), or only to the one whose test is ``header``:
    its back edge is a branch to the same or an earlier block (``for_range``'s latch)."""
    position = {id(block): k for k, block in enumerate(blocks)}
    for k, block in enumerate(blocks):
        term = block.terminator
        if not isinstance(term, ir.Branch) or position.get(id(term.operands[0]), k + 1) > k:
            continue
        if header is not None and term.operands[0] is not header:
            continue
        if replace or "llvm.loop" not in term.metadata:
            term.set_metadata("llvm.loop", hint)


def leave_vector_loops_rolled(fn: ir.Function) -> None:
    """Keep LLVM from unrolling the loops of a kernel that computes in explicit vectors.

    Such a kernel has chosen its unrolling itself (its register tile, its vector width);
    LLVM's unroller only copies its large bodies again. On MobileNetV2 that was 1.3 of 11 CPU
    seconds of compile time (LLVM optimization and code generation), and run time is the same
    without it (the bench models within noise, identical outputs). Loops with a hint of their
    own keep it, and kernels in scalars keep the unroller: LeNet's 2x2 max pool, in scalars,
    runs 8x slower without it.
    """
    vector = any(
        isinstance(inst.type, ir.VectorType) for block in fn.blocks for inst in block.instructions
    )
    if vector:
        leave_loops_rolled(fn)


def leave_loops_rolled(fn: ir.Function) -> None:
    """``llvm.loop.unroll.disable`` on each loop of ``fn`` without a hint of its own."""
    mark_back_edges(fn.blocks, loop_hint(fn.module, "llvm.loop.unroll.disable"), False)


# Innermost loops of this many iterations are kept for the loop vectorizer where it should
# vectorize them: with a constant trip count LLVM fully unrolls a loop of up to a few hundred
# iterations before vectorizing, and then vectorizes the loop outside it (a strided gather) or
# leaves the unrolled code to the SLP vectorizer (an add reduction: one serial scalar chain).
# Longer loops are never fully unrolled; shorter ones are better straight-line code.
KEEP_LOOP = range(16, 513)
