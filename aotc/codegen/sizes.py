"""What an object file costs in flash: its code and read-only data, read from its sections."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

# Read-only data sections by object format: ELF (.lrodata: x86-64's large data, .srodata:
# RISC-V's small data), Mach-O (__const, __literal*), COFF (.rdata).
_RODATA = (".rodata", ".lrodata", ".srodata", "__const", "__literal", ".rdata")


@dataclass(frozen=True)
class ObjectSizes:
    """Bytes of code (``.text``: every executable section) and of read-only data
    (``.rodata``: constants, packed weights, lookup tables)."""

    text: int
    rodata: int


def object_sizes(object_bytes: bytes) -> ObjectSizes:
    """The sizes of an object file's code and read-only data sections."""
    obj = llvm.ObjectFileRef.from_data(object_bytes)
    text = rodata = 0
    for section in obj.sections():
        name = (section.name() or b"").decode(errors="replace")
        if section.is_text():
            text += section.size()
        elif name.startswith(_RODATA):
            rodata += section.size()
    return ObjectSizes(text, rodata)
