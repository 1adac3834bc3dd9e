"""How to read an input: the options of ``aotc compile``/``aotc run`` and ``aotc.compile``.

Error messages name an option the way the caller spells it: the command line's flags
(``--shape x=1,8``) or, with ``api=True``, the Python API's arguments (``shapes={'x': (1, 8)}``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_FLAGS = {
    "signature": "--signature",
    "tags": "--tag",
    "shapes": "--shape",
    "checkpoint": "--checkpoint",
    "name": "--name",
    "cpp_class": "--cpp-class",
    "multicore": "--no-multicore",
}


@dataclass(frozen=True)
class SourceOptions:
    """A SavedModel's signature key and MetaGraphDef tags, static shapes by input name, a
    GraphDef's checkpoint, and the model's name.

    ``shapes`` fixes the unknown dimensions of a SavedModel signature input (by key) or of a
    GraphDef feed (by feed name, as in the config); ``checkpoint`` is a TF checkpoint prefix to
    freeze a GraphDef's variables from; ``name`` (``--name``) overrides the config's ``name:``
    and ``cpp_class`` (``--cpp-class``) its ``cpp_class:``, ``multicore`` (False:
    ``--no-multicore``) its ``multicore:``; ``api`` only changes the messages.
    """

    signature: str | None = None
    tags: tuple[str, ...] | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    checkpoint: str | None = None
    name: str | None = None
    cpp_class: str | None = None
    multicore: bool | None = None
    api: bool = False

    def key(self) -> str:
        """A stable text form of what changes the compiled model, for cache keys (the
        checkpoint's bytes are keyed apart)."""
        shapes = sorted((k, list(v)) for k, v in self.shapes.items())
        named = (self.name, self.cpp_class, self.multicore)
        return repr((self.signature, self.tags, shapes, self.checkpoint, *named))

    def spell(self, option: str) -> str:
        """``signature``, ``tags``, ``shapes``, ``checkpoint``, ``name`` or ``cpp_class`` as the
        caller writes it."""
        return f"{option}=" if self.api else _FLAGS[option]

    def spell_shape(self, name: str, dims: Sequence[int]) -> str:
        """``--shape x=1,8`` or ``shapes={'x': (1, 8)}``."""
        if self.api:
            return f"shapes={{{name!r}: {tuple(dims)!r}}}"
        return f"--shape {name}={','.join(str(d) for d in dims)}"
