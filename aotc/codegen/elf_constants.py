"""Big constants placed into the ELF object by aotc, not by LLVM.

LLVM holds a constant's bytes once in its module, once in the assembler's section data and
once more in the object it writes out; a 550 MB model's weights were five copies at the end
of the compile. Instead ``lift_constants`` turns each big read-only global into a hidden
external declaration of the same type and alignment before LLVM sees the module (LLVM reads
them as constant memory, but cannot fold loads from bytes it does not have, which it would
not do for big arrays anyway), and ``place_constants`` adds them to the object LLVM wrote:
one new ``SHF_ALLOC`` section, ``.rodata.aotc``, holding the bytes at their alignment (the
object is allocated at its full size, then each constant written into its place), and
the undefined symbols LLVM's relocations name become local symbols defined in it. Local
symbols come first in an ELF symbol table, so the table is reordered and every relocation's
symbol index (and a group's signature) follows; nothing else in the object moves. The result
is one ordinary relocatable object, byte for byte the same for the same input.

Objects of other formats (Mach-O, COFF) keep their constants inside LLVM's module.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from aotc.codegen.irtypes import Data, LazyBytes, constant_data
from aotc.errors import CodegenError

#: Read-only globals of at least this many bytes are placed by aotc: smaller ones (lookup
#: tables, shuffle masks) stay in LLVM's module, where it may fold loads from them.
LIFT_BYTES = 4096

SECTION_NAME = b".rodata.aotc"

_SHT_SYMTAB, _SHT_RELA, _SHT_REL, _SHT_GROUP, _SHT_SYMTAB_SHNDX = 2, 4, 9, 17, 18
_SHT_PROGBITS, _SHF_ALLOC = 1, 2
_SHT_LLVM_ADDRSIG = 0x6FFF4C03
_STB_LOCAL, _STT_OBJECT = 0, 1
_SHN_LORESERVE = 0xFF00


@dataclass(frozen=True)
class Lifted:
    """A constant's bytes taken out of the LLVM module: its symbol, bytes and alignment."""

    name: str
    data: Data
    align: int


def lifts_constants(object_format: str, arch: str) -> bool:
    """Whether objects of this format and architecture get their big constants from aotc
    (MIPS64's relocations pack their symbol index differently: LLVM keeps its constants)."""
    return object_format == "ELF" and not arch.startswith("mips64")


def lift_constants(module: ir.Module, min_bytes: int = LIFT_BYTES) -> list[Lifted]:
    """Turn ``module``'s read-only globals of ``min_bytes`` or more into hidden external
    declarations; their bytes, in module order, for ``place_constants``."""
    lifted = []
    for gv in module.global_values:
        data = constant_data(gv)
        if data is None or len(data) < min_bytes:
            continue
        lifted.append(Lifted(gv.name, data, gv.align or 1))
        gv.initializer = None
        gv.linkage = "external"
        gv.storage_class = "hidden"  # printed where the visibility goes: dso_local, no GOT
    return lifted


def place_constants(obj: bytes, lifted: list[Lifted]) -> bytes:
    """``obj`` (LLVM's ELF object) with the ``lifted`` constants its symbols name defined in
    a section of their own. ``lifted`` is emptied as its bytes are written in, so no
    constant's bytes are held beside the object but the literal they view, and packed
    weights (``LazyBytes``) are packed straight into it."""
    if not lifted:
        return obj
    elf = ElfObject(obj)
    symtab = elf.symtab()
    names = elf.symbol_names(symtab)
    wanted = {c.name.encode(): c for c in lifted}
    lifted.clear()
    symbols = elf.symbols(symtab)
    placed = [i for i, s in enumerate(symbols) if s.shndx == 0 and names[i] in wanted]
    if not placed:
        return obj
    if elf.shnum + 1 >= _SHN_LORESERVE:
        raise CodegenError(f"the object has {elf.shnum} sections: too many to add constants")
    constants = [wanted.pop(names[i]) for i in placed]
    layout, size, align = _layout(constants)
    out = bytearray(obj)
    where = [(elf.shnum, off, n) for off, n in layout]
    elf.renumber(out, symtab, elf.reorder_symbols(out, symtab, placed, where))
    names_at = len(out)
    data_at = _aligned(names_at + len(elf.shstrtab) + len(SECTION_NAME) + 1, align)
    headers_at = _aligned(data_at + size, 8)
    headers = elf.section_headers(names_at, (data_at, size, align))
    elf.write_header(out, headers_at)
    stream = io.BytesIO()
    stream.write(out)
    stream.write(elf.shstrtab + SECTION_NAME + b"\0")
    stream.seek(headers_at)
    stream.write(headers)  # the object at its full size: the constants are written in place
    with stream.getbuffer() as view:
        _write_constants(np.frombuffer(view, np.uint8), data_at, layout, constants)
    return stream.getvalue()  # the buffer itself, not a copy, once no view is left


