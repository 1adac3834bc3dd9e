"""Variables in program order: reads see the updates before them, updates are written back.

A declared variable (``Signature.variables``) is an entry parameter after the feeds. The
translator walks the graph in an order that honours data and control edges, and
``VariableState`` holds each variable's current value: every tensor that refers to the variable
(a resource handle, a TF1 reference, through ``Identity``/``RefIdentity`` or the output of a
reference ``Assign``) reads as the value at the point where its consumer runs, as TensorFlow
forwards such tensors without a copy; an update
(``AssignVariableOp``, ``AssignAddVariableOp``, ``AssignSubVariableOp``, ``Assign``,
``AssignAdd``, ``AssignSub``) makes its result the current value. After the last node, each
updated variable's value is one more element of the entry's root tuple.

Before translation, ``check_variables`` rejects what would make the result ambiguous or
silently different from TensorFlow's: variables the graph uses but the config does not declare,
updates of read-only variables, and a read and an update (or two updates) of one variable that
no chain of data or control edges orders: TensorFlow may run those in either order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from aotc.errors import ConfigError, GraphError, ShapeError, UnsupportedError
from aotc.frontend.graphdef import Graph
from aotc.frontend.node import Node
from aotc.frontend.signature import VARIABLE_OPS, VariableSpec
from aotc.hlo.ir import Instruction, Opcode
from aotc.tensor_ref import TensorRef

# Update op -> how the new value combines the current one with the operand (None: replaces).
UPDATE_OPS: dict[str, Opcode | None] = {
    "AssignVariableOp": None,
    "AssignAddVariableOp": Opcode.ADD,
    "AssignSubVariableOp": Opcode.SUBTRACT,
    "Assign": None,
    "AssignAdd": Opcode.ADD,
    "AssignSub": Opcode.SUBTRACT,
}
# TF1 reference updates output the reference itself: a later read of the variable.
REF_UPDATE_OPS = frozenset({"Assign", "AssignAdd", "AssignSub"})
# Ops whose output is their input's buffer (on a variable: the variable, not a copy of it).
_FORWARDING = frozenset({"Identity", "RefIdentity", "StopGradient", "PreventGradient"})
# Views of a TF1 reference that keep its buffer but not its shape: later updates of the
# variable show through them in TensorFlow, which aotc's values do not model.
_REFERENCE_VIEWS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Bitcast", "IdentityN"})
_REFERENCE_VARIABLES = frozenset({"VariableV2", "Variable"})


def variable_of(graph: Graph, ref: TensorRef) -> Node | None:
    """The variable node ``ref`` refers to (a handle or a reference), else None."""
    seen: set[str] = set()
    while ref.node in graph.nodes and ref.node not in seen:
        seen.add(ref.node)
        node = graph.nodes[ref.node]
        if node.op in VARIABLE_OPS:
            return node
        if not (_is_alias(node) and node.inputs):
            return None
        ref = node.inputs[0]
    return None


def _is_alias(node: Node) -> bool:
    """Nodes whose output names their first input's variable rather than copying a value:
    identities of a resource handle or of a TF1 reference (TensorFlow forwards the variable's
    buffer, so their consumers read the variable when they run), and reference updates."""
    return node.op in REF_UPDATE_OPS or node.op in _FORWARDING


def accessed_variables(graph: Graph, node: Node) -> list[str]:
    """The variables ``node`` reads or updates: those its inputs refer to. Aliases
    (``Identity`` of a handle, ``RefIdentity``) access nothing; they only name the variable."""
    if _is_alias(node) and node.op not in UPDATE_OPS:
        return []
    found = (variable_of(graph, ref) for ref in node.inputs)
    return list(dict.fromkeys(v.name for v in found if v is not None))


def updated_variable(graph: Graph, node: Node) -> str | None:
    """The variable an update op writes (its first input's), else None."""
    if node.op not in UPDATE_OPS or not node.inputs:
        return None
    found = variable_of(graph, node.inputs[0])
    return None if found is None else found.name


def check_variables(graph: Graph, order: Sequence[Node], variables: Sequence[VariableSpec]) -> None:
    """Undeclared variables, updates of read-only ones, and unordered accesses: errors."""
    if not any(n.op in VARIABLE_OPS for n in order):
        return  # (the common case: a frozen graph)
    declared = {v.node: v for v in variables}
    used = [n for n in order if n.op in VARIABLE_OPS and n.name not in declared]
    if used:
        listing = ", ".join(f"'{n.name}' ({n.op})" for n in used)
        raise ConfigError(
            f"{graph.path}: the fetches use {len(used)} variable(s) the config does not "
            f"declare: {listing}; declare each under `variables:` (YAML: name, shape, dtype, "
            "readonly) or as `variable { node_name: ... }` in a tfcompile config, or freeze "
            "the graph"
        )
    for node in order:
        target = updated_variable(graph, node)
        if target is not None and not declared[target].updated:
            raise ConfigError(
                f"{declared[target].label}: declared read-only, but {node.label} updates it; "
                "declare it writable (readonly: false)"
            )
    _check_views(graph, order)
    _check_ordered(graph, order, declared)


def _check_views(graph: Graph, order: Sequence[Node]) -> None:
    """A shape-changing view of a reference variable the graph also updates: an error."""
    updated = {updated_variable(graph, n) for n in order} - {None}
    for node in order:
        if node.op not in _REFERENCE_VIEWS:
            continue
        for name in accessed_variables(graph, node):
            if name in updated and graph.nodes[name].op in _REFERENCE_VARIABLES:
                raise UnsupportedError(
                    f"{node.label} is a view of reference variable '{name}', which the graph "
                    "also updates: TensorFlow's result then depends on buffer aliasing; read "
                    "the variable into a value first (e.g. tf.identity(v) + 0), or use a "
                    "resource variable"
                )


def _check_ordered(graph: Graph, order: Sequence[Node], declared: dict[str, VariableSpec]) -> None:
    """Every update of a variable is ordered (by data or control edges) with every other
    access of it. Ancestor sets hold accesses only, as bits of Python ints."""
    accesses = {n.name: accessed_variables(graph, n) for n in order}
    accesses = {name: found for name, found in accesses.items() if found}
    if not any(updated_variable(graph, graph.nodes[name]) for name in accesses):
        return
    bit = {name: 1 << k for k, name in enumerate(accesses)}
    ancestors: dict[str, int] = {}
    for node in order:
        mask = 0
        for pred in _predecessors(node):
            mask |= ancestors.get(pred, 0) | bit.get(pred, 0)
        ancestors[node.name] = mask
    by_variable: dict[str, list[Node]] = {}
    for name, found in accesses.items():
        for variable in found:
            by_variable.setdefault(variable, []).append(graph.nodes[name])
    for variable, nodes in by_variable.items():
        _check_pairs(graph, declared[variable], nodes, ancestors, bit)


def _predecessors(node: Node) -> Iterable[str]:
    yield from (ref.node for ref in node.inputs)
    yield from node.control_inputs


def _check_pairs(
    graph: Graph,
    variable: VariableSpec,
    nodes: list[Node],
    ancestors: dict[str, int],
    bit: dict[str, int],
) -> None:
    writes = {n.name for n in nodes if updated_variable(graph, n) == variable.node}
    for i, later in enumerate(nodes):
        for earlier in nodes[:i]:
            if later.name not in writes and earlier.name not in writes:
                continue
            if not ancestors[later.name] & bit[earlier.name]:
                raise GraphError(
                    f"{variable.label}: {earlier.label} and {later.label} access the variable "
                    "with no data or control edge ordering them, so TensorFlow may run them in "
                    "either order; add a control dependency (tf.control_dependencies)"
                )


class VariableState:
    """The current value of each declared variable while translating, in program order."""

    def __init__(self, graph: Graph, variables: Iterable[VariableSpec]) -> None:
        self.graph = graph
        self.specs = {v.node: v for v in variables}
        self.current: dict[str, Instruction] = {}
        self.updated: set[str] = set()

    def start(self, node: str, value: Instruction) -> None:
        """The variable's value on entry: its parameter."""
        self.current[node] = value

    def value_of(self, ref: TensorRef) -> Instruction | None:
        """The current value of the variable ``ref`` refers to, or None for other tensors."""
        if not self.specs:
            return None
        variable = variable_of(self.graph, ref)
        return None if variable is None else self.current[variable.name]

    def update(self, node: Node, value: Instruction) -> Instruction:
        """Make ``value`` the current value of ``node``'s variable (checked) and return it."""
        name = updated_variable(self.graph, node)
        assert name is not None  # translators of update ops run on variables only
        spec = self.specs[name]
        shape = value.array_shape
        if shape.dtype.numpy != spec.dtype or shape.dims != spec.shape:
            raise ShapeError(
                f"the value {shape} does not fit variable '{name}' ({spec.dtype}{list(spec.shape)})"
            )
        self.current[name] = value
        self.updated.add(name)
        return value

    def written(self) -> list[Instruction]:
        """The final value of each updated variable, in declaration order (the extra root
        elements); an updated variable the graph never writes is an error (as in tfcompile)."""
        values = []
        for spec in self.specs.values():
            if spec.updated and spec.node not in self.updated:
                raise ConfigError(
                    f"{spec.label}: declared writable, but the fetches never update it; "
                    "declare it read-only (readonly: true)"
                )
            if spec.updated:
                values.append(self.current[spec.node])
        return values
