"""A module's object code made while it is emitted: each cpu level's LLVM work starts while
the next level is being emitted.

An object with several cpu levels (``dispatch.py``) carries a program per level, and no
function of one level's program is called by another's (``emitter._level_functions``). So at
each level's end (``ObjectCode.level``) its functions are taken out of the module
(``irtypes.take_functions``), merged where they differ only in the constants they read
(``variants``; not those something outside the level calls: a kernel emitted once may call a
level's function of identical text), and once the levels taken are worth two chunks they
are dealt into chunks (``split.Splitter``) and handed to the
workers (``workers.Pool``), while this process emits the next level. What waits for a caller
to come (a level's bodies go with the dispatching entry) and the functions every level
shares (kernels emitted once, ``aotc.divide``) are the last part, with the entry points
(``ObjectCode.rest``); then this process compiles chunks too, and the objects are joined
(``elf_join``). Big constants are lifted (``elf_constants``) before each part's globals are
printed. The chunks depend only on the functions, never on the workers' number or speed: the
object is the same bytes for any ``-j``. One-level objects, and targets whose objects are not
joined, are one part, made once the module is emitted.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.binding as llvm
from llvmlite import ir

from aotc.codegen.elf_constants import Lifted, lift_constants
from aotc.codegen.elf_join import join_objects
from aotc.codegen.irtypes import ModuleParts, frozen_texts, module_prelude, take_functions
from aotc.codegen.split import (
    CHUNK_BYTES,
    Splitter,
    chunk_count,
    defined_functions,
    referenced,
)
from aotc.codegen.target import emit_object, optimize_parsed, parse_ir
from aotc.codegen.variants import read_only_arrays, share_constant_variants
from aotc.codegen.workers import ChunkStore, Pool, codegen_workers


class ObjectCode:
    """The object of one module, made part by part (see the module docstring); a context
    manager, whose end stops the workers of a compile that failed."""

    def __init__(self, tm: llvm.TargetMachine, splits: bool, say: Callable[[str], None]) -> None:
        self.tm, self.splits, self.say = tm, splits, say
        self.pool = Pool(tm, codegen_workers() if splits else 1)
        self.splitter = Splitter()
        self.lifted: list[Lifted] = []  # the constants lifted from the parts dealt
        self.held: list[str] = []  # functions of dealt parts that wait for the last part
        self.pending: list[str] = []  # taken levels, not worth chunks yet
        self.sources = ChunkStore()  # the function texts of the parts dealt, if the join fails

    def __enter__(self) -> ObjectCode:
        return self

    def __exit__(self, *_: object) -> None:
        self.pool.__exit__()

    def level(self, module: ir.Module, names: list[str]) -> None:
        """``emitter.emit_module_assigned``'s ``on_level``: take the level's functions ``names``
        out of ``module``; deal the levels taken into chunks once they are worth two."""
        if not self.splits:
            return
        self.lifted += lift_constants(module)
        texts = take_functions(module, names)
        # kernels emitted once may call a level's function of identical text (shared.share)
        keep = referenced(frozen_texts(module), set(names))
        self.pending += share_constant_variants(texts, read_only_arrays(module), keep)
        if sum(map(len, self.pending)) < 2 * CHUNK_BYTES:
            return
        parts = module_prelude(module)
        parts.functions, self.pending = self.pending, []
        for text in parts.functions:
            self.sources.put(bytearray(text, "latin-1"))
        chunks, held = self.splitter.deal(parts, chunk_count(parts), frozen_texts(module), False)
        self.held += held
        self.pool.add(chunks)

    def rest(
        self, functions: list[str], edit: Callable[[list[str], frozenset[str]], list[str]]
    ) -> list[str]:
        """The functions of the last part: the module's rest (``functions``), those dealt
        parts held for it and the levels taken since, ``edit``ed (``variants``) together: the
        kernels emitted once are called by every level's bodies. What the chunks made call
        (``Splitter.exposed``) is kept as it is: they were compiled with its signature."""
        return edit(functions + self.held + self.pending, frozenset(self.splitter.exposed))

    def finish(self, parts: ModuleParts) -> tuple[bytes, Callable[[], str]]:
        """The object, the last part being ``parts`` (spent), and a function printing its
        optimized IR: joined from the chunks where any part was dealt or the module is worth
        two chunks, else LLVM's one object of the whole, compiled in this process."""
        count = chunk_count(parts) if self.splits else 1
        if count > 1 or self.splitter.chunks:
            self.pool.add(self.splitter.deal(parts, count)[0])
            count = self.splitter.chunks
            processes = min(codegen_workers(), count)
            self.say(f"LLVM optimization and object code, {count} parts, {processes} processes")
            joined = join_objects(self.pool.finish(), self.splitter.symbols())
            if joined is not None:
                parts.functions.clear()
                store, tm = self.pool.store, self.tm
                return joined, lambda: "\n".join(_optimized_ir(t, tm) for t in store.texts())
            parts.functions += self._dealt_before(parts.functions)
        optimized = parse_ir(parts.joined())
        self.say("LLVM optimization")
        optimize_parsed(optimized, self.tm)
        self.say("object code")
        return emit_object(optimized, self.tm), lambda: str(optimized)

    def _dealt_before(self, last: list[str]) -> list[str]:
        """The functions of the parts dealt that the last part has not (it has their held
        ones, merged again)."""
        defined = defined_functions(last)
        texts = (text.decode("latin-1") for text in self.sources.texts())
        return [t for name, t in defined_functions(texts).items() if name not in defined]


def _optimized_ir(text: bytearray, tm: llvm.TargetMachine) -> str:
    return str(optimize_parsed(parse_ir(text), tm))
