"""Inline TF function calls into one flat GraphDef the GraphDef pipeline can compile.

TF2 graphs (SavedModels, ``tf.function`` exports) hold the model in the function library: the
top-level graph has a ``StatefulPartitionedCall`` (or ``PartitionedCall``, or a node whose op
is a library function's name, as ``Defun`` writes) that calls a ``FunctionDef``, which may call
others. Frozen GraphDefs keep such calls too: grappler does not inline a function marked
``_noinline`` or ``_XlaMustCompile`` (Keras 3 emits one per grouped convolution).

A call node ``call`` to function ``f`` becomes ``f``'s body, each node renamed ``call/<node>``
(``call/<node>_1``, ... where that name is taken), plus an ``IdentityN`` named ``call`` whose
outputs are ``f``'s results, so every consumer of ``call:i`` keeps its input string. Inside a
``FunctionDef`` inputs are named ``node:output_arg:index``; they become flat ``node:k`` using
the op's output argument list (``OUTPUT_ARGS`` for ops with several, the called function's
signature for calls). Function arguments become the call's inputs; attribute placeholders
(``$T`` in a polymorphic function) take the call's values.

Control dependencies survive as TF runs them: the ``IdentityN`` has control inputs on the call's
own control inputs, on the function's control outputs, and on every body node nothing in the
body consumes (TF runs a function's stateful nodes whether or not its results need them), so
a side-effecting node in a function is as visible to pruning as one in the top-level graph.

Calls are expanded from a worklist, never by recursion; a function that calls itself (directly
or through others) is an error naming the chain. A call of a pure function repeated with the
same inputs is expanded once (``function_library.py``), and an expansion past
``MAX_INLINED_NODES`` nodes is refused before it starts, naming the call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aotc.errors import GraphError, UnsupportedError
from aotc.frontend.function_library import (
    CALL_OPS,
    CallKey,
    Library,
    LibraryFacts,
    call_key,
    called_function,
    repeated_call,
)
from aotc.proto import aotc_tf_pb2 as pb

#: Nodes inlining may give at most: about a minute of compile time.
MAX_INLINED_NODES = 1 << 19

# Ops whose outputs span several output arguments, each one tensor; every other op has one
# output argument (possibly a list, like Split's), so ``node:arg:i`` is output ``i``.
OUTPUT_ARGS: dict[str, tuple[str, ...]] = {
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV2": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": (
        "y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
        "reserve_space_3",
    ),
    "Switch": ("output_false", "output_true"),
    "RefSwitch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"),
    "TopKV2": ("values", "indices"),
    "TopK": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "MaxPoolWithArgmax": ("output", "argmax"),
    "BroadcastGradientArgs": ("r0", "r1"),
    "Qr": ("q", "r"),
    "Svd": ("s", "u", "v"),
    "SelfAdjointEigV2": ("e", "v"),
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "SoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
    "QuantizeV2": ("output", "output_min", "output_max"),
    "TensorListPopBack": ("output_handle", "tensor"),
    "TensorArrayV3": ("handle", "flow"),
}  # fmt: skip


def needs_inlining(graph: pb.GraphDef) -> bool:
    """True when some node of ``graph`` calls a function (a library one, or a missing one)."""
    library = {f.signature.name for f in graph.library.function}
    return any(called_function(node, library) is not None for node in graph.node)


def inline_functions(graph: pb.GraphDef, path: str = "<graph>") -> pb.GraphDef:
    """A copy of ``graph`` without function calls and without its function library."""
    library = functions_of(graph)
    out = pb.GraphDef()
    out.versions.CopyFrom(graph.versions)
    _Inliner(library, path, {node.name for node in graph.node}).run(graph.node, out)
    return out


def functions_of(graph: pb.GraphDef) -> Library:
    """``graph``'s library functions by name."""
    return {f.signature.name: f for f in graph.library.function}


