"""What an object file costs in flash: its code and read-only data, read from its sections."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

from aotc.codegen.elf_constants import ElfObject

# Read-only data sections by object format: ELF (.lrodata: x86-64's large data, .srodata:
# RISC-V's small data), Mach-O (__const, __literal*), COFF (.rdata).
_SHF_EXECINSTR = 4
_RODATA = (".rodata", ".lrodata", ".srodata", "__const", "__literal", ".rdata")


@dataclass(frozen=True)
class ObjectSizes:
    """Bytes of code (``.text``: every executable section) and of read-only data
    (``.rodata``: constants, packed weights, lookup tables)."""

    text: int
    rodata: int


def object_sizes(object_bytes: bytes) -> ObjectSizes:
    """The sizes of an object file's code and read-only data sections (an ELF object's read
    in place: LLVM's reader would copy a model's weights)."""
    if object_bytes[:4] == b"\x7fELF":
        elf = ElfObject(object_bytes)
        code = [s.flags & _SHF_EXECINSTR != 0 for s in elf.sections]
        names = [elf.section_name(s).decode(errors="replace") for s in elf.sections]
        return ObjectSizes(
            sum(s.size for s, c in zip(elf.sections, code, strict=True) if c),
            sum(
                s.size
                for s, c, name in zip(elf.sections, code, names, strict=True)
                if not c and name.startswith(_RODATA)
            ),
        )
    obj = llvm.ObjectFileRef.from_data(object_bytes)
    text = rodata = 0
    for section in obj.sections():
        name = (section.name() or b"").decode(errors="replace")
        if section.is_text():
            text += section.size()
        elif name.startswith(_RODATA):
            rodata += section.size()
    return ObjectSizes(text, rodata)
