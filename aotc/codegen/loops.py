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
