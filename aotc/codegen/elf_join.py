"""Relocatable ELF objects of one compile's chunks (``split.py``) joined into one object.

Like-named sections are concatenated in chunk order, each part at its section's alignment;
non-allocated sections that every chunk has alike (``.note.GNU-stack``, ``.ARM.attributes``,
``.riscv.attributes``) are kept once. Symbols keep their section-relative values plus their
part's offset. A relocation moves with the bytes it patches (its offset shifted) and keeps
its type and addend: one against a later chunk's section symbol is pointed at a new local
symbol where that chunk's part of the section starts, so nothing encoded in the section's
bytes (REL targets such as armv7 keep their addends there) or specific to a relocation type
needs changing. Sections with parts of several chunks are not mergeable any more
(``SHF_MERGE`` would let the linker merge a constant away from under such a symbol). A
symbol one chunk leaves undefined and another defines becomes that definition; the functions
made ``hidden`` only to be called across chunks become local again, and undefined symbols
(libm, the constants ``elf_constants`` places) appear once. The output depends only on the
input objects: the same bytes every time.

``join_objects`` returns None for what it does not handle (section groups, extended section
indices, chunks of different machines or flags): the caller compiles the module whole.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from aotc.codegen.elf_constants import ElfObject, Section, Symbol

_SHT_NULL, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 0, 2, 3, 4, 8, 9
_SHF_ALLOC, _SHF_MERGE, _SHF_STRINGS, _SHF_INFO_LINK = 0x2, 0x10, 0x20, 0x40
_STB_LOCAL, _STB_GLOBAL = 0, 1
_STT_NOTYPE, _STT_SECTION, _STT_FILE = 0, 3, 4
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
#: Sections the join rebuilds rather than copies.
_REBUILT = (_SHT_NULL, _SHT_SYMTAB, _SHT_STRTAB, _SHT_REL, _SHT_RELA)


#: The architectures whose objects the join is tested on (cross tests run them under qemu).
_JOINED_ARCHES = ("x86_64", "aarch64", "arm", "riscv64")


def joins_objects(arch: str) -> bool:
    """Whether ELF objects of LLVM's ``arch`` are joined (others are compiled whole)."""
    return arch in _JOINED_ARCHES


class _CannotJoin(Exception):
    pass


@dataclass
class _Out:
    """An output section: its header fields and its parts (chunk, input index, offset)."""

    name: bytes
    type: int
    flags: int
    align: int
    entsize: int
    link: int  # the input section index of chunk 0's linked section (SHF_LINK_ORDER)
    size: int = 0
    parts: list[tuple[int, int, int]] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)


