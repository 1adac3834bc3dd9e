"""One module's LLVM work as several modules ("chunks"), each optimized and compiled apart.

LLVM optimizes and compiles a module on one core, and that was two thirds of a big model's
compile. ``split_module`` deals the defined functions of a module's text
(``irtypes.module_parts``) into chunks of about equal size; each chunk is a module of its own
with every global and declaration of the whole (LLVM drops what a chunk does not use), its
functions, and declarations of the functions it calls in other chunks. ``workers.py``
compiles the chunks in parallel and ``elf_join.py`` joins their objects into one.

What LLVM would decide across functions stays possible: a function LLVM may inline (no
``noinline``: the GEMM drivers, the level bodies of a dispatching entry) goes with its one
caller, or is copied into each chunk that calls it when there are several (``aotc.divide``,
a dozen lines). A chunk's function that another chunk references becomes ``hidden`` (the join
makes its symbol local again: kernels are named alike in every model). Functions that use a
mutable global (the cpu-level cache) and the exported entries stay in chunk 0, so no
variable is ever defined twice. The chunks depend only on the module's text, never on how
many workers compile them: the object is the same bytes whatever the machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from aotc.codegen.irtypes import ModuleParts

#: The function text of a chunk: MobileNetV2's 6.3 MB make 12 chunks of about 600 KB, each
#: about 0.45 s of LLVM work, while splitting, forking and joining cost under 0.1 s in all. A
#: module with less than twice this is compiled whole, in this process: tiny graphs never fork.
CHUNK_BYTES = 512 * 1024
#: Enough chunks to keep 16 cores busy and balance uneven ones on fewer.
MAX_CHUNKS = 16

_START = re.compile(r"^define ", re.M)
_REFERENCE = re.compile(r'@"((?:[^"\\]|\\.)*)"')
_DEFINE = re.compile(r'^define (internal )?[^@]*@"((?:[^"\\]|\\.)*)"\(')
# Globals written at run time: constants may be copied into every chunk, these may not.
_MUTABLE = re.compile(r'^@"((?:[^"\\]|\\.)*)" = (?:private|internal) (?:unnamed_addr )?global ')


@dataclass
class Chunks:
    """The modules' texts (NUL-terminated, for ``target.parse_ir``) and the names of the
    functions that became ``hidden`` to be called across chunks (local again once joined)."""

    texts: list[bytearray]
    shared: set[str]

    def symbols(self) -> set[bytes]:
        """The ELF symbol names of ``shared`` (LLVM's ``\\XX`` escapes decoded)."""
        return {_unescaped(name) for name in self.shared}


def _unescaped(name: str) -> bytes:
    return re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), name.encode())


@dataclass(frozen=True)
class _Function:
    name: str
    text: str  # from the define line to the closing brace
    internal: bool
    inlinable: bool
    refs: frozenset[str]  # what it references by name (other globals too)


