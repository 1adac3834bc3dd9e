"""Load a TensorFlow GraphDef, index its nodes, and prune it to what the fetches need."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from google.protobuf import message, text_format

from aotc.errors import GraphError, InputFileError
from aotc.frontend.function_library import Library
from aotc.frontend.functionalize import functionalize, has_v1_control_flow
from aotc.frontend.inline import functions_of, inline_functions, needs_inlining
from aotc.frontend.node import Node
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef
from aotc.toposort import topological_order

TEXT_SUFFIXES = frozenset({".pbtxt", ".pbtext", ".txt", ".prototxt"})
BINARY_SUFFIXES = frozenset({".pb", ".graphdef"})


class Graph:
    """A parsed GraphDef: nodes by name in file order, with consumer lookup and pruning."""

    def __init__(
        self,
        proto: pb.GraphDef,
        path: str | Path | None = None,
        functions: Library | None = None,
    ) -> None:
        self.proto = proto
        # Functional control flow (While, If, Case) names its bodies in the library; inlining
        # calls drops it from the flat graph, so the loader passes the original one.
        self.functions = functions if functions is not None else functions_of(proto)
        self.path = str(path) if path is not None else "<graph>"
        self.nodes: dict[str, Node] = {}
        for node_def in proto.node:
            if node_def.name in self.nodes:
                raise GraphError(f"{self.path}: duplicate node name '{node_def.name}'")
            self.nodes[node_def.name] = Node(node_def)
        self._order = {name: i for i, name in enumerate(self.nodes)}
        self._consumers: dict[str, list[Node]] | None = None

    def node(self, name: str) -> Node:
        """The node called ``name``; GraphError if there is none."""
        if name not in self.nodes:
            raise GraphError(f"{self.path}: no node named '{name}'")
        return self.nodes[name]

    def consumers(self, name: str) -> list[Node]:
        """Nodes with a data input from any output of ``name``, in file order, each once."""
        if self._consumers is None:
            self._consumers = self._index_consumers()
        return list(self._consumers.get(name, []))

    def _index_consumers(self) -> dict[str, list[Node]]:
        index: dict[str, list[Node]] = {}
        for node in self.nodes.values():
            for producer in dict.fromkeys(ref.node for ref in node.inputs):
                index.setdefault(producer, []).append(node)
        return index

    def prune(self, fetches: Iterable[TensorRef], feeds: Iterable[TensorRef] = ()) -> list[Node]:
        """The nodes needed to compute ``fetches``, producers before consumers.

        Only data inputs are followed: control inputs (``^x``) carry no values for a compiled
        function. A node whose needed outputs are all fed is included (it marks where the
        value enters) but its inputs are not followed. Among nodes that are ready at the same
        time the earlier in the file comes first, so the order is deterministic.
        """
        return self._topological(self._checked_needed(fetches, feeds))

    def needed_names(
        self, fetches: Iterable[TensorRef], feeds: Iterable[TensorRef] = ()
    ) -> set[str]:
        """The names of ``prune``'s nodes, unordered: also for a graph whose TF1 loops still
        cycle through ``NextIteration`` (before functionalization)."""
        return set(self._checked_needed(fetches, feeds))

    def _checked_needed(
        self, fetches: Iterable[TensorRef], feeds: Iterable[TensorRef]
    ) -> dict[str, bool]:
        fetch_list, fed = list(fetches), frozenset(feeds)
        for ref in (*fetch_list, *fed):
            self._check_ref(ref, f"{self.path}: tensor '{ref}'")
        return self._needed(fetch_list, fed)

    def _needed(self, fetches: list[TensorRef], fed: frozenset[TensorRef]) -> dict[str, bool]:
        """Needed node names -> whether their inputs are needed too (False: fully fed)."""
        needed: dict[str, bool] = {}
        stack = list(reversed(fetches))
        while stack:
            ref = stack.pop()
            expand = ref not in fed
            if needed.get(ref.node) is True or (ref.node in needed and not expand):
                continue
            needed[ref.node] = expand
            if expand:
                stack.extend(reversed(self._data_inputs(self.nodes[ref.node])))
        return needed

    def execution_order(
        self,
        fetches: Iterable[TensorRef],
        feeds: Iterable[TensorRef] = (),
        effects: Iterable[str] = (),
    ) -> list[Node]:
        """``prune``'s nodes plus the ``effects`` nodes (reached through control inputs and run
        for their effect, e.g. variable updates) with what they need, in an order that honours
        control inputs among them too: the program order stateful nodes need."""
        fed, extra = frozenset(feeds), list(effects)
        refs = [*fetches, *(ref for name in extra for ref in self._data_inputs(self.nodes[name]))]
        for ref in refs:
            self._check_ref(ref, f"{self.path}: tensor '{ref}'")
        needed = self._needed(refs, fed)
        for name in extra:
            needed.setdefault(name, True)
        return self._topological(needed, control=True)

    def control_reached(
        self, fetches: Iterable[TensorRef], feeds: Iterable[TensorRef] = ()
    ) -> list[Node]:
        """Nodes TensorFlow runs for ``fetches`` that ``prune`` leaves out, in file order.

        These are reached through a control input (``^x``) of a needed node, or are inputs
        (data or control) of such a node: TF runs them before the fetches only for their
        effect. A fully fed node's control inputs are not followed, as for its data inputs.
        Control inputs naming no node are ignored, as in ``prune``.
        """
        needed = self._needed(list(fetches), frozenset(feeds))
        stack = [c for n, expand in needed.items() if expand for c in self.nodes[n].control_inputs]
        reached: set[str] = set()
        while stack:
            name = stack.pop()
            if name in needed or name in reached or name not in self.nodes:
                continue
            reached.add(name)
            node = self.nodes[name]
            stack.extend(ref.node for ref in node.inputs)
            stack.extend(node.control_inputs)
        return sorted((self.nodes[n] for n in reached), key=lambda n: self._order[n.name])

    def _data_inputs(self, node: Node) -> list[TensorRef]:
        for ref in node.inputs:
            self._check_ref(ref, f"{self.path}: {node.label}: input '{ref}'")
        return node.inputs

    def has_tensor(self, ref: TensorRef) -> bool:
        """Whether ``ref`` names an output of a node of the graph."""
        outputs = self.nodes[ref.node].known_output_count() if ref.node in self.nodes else 0
        return outputs is None or ref.index < outputs

    def _check_ref(self, ref: TensorRef, what: str) -> None:
        if ref.node not in self.nodes:
            raise GraphError(f"{what} names no node in the graph")
        outputs = self.nodes[ref.node].known_output_count()
        if outputs is not None and ref.index >= outputs:
            raise GraphError(f"{what}: node '{ref.node}' has only {outputs} output(s)")

    def _topological(self, expanded: dict[str, bool], control: bool = False) -> list[Node]:
        # File position as priority among ready nodes.
        preds = {name: self._preds(name, expanded, control) for name in expanded}
        order, stuck = topological_order(preds, self._order.__getitem__)
        if stuck:
            self._raise_cycle(set(stuck), preds)
        return [self.nodes[name] for name in order]

    def _preds(self, name: str, expanded: dict[str, bool], control: bool) -> set[str]:
        if not expanded[name]:
            return set()
        node = self.nodes[name]
        preds = {ref.node for ref in node.inputs}
        if control:
            preds.update(c for c in node.control_inputs if c in expanded)
        return preds

    def _raise_cycle(self, stuck: set[str], preds: dict[str, set[str]]) -> NoReturn:
        # Every stuck node waits on a stuck predecessor, so walking back must revisit a node.
        name = min(stuck, key=self._order.__getitem__)
        path: dict[str, int] = {}  # name -> position on the walk
        while name not in path:
            path[name] = len(path)
            name = min((p for p in preds[name] if p in stuck), key=self._order.__getitem__)
        cycle = list(path)[path[name] :] + [name]
        node = self.nodes[name]
        raise GraphError(
            f"{self.path}: {node.label} is on a cycle: {' <- '.join(cycle)} "
            "(a TensorFlow graph cycles only through a while loop's NextIteration into its Merge)"
        )


def load_graph(path: str | Path) -> Graph:
    """Read a binary (``.pb``) or text (``.pbtxt``) GraphDef; InputFileError names the file.

    Function calls left in the graph (``PartitionedCall`` and the like) are inlined, as for a
    SavedModel (``inline.py``); TF1 loops and conditionals become functional ``While``/``If``/
    ``Case`` nodes (``functionalize.py``).
    """
    return functionalized(read_graph(path))


def functionalized(graph: Graph) -> Graph:
    """``graph`` with its TF1 loops and conditionals functional (``functionalize.py``)."""
    if not has_v1_control_flow(graph.proto):
        return graph
    proto, functions = functionalize(graph.proto, graph.functions, graph.path)
    return Graph(proto, graph.path, functions)


def pruned(graph: Graph, fetches: Iterable[TensorRef], feeds: Iterable[TensorRef]) -> Graph:
    """``graph`` with only the nodes the ``fetches`` and ``feeds`` reach through data and
    control inputs (tfcompile prunes so before it functionalizes; a feed's producers stay, as
    ``prune`` stops there itself). Nodes keep their file order."""
    keep: set[str] = set()
    stack = [r.node for r in (*fetches, *feeds)]
    while stack:
        name = stack.pop()
        if name in keep or name not in graph.nodes:
            continue
        keep.add(name)
        node = graph.nodes[name]
        stack.extend(r.node for r in node.inputs)
        stack.extend(node.control_inputs)
    proto = pb.GraphDef()
    proto.versions.CopyFrom(graph.proto.versions)
    proto.library.CopyFrom(graph.proto.library)
    proto.node.extend(n for n in graph.proto.node if n.name in keep)
    return Graph(proto, graph.path, graph.functions)


def read_graph(path: str | Path) -> Graph:
    """``load_graph`` without functionalization: parsed, calls inlined."""
    data = _read(Path(path))
    suffix = Path(path).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        proto = _parse_text(data, path)
    elif suffix in BINARY_SUFFIXES:
        proto = _parse_binary(data, path)
    else:
        proto = _parse_any(data, path)
    functions = functions_of(proto)
    if needs_inlining(proto):
        proto = inline_functions(proto, str(path))
    return Graph(proto, path, functions)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, expected a GraphDef file") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None


def _parse_binary(data: bytes, path: str | Path) -> pb.GraphDef:
    proto = pb.GraphDef()
    try:
        proto.ParseFromString(data)
    except message.DecodeError as e:
        detail = str(e).replace("aotc.tf.", "tensorflow.")
        raise InputFileError(f"{path}: not a binary TensorFlow GraphDef ({detail})") from None
    _sanity_check(proto, path)
    return proto


def _parse_text(data: bytes, path: str | Path) -> pb.GraphDef:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputFileError(
            f"{path}: not a text GraphDef (byte {e.start} is not UTF-8; "
            "a binary GraphDef should be named *.pb)"
        ) from None
    proto = pb.GraphDef()
    try:
        text_format.Parse(text, proto)
    except text_format.ParseError as e:
        raise InputFileError(f"{path}:{_text_error(e)}") from None
    _sanity_check(proto, path)
    return proto


def _text_error(error: text_format.ParseError) -> str:
    # protobuf prefixes "line:col : "; keep the position, name TF's schema, not ours.
    line, col = error.GetLine(), error.GetColumn()
    text = str(error).replace("aotc.tf.", "tensorflow.")
    if line is not None and text.startswith(f"{line}:{col} : "):
        text = text[len(f"{line}:{col} : ") :]
    where = f"{line}:{col}:" if line is not None else ""
    return f"{where} text GraphDef syntax error: {text}"


def _parse_any(data: bytes, path: str | Path) -> pb.GraphDef:
    # Unknown suffix: binary first (the common case), then text.
    try:
        return _parse_binary(data, path)
    except InputFileError:
        pass
    try:
        return _parse_text(data, path)
    except InputFileError:
        raise InputFileError(
            f"{path}: not a TensorFlow GraphDef (neither binary nor text format parses; "
            "name text files *.pbtxt to see the syntax error)"
        ) from None


def _sanity_check(proto: pb.GraphDef, path: str | Path) -> None:
    # Protobuf decodes many random byte strings "successfully" into garbage; a GraphDef
    # always has nodes, and every node has a name and an op.
    if not proto.node:
        raise InputFileError(f"{path}: not a TensorFlow GraphDef (no nodes)")
    for i, node in enumerate(proto.node):
        if not node.name or not node.op:
            raise InputFileError(
                f"{path}: not a TensorFlow GraphDef (node #{i} has an empty name or op)"
            )
