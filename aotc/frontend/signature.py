"""The compiled function's signature: which graph tensors are arguments and results.

Explicit config entries win; what the config leaves out is inferred from the graph:

* feeds: every ``Placeholder`` the fetches need, in file order; each needs a fully known
  ``shape`` attr (otherwise list it in the config with ``shape:``, or give ``--shape``).

``--shape NAME=D0,...`` (``SourceOptions.shapes``) sets the static shape of feed NAME, inferred
or listed, over the config's ``shape:``.
* fetches: output 0 of every node that nothing consumes (through data or control inputs),
  in file order, except the ops in ``NOT_OUTPUTS`` (inputs, constants, no-ops, asserts,
  prints, savers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from aotc.abi import c_identifier, is_supported_dtype
from aotc.config import Config, Feed, Fetch, Variable
from aotc.errors import ConfigError, GraphError, UnsupportedError
from aotc.frontend.graphdef import Graph
from aotc.frontend.node import Node
from aotc.frontend.options import SourceOptions
from aotc.tensor_ref import TensorRef

PLACEHOLDER_OPS = frozenset({"Placeholder", "PlaceholderV2"})

# Ops that are never inferred as results even when nothing consumes them.
NOT_OUTPUTS = frozenset(
    {
        *PLACEHOLDER_OPS, "PlaceholderWithDefault", "Const", "NoOp", "Assert", "Print",
        "PrintV2", "Save", "SaveV2", "SaveSlices", "Restore", "RestoreV2", "RestoreSlice",
        "MergeV2Checkpoints", "VariableV2", "VarHandleOp", "Assign", "AssignVariableOp",
        "AssignAdd", "AssignSub", "AssignAddVariableOp", "AssignSubVariableOp",
    }
)  # fmt: skip


_SINGULAR = {"feeds": "feed", "fetches": "fetch", "variables": "variable"}

# The nodes a variable argument stands for: resource variables and TF1 reference variables.
VARIABLE_OPS = ("VarHandleOp", "VariableV2", "Variable")


@dataclass(frozen=True)
class TensorSpec:
    """One argument: the feed as named in the config (``x``, ``split:1``), dtype and shape."""

    name: str
    ref: TensorRef
    dtype: np.dtype
    shape: tuple[int, ...]


@dataclass(frozen=True)
class FetchSpec:
    """One result; its dtype and shape are known only after translation, where the config's
    ``shape``/``dtype`` (if any) are checked; ``label`` names the fetch in that error."""

    name: str
    ref: TensorRef
    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None
    label: str = field(default="", compare=False)  # for messages only

    def check(self, dtype: np.dtype, dims: tuple[int, ...]) -> None:
        """ConfigError unless the computed ``dtype[dims]`` is what the config declares."""
        wrong_dtype = self.dtype is not None and self.dtype != dtype
        if wrong_dtype or (self.shape is not None and not _compatible(self.shape, dims)):
            declared = f"{self.dtype or dtype}{_dims(self.shape) if self.shape else ''}"
            raise ConfigError(
                f"{self.label}: the config declares {declared} but the graph computes "
                f"{dtype}{_dims(dims)}"
            )


@dataclass(frozen=True)
class VariableSpec:
    """A variable argument (after the feeds): its C ``name``, the variable ``node``, dtype,
    shape, and whether the compiled function writes the graph's updates back (``updated``)."""

    name: str
    node: str
    dtype: np.dtype
    shape: tuple[int, ...]
    updated: bool
    label: str = field(default="", compare=False)  # for messages only


@dataclass(frozen=True)
class Signature:
    """The compiled function: a C identifier ``name``, arguments and results in order.

    Arguments are the feeds, then the variables; results are the fetches (an updated variable
    is written back through its argument, not returned)."""

    name: str
    feeds: tuple[TensorSpec, ...]
    fetches: tuple[FetchSpec, ...]
    variables: tuple[VariableSpec, ...] = ()


def model_stem(path: str | Path) -> str:
    """``model`` for ``dir/model.pb``; resolved first, so ``.`` names the current folder."""
    return Path(path).resolve().stem


def default_config_path(graph_path: str | Path) -> Path | None:
    """``model.yaml`` next to ``model.pb``, if it exists."""
    resolved = Path(graph_path).resolve()
    candidate = resolved.with_name(resolved.stem + ".yaml")
    return candidate if candidate.is_file() else None


