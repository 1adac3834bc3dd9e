"""What every ``aotc inspect`` summary shares: tensors as the user sees them, op histograms,
the ops aotc cannot translate, and the text helpers of the one-fact-per-line output."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from aotc.errors import AotcError
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.signature import PLACEHOLDER_OPS
from aotc.frontend.tensor import numpy_dtype, shape_from_proto
from aotc.proto import aotc_tf_pb2 as pb

# Ops that are never translated themselves: feeds become parameters, NoOps carry no value.
NOT_TRANSLATED = PLACEHOLDER_OPS | {"NoOp"}

T = TypeVar("T")


class Summary(Protocol):
    """What ``aotc inspect`` prints (``format_text``, ``to_json``) and ``--emit-config`` writes."""

    path: str

    def to_json(self) -> dict[str, object]: ...

    def format_text(self, max_names: int | None = None) -> str: ...

    def config_bytes(self, config_path: str) -> bytes: ...


@dataclass(frozen=True)
class Placeholder:
    """An input or output: dtype name (None if unset or unsupported) and shape (-1: unknown
    dim; None: unknown rank)."""

    name: str
    dtype: str | None
    shape: list[int] | None

    @classmethod
    def of(cls, name: str, dtype: int | None, shape: pb.TensorShapeProto | None) -> Placeholder:
        """From TensorFlow's dtype enum and shape proto, showing what can be shown."""
        found = None if dtype is None else safe(lambda: numpy_dtype(dtype))
        dims = None if shape is None else safe(lambda: shape_from_proto(shape))
        shown = list(dims) if dims is not None else None
        return cls(name, None if found is None else str(found), shown)

    def text(self) -> str:
        """``x: float32[?,784]``."""
        return f"{self.name}: {self.dtype or '?'}{shape_text(self.shape)}"


def safe(fn: Callable[[], T]) -> T | None:
    """``fn()``, or None where it raises an AotcError: inspecting a half-broken input should
    still show what can be shown."""
    try:
        return fn()
    except AotcError:
        return None


def histogram(names: Iterable[str]) -> dict[str, int]:
    """Counts, most frequent first, then by name."""
    counts = Counter(names)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def unsupported(nodes: Iterable[Node]) -> dict[str, list[str]]:
    """The ops aotc has no translator for, each with the nodes that use it."""
    found: dict[str, list[str]] = {}
    for node in nodes:
        if node.op not in NOT_TRANSLATED and lookup(node.op) is None:
            found.setdefault(node.op, []).append(node.name)
    return dict(sorted(found.items()))


def unsupported_lines(found: dict[str, list[str]], max_names: int | None) -> list[str]:
    if not found:
        return ["unsupported ops: none"]
    lines = ["unsupported ops (see 'aotc ops'):"]
    return lines + [f"  {op}: {names_text(nodes, max_names)}" for op, nodes in found.items()]


def ops_line(ops: dict[str, int]) -> str:
    return "ops: " + ", ".join(f"{op} x{n}" for op, n in ops.items())


def names_text(names: list[str], limit: int | None) -> str:
    if limit is None or len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... ({len(names) - limit} more; -v lists all)"


def shape_text(shape: list[int] | None) -> str:
    if shape is None:
        return "[unknown rank]"
    return "[" + ",".join("?" if d == -1 else str(d) for d in shape) + "]"


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def yaml_string(text: str) -> str:
    """Double-quoted YAML is JSON-compatible, so json-style escaping is always safe."""
    return json.dumps(text)


def feed_lines(tensor: Placeholder, where: str, dtype: bool = True) -> list[str]:
    """A config's feed entry for ``tensor``; unknown dims become 1, marked for review."""
    lines = [f"  - name: {yaml_string(tensor.name)}"]
    if tensor.shape is None:
        lines.append(f"    # shape: [...]  # unknown rank in the {where}: give the shape")
    else:
        dims = ", ".join("1" if d == -1 else str(d) for d in tensor.shape)
        note = f"  # was unknown (?) in the {where}: check" if -1 in tensor.shape else ""
        lines.append(f"    shape: [{dims}]{note}")
    if dtype and tensor.dtype is not None:
        lines.append(f"    dtype: {tensor.dtype}")
    return lines
