"""tfcompile's config files (``tensorflow.tf2xla.Config``) as aotc configs, and back.

``model.config.pbtxt`` (text) and ``model.config.pb`` (binary) use tfcompile's schema
(protos/aotc_tf2xla.proto). Each ``feed`` becomes an argument and each ``fetch`` a result, in
file order; their ``name``s become the C names, as tfcompile's do. A feed without ``shape`` is
a scalar, as in tfcompile. Errors name the file, the line (text files) and the field
(``feed[1].shape.dim[0].size``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np
from google.protobuf import message, text_format

from aotc.abi import C_KEYWORDS, is_supported_dtype
from aotc.config import Config, Feed, Fetch, Variable, load_config
from aotc.errors import AotcError, ConfigError, InputFileError
from aotc.frontend.tensor import dtype_name, numpy_dtype, tf_dtype
from aotc.proto import aotc_tf2xla_pb2 as tf2xla
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

TEXT_SUFFIXES = frozenset({".pbtxt", ".pbtext", ".prototxt"})
BINARY_SUFFIXES = frozenset({".pb"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_tf2xla_config(path: str | Path) -> bool:
    """Whether ``path`` names a tfcompile config (by suffix) rather than a YAML one."""
    return Path(path).suffix.lower() in TEXT_SUFFIXES | BINARY_SUFFIXES


def load_tf2xla_config(path: str | Path) -> Config:
    """Read a text or binary ``tensorflow.tf2xla.Config`` as an aotc ``Config``."""
    source = str(path)
    data = _read(Path(path))
    if Path(path).suffix.lower() in BINARY_SUFFIXES:
        return _Converter(source, None).config(_parse_binary(data, source))
    text = _decode(data, source)
    return _Converter(source, field_lines(text)).config(_parse_text(text, source))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such config file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a tfcompile config") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{source}: not a text tfcompile config (byte {e.start} is not UTF-8; a binary "
            "config should be named *.pb)"
        ) from None


def _parse_text(text: str, source: str) -> tf2xla.Config:
    proto = tf2xla.Config()
    try:
        text_format.Parse(text, proto)
    except text_format.ParseError as e:
        line, col = e.GetLine(), e.GetColumn()
        detail = _tf_names(str(e))
        if line is not None and detail.startswith(f"{line}:{col} : "):
            detail = detail[len(f"{line}:{col} : ") :]
        where = f"{source}:{line}:{col}" if line is not None else source
        raise ConfigError(f"{where}: tfcompile config syntax error: {detail}") from None
    return proto


def _parse_binary(data: bytes, source: str) -> tf2xla.Config:
    proto = tf2xla.Config()
    try:
        proto.ParseFromString(data)
    except message.DecodeError as e:
        raise ConfigError(
            f"{source}: not a binary tfcompile config ({_tf_names(str(e))})"
        ) from None
    size = proto.ByteSize()
    proto.DiscardUnknownFields()  # proto3 keeps them silently; here they mean a wrong file
    if proto.ByteSize() != size:
        raise ConfigError(
            f"{source}: not a binary tfcompile config (it has fields tensorflow.tf2xla.Config "
            "does not define)"
        )
    return proto


def _tf_names(text: str) -> str:
    # Messages should name TensorFlow's schema, which users know, not our package.
    return text.replace("aotc.tf2xla.", "tensorflow.tf2xla.").replace("aotc.tf.", "tensorflow.")


# --------------------------------------------------------------------------- field lines

_TOKEN = re.compile(
    r"""(?P<space>\s+|\#[^\n]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<punct>[{}<>\[\]:;,])
      | (?P<word>[^\s{}<>\[\]:;,"'\#]+)""",
    re.VERBOSE,
)


def _tokens(text: str) -> Iterator[tuple[str, int]]:
    """(token, line) pairs of protobuf text format, comments and blanks skipped."""
    line = 1
    for match in _TOKEN.finditer(text):
        if match.lastgroup != "space":
            yield match.group(), line
        line += match.group().count("\n")


@dataclass
class _Level:
    """One message being read: its path prefix, occurrences per field name, the field read
    last (awaiting its value, or None), and whether that field's value is a ``[...]`` list."""

    prefix: str
    counts: dict[str, int]
    field: str | None = None
    in_list: bool = False
    elements: int = 0  # message elements of the list so far

    def occurrence(self, name: str, line: int, lines: dict[str, int]) -> str:
        index = self.counts.get(name, 0)
        self.counts[name] = index + 1
        path = f"{self.prefix}{name}[{index}]"
        lines[path] = line
        return path


def field_lines(text: str) -> dict[str, int]:
    """Line of each field of a text proto that parsed: ``{"feed[1].id[0].node_name[0]": 9}``.

    Every field is keyed with its occurrence index, repeated or not; ``[a, b]`` lists count
    each message element as an occurrence.
    """
    lines: dict[str, int] = {}
    stack = [_Level("", {})]
    current = ""
    for token, line in _tokens(text):
        level = stack[-1]
        if token in ("}", ">"):
            stack.pop()
            stack[-1].field = stack[-1].field if stack[-1].in_list else None
        elif token in ("{", "<"):
            assert level.field is not None  # the text parsed: a field name came first
            if level.in_list and level.elements:
                current = level.occurrence(level.field, line, lines)  # a later list element
            level.elements += level.in_list
            stack.append(_Level(current + ".", {}))
        elif token == "[":
            level.in_list, level.elements = True, 0
        elif token == "]":
            level.in_list, level.field = False, None
        elif token in (":", ";", ","):
            continue
        elif level.field is None:
            level.field = token
            current = level.occurrence(token, line, lines)
        elif not level.in_list:
            level.field = None  # a scalar value
    return lines


# --------------------------------------------------------------------------- conversion


@dataclass(frozen=True)
class _Converter:
    """Turns a parsed Config into aotc's, or raises ConfigError naming file, line and field."""

    source: str
    lines: dict[str, int] | None  # None for binary files

    def where(self, path: str) -> str:
        """``cfg.pbtxt:9: feed[1].id`` (the line of the field, or of its nearest parent)."""
        if self.lines is None:
            return f"{self.source}: {path}"
        key = re.sub(r"(?<=\w)(?=\.|$)", "[0]", path)  # feed[1].id -> feed[1].id[0]
        while key and key not in self.lines:
            key = key.rpartition(".")[0]
        line = self.lines.get(key)
        return f"{self.source}:{line}: {path}" if line else f"{self.source}: {path}"

    def fail(self, path: str, problem: str) -> NoReturn:
        raise ConfigError(f"{self.where(path)}: {problem}")

    def config(self, proto: tf2xla.Config) -> Config:
        if not proto.fetch:
            self.fail("fetch", "missing: list the results as fetch { id { node_name: ... } }")
        feeds = tuple(self.feed(f, f"feed[{i}]") for i, f in enumerate(proto.feed))
        fetches = tuple(self.fetch(f, f"fetch[{i}]") for i, f in enumerate(proto.fetch))
        variables = tuple(self.variable(v, f"variable[{i}]") for i, v in enumerate(proto.variable))
        self.unique(feeds, fetches, variables)
        return Config(feeds=feeds, fetches=fetches, path=self.source, variables=variables)

    def feed(self, feed: tf2xla.Feed, path: str) -> Feed:
        shape = self.shape(feed.shape, f"{path}.shape", exact=True)
        assert shape is not None
        return Feed(
            self.tensor_id(feed, path),
            shape,
            self.dtype(feed.type, f"{path}.type"),
            self.c_name(feed.name, f"{path}.name"),
            self.where(path),
        )

    def fetch(self, fetch: tf2xla.Fetch, path: str) -> Fetch:
        shape = self.shape(fetch.shape, f"{path}.shape") if fetch.HasField("shape") else None
        return Fetch(
            self.tensor_id(fetch, path),
            self.c_name(fetch.name, f"{path}.name"),
            shape,
            self.dtype(fetch.type, f"{path}.type"),
            self.where(path),
        )

    def variable(self, variable: tf2xla.Variable, path: str) -> Variable:
        if not variable.node_name:
            self.fail(f"{path}.node_name", "missing: name the variable node")
        shape = self.shape(variable.shape, f"{path}.shape", exact=True)  # none: a scalar
        return Variable(
            variable.node_name,
            shape,
            self.dtype(variable.type, f"{path}.type"),
            variable.readonly,
            self.c_name(variable.name, f"{path}.name"),
            self.where(path),
        )

    def tensor_id(self, entry: tf2xla.Feed | tf2xla.Fetch, path: str) -> TensorRef:
        if not entry.id.node_name:
            self.fail(f"{path}.id.node_name", "missing: name the graph node")
        if entry.id.output_index < 0:
            self.fail(f"{path}.id.output_index", f"must be >= 0, got {entry.id.output_index}")
        return TensorRef(entry.id.node_name, entry.id.output_index)

    def shape(
        self, shape: pb.TensorShapeProto, path: str, exact: bool = False
    ) -> tuple[int, ...] | None:
        """The dims; -1 (unknown) only where ``exact`` is false, unknown rank -> None."""
        if shape.unknown_rank:
            if exact:
                self.fail(path, "unknown rank; aotc needs a static shape (dim { size: N } ...)")
            return None
        dims = tuple(d.size for d in shape.dim)
        for i, size in enumerate(dims):
            if size < (0 if exact else -1):
                problem = "unknown (-1)" if size == -1 else f"negative ({size})"
                self.fail(f"{path}.dim[{i}].size", f"{problem}; aotc needs a static shape")
        return dims

    def dtype(self, value: int, path: str) -> np.dtype | None:
        if value == pb.DT_INVALID:
            return None  # not given: the graph's
        try:
            dtype = numpy_dtype(value)
        except AotcError:
            dtype = None
        if dtype is None or not is_supported_dtype(dtype):
            self.fail(path, f"{dtype_name(value)} is not a dtype aotc supports for inputs")
        return dtype

    def c_name(self, name: str, path: str) -> str | None:
        if not name:
            return None
        if not _IDENTIFIER.match(name) or name in C_KEYWORDS:
            self.fail(path, f"{name!r} is not a valid C identifier")
        return name

    def unique(
        self, feeds: tuple[Feed, ...], fetches: tuple[Fetch, ...], variables: tuple[Variable, ...]
    ) -> None:
        """Each tensor fed once and fetched once, never both; each variable declared once;
        each C name used once."""
        fed = self._no_repeats([(f"feed[{i}].id", f.ref) for i, f in enumerate(feeds)], "feed")
        self._no_repeats([(f"fetch[{i}].id", f.ref) for i, f in enumerate(fetches)], "fetch")
        for i, fetch in enumerate(fetches):
            if fetch.ref in fed:
                also = f"'{fetch.ref}' is also a feed ({fed[fetch.ref]})"
                self.fail(f"fetch[{i}].id", f"{also}; an output cannot be an input")
        named = [(f"feed[{i}].name", f.c_name) for i, f in enumerate(feeds)]
        named += [(f"fetch[{i}].name", f.c_name) for i, f in enumerate(fetches)]
        named += [(f"variable[{i}].name", v.c_name) for i, v in enumerate(variables)]
        nodes = [(f"variable[{i}].node_name", v.node) for i, v in enumerate(variables)]
        self._no_repeats(nodes, "variable")
        self._no_repeats([(path, name) for path, name in named if name], "C name")

    def _no_repeats(self, items: Sequence[tuple[str, object]], what: str) -> dict[object, str]:
        """value -> the path of its first occurrence; a second one is an error."""
        first: dict[object, str] = {}
        for path, value in items:
            if value in first:
                self.fail(path, f"duplicate {what} '{value}' (same as {first[value]})")
            first[value] = path.rpartition(".")[0]
        return first


def tf2xla_text(proto: tf2xla.Config, comments: list[str]) -> str:
    """``proto`` in text format after ``# comment`` lines, as tfcompile's examples start."""
    header = "".join(f"# {line}\n" for line in comments)
    return header + text_format.MessageToString(proto)


def tf2xla_config(
    feeds: list[tuple[str, str | None, list[int] | None]], fetches: list[str]
) -> tf2xla.Config:
    """A Config feeding ``(node, numpy dtype name, dims)`` and fetching ``node[:i]`` tensors.

    Unknown dims (-1) are kept, so loading the file asks for them; an unknown rank is written
    as ``unknown_rank`` (a feed without ``shape`` would be a scalar)."""
    proto = tf2xla.Config()
    for node, dtype, dims in feeds:
        feed = proto.feed.add()
        feed.id.node_name = node
        if dims is None:
            feed.shape.unknown_rank = True
        for size in dims or ():
            feed.shape.dim.add(size=size)
        if dtype is not None:
            feed.type = tf_dtype(dtype)  # type: ignore[assignment]
    for text in fetches:
        ref = TensorRef.parse(text)
        proto.fetch.add().id.CopyFrom(tf2xla.TensorId(node_name=ref.node, output_index=ref.index))
    return proto


def load_config_file(path: str | Path) -> Config:
    """A YAML config, or a tfcompile config (``*.config.pbtxt``, ``*.config.pb``)."""
    return load_tf2xla_config(path) if is_tf2xla_config(path) else load_config(path)