def resolve_signature(
    graph: Graph,
    config: Config,
    graph_path: str | Path | None = None,
    options: SourceOptions | None = None,
) -> Signature:
    """Check the config (and the shapes of ``options``) against the graph and fill in what
    they leave out."""
    given = options or SourceOptions()
    where = _Where(config, graph)
    fetch_list = list(config.fetches) or inferred_fetches(graph)
    fetches = tuple(
        _fetch_spec(graph, f, where.entry("fetches", i, f, bool(config.fetches)))
        for i, f in enumerate(fetch_list)
    )
    feed_list = list(config.feeds) or _inferred_feeds(graph, fetches)
    labels = [where.entry("feeds", i, f, bool(config.feeds)) for i, f in enumerate(feed_list)]
    _given_shapes(feed_list, labels, given, graph.path)
    feeds = tuple(
        _feed_spec(graph, f, label, given) for f, label in zip(feed_list, labels, strict=True)
    )
    _check_all_placeholders_fed(graph, feeds, fetches, where)
    variables = tuple(
        _variable_spec(graph, v, where.entry("variables", i, v, True))
        for i, v in enumerate(config.variables)
    )
    stem = model_stem(graph_path if graph_path is not None else graph.path)
    return Signature(c_identifier(config.name or stem), feeds, fetches, variables)


class _Where:
    """Prefixes for error messages: the config file and key, or just the graph file."""

    def __init__(self, config: Config, graph: Graph) -> None:
        self.config_path = config.path
        self.graph_path = graph.path

    def entry(self, key: str, index: int, entry: Feed | Fetch | Variable, from_config: bool) -> str:
        """``model.yaml: feeds[0] 'x'`` for config entries (or the entry's own origin),
        ``model.pb: feed 'x'`` else."""
        name = entry.node if isinstance(entry, Variable) else entry.ref
        if entry.origin:
            return f"{entry.origin} '{name}'"
        if from_config and self.config_path:
            return f"{self.config_path}: {key}[{index}] '{name}'"
        return f"{self.graph_path}: {_SINGULAR[key]} '{name}'"


def inferred_fetches(graph: Graph) -> list[Fetch]:
    # Control consumers count too: lowered tf.cond leaves "pivot" Identity nodes that only
    # gate other nodes through control edges; they are not results.
    controlling = {name for node in graph.nodes.values() for name in node.control_inputs}
    fetches = [
        Fetch(TensorRef(node.name))
        for node in graph.nodes.values()
        if node.op not in NOT_OUTPUTS
        and node.name not in controlling
        and not graph.consumers(node.name)
    ]
    if not fetches:
        raise ConfigError(
            f"{graph.path}: cannot infer the outputs (every node is consumed or is not an "
            "output op); list them under `fetches:` in a config"
        )
    return fetches


def _inferred_feeds(graph: Graph, fetches: tuple[FetchSpec, ...]) -> list[Feed]:
    needed = {node.name for node in graph.prune([f.ref for f in fetches])}
    return [
        Feed(TensorRef(node.name))
        for node in graph.nodes.values()
        if node.name in needed and node.op in PLACEHOLDER_OPS
    ]


def _given_shapes(feeds: list[Feed], labels: list[str], options: SourceOptions, where: str) -> None:
    """Give the feeds the shapes of ``options`` (in place), labelled by that option."""
    names = [str(f.ref) for f in feeds]
    unknown = sorted(set(options.shapes) - set(names))
    if unknown:
        raise ConfigError(
            f"{where}: {options.spell('shapes')} names {', '.join(unknown)}, not a feed "
            f"(feeds: {', '.join(names) or 'none'})"
        )
    for i, name in enumerate(names):
        if name in options.shapes:
            dims = tuple(options.shapes[name])
            feeds[i] = replace(feeds[i], shape=dims)
            labels[i] = f"{where}: {options.spell_shape(name, dims)}"


def _fetch_spec(graph: Graph, fetch: Fetch, label: str) -> FetchSpec:
    _node_for(graph, fetch.ref, label)
    return FetchSpec(fetch.c_name or str(fetch.ref), fetch.ref, fetch.shape, fetch.dtype, label)


def _node_for(graph: Graph, ref: TensorRef, label: str) -> Node:
    if ref.node not in graph.nodes:
        raise ConfigError(f"{label}: no node named '{ref.node}' in {graph.path}")
    node = graph.nodes[ref.node]
    outputs = node.known_output_count()
    if outputs is not None and ref.index >= outputs:
        raise ConfigError(f"{label}: {node.label} has only {outputs} output(s)")
    return node


def _feed_spec(graph: Graph, feed: Feed, label: str, options: SourceOptions) -> TensorSpec:
    node = _node_for(graph, feed.ref, label)
    dtype = _feed_dtype(node, feed, label)
    shape = _feed_shape(node, feed, label, options)
    return TensorSpec(feed.c_name or str(feed.ref), feed.ref, dtype, shape)


