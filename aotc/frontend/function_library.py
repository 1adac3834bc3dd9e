"""What the inliner knows about a graph's function library before it expands anything.

Inlining copies a function's body at every call, so a library in which each function calls
the one below twice expands to ``2**depth`` copies of the innermost body. Two things keep that
from running for minutes:

* calls of a *pure* function (every node a stateless TensorFlow op, or a call of a pure
  function, and no control outputs) with the same inputs and attributes compute the same
  values, so the inliner expands the first and lets the others read its results (as TF's
  common-subgraph elimination would after inlining them all);
* ``expanded_sizes`` says, for each function, how many nodes inlining it gives (counting such
  repeated calls in one body once), so a library whose expansion is too big is refused before
  any node is copied, naming the call.

Both walk the call graph once, from an explicit stack (functions may nest to any depth); a
function that calls itself gets no size here: the inliner reports the cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from aotc.frontend.stateful_ops import STATELESS_OPS
from aotc.proto import aotc_tf_pb2 as pb

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})

Library = dict[str, pb.FunctionDef]  # a graph's function library by function name
CallKey = tuple[str, tuple[str, ...], bytes]  # function, inputs, attributes


def called_function(node: pb.NodeDef, library: Iterable[str]) -> str | None:
    """The library function ``node`` calls, if it is a call."""
    if node.op in CALL_OPS:
        return node.attr["f"].func.name
    return node.op if node.op in library else None


def call_key(node: pb.NodeDef, function: str) -> CallKey:
    """What makes two calls of a pure function compute the same values."""
    attrs = b"".join(
        key.encode() + b"\0" + node.attr[key].SerializeToString(deterministic=True)
        for key in sorted(node.attr)
    )
    return function, tuple(node.input), attrs


class LibraryFacts:
    """The pure functions of a library and the number of nodes each expands to."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.pure: set[str] = set()
        self.sizes: dict[str, int] = {}
        for name in library:
            self._visit(name)

    def node_sizes(self, nodes: Iterable[pb.NodeDef]) -> Iterator[int]:
        """How many nodes each of ``nodes`` becomes once every call is inlined (a pure call
        repeated among ``nodes`` with the same inputs: one)."""
        seen: set[CallKey] = set()
        for node in nodes:
            callee = called_function(node, self.library)
            if callee is None or callee not in self.sizes:
                yield 1
            elif callee not in self.pure:
                yield self.sizes[callee]
            else:
                key = call_key(node, callee)
                yield 1 if key in seen else self.sizes[callee]  # 1: an IdentityN of the first's
                seen.add(key)

    def _visit(self, start: str) -> None:
        stack: list[tuple[str, bool]] = [(start, False)]
        entered: set[str] = set()
        while stack:
            name, callees_done = stack.pop()
            if name in self.sizes or (not callees_done and name in entered):
                continue  # done, or a cycle: no size (the inliner names the cycle)
            if callees_done:
                self._summarize(name)
                continue
            entered.add(name)
            stack.append((name, True))
            stack += [(c, False) for c in self._callees(self.library[name]) if c not in entered]

    def _callees(self, fn: pb.FunctionDef) -> Iterator[str]:
        for node in fn.node_def:
            callee = called_function(node, self.library)
            if callee in self.library:
                yield callee

    def _summarize(self, name: str) -> None:
        fn = self.library[name]
        self.sizes[name] = 1 + sum(self.node_sizes(fn.node_def))  # + the results' IdentityN
        if not fn.control_ret and all(self._pure_node(n) for n in fn.node_def):
            self.pure.add(name)

    def _pure_node(self, node: pb.NodeDef) -> bool:
        callee = called_function(node, self.library)
        if callee is not None:
            return callee in self.pure
        return node.op in STATELESS_OPS


def repeated_call(node: pb.NodeDef, original: str, fn: pb.FunctionDef) -> pb.NodeDef:
    """The ``IdentityN`` standing for a repeated pure call: the results of call ``original``."""
    out = pb.NodeDef(name=node.name, op="IdentityN", device=node.device)
    out.input.extend(f"{original}:{k}" for k in range(len(fn.signature.output_arg)))
    out.attr["T"].list.type.extend(a.type for a in fn.signature.output_arg)
    if "_output_shapes" in node.attr:
        out.attr["_output_shapes"].CopyFrom(node.attr["_output_shapes"])
    return out
