"""Static libraries (``lib<name>.a``) in the System V / GNU ``ar`` format, written in Python.

No binutils are needed at compile time: the archive carries its own symbol index (the ``/``
member, ``/SYM64/`` past 4 GiB), which GNU ld, gold, lld and the linkers driven by cc read, so
no ``ranlib`` step follows. Every header field that could vary (time, owner, mode) is fixed,
as ``ar D`` does, so equal objects give equal archives. The index lists the global symbols
each ELF object defines; other object formats are refused (their linkers want other indexes).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from aotc.codegen.elf_constants import ElfObject
from aotc.errors import OutputError

MAGIC = b"!<arch>\n"
_HEADER = struct.Struct("16s12s6s6s8s10s2s")  # name, mtime, uid, gid, mode, size, "`\n"
_SHORT_NAME_MAX = 15  # GNU short names end with "/" within the 16-byte field
_WIDTHS = (16, 12, 6, 6, 8, 10, 2)
_MEMBER = (b"0", b"0", b"0", b"644")  # time, owner, group, mode of an object member
_INDEX = (b"0", b"0", b"0", b"0")
_NAMES = (b"", b"", b"", b"")
SYM32_LIMIT = (1 << 32) - 1  # the largest archive a 32-bit index can address


@dataclass(frozen=True)
class Member:
    """One object file in an archive: its name in the archive and its bytes."""

    name: str
    data: bytes


def archive_bytes(members: Sequence[Member]) -> bytes:
    """The archive holding ``members`` in order, with a symbol index first."""
    _check_names(members)
    symbols = [defined_symbols(m.name, m.data) for m in members]
    names, header_names = _long_names(members)
    names_entry = _entry(b"//", names, _NAMES) if names else b""
    bodies = [_entry(h, m.data) for h, m in zip(header_names, members, strict=True)]
    index = _index(symbols, bodies, len(names_entry))
    return MAGIC + index + names_entry + b"".join(bodies)


def _check_names(members: Sequence[Member]) -> None:
    seen: set[str] = set()
    for m in members:
        if not m.name or "/" in m.name or "\n" in m.name:
            raise OutputError(f"{m.name!r}: not a valid archive member name")
        if m.name in seen:
            raise OutputError(f"{m.name}: two archive members with the same name")
        seen.add(m.name)


def _long_names(members: Sequence[Member]) -> tuple[bytes, list[bytes]]:
    """The ``//`` table and each member's header name (``name/`` or ``/offset``)."""
    table = bytearray()
    header_names = []
    for m in members:
        encoded = m.name.encode()
        if len(encoded) <= _SHORT_NAME_MAX:
            header_names.append(encoded + b"/")
        else:
            header_names.append(b"/%d" % len(table))
            table += encoded + b"/\n"
    if len(table) & 1:
        table += b"\n"  # GNU ar pads the table inside its size
    return bytes(table), header_names


def _index(symbols: list[list[str]], bodies: list[bytes], names_size: int) -> bytes:
    """The symbol index member: each symbol's member-header offset, then the names.

    Offsets are 32-bit (``/``) unless the archive reaches 4 GiB (``/SYM64/``, 64-bit).
    """
    count = sum(len(s) for s in symbols)
    strings = b"".join(name.encode() + b"\0" for names in symbols for name in names)
    strings += b"\0" * (len(strings) & 1)  # GNU ar pads the names inside the index's size
    member, word = b"/", 4
    size = _HEADER.size + _padded(word * (count + 1) + len(strings))
    if len(MAGIC) + size + names_size + sum(len(b) for b in bodies) > SYM32_LIMIT:
        member, word = b"/SYM64/", 8
        size = _HEADER.size + _padded(word * (count + 1) + len(strings))
    offsets: list[int] = []
    at = len(MAGIC) + size + names_size
    for names, body in zip(symbols, bodies, strict=True):
        offsets += [at] * len(names)
        at += len(body)
    table = b"".join(n.to_bytes(word, "big") for n in [count, *offsets])
    return _entry(member, table + strings, _INDEX)


def _padded(n: int) -> int:
    return n + (n & 1)


def _entry(name: bytes, data: bytes, ids: tuple[bytes, bytes, bytes, bytes] = _MEMBER) -> bytes:
    """A member header followed by ``data``, padded to an even length.

    ``ids`` are the time, owner, group and mode fields, fixed (as GNU ``ar D`` writes them)
    so that equal objects give byte-identical archives.
    """
    fields = (name, *ids, b"%d" % len(data), b"`\n")
    header = _HEADER.pack(*(f.ljust(w, b" ") for f, w in zip(fields, _WIDTHS, strict=True)))
    return header + data + (b"\n" if len(data) & 1 else b"")


def defined_symbols(name: str, data: bytes) -> list[str]:
    """The global and weak symbols an ELF relocatable object defines, in symbol-table order."""
    if data[:4] != b"\x7fELF":
        raise OutputError(
            f"{name}: not an ELF object; --emit lib writes GNU ar archives for ELF targets "
            "(for Mach-O or COFF targets use --emit obj and the platform's librarian)"
        )
    try:
        elf = ElfObject(data)
        symtab = elf.symtab()
        symbols = zip(elf.symbols(symtab), elf.symbol_names(symtab), strict=True)
    except (struct.error, ValueError, IndexError):
        raise OutputError(f"{name}: the object file is truncated; cannot index it") from None
    return [
        text.decode(errors="replace")
        for symbol, text in symbols
        if symbol.info >> 4 in (_STB_GLOBAL, _STB_WEAK) and symbol.shndx != _SHN_UNDEF
    ]


_STB_GLOBAL, _STB_WEAK = 1, 2
_SHN_UNDEF = 0