def _feed_dtype(node: Node, feed: Feed, label: str) -> np.dtype:
    graph_dtype = _graph_dtype(node)
    dtype = feed.dtype if feed.dtype is not None else graph_dtype
    if dtype is None:
        raise ConfigError(f"{label}: {node.label} has no dtype attribute; set `dtype:` for it")
    if graph_dtype is not None and node.op in PLACEHOLDER_OPS and dtype != graph_dtype:
        raise ConfigError(
            f"{label}: config dtype {dtype} disagrees with the graph's {graph_dtype} ({node.label})"
        )
    if not is_supported_dtype(dtype):
        raise UnsupportedError(f"{label}: dtype {dtype} is not supported for inputs")
    return dtype


def _graph_dtype(node: Node) -> np.dtype | None:
    # Placeholders say `dtype`; most other ops say `T` (for all their outputs, usually).
    for attr in ("dtype", "T"):
        if node.has_attr(attr):
            value = node.attr(attr)
            if isinstance(value, np.dtype):
                return value
    return None


def _feed_shape(node: Node, feed: Feed, label: str, options: SourceOptions) -> tuple[int, ...]:
    graph_shape = _graph_shape(node, feed.ref)
    if feed.shape is None:
        if graph_shape is None or -1 in graph_shape:
            known = "unknown" if graph_shape is None else _dims(graph_shape)
            example = tuple(1 if d == -1 else d for d in graph_shape or (1,))
            raise ConfigError(
                f"{label}: the graph's shape is {known}; give a static shape with `shape:` "
                f"for this feed in a config, or {options.spell_shape(str(feed.ref), example)}"
            )
        return graph_shape
    if graph_shape is not None and not _compatible(graph_shape, feed.shape):
        raise ConfigError(
            f"{label}: shape {_dims(feed.shape)} does not fit the graph's "
            f"{_dims(graph_shape)} ({node.label})"
        )
    return feed.shape


def _graph_shape(node: Node, ref: TensorRef) -> tuple[int, ...] | None:
    if node.op in PLACEHOLDER_OPS:
        shape = node.attr("shape", None)
    else:
        shapes = node.attr("_output_shapes", None)
        shape = shapes[ref.index] if isinstance(shapes, list) and ref.index < len(shapes) else None
    # A malformed graph can hold any attribute kind here (e.g. an int): not a shape.
    if shape is not None and not isinstance(shape, tuple):
        raise GraphError(f"{node.label}: attribute 'shape' is not a tensor shape")
    return shape


def _variable_spec(graph: Graph, variable: Variable, label: str) -> VariableSpec:
    node = _node_for(graph, TensorRef(variable.node), label)
    if node.op not in VARIABLE_OPS:
        raise ConfigError(f"{label}: {node.label} is not a variable ({', '.join(VARIABLE_OPS)})")
    graph_dtype = node.dtype_attr("dtype")
    if variable.dtype is not None and variable.dtype != graph_dtype:
        raise ConfigError(
            f"{label}: config dtype {variable.dtype} disagrees with the graph's {graph_dtype}"
        )
    if not is_supported_dtype(graph_dtype):
        raise UnsupportedError(f"{label}: dtype {graph_dtype} is not supported for variables")
    shape = _variable_shape(node, variable, label)
    name = variable.c_name or variable.node
    return VariableSpec(name, node.name, graph_dtype, shape, not variable.readonly, label)


def _variable_shape(node: Node, variable: Variable, label: str) -> tuple[int, ...]:
    graph_shape = node.attr("shape", None)
    if graph_shape is not None and not isinstance(graph_shape, tuple):
        raise GraphError(f"{node.label}: attribute 'shape' is not a tensor shape")
    if variable.shape is None:
        if graph_shape is None or -1 in graph_shape:
            known = "unknown" if graph_shape is None else _dims(graph_shape)
            raise ConfigError(f"{label}: the graph's shape is {known}; give the variable's shape")
        return graph_shape
    if graph_shape is not None and not _compatible(graph_shape, variable.shape):
        raise ConfigError(
            f"{label}: config shape {_dims(variable.shape)} does not fit the graph's "
            f"{_dims(graph_shape)} ({node.label})"
        )
    return variable.shape


def _compatible(graph_shape: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    if len(graph_shape) != len(shape):
        return False
    return all(g in (-1, s) for g, s in zip(graph_shape, shape, strict=True))


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join("?" if d == -1 else str(d) for d in shape) + "]"


def _check_all_placeholders_fed(
    graph: Graph, feeds: tuple[TensorSpec, ...], fetches: tuple[FetchSpec, ...], where: _Where
) -> None:
    fed = {spec.ref for spec in feeds}
    for node in graph.prune([f.ref for f in fetches], fed):
        if node.op in PLACEHOLDER_OPS and TensorRef(node.name) not in fed:
            source = where.config_path or graph.path
            raise ConfigError(
                f"{source}: {node.label} is needed by the fetches but is not fed; "
                "add it to `feeds:`"
            )
