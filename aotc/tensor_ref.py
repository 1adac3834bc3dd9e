"""TensorFlow's tensor names ("node", "node:1"), shared by the config and the front end."""

from __future__ import annotations

from dataclasses import dataclass

from aotc.errors import GraphError


@dataclass(frozen=True, order=True)
class TensorRef:
    """One output of a node: ``node`` and output ``index`` ("split:1"; "x" is "x:0")."""

    node: str
    index: int = 0

    @classmethod
    def parse(cls, text: str) -> TensorRef:
        """Parse "name" or "name:i"; control inputs ("^name") and junk raise GraphError."""
        if text.startswith("^"):
            raise GraphError(f"'{text}' is a control input, not a tensor")
        name, sep, index = text.rpartition(":")
        if not sep:
            name, index = text, "0"
        if not name or not index.isascii() or not index.isdigit():
            raise GraphError(f"'{text}' is not a tensor name (expected 'node' or 'node:index')")
        return cls(name, int(index))

    def __str__(self) -> str:
        return self.node if self.index == 0 else f"{self.node}:{self.index}"
