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

``Splitter`` deals a module in parts (``stream.py``: a cpu level at a time, while the next is
emitted), each part's chunks as above, with calls between parts declared and ``hidden``
where the callee is defined.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from aotc.codegen.irtypes import ModuleParts

#: The function text of a chunk: MobileNetV2's 6.3 MB make 12 chunks of about 600 KB, each
#: about 0.45 s of LLVM work, while splitting, forking and joining cost under 0.1 s in all. A
#: module with less than this is compiled whole, in this process: tiny graphs never fork. One
#: of up to twice this is two chunks (the transformer's 1.0 MB: 1.55 -> 0.9 s on two cores,
#: the same on one).
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
    """How many chunks ``parts`` is worth: 1 (compile it whole) below ``CHUNK_BYTES``, at
    least 2 from there on."""
    size = sum(len(text) for text in parts.functions)
    return max(1 if size < CHUNK_BYTES else 2, min(MAX_CHUNKS, size // CHUNK_BYTES))


def split_module(parts: ModuleParts, count: int) -> Chunks:
    """``parts`` as up to ``count`` modules of about equal function text."""
    splitter = Splitter()
    texts, _ = splitter.deal(parts, count)
    return Chunks(texts, splitter.shared)


class Splitter:
    """Deals one module's functions into chunks part by part (``deal``), so that a part's
    chunks can be compiled while later parts are still being emitted (``stream.py``). The
    chunks are numbered in the order made; a function defined in one part may call functions
    of another (declared, ``hidden`` where they are defined), and a part's inlinable helpers
    are copied into each of its chunks that call them, as within one part."""

    def __init__(self) -> None:
        self.known: dict[str, _Function] = {}  # dealt in an earlier part (define lines only)
        self.where: dict[str, int] = {}  # the chunk each dealt function is in
        self.shared: set[str] = set()  # made ``hidden``: called from other chunks
        self.exposed: set[str] = set()  # not dealt yet, but declared in a chunk made
        self.chunks = 0

    def symbols(self) -> set[bytes]:
        """The ELF symbol names of ``shared`` (LLVM's ``\\XX`` escapes decoded)."""
        return {_unescaped(name) for name in self.shared}

    def deal(
        self, parts: ModuleParts, count: int, context: Iterable[str] = (), final: bool = True
    ) -> tuple[list[bytearray], list[str]]:
        """The texts of up to ``count`` chunks of ``parts``' functions and, unless ``final``,
        those of the functions held for a later part: the ones nothing calls yet that LLVM may
        inline (they go with their caller: a level's body with the dispatching entry, in chunk
        0 of the last part), exported ones and users of a mutable global (chunk 0 of the last
        part too), with the helpers they would copy. ``context``: functions of the module in
        no part yet that this part's may call (copied where inlinable, else declared) or
        that call this part's (never inlined then, and ``hidden``)."""
        functions = _functions(parts.functions)
        outside = _functions(context)
        everything = {**outside, **functions}
        mutable = set(_MUTABLE.findall(parts.prelude.decode("latin-1")))
        self.exposed |= {ref for fn in outside.values() for ref in fn.refs if ref in functions}
        referrers = _referrers(functions)
        units, copied = _units(functions, referrers, mutable, self.exposed)
        waiting = set()
        if not final:
            waiting = {r for r in units if _waits(r, units, functions, referrers, mutable)}
        free = {r: u for r, u in units.items() if r not in copied and r not in waiting}
        dealt = [names for names in _deal(free, functions, mutable, count) if names]
        # an empty module's object differs in its notes: no empty chunks
        copies = {r: units[r] for r in copied}
        held = _with_copies({n for r in waiting for n in units[r]}, functions, copies)
        copies |= {n: [n] for n, fn in outside.items() if _copyable(fn, mutable, self.exposed)}
        members = [_with_copies(names, everything, copies) for names in dealt]
        where = {name: self.chunks + c for c, names in enumerate(dealt) for name in names}
        self._share(members, held, everything, where)
        order = {name: k for k, name in enumerate(everything)}
        texts = [
            self._chunk_text(parts, sorted(names, key=order.__getitem__), everything)
            for names in members
        ]
        self._dealt(where, functions)
        assert not final or not self.exposed, f"declared, never defined: {sorted(self.exposed)}"
        return texts, [functions[n].text for n in sorted(held, key=order.__getitem__)]

    def _share(
        self,
        members: list[set[str]],
        held: set[str],
        functions: dict[str, _Function],
        where: dict[str, int],
    ) -> None:
        """Make ``hidden`` what this part deals and a function in another chunk calls: a
        chunk of this part, a held function, one of a chunk made before."""
        calls = [(self.chunks + c, name) for c, names in enumerate(members) for name in names]
        calls += [(-1, name) for name in held]
        called = {r for c, name in calls for r in functions[name].refs if where.get(r, c) != c}
        for ref in called | (self.exposed & where.keys()):
            if functions[ref].internal:  # exports are global anyway
                self.shared.add(ref)

    def _dealt(self, where: dict[str, int], functions: dict[str, _Function]) -> None:
        self.where.update(where)
        for name in where:
            head = functions[name].text.partition("\n")[0]
            self.known[name] = replace(functions[name], text=head)
        self.exposed -= where.keys()
        self.chunks = 1 + max(self.where.values(), default=-1)

    def _chunk_text(
        self, parts: ModuleParts, names: list[str], functions: dict[str, _Function]
    ) -> bytearray:
        out = bytearray(parts.prelude)
        for name in sorted(self._declared(names, functions)):
            out += b"\n" + _declaration(functions.get(name) or self.known[name]).encode()
        for name in names:
            head, _, body = functions[name].text.partition("\n")
            if name in self.shared:
                head = head.replace("define internal ", "define hidden ", 1)
            out += f"\n{head}\n{body}".encode("latin-1")
        out += parts.tail
        return out

    def _declared(self, names: list[str], functions: dict[str, _Function]) -> set[str]:
        """The functions a chunk of ``names`` calls in other chunks; those not dealt yet are
        ``exposed`` (``hidden`` where they will be)."""
        inside = set(names)
        calls = {ref for name in names for ref in functions[name].refs} - inside
        declared = {ref for ref in calls if ref in functions or ref in self.known}
        for ref in declared - self.known.keys():
            self.exposed.add(ref)
        for ref in declared & self.known.keys():
            assert ref in self.shared or not self.known[ref].internal, f"{ref} is not shared"
        return declared


def referenced(texts: Iterable[str], names: set[str]) -> frozenset[str]:
    """The ``names`` that the functions defined in ``texts`` reference."""
    return frozenset(ref for fn in _functions(texts).values() for ref in fn.refs if ref in names)


def defined_functions(texts: Iterable[str]) -> dict[str, str]:
    """The text of each function defined in ``texts``, by name."""
    return {name: fn.text for name, fn in _functions(texts).items()}


def _functions(texts: Iterable[str]) -> dict[str, _Function]:
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


def _waits(
    root: str,
    units: dict[str, list[str]],
    functions: dict[str, _Function],
    referrers: dict[str, set[str]],
    mutable: set[str],
) -> bool:
    """Whether the unit of ``root`` waits for a later part (``Splitter.deal``)."""
    if functions[root].inlinable and not referrers[root]:
        return True
    return any(not functions[n].internal or functions[n].refs & mutable for n in units[root])


def _referrers(functions: dict[str, _Function]) -> dict[str, set[str]]:
    """The functions of ``functions`` that reference each one by name."""
    referrers: dict[str, set[str]] = {name: set() for name in functions}
    for fn in functions.values():
        for ref in fn.refs & referrers.keys():
            referrers[ref].add(fn.name)
    return referrers


def _copyable(fn: _Function, mutable: set[str], exposed: set[str]) -> bool:
    """Whether a copy of ``fn`` may be in each chunk that calls it."""
    return fn.internal and fn.inlinable and not fn.refs & mutable and fn.name not in exposed


def _units(
    functions: dict[str, _Function],
    referrers: dict[str, set[str]],
    mutable: set[str],
    exposed: set[str],
) -> tuple[dict[str, list[str]], set[str]]:
    """The functions in units that go to one chunk together, by their first function (a
    root: not inlinable, exported, referenced by several functions or ``exposed`` to
    earlier chunks) with the inlinable ones only it leads to; and the roots copied into each
    chunk that uses them (inlinable, using no mutable global, not exposed)."""
    follows = {
        name: next(iter(by))
        for name, by in referrers.items()
        if len(by) == 1
        and functions[name].internal
        and functions[name].inlinable
        and name not in exposed
    }
    units: dict[str, list[str]] = {}
    for name in functions:
        units.setdefault(_root(name, follows), []).append(name)
    copied = {
        root
        for root, names in units.items()
        if _copyable(functions[root], mutable, exposed)
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
    names: set[str], functions: dict[str, _Function], copies: dict[str, list[str]]
) -> set[str]:
    """``names`` and the ``copies`` (units, by root) they reach, directly or through other
    copies."""
    members = set(names)
    todo = list(names)
    while todo:
        for ref in functions[todo.pop()].refs & copies.keys():
            new = [n for n in copies[ref] if n not in members]
            members.update(new)
            todo.extend(new)
    return members


def _declaration(fn: _Function) -> str:
    """The declaration of a function defined in another chunk, from its define line."""
    head = fn.text.partition("\n")[0].removesuffix("{").rstrip()
    rest = head.removeprefix("define ").removeprefix("internal ")
    return ("declare hidden " if fn.internal else "declare ") + rest