@dataclass
class _Writer:
    """The joined object's bytes as they are written, and its section names."""

    data: bytearray
    names: bytearray = field(default_factory=lambda: bytearray(b"\0"))

    def blob(
        self, name: bytes, kind: int, data: bytes | bytearray, flags: int = 0, link: int = 0,
        info: int = 0, align: int = 1, entsize: int = 0, size: int | None = None,
    ) -> Section:  # fmt: skip
        """``data`` appended at ``align`` as a section ``name``: its header. A NOBITS section
        takes no bytes of the file: ``size`` is its size."""
        align = max(align, 1)
        at = -(-len(self.data) // align) * align
        if kind != _SHT_NOBITS:
            self.data += bytes(at - len(self.data)) + data
        offset = len(self.names)
        self.names += name + b"\0"
        size = len(data) if size is None else size
        return Section(offset, kind, flags, 0, at, size, link, info, align, entsize)

    def finish(self, first: ElfObject, headers: list[Section]) -> bytes:
        """The object: ``headers`` and the section name table after the data, ``first``'s
        file header pointing at them."""
        shstrndx = len(headers)
        name_at = len(self.names)
        self.names += b".shstrtab\0"
        shstrtab = Section(name_at, _SHT_STRTAB, 0, 0, len(self.data), len(self.names), 0, 0, 1, 0)
        headers = [*headers, shstrtab]
        out = self.data + self.names
        shoff = -(-len(out) // 8) * 8
        out += bytes(shoff - len(out))
        out += b"".join(struct.pack(first.section_format, *vars(h).values()) for h in headers)
        header = list(struct.unpack_from(first.header_format, first.data))
        header[6], header[12], header[13] = shoff, len(headers), shstrndx
        struct.pack_into(first.header_format, out, 0, *header)
        return bytes(out)


def join_objects(objects: list[bytes], local: set[bytes]) -> bytes | None:
    """One relocatable object of ``objects`` (``split.py``'s chunks, in order); the defined
    symbols named in ``local`` become local. None where the objects are not joinable."""
    try:
        return _Join([ElfObject(o) for o in objects], local).write()
    except _CannotJoin:
        return None


class _Join:
    def __init__(self, elves: list[ElfObject], local: set[bytes]) -> None:
        self.elves = elves
        self.local = local
        first = elves[0]
        if any(e.identity() != first.identity() for e in elves):
            raise _CannotJoin("chunks of different machines or flags")
        self.outs: list[_Out] = []
        self.where: list[dict[int, tuple[int, int]]] = []  # chunk: input -> (output, offset)
        for c, elf in enumerate(elves):
            self.where.append(self._place(c, elf))
        self.symbols: list[tuple[bytes, Symbol]] = [(b"", Symbol(0, 0, 0, 0, 0, 0))]
        self.index: list[dict[int, int]] = [{} for _ in elves]  # chunk: input -> output symbol
        self._symbols()

    def _place(self, c: int, elf: ElfObject) -> dict[int, tuple[int, int]]:
        """The output section and offset of each of chunk ``c``'s sections."""
        placed = {}
        for k, s in enumerate(elf.sections):
            if s.type in _REBUILT:
                if s.type == _SHT_SYMTAB and s is not elf.sections[elf.symtab()]:
                    raise _CannotJoin("two symbol tables")
                continue
            if s.type not in (1, _SHT_NOBITS) and s.flags & _SHF_ALLOC == 0 and s.link:
                raise _CannotJoin("a section linked to another")
            out = self._output(elf, s)
            data = elf.data[s.offset : s.offset + s.size]
            if s.flags & _SHF_ALLOC == 0 and out.parts:
                if bytes(out.data) != data:
                    raise _CannotJoin(f"{out.name!r} differs between chunks")
                if any(r.type in (_SHT_REL, _SHT_RELA) and r.info == k for r in elf.sections):
                    raise _CannotJoin(f"relocations in {out.name!r}, kept once")
                placed[k] = (self.outs.index(out), 0)
                continue
            start = -(-out.size // max(s.addralign, 1)) * max(s.addralign, 1)
            if s.type != _SHT_NOBITS:
                out.data += bytes(start - len(out.data)) + data
            out.size = start + s.size
            out.align = max(out.align, s.addralign)
            out.parts.append((c, k, start))
            if len({part[0] for part in out.parts}) > 1:
                out.flags &= ~(_SHF_MERGE | _SHF_STRINGS)
            placed[k] = (self.outs.index(out), start)
        return placed

    def _output(self, elf: ElfObject, s: Section) -> _Out:
        name = elf.section_name(s)
        key_flags = s.flags & ~(_SHF_MERGE | _SHF_STRINGS)
        for out in self.outs:
            if out.name == name and out.type == s.type:
                if out.flags & ~(_SHF_MERGE | _SHF_STRINGS) != key_flags:
                    raise _CannotJoin(f"{name!r} with different flags")
                return out
        if s.type == 17 or s.flags & 0x200:  # SHT_GROUP, SHF_GROUP
            raise _CannotJoin("section groups")
        self.outs.append(_Out(name, s.type, s.flags, s.addralign, s.entsize, s.link))
        return self.outs[-1]

    def _symbols(self) -> None:
        """The output symbol table: locals (section symbols first), then globals."""
        for o, _ in enumerate(self.outs):
            self.symbols.append((b"", Symbol(0, _STT_SECTION, 0, o + 1, 0, 0)))
        defined: dict[bytes, tuple[int, int]] = {}
        for c, elf in enumerate(self.elves):
            names = elf.symbol_names(elf.symtab())
            for i, s in enumerate(elf.symbols(elf.symtab())):
                if s.shndx != _SHN_UNDEF and s.info >> 4 != _STB_LOCAL:
                    if names[i] in defined:
                        raise _CannotJoin(f"{names[i]!r} defined twice")
                    defined[names[i]] = (c, i)
        pending: list[tuple[int, int, bytes, Symbol]] = []
        for c, elf in enumerate(self.elves):
            names = elf.symbol_names(elf.symtab())
            for i, s in enumerate(elf.symbols(elf.symtab())):
                if i == 0:
                    continue
                if s.info >> 4 == _STB_LOCAL or (names[i] in self.local and s.shndx):
                    self._add_local(c, i, names[i], s)
                else:
                    pending.append((c, i, names[i], s))
        self._add_globals(pending, defined)

    def _add_local(self, c: int, i: int, name: bytes, s: Symbol) -> None:
        kind = s.info & 0xF
        if kind == _STT_FILE:
            if c == 0:
                self._append(c, i, name, s)
            return
        if kind == _STT_SECTION:
            out, offset = self.where[c][s.shndx]
            if offset == 0:
                self.index[c][i] = out + 1
                return
            at = f".L.aotc.chunk{c}".encode() + self.outs[out].name
            self._append(c, i, at, Symbol(0, _STT_NOTYPE, 0, out + 1, offset, 0))
            return
        self._append(c, i, name, self._moved(c, s, (_STB_LOCAL << 4) | kind, 0))

    def _add_globals(
        self, pending: list[tuple[int, int, bytes, Symbol]], defined: dict[bytes, tuple[int, int]]
    ) -> None:
        """Defined globals as they come; an undefined one as its definition, else once."""
        self.first_global = len(self.symbols)
        undefined: dict[bytes, int] = {}
        later = []
        for c, i, name, s in pending:
            if s.shndx != _SHN_UNDEF:
                self._append(c, i, name, self._moved(c, s, s.info, s.other))
            else:
                later.append((c, i, name, s))
        for c, i, name, s in later:
            if name in defined:
                dc, di = defined[name]
                self.index[c][i] = self.index[dc][di]
            elif name in undefined:
                self.index[c][i] = undefined[name]
            else:
                undefined[name] = len(self.symbols)
                self._append(c, i, name, s)

    def _moved(self, c: int, s: Symbol, info: int, other: int) -> Symbol:
        if s.shndx == _SHN_UNDEF or s.shndx in (_SHN_ABS, _SHN_COMMON):
            return Symbol(s.name, info, other, s.shndx, s.value, s.size)
        if s.shndx >= _SHN_LORESERVE:
            raise _CannotJoin("a reserved section index")
        out, offset = self.where[c][s.shndx]
        return Symbol(s.name, info, other, out + 1, s.value + offset, s.size)

    def _append(self, c: int, i: int, name: bytes, s: Symbol) -> None:
        self.index[c][i] = len(self.symbols)
        self.symbols.append((name, s))

    def write(self) -> bytes:
        """The joined object: header, sections, relocations, symbol and string tables."""
        first = self.elves[0]
        out = _Writer(bytearray(struct.calcsize(first.header_format)))
        relocations = self._relocations()
        headers = [Section(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
        headers += [
            out.blob(s.name, s.type, s.data, s.flags, self._link(s), 0, s.align, s.entsize, s.size)
            for s in self.outs
        ]
        symtab_at = len(headers) + len(relocations)
        word = first.word_bytes()
        for o, (kind, entries) in relocations.items():
            name = (b".rela" if kind == _SHT_RELA else b".rel") + self.outs[o].name
            entsize = first.relocation_size(kind)
            headers.append(
                out.blob(name, kind, entries, _SHF_INFO_LINK, symtab_at, o + 1, word, entsize)
            )
        symtab, strtab = self._symbol_table()
        symbol_size = struct.calcsize(first.symbol_format)
        headers.append(
            out.blob(b".symtab", _SHT_SYMTAB, symtab, 0, symtab_at + 1, self.first_global,
                     word, symbol_size)
        )  # fmt: skip
        headers.append(out.blob(b".strtab", _SHT_STRTAB, strtab))
        return out.finish(first, headers)

    def _link(self, sec: _Out) -> int:
        """An SHF_LINK_ORDER section's link (``.ARM.exidx`` to ``.text``) as an output index."""
        if not sec.link:
            return 0
        c, k, _ = sec.parts[0]
        return self.where[c][sec.link][0] + 1

    def _relocations(self) -> dict[int, tuple[int, bytes]]:
        """Each output section's relocations (kind, packed entries), in chunk order."""
        found: dict[int, tuple[int, list[bytes]]] = {}
        for c, elf in enumerate(self.elves):
            for s in elf.sections:
                if s.type not in (_SHT_REL, _SHT_RELA):
                    continue
                if s.info not in self.where[c]:
                    raise _CannotJoin("relocations for a section not joined")
                o, offset = self.where[c][s.info]
                kind, entries = found.setdefault(o, (s.type, []))
                if kind != s.type:
                    raise _CannotJoin("REL and RELA for one section")
                for r in elf.relocations(s):
                    symbol = self.index[c][r.symbol] if r.symbol else 0
                    entries.append(
                        elf.relocation(s.type, r.offset + offset, symbol, r.type, r.addend)
                    )
        return {o: (kind, b"".join(e)) for o, (kind, e) in sorted(found.items())}

    def _symbol_table(self) -> tuple[bytes, bytes]:
        first = self.elves[0]
        strings = bytearray(b"\0")
        entries = []
        for name, s in self.symbols:
            at = 0
            if name:
                at = len(strings)
                strings += name + b"\0"
            entries.append(first.pack_symbol(Symbol(at, s.info, s.other, s.shndx, s.value, s.size)))
        return b"".join(entries), bytes(strings)
