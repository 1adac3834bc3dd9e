"""A decoding wrapper around ``NodeDef``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aotc.errors import GraphError
from aotc.frontend.tensor import numpy_dtype, shape_from_proto, tensor_to_numpy
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

_MISSING: Any = object()


class Node:
    """A ``NodeDef`` with parsed inputs and attributes decoded to Python/numpy values.

    ``attr()`` decodes: ``s`` -> str (bytes when not UTF-8), ``i`` -> int, ``f`` -> float,
    ``b`` -> bool, ``type`` -> numpy dtype, ``shape`` -> tuple (-1 for unknown dims) or None
    for unknown rank, ``tensor`` -> read-only ndarray, ``func`` -> the function's name,
    ``list`` -> a list of those, an unset AttrValue -> None.
    """

    def __init__(self, proto: pb.NodeDef) -> None:
        self.proto = proto
        self.name: str = proto.name
        self.op: str = proto.op
        self.inputs: list[TensorRef] = []
        self.control_inputs: list[str] = []
        for text in proto.input:
            self._add_input(text)

    def _add_input(self, text: str) -> None:
        if text.startswith("^"):
            self.control_inputs.append(text[1:])
            return
        try:
            self.inputs.append(TensorRef.parse(text))
        except GraphError as e:
            raise GraphError(f"{self.label}: input {e}") from None

    @property
    def label(self) -> str:
        """How errors name this node: ``node 'dense/MatMul' (MatMul)``."""
        return f"node '{self.name}' ({self.op})"

    @property
    def device(self) -> str:
        return self.proto.device

    def known_output_count(self) -> int | None:
        """How many outputs this node has, when the graph says (``_output_shapes``) or the op
        is a Placeholder or Const; None when only the op's definition would tell."""
        if self.op in ("Placeholder", "Const"):
            return 1
        shapes = (
            self.proto.attr["_output_shapes"].list.shape if self.has_attr("_output_shapes") else []
        )
        return len(shapes) or None

    def has_attr(self, name: str) -> bool:
        return name in self.proto.attr

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """The decoded attribute ``name``; GraphError if it is missing and has no default."""
        if name not in self.proto.attr:
            if default is _MISSING:
                raise GraphError(f"{self.label}: missing attribute '{name}'")
            return default
        return self._decode(self.proto.attr[name], name)

    # Typed reads, as tf2xla's GetAttr: an attribute of the wrong kind is an error naming the
    # node, never a Python exception deep inside a translator. Defaults are returned as given.
    def int_attr(self, name: str, default: Any = _MISSING) -> int:
        return self._typed(name, default, _is_int, "an int")

    def float_attr(self, name: str, default: Any = _MISSING) -> float:
        return float(self._typed(name, default, _is_float, "a float"))

    def bool_attr(self, name: str, default: Any = _MISSING) -> bool:
        return self._typed(name, default, lambda v: isinstance(v, bool), "a bool")

    def str_attr(self, name: str, default: Any = _MISSING) -> str:
        return self._typed(name, default, lambda v: isinstance(v, str), "a string")

    def ints_attr(self, name: str, default: Any = _MISSING) -> list[int]:
        return self._typed(name, default, _is_ints, "a list of ints")

    def dtype_attr(self, name: str, default: Any = _MISSING) -> np.dtype:
        return self._typed(name, default, lambda v: isinstance(v, np.dtype), "a type")

    def tensor_attr(self, name: str, default: Any = _MISSING) -> np.ndarray:
        return self._typed(name, default, lambda v: isinstance(v, np.ndarray), "a tensor")

    def _typed(self, name: str, default: Any, accepts: Callable[[Any], bool], what: str) -> Any:
        if default is not _MISSING and name not in self.proto.attr:
            return default
        value = self.attr(name)
        if not accepts(value):
            raise GraphError(
                f"{self.label}: attribute '{name}' must be {what}, got {_describe(value)}"
            )
        return value

    def _decode(self, value: pb.AttrValue, name: str) -> Any:
        kind = value.WhichOneof("value")
        if kind is None:
            return None
        if kind == "list":
            return self._decode_list(value.list, name)
        return self._decode_one(kind, getattr(value, kind), name)

    def _decode_list(self, values: pb.AttrValue.ListValue, name: str) -> list[Any]:
        # A list attr fills at most one of its repeated fields; an empty list fills none.
        for field, items in values.ListFields():
            return [self._decode_one(field.name, item, name) for item in items]
        return []

    def _decode_one(self, kind: str, value: Any, name: str) -> Any:
        where = f"{self.label} attribute '{name}'"
        if kind == "s":
            return _text(value)
        if kind == "type":
            return numpy_dtype(value, where)
        if kind == "shape":
            return shape_from_proto(value, where)
        if kind == "tensor":
            return tensor_to_numpy(value, self.name)
        if kind == "func":
            return value.name
        return value  # i, f, b, placeholder: already Python values

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.op!r}, inputs={[str(i) for i in self.inputs]})"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_ints(value: object) -> bool:
    return isinstance(value, list) and all(map(_is_int, value))


def _is_float(value: object) -> bool:
    return isinstance(value, float)


def _describe(value: object) -> str:
    if isinstance(value, list):
        return f"a list ({', '.join(sorted({type(v).__name__ for v in value})) or 'empty'})"
    shown = repr(value)
    return f"{type(value).__name__} {shown[:40]}"


def _text(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value