def _write_constants(
    out: np.ndarray, data_at: int, layout: list[tuple[int, int]], constants: list[Lifted]
) -> None:
    """Each constant's bytes at its place in ``out`` (packed weights packed right there);
    ``constants`` is emptied as they are written, freeing what only it held."""
    for off, n in layout:
        data = constants.pop(0).data
        place = out[data_at + off : data_at + off + n]
        if isinstance(data, LazyBytes):
            data.fill(place)
        else:
            place[:] = np.frombuffer(data, np.uint8)


def _layout(constants: list[Lifted]) -> tuple[list[tuple[int, int]], int, int]:
    """(offset, size) of each constant in the new section, its size and alignment."""
    layout, end = [], 0
    for c in constants:
        start = _aligned(end, c.align)
        layout.append((start, len(c.data)))
        end = start + len(c.data)
    return layout, end, max(c.align for c in constants)


def _aligned(x: int, align: int) -> int:
    return -(-x // align) * align


@dataclass(frozen=True)
class Symbol:
    """An ELF symbol table entry."""

    name: int
    info: int
    other: int
    shndx: int
    value: int
    size: int


@dataclass(frozen=True)
class Relocation:
    """A relocation entry (``addend`` 0 in REL sections, whose addends are in the bytes)."""

    offset: int
    symbol: int
    type: int
    addend: int


@dataclass(frozen=True)
class Section:
    """An ELF section header."""

    name: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int


class ElfObject:
    """The parts of a relocatable ELF object (32 or 64 bits, either byte order) that adding
    a section of constants touches."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
            raise CodegenError("LLVM wrote an object aotc cannot read as ELF (a bug in aotc)")
        self.data = data
        self.wide = data[4] == 2
        self.order = "<" if data[5] == 1 else ">"
        word = "Q" if self.wide else "I"
        self.header_format = f"{self.order}16sHHI{word}{word}{word}IHHHHHH"
        self.section_format = f"{self.order}II{word}{word}{word}{word}II{word}{word}"
        self.symbol_format = f"{self.order}IBBHQQ" if self.wide else f"{self.order}IIIBBH"
        header = struct.unpack_from(self.header_format, data)
        self.shoff, self.shnum, self.shstrndx = header[6], header[12], header[13]
        size = struct.calcsize(self.section_format)
        self.sections = [
            Section(*struct.unpack_from(self.section_format, data, self.shoff + i * size))
            for i in range(self.shnum)
        ]
        strtab = self.sections[self.shstrndx]
        self.shstrtab = data[strtab.offset : strtab.offset + strtab.size]

    def section_name(self, s: Section) -> bytes:
        return self.shstrtab[s.name : self.shstrtab.index(b"\0", s.name)]

    def symtab(self) -> int:
        tables = [i for i, s in enumerate(self.sections) if s.type == _SHT_SYMTAB]
        if len(tables) != 1 or any(s.type == _SHT_SYMTAB_SHNDX for s in self.sections):
            raise CodegenError("LLVM wrote an object aotc cannot add constants to (a bug)")
        return tables[0]

    def symbols(self, symtab: int) -> list[Symbol]:
        s = self.sections[symtab]
        raw = self.data[s.offset : s.offset + s.size]
        fields = struct.iter_unpack(self.symbol_format, raw)
        if self.wide:
            return [Symbol(*f) for f in fields]
        return [Symbol(n, info, other, shndx, v, sz) for n, v, sz, info, other, shndx in fields]

    def symbol_names(self, symtab: int) -> list[bytes]:
        strings = self.sections[self.sections[symtab].link]
        table = self.data[strings.offset : strings.offset + strings.size]
        return [table[s.name : table.index(b"\0", s.name)] for s in self.symbols(symtab)]

    def reorder_symbols(
        self,
        out: bytearray,
        symtab: int,
        placed: list[int],
        where: list[tuple[int, int, int]],
    ) -> list[int]:
        """Write the symbol table with the ``placed`` symbols defined (section, offset, size)
        and moved after the other locals; the new index of each old one."""
        table = self.sections[symtab]
        symbols = self.symbols(symtab)
        first_global = table.info
        defined = {
            i: Symbol(symbols[i].name, (_STB_LOCAL << 4) | _STT_OBJECT, 0, *at)
            for i, at in zip(placed, where, strict=True)
        }
        others = [i for i in range(first_global, len(symbols)) if i not in defined]
        old_of_new = [*range(first_global), *placed, *others]
        entries = b"".join(self.pack_symbol(defined.get(i, symbols[i])) for i in old_of_new)
        out[table.offset : table.offset + table.size] = entries
        self.sections[symtab] = _replace(table, info=first_global + len(placed))
        new_of_old = [0] * len(symbols)
        for new, old in enumerate(old_of_new):
            new_of_old[old] = new
        return new_of_old

    def pack_symbol(self, s: Symbol) -> bytes:
        """A symbol table entry's bytes."""
        if self.wide:
            return struct.pack(
                self.symbol_format, s.name, s.info, s.other, s.shndx, s.value, s.size
            )
        return struct.pack(self.symbol_format, s.name, s.value, s.size, s.info, s.other, s.shndx)

    def renumber(self, out: bytearray, symtab: int, new_of_old: list[int]) -> None:
        """Point every relocation and group signature of ``symtab`` at the new indices."""
        for k, s in enumerate(self.sections):
            if s.link != symtab:
                continue
            if s.type in (_SHT_REL, _SHT_RELA):
                out[s.offset : s.offset + s.size] = self._relocations(s, new_of_old)
            elif s.type == _SHT_GROUP:
                self.sections[k] = _replace(s, info=new_of_old[s.info])
            elif s.type == _SHT_LLVM_ADDRSIG and s.size:
                raise CodegenError("LLVM wrote an address-significance table (a bug in aotc)")

    def _relocations(self, s: Section, new_of_old: list[int]) -> bytes:
        return b"".join(
            self.relocation(s.type, r.offset, new_of_old[r.symbol], r.type, r.addend)
            for r in self.relocations(s)
        )

    def _relocation_format(self, kind: int) -> str:
        word = "Q" if self.wide else "I"
        addend = ("q" if self.wide else "i") if kind == _SHT_RELA else ""
        return f"{self.order}{word}{word}{addend}"

    def relocation_size(self, kind: int) -> int:
        """The bytes of one entry of a REL or RELA section."""
        return struct.calcsize(self._relocation_format(kind))

    def relocations(self, s: Section) -> list[Relocation]:
        """The entries of the REL or RELA section ``s``."""
        shift = 32 if self.wide else 8
        raw = self.data[s.offset : s.offset + s.size]
        return [
            Relocation(r[0], r[1] >> shift, r[1] & ((1 << shift) - 1), r[2] if len(r) > 2 else 0)
            for r in struct.iter_unpack(self._relocation_format(s.type), raw)
        ]

    def relocation(self, kind: int, offset: int, symbol: int, type_: int, addend: int) -> bytes:
        """One packed entry of a REL (``addend`` ignored) or RELA section."""
        info = symbol << (32 if self.wide else 8) | type_
        extra = (addend,) if kind == _SHT_RELA else ()
        return struct.pack(self._relocation_format(kind), offset, info, *extra)

    def identity(self) -> tuple[object, ...]:
        """What objects joined into one must share: class, byte order, type, machine, flags."""
        header = struct.unpack_from(self.header_format, self.data)
        return (self.wide, self.order, header[1], header[2], header[7])

    def word_bytes(self) -> int:
        return 8 if self.wide else 4

    def section_headers(self, names_at: int, data: tuple[int, int, int]) -> bytes:
        """The section headers with the constants' section (offset, size, alignment) added
        and the section names, one longer, at ``names_at``."""
        names = self.sections[self.shstrndx]
        sections = list(self.sections)
        sections[self.shstrndx] = _replace(
            names, offset=names_at, size=names.size + len(SECTION_NAME) + 1
        )
        offset, size, align = data
        sections.append(
            Section(names.size, _SHT_PROGBITS, _SHF_ALLOC, 0, offset, size, 0, 0, align, 0)
        )
        return b"".join(struct.pack(self.section_format, *vars(s).values()) for s in sections)

    def write_header(self, out: bytearray, shoff: int) -> None:
        """The ELF header in ``out``: the section headers at ``shoff``, one more of them."""
        header = list(struct.unpack_from(self.header_format, self.data))
        header[6], header[12] = shoff, self.shnum + 1
        struct.pack_into(self.header_format, out, 0, *header)


def _replace(s: Section, **changes: int) -> Section:
    return Section(**{**vars(s), **changes})