class _Inliner:
    """Expands calls depth-first from an explicit stack; each entry carries its call chain."""

    def __init__(self, library: dict[str, pb.FunctionDef], path: str, taken: set[str]) -> None:
        self.library = library
        self.path = path
        self.names = _Names(taken)
        self.facts = LibraryFacts(library)
        self.expanded: dict[CallKey, str] = {}  # a pure call -> the call expanded for it

    def run(self, nodes: Iterable[pb.NodeDef], out: pb.GraphDef) -> None:
        """Append ``nodes`` to ``out`` with every call replaced by its callee's body."""
        nodes = list(nodes)
        self._check_size(nodes)
        stack: list[tuple[pb.NodeDef, tuple[str, ...]]] = [(n, ()) for n in reversed(nodes)]
        while stack:
            node, chain = stack.pop()
            name = called_function(node, self.library)
            if name is None:
                out.node.append(node)
                continue
            fn = self._function(node, name, chain)
            if name in self.facts.pure:
                first = self.expanded.setdefault(call_key(node, name), node.name)
                if first != node.name:
                    out.node.append(repeated_call(node, first, fn))
                    continue
            body = self._inlined_body(node, fn)
            stack.extend((n, (*chain, name)) for n in reversed(body))

    def _check_size(self, nodes: list[pb.NodeDef]) -> None:
        sizes = list(self.facts.node_sizes(nodes))
        if sum(sizes) <= MAX_INLINED_NODES:
            return
        biggest = max(range(len(nodes)), key=sizes.__getitem__)
        node = nodes[biggest]
        raise GraphError(
            f"{self.path}: inlining function calls gives more than {MAX_INLINED_NODES} nodes: "
            f"node '{node.name}' calls function '{called_function(node, self.library)}', "
            f"which expands to {sizes[biggest]} nodes"
        )

    def _function(self, node: pb.NodeDef, name: str, chain: tuple[str, ...]) -> pb.FunctionDef:
        if name not in self.library:
            raise GraphError(
                f"{self.path}: node '{node.name}' ({node.op}) calls function '{name}', "
                "which is not in the graph's function library"
            )
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise UnsupportedError(
                f"{self.path}: node '{node.name}' ({node.op}): function '{name}' calls itself "
                f"({cycle}); aotc inlines calls and cannot inline recursion"
            )
        return self.library[name]

    def _inlined_body(self, call: pb.NodeDef, fn: pb.FunctionDef) -> list[pb.NodeDef]:
        args = _call_args(call, fn, self.path)
        renamed = {n.name: self.names.under(call.name, n.name) for n in fn.node_def}
        renamer = _Renamer(renamed, fn, args, self.library, self.path)
        bindings = _attr_bindings(call)
        body = [renamer.node(n, bindings) for n in fn.node_def]
        body.append(renamer.results(call))
        return body


class _Names:
    """Hands out node names ``prefix/name``, with ``_1``, ``_2``, ... where one is taken."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.next_suffix: dict[str, int] = {}

    def under(self, prefix: str, name: str) -> str:
        base = f"{prefix}/{name}"
        candidate, suffix = base, self.next_suffix.get(base, 0)
        while candidate in self.taken:  # each suffix is tried once per base over the whole run
            suffix += 1
            candidate = f"{base}_{suffix}"
        self.next_suffix[base] = suffix
        self.taken.add(candidate)
        return candidate


def _call_args(call: pb.NodeDef, fn: pb.FunctionDef, path: str) -> dict[str, str]:
    data = [i for i in call.input if not i.startswith("^")]
    params = [a.name for a in fn.signature.input_arg]
    if any(a.number_attr or a.type_list_attr for a in fn.signature.input_arg):
        raise UnsupportedError(
            f"{path}: function '{fn.signature.name}' has list arguments; aotc inlines only "
            "functions with one tensor per argument"
        )
    if len(data) != len(params):
        raise GraphError(
            f"{path}: node '{call.name}' passes {len(data)} input(s) to function "
            f"'{fn.signature.name}', which takes {len(params)}"
        )
    return dict(zip(params, data, strict=True))


def _attr_bindings(call: pb.NodeDef) -> Mapping[str, pb.AttrValue]:
    """The values a polymorphic function's ``$attr`` placeholders take at this call."""
    if call.op in CALL_OPS:
        return call.attr["f"].func.attr
    return call.attr  # a direct call passes the function's attributes as its own