def chunk_count(parts: ModuleParts) -> int:
    """How many chunks ``parts`` is worth: 1 (compile it whole) below ``2 * CHUNK_BYTES``."""
    size = sum(len(text) for text in parts.functions)
    return max(1, min(MAX_CHUNKS, size // CHUNK_BYTES))


def split_module(parts: ModuleParts, count: int) -> Chunks:
    """``parts`` as up to ``count`` modules of about equal function text."""
    functions = _functions(parts.functions)
    mutable = set(_MUTABLE.findall(parts.prelude.decode("latin-1")))
    units, copied = _units(functions, mutable)
    dealt = _deal({r: u for r, u in units.items() if r not in copied}, functions, mutable, count)
    dealt = [names for names in dealt if names]  # an empty module's object differs in its notes
    members = [_with_copies(names, functions, units, copied) for names in dealt]
    where = {name: c for c, names in enumerate(dealt) for name in names}
    shared = {
        ref
        for c, names in enumerate(members)
        for name in names
        for ref in functions[name].refs
        if where.get(ref, c) != c and functions[ref].internal  # exports are global anyway
    }
    order = {name: k for k, name in enumerate(functions)}
    texts = [
        _chunk_text(parts, sorted(names, key=order.__getitem__), functions, shared, where, c)
        for c, names in enumerate(members)
    ]
    return Chunks(texts, shared)


def _functions(texts: list[str]) -> dict[str, _Function]:
    """The defined functions of ``texts`` (each one or more functions), in order, by name."""
    found: dict[str, _Function] = {}
    for text in texts:
        for match in _START.finditer(text):
            fn = _function(text[match.start() : text.index("\n}", match.start()) + 2])
            found[fn.name] = fn
    return found


def _function(text: str) -> _Function:
    head, _, body = text.partition("\n")
    match = _DEFINE.match(head)
    assert match, f"an unexpected define line: {head[:80]!r}"
    refs = frozenset(_REFERENCE.findall(body))
    internal = match.group(1) is not None
    inlinable = " noinline" not in head[head.rindex(")") :]
    return _Function(match.group(2), text, internal, inlinable, refs)


def _units(
    functions: dict[str, _Function], mutable: set[str]
) -> tuple[dict[str, list[str]], set[str]]:
    """The functions in units that go to one chunk together, by their first function (a
    root: not inlinable, exported, or referenced by several functions) with the inlinable
    ones only it leads to; and the roots copied into each chunk that uses them (inlinable,
    using no mutable global)."""
    referrers: dict[str, set[str]] = {name: set() for name in functions}
    for fn in functions.values():
        for ref in fn.refs & referrers.keys():
            referrers[ref].add(fn.name)
    follows = {
        name: next(iter(by))
        for name, by in referrers.items()
        if len(by) == 1 and functions[name].internal and functions[name].inlinable
    }
    units: dict[str, list[str]] = {}
    for name in functions:
        units.setdefault(_root(name, follows), []).append(name)
    copied = {
        root
        for root, names in units.items()
        if functions[root].internal
        and functions[root].inlinable
        and referrers[root]
        and not any(functions[n].refs & mutable for n in names)
    }
    return units, copied


def _root(name: str, follows: dict[str, str]) -> str:
    """The first function on ``name``'s chain of only callers that no one function leads to
    (a cycle of inlinable functions ends where it closes)."""
    seen = {name}
    while name in follows and follows[name] not in seen:
        name = follows[name]
        seen.add(name)
    return name


def _deal(
    units: dict[str, list[str]],
    functions: dict[str, _Function],
    mutable: set[str],
    count: int,
) -> list[set[str]]:
    """The functions of each chunk: chunk 0 has the units with an exported function or one
    using a mutable global, the others go biggest first to the least filled chunk (ties: the
    first)."""
    size = {root: sum(len(functions[n].text) for n in names) for root, names in units.items()}
    chunks: list[set[str]] = [set() for _ in range(count)]
    load = [0] * count
    order = {root: k for k, root in enumerate(units)}
    pinned = [
        root
        for root, names in units.items()
        if any(not functions[n].internal or functions[n].refs & mutable for n in names)
    ]
    free = sorted(set(units) - set(pinned), key=lambda r: (-size[r], order[r]))
    for root in [*pinned, *free]:
        chunk = 0 if root in pinned else load.index(min(load))
        chunks[chunk].update(units[root])
        load[chunk] += size[root]
    return chunks


def _with_copies(
    names: set[str],
    functions: dict[str, _Function],
    units: dict[str, list[str]],
    copied: set[str],
) -> set[str]:
    """``names`` and the copied units they reach, directly or through other copies."""
    members = set(names)
    todo = list(names)
    while todo:
        for ref in functions[todo.pop()].refs & copied:
            new = [n for n in units[ref] if n not in members]
            members.update(new)
            todo.extend(new)
    return members


def _chunk_text(
    parts: ModuleParts,
    names: list[str],
    functions: dict[str, _Function],
    shared: set[str],
    where: dict[str, int],
    chunk: int,
) -> bytearray:
    out = bytearray(parts.prelude)
    for name in sorted(_called_elsewhere(names, functions, where, chunk)):
        out += b"\n" + _declaration(functions[name]).encode()
    for name in names:
        fn = functions[name]
        head, _, body = fn.text.partition("\n")
        if name in shared:
            head = head.replace("define internal ", "define hidden ", 1)
        out += f"\n{head}\n{body}".encode("latin-1")
    out += parts.tail
    return out


def _called_elsewhere(
    names: Iterable[str], functions: dict[str, _Function], where: dict[str, int], chunk: int
) -> set[str]:
    return {ref for name in names for ref in functions[name].refs if where.get(ref, chunk) != chunk}


def _declaration(fn: _Function) -> str:
    """The declaration of a function defined in another chunk, from its define line."""
    head = fn.text.partition("\n")[0].removesuffix("{").rstrip()
    rest = head.removeprefix("define ").removeprefix("internal ")
    return ("declare hidden " if fn.internal else "declare ") + rest
