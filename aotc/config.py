"""The YAML model config (see docs/architecture.md) as frozen dataclasses.

Validation is strict: unknown keys, wrong types and duplicates are ``ConfigError``s whose
message names the file, the key path (``feeds[1].shape``) and the problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import yaml

from aotc.abi import SUPPORTED_DTYPES, cpp_class_parts, supported_dtype
from aotc.errors import AotcError, ConfigError, InputFileError
from aotc.tensor_ref import TensorRef


@dataclass(frozen=True)
class Feed:
    """A model input: a tensor of the graph, with an optional static shape and dtype.

    ``c_name`` names it in the C interface (default: the tensor's name); ``origin`` says where
    the config declares it (``model.config.pbtxt:3: feed[0]``) for error messages.
    """

    ref: TensorRef
    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None
    c_name: str | None = None
    origin: str | None = None


@dataclass(frozen=True)
class Fetch:
    """A model output: a tensor of the graph; ``shape``/``dtype``, when given, are checked
    against what the graph computes (-1: any size). ``c_name``, ``origin``: as for feeds."""

    ref: TensorRef
    c_name: str | None = None
    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None
    origin: str | None = None


@dataclass(frozen=True)
class Variable:
    """A resource or reference variable of the graph (``VarHandleOp``, ``VariableV2``): an
    argument after the feeds. Unless ``readonly``, the graph's updates are written back to
    it in place. ``shape``/``dtype`` default to the variable node's; ``c_name``, ``origin``:
    as for feeds."""

    node: str
    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None
    readonly: bool = False
    c_name: str | None = None
    origin: str | None = None


@dataclass(frozen=True)
class Target:
    """What to generate code for; "host" means the machine running aotc, cpu "portable" (the
    default) every cpu of the triple (on x86-64: kernels for several cpu levels, one picked at
    run time)."""

    triple: str = "host"
    cpu: str = "portable"
    features: str = ""


@dataclass(frozen=True)
class Config:
    """A whole config; empty ``feeds``/``fetches`` mean "infer them from the graph".

    ``cpp_class`` (``ns::Name``) asks for the C++ class header too (``--cpp-class``);
    ``multicore: false`` leaves the multi-core entry points out (``--no-multicore``)."""

    name: str | None = None
    feeds: tuple[Feed, ...] = ()
    fetches: tuple[Fetch, ...] = ()
    target: Target = field(default_factory=Target)
    path: str | None = None
    variables: tuple[Variable, ...] = ()
    cpp_class: str | None = None
    multicore: bool = True


_TOP_KEYS = ("name", "feeds", "fetches", "variables", "target", "cpp_class", "multicore")
_FEED_KEYS = ("name", "shape", "dtype")
_FETCH_KEYS = ("name",)
_VARIABLE_KEYS = ("name", "shape", "dtype", "readonly")
_TARGET_KEYS = ("triple", "cpu", "features")


def load_config(path: str | Path) -> Config:
    """Read and validate a YAML config file (the front end's
    ``tf2xla_config.load_config_file`` also takes tfcompile's configs)."""
    source = str(path)
    return parse_config(_load_yaml(_read_text(Path(path)), source), source)


def parse_config(data: object, source: str = "<config>") -> Config:
    """Validate already-loaded YAML data; ``source`` names it in error messages."""
    if data is None:  # an empty file: everything defaults
        return Config(path=source)
    checker = _Checker(source)
    top = checker.mapping(data, "", _TOP_KEYS)
    feeds = checker.entries(top.get("feeds"), "feeds", _FEED_KEYS, checker.feed)
    fetches = checker.entries(top.get("fetches"), "fetches", _FETCH_KEYS, checker.fetch)
    variables = checker.entries(top.get("variables"), "variables", _VARIABLE_KEYS, checker.variable)
    checker.no_duplicates(feeds, fetches, variables)
    return Config(
        name=checker.name(top.get("name")),
        feeds=tuple(feeds),
        fetches=tuple(fetches),
        target=checker.target(top.get("target")),
        path=source,
        variables=tuple(variables),
        cpp_class=checker.cpp_class(top.get("cpp_class")),
        multicore=checker.flag(top.get("multicore", True), "multicore"),
    )


class _Checker:
    """Turns YAML values into config values, or raises ConfigError naming the key path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> NoReturn:
        where = f"{self.source}: {key}: " if key else f"{self.source}: "
        raise ConfigError(where + problem)

    def mapping(self, value: object, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping with keys {', '.join(allowed)}; got {_show(value)}")
        for k in value:
            if k not in allowed:
                self.fail(key, f"unknown key {_show(k)}{_suggest(k, allowed)}")
        # An explicit null (`shape:` with nothing after it) means "not given".
        return {k: v for k, v in value.items() if v is not None}

    def string(self, value: object, key: str, empty_ok: bool = False) -> str:
        if not isinstance(value, str) or (not value and not empty_ok):
            self.fail(
                key, f"expected a {'' if empty_ok else 'non-empty '}string, got {_show(value)}"
            )
        return value

    def name(self, value: object) -> str | None:
        return None if value is None else self.string(value, "name")

    def flag(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {_show(value)}")
        return value

    def cpp_class(self, value: object) -> str | None:
        if value is None:
            return None
        text = self.string(value, "cpp_class")
        try:
            cpp_class_parts(text)
        except ValueError as e:
            self.fail("cpp_class", f"{text!r}: {e}")
        return text

    def target(self, value: object) -> Target:
        if value is None:
            return Target()
        entry = self.mapping(value, "target", _TARGET_KEYS)
        strings = {
            k: self.string(v, f"target.{k}", empty_ok=k == "features") for k, v in entry.items()
        }
        return Target(**strings)

    def entries(
        self,
        value: object,
        key: str,
        allowed: tuple[str, ...],
        build: Callable[[dict[str, Any], str], Any],
    ) -> list[Any]:
        """A list of feeds or fetches; a plain string ``x`` stands for ``{name: x}``."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(key, f"expected a list, got {_show(value)}")
        result = []
        for i, item in enumerate(value):
            item_key = f"{key}[{i}]"
            entry = (
                {"name": item} if isinstance(item, str) else self.mapping(item, item_key, allowed)
            )
            if "name" not in entry:
                self.fail(item_key, "missing required key 'name'")
            result.append(build(entry, item_key))
        return result

    def tensor_ref(self, value: object, key: str) -> TensorRef:
        text = self.string(value, key)
        try:
            return TensorRef.parse(text)
        except AotcError as e:
            self.fail(key, str(e))

    def feed(self, entry: dict[str, Any], key: str) -> Feed:
        ref = self.tensor_ref(entry["name"], f"{key}.name")
        shape = self.shape(entry["shape"], f"{key}.shape") if "shape" in entry else None
        dtype = self.dtype(entry["dtype"], f"{key}.dtype") if "dtype" in entry else None
        return Feed(ref, shape, dtype)

    def fetch(self, entry: dict[str, Any], key: str) -> Fetch:
        return Fetch(self.tensor_ref(entry["name"], f"{key}.name"))

    def variable(self, entry: dict[str, Any], key: str) -> Variable:
        ref = self.tensor_ref(entry["name"], f"{key}.name")
        if ref.index != 0:
            self.fail(f"{key}.name", f"'{ref}': name the variable node, without an output index")
        readonly = entry.get("readonly", False)
        if not isinstance(readonly, bool):
            self.fail(f"{key}.readonly", f"expected true or false, got {_show(readonly)}")
        shape = self.shape(entry["shape"], f"{key}.shape") if "shape" in entry else None
        dtype = self.dtype(entry["dtype"], f"{key}.dtype") if "dtype" in entry else None
        return Variable(ref.node, shape, dtype, readonly)

    def shape(self, value: object, key: str) -> tuple[int, ...]:
        if not isinstance(value, list) or not all(_is_dim(d) for d in value):
            self.fail(key, f"expected a list of non-negative integers, got {_show(value)}")
        return tuple(value)

    def dtype(self, value: object, key: str) -> np.dtype:
        if not isinstance(value, str) or value not in SUPPORTED_DTYPES:
            self.fail(key, f"expected one of {', '.join(SUPPORTED_DTYPES)}; got {_show(value)}")
        return supported_dtype(value)

    def no_duplicates(
        self, feeds: list[Feed], fetches: list[Fetch], variables: list[Variable]
    ) -> None:
        seen_feeds = self._first_index("feeds", "feed", [f.ref for f in feeds])
        self._first_index("fetches", "fetch", [f.ref for f in fetches])
        self._first_index("variables", "variable", [TensorRef(v.node) for v in variables])
        for i, fetch in enumerate(fetches):
            if fetch.ref in seen_feeds:
                self.fail(
                    f"fetches[{i}].name",
                    f"'{fetch.ref}' is also a feed (feeds[{seen_feeds[fetch.ref]}]); "
                    "an output cannot be an input",
                )

    def _first_index(self, key: str, what: str, refs: list[TensorRef]) -> dict[TensorRef, int]:
        first: dict[TensorRef, int] = {}
        for i, ref in enumerate(refs):
            if ref in first:
                self.fail(
                    f"{key}[{i}].name", f"duplicate {what} '{ref}' (same as {key}[{first[ref]}])"
                )
            first[ref] = i
        return first


def _is_dim(value: object) -> bool:
    # bool is an int in Python, but `shape: [true]` is a mistake.
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _show(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _suggest(key: object, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f" (expected one of: {', '.join(allowed)}){hint}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such config file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a YAML config file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None


_MAX_YAML_DEPTH = 64  # a config nests 3 levels; PyYAML composes nested nodes recursively


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of keeping the last one silently, and
    nesting deeper than any config needs before it could exhaust Python's stack."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > _MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {_MAX_YAML_DEPTH} levels",
                    self.peek_event().start_mark,
                )  # fmt: skip
            # The stubs say index is an int; PyYAML passes a mapping's key node too.
            return super().compose_node(parent, index)  # type: ignore[arg-type]
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                continue  # the schema's checks name non-string keys; lists cannot be hashed
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key}'", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, source: str) -> object:
    try:
        loader = _StrictLoader(text)  # it reads ahead: a bad character can fail here already
    except yaml.reader.ReaderError as e:
        raise ConfigError(
            f"{source}: character {e.position + 1}: YAML syntax error: {e.reason} "
            f"(#x{e.character:04x}); remove the control character"
        ) from None
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigError(f"{where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: YAML syntax error: {e}") from None
    finally:
        loader.dispose()