class _Renamer:
    """Rewrites one function body's node names and inputs into the caller's namespace."""

    def __init__(
        self,
        names: dict[str, str],
        fn: pb.FunctionDef,
        args: dict[str, str],
        library: dict[str, pb.FunctionDef],
        path: str,
    ) -> None:
        self.names, self.fn, self.args, self.path = names, fn, args, path
        self.library = library
        self.ops = {n.name: n.op for n in fn.node_def}
        self.where = f"{path}: function '{fn.signature.name}'"

    def node(self, src: pb.NodeDef, bindings: Mapping[str, pb.AttrValue]) -> pb.NodeDef:
        """``src`` renamed under the call, with flat ``node:k`` inputs and bound attributes."""
        dst = pb.NodeDef()
        dst.CopyFrom(src)
        dst.name = self.names[src.name]
        del dst.input[:]
        dst.input.extend(self.input(text) for text in src.input)
        for key, value in dst.attr.items():
            if value.WhichOneof("value") == "placeholder":
                value.CopyFrom(self._bound(src, key, value.placeholder, bindings))
        return dst

    def _bound(
        self, src: pb.NodeDef, key: str, name: str, bindings: Mapping[str, pb.AttrValue]
    ) -> pb.AttrValue:
        if name not in bindings:
            raise GraphError(
                f"{self.where}: node '{src.name}' attribute '{key}' is the function's "
                f"attribute '${name}', which the call does not set"
            )
        return bindings[name]

    def results(self, call: pb.NodeDef) -> pb.NodeDef:
        """The ``IdentityN`` that stands for the call: its outputs are the function's results.

        Its control inputs keep what TF runs with the call: the call's control inputs, the
        function's control outputs and the body's sinks (nodes nothing in the body consumes).
        """
        out = pb.NodeDef(name=call.name, op="IdentityN", device=call.device)
        outputs = self.fn.signature.output_arg
        missing = [a.name for a in outputs if a.name not in self.fn.ret]
        if missing:
            raise GraphError(f"{self.where} returns no {missing}")
        out.input.extend(self.input(self.fn.ret[a.name]) for a in outputs)
        out.input.extend(dict.fromkeys([*_control_inputs(call), *self._controls(out)]))
        out.attr["T"].list.type.extend(a.type for a in outputs)
        if "_output_shapes" in call.attr:
            out.attr["_output_shapes"].CopyFrom(call.attr["_output_shapes"])
        return out

    def _controls(self, results: pb.NodeDef) -> list[str]:
        returned = {text.split(":")[0] for text in results.input}
        consumed = {_producer(text) for n in self.fn.node_def for text in n.input}
        for key, node in self.fn.control_ret.items():
            if node not in self.ops:
                raise GraphError(f"{self.where}: control output '{key}' names no node '{node}'")
        sinks = [n.name for n in self.fn.node_def if n.name not in consumed]
        kept = dict.fromkeys([*self.fn.control_ret.values(), *sinks])
        return [f"^{self.names[n]}" for n in kept if self.names[n] not in returned]

    def input(self, text: str) -> str:
        """One body input (``arg``, ``node:out_arg:i``, ``^node``) in the caller's names."""
        if text.startswith("^"):
            name = text[1:]
            if name in self.ops:
                return f"^{self.names[name]}"
            return "^" + self._arg(name).split(":")[0]
        parts = text.split(":")
        if len(parts) == 1:
            return self._arg(parts[0])
        if len(parts) != 3 or not parts[2].isdigit():
            raise GraphError(f"{self.where}: input '{text}' is not 'node:output_arg:index'")
        return self._output(parts[0], parts[1], int(parts[2]), text)

    def _arg(self, name: str) -> str:
        if name not in self.args:
            raise GraphError(f"{self.where}: '{name}' is neither an argument nor a node")
        return self.args[name]

    def _output(self, node: str, arg: str, index: int, text: str) -> str:
        if node not in self.ops:
            raise GraphError(f"{self.where}: input '{text}' names no node")
        where = f"{self.where}: input '{text}'"
        position = _arg_position(self.ops[node], arg, self.library, where)
        if position is None:
            return f"{self.names[node]}:{index}"
        if index != 0:
            raise GraphError(f"{self.path}: '{text}': output argument '{arg}' is one tensor")
        return f"{self.names[node]}:{position}"


def _control_inputs(node: pb.NodeDef) -> list[str]:
    return [text for text in node.input if text.startswith("^")]


def _producer(text: str) -> str:
    """The node (or argument) a body input names: ``^n``, ``n``, ``n:out:0`` -> ``n``."""
    return text.lstrip("^").split(":")[0]


def _arg_position(op: str, arg: str, library: dict[str, pb.FunctionDef], where: str) -> int | None:
    """Where output argument ``arg`` of ``op`` starts; None when ``op`` has a single one."""
    names = OUTPUT_ARGS.get(op)
    if names is None and op in library:
        names = tuple(a.name for a in library[op].signature.output_arg)
    if names is None or len(names) == 1:
        return None
    if arg not in names:
        raise GraphError(f"{where}: {op} has no output argument '{arg}' ({', '.join(names)})")
    return names.index(arg)


def output_arg_ref(op: str, index: int, library: Library) -> str:
    """Flat output ``index`` of ``op`` as ``out_arg:i`` inside a FunctionDef (what
    ``_arg_position`` reads back)."""
    names = OUTPUT_ARGS.get(op)
    if names is None and op in library:
        names = tuple(a.name for a in library[op].signature.output_arg)
    if names is None or len(names) == 1 or index >= len(names):
        return f"output:{index}"
    return f"{names[index]}:0"


def function_graph(library: Library, func: pb.NameAttrList) -> tuple[pb.GraphDef, list[str]]:
    """Function ``func`` as a flat graph of its own, for a control-flow op's body or branch.

    Its arguments are ``Placeholder``s named as in the signature (returned in order) and its
    results the outputs of an ``IdentityN`` named like the function: the graph is one call to
    it, inlined as any other (so calls in the body are inlined too, ``$attr``s bound).
    """
    path = f"function '{func.name}'"  # errors: where it is called is for the caller to say
    if func.name not in library:
        raise GraphError(f"{path} is not in the graph's function library")
    signature = library[func.name].signature
    args = [a.name for a in signature.input_arg]
    nodes = [pb.NodeDef(name=a.name, op="Placeholder") for a in signature.input_arg]
    for node, arg in zip(nodes, signature.input_arg, strict=True):
        node.attr["dtype"].type = arg.type
    call = pb.NodeDef(name=func.name, op="PartitionedCall", input=args)
    call.attr["f"].func.CopyFrom(func)
    out = pb.GraphDef()
    _Inliner(library, path, {*args, func.name}).run([*nodes, call], out)
    return out, args
