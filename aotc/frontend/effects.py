"""Side effects the compiled function would drop: kept, noted, or an error.

A compiled function computes the fetches from the feeds and nothing else. TensorFlow also runs
every node a fetch depends on through a control input (``^x``) — for its effect: variable
updates, prints, queue, file and summary ops. aotc must never drop such an effect silently, so
each node reached only that way is classified by its op:

* no effect: the ops TensorFlow's registry calls stateless (``stateful_ops.STATELESS_OPS``:
  a value nobody uses; ``NoOp`` and identity-like control sinks among them), ops aotc
  translates, and the stateful ops in ``NO_EFFECT_WHEN_UNUSED`` (handles, reads);
* dropped with a note: ``Assert``, as tfcompile does (tf2xla compiles it to nothing);
* an error: every other stateful op (``stateful_ops.STATEFUL_OPS``), and ops aotc does not know
  (custom ops, ops newer than the registry aotc's table was made from), which might have
  effects. One error lists all of them.

A frozen graph can also have lost an update's place: TensorFlow's freezer turns a variable into
a ``Const`` and drops the control inputs its reads had on the update, which then dangles. An
update op whose variable is a ``Const`` the fetches read, and which ran after part of the
fetched computation, is reported with the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from aotc.errors import UnsupportedError
from aotc.frontend.graphdef import Graph
from aotc.frontend.node import Node
from aotc.frontend.ops.registry import lookup
from aotc.frontend.stateful_ops import STATEFUL_OPS, STATELESS_OPS, VARIABLE_UPDATE_OPS
from aotc.tensor_ref import TensorRef

# Stateful in TensorFlow's sense, but dropping one whose value nobody uses changes nothing a
# caller can see: variable handles and reads, and the legacy random ops (their generator state
# belongs to the op itself, so only the op's own later draws would notice).
NO_EFFECT_WHEN_UNUSED = frozenset(
    {
        "VarHandleOp", "VariableV2", "Variable", "TemporaryVariable", "ReadVariableOp",
        "VarIsInitializedOp", "IsVariableInitialized", "VariableShape", "ResourceGather",
        "ResourceGatherNd", "GuaranteeConst", "RandomUniform", "RandomUniformInt",
        "RandomStandardNormal", "TruncatedNormal", "ParameterizedTruncatedNormal",
        "RandomShuffle", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "Multinomial",
        "RandomCrop", "StatelessRandomGetAlg",
    }
)  # fmt: skip

# Ops tfcompile compiles to nothing; aotc drops them too and says so in the report.
DROPPED_OPS = frozenset({"Assert"})


class Effect(Enum):
    """What dropping a node that only a control input reaches would lose."""

    NONE = "none"
    DROPPED = "dropped"  # an Assert: dropped as tfcompile does, with a note
    STATEFUL = "stateful"  # a side effect: an error
    UNKNOWN = "unknown"  # an op aotc does not know: an error


def effect_of(op: str) -> Effect:
    """How aotc treats a node of ``op`` that the fetches reach only through control inputs."""
    if op in DROPPED_OPS:
        return Effect.DROPPED
    if op in NO_EFFECT_WHEN_UNUSED:
        return Effect.NONE
    if op in STATEFUL_OPS:
        return Effect.STATEFUL
    known = op in STATELESS_OPS or lookup(op) is not None
    return Effect.NONE if known else Effect.UNKNOWN


def check_effects(
    graph: Graph,
    fetches: Iterable[TensorRef],
    feeds: Iterable[TensorRef] = (),
    honoured: Iterable[str] = (),
) -> list[Node]:
    """Raise one error listing the effects a compiled function would lose; else return the
    nodes dropped as tfcompile drops them (Asserts), for a note. ``honoured`` nodes (variable
    updates the translation runs) lose nothing."""
    fetches, feeds, kept = list(fetches), list(feeds), set(honoured)
    reached = graph.control_reached(fetches, feeds)
    kinds = {n.name: Effect.NONE if n.name in kept else effect_of(n.op) for n in reached}
    lost = _LostEffects(
        [n for n in reached if kinds[n.name] is Effect.STATEFUL],
        [n for n in reached if kinds[n.name] is Effect.UNKNOWN],
        [n for n in frozen_updates(graph, fetches, feeds) if n.name not in kinds],
    )
    if lost:
        raise UnsupportedError(f"{graph.path}: {lost}")
    return [n for n in reached if kinds[n.name] is Effect.DROPPED]


def frozen_updates(graph: Graph, fetches: list[TensorRef], feeds: list[TensorRef]) -> list[Node]:
    """Variable updates whose variable freezing turned into a ``Const`` the fetches read, and
    that were part of the fetched computation: something they run after (through their other
    inputs and control inputs) is needed by the fetches. Initializers and restore ops of the
    frozen variables are not: only the variable links them to the fetches."""
    needed = {n.name for n in graph.prune(fetches, feeds)}
    updates = [
        n
        for n in graph.nodes.values()
        if n.op in VARIABLE_UPDATE_OPS
        and n.inputs
        and n.inputs[0].node in needed
        and graph.nodes[n.inputs[0].node].op == "Const"
    ]
    frozen = {n.inputs[0].node for n in updates}
    return [n for n in updates if _runs_after(graph, n, needed - frozen)]


def _runs_after(graph: Graph, update: Node, targets: set[str]) -> bool:
    """Whether ``update`` depends (data or control, not through its variable) on ``targets``."""
    stack = [ref.node for ref in update.inputs[1:]] + list(update.control_inputs)
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in targets:
            return True
        if name in seen or name not in graph.nodes:
            continue
        seen.add(name)
        node = graph.nodes[name]
        stack += [ref.node for ref in node.inputs] + node.control_inputs
    return False


_CONTROL = "that the fetches depend on through control inputs"
_FROZEN = (
    "update a variable that freezing turned into a constant the fetches read, which loses the "
    "update (TensorFlow's freezer drops the control inputs that ordered it)"
)


@dataclass(frozen=True)
class _LostEffects:
    """What one error lists: the three ways an effect would be lost."""

    stateful: list[Node]  # reached through control inputs
    unknown: list[Node]  # reached through control inputs, op unknown
    frozen: list[Node]  # updates of a frozen variable the fetches read

    def __bool__(self) -> bool:
        return bool(self.stateful or self.unknown or self.frozen)

    def __str__(self) -> str:
        groups = (
            (self.stateful, f"{_CONTROL} have side effects a compiled function would drop"),
            (self.unknown, f"{_CONTROL} have ops aotc does not know, which may have effects"),
            (self.frozen, _FROZEN),
        )
        parts = [
            f"{len(nodes)} node(s) {what}: {_listing(nodes)}" for nodes, what in groups if nodes
        ]
        return "; ".join(parts) + f" ({self._advice()})"

    def _advice(self) -> str:
        advice = (
            "aotc compiles a pure function of the feeds: remove these nodes, or the control "
            "inputs on them, before compiling"
        )
        if any(n.op in VARIABLE_UPDATE_OPS for n in self.stateful + self.frozen):
            advice += "; variable updates need the graph as it was before freezing"
        return advice


def _listing(nodes: list[Node]) -> str:
    return ", ".join(f"'{n.name}' ({n.op})" for n in nodes)


def dropped_note(nodes: list[Node]) -> str | None:
    """The one-line note for the report about Asserts dropped as tfcompile drops them."""
    if not nodes:
        return None
    return (
        f"dropped {len(nodes)} Assert node(s) that the fetches depend on through control "
        f"inputs, as tfcompile does (a compiled function checks nothing): {_listing(nodes)}"
    )
