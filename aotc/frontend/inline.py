"""Inline TF2 function calls into one flat GraphDef the GraphDef pipeline can compile.

TF2 graphs (SavedModels, ``tf.function`` exports) hold the model in the function library: the
top-level graph has a ``StatefulPartitionedCall`` (or ``PartitionedCall``, or a node whose op
is a library function's name) that calls a ``FunctionDef``, which may call others.

A call node ``call`` to function ``f`` becomes ``f``'s body, each node renamed ``call/<node>``,
plus an ``IdentityN`` named ``call`` whose outputs are ``f``'s results, so every consumer of
``call:i`` keeps its input string. Inside a ``FunctionDef`` inputs are named
``node:output_arg:index``; they become flat ``node:k`` using the op's output argument list
(``OUTPUT_ARGS`` for ops with several, the called function's signature for calls). Function
arguments become the call's inputs. Control inputs of the call are dropped: aotc ignores
control edges. Nested calls are expanded until none are left.
"""

from __future__ import annotations

from collections.abc import Iterable

from aotc.errors import GraphError, UnsupportedError
from aotc.proto import aotc_tf_pb2 as pb

CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
MAX_DEPTH = 64

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
}  # fmt: skip


def inline_functions(graph: pb.GraphDef, path: str = "<graph>") -> pb.GraphDef:
    """A copy of ``graph`` without function calls and without its function library."""
    library = {f.signature.name: f for f in graph.library.function}
    inliner = _Inliner(library, path)
    out = pb.GraphDef()
    out.versions.CopyFrom(graph.versions)
    for node in graph.node:
        inliner.expand(node, out, depth=0)
    return out


def called_function(node: pb.NodeDef, library: Iterable[str]) -> str | None:
    """The library function ``node`` calls, if it is a call."""
    if node.op in CALL_OPS:
        return node.attr["f"].func.name
    return node.op if node.op in library else None


class _Inliner:
    def __init__(self, library: dict[str, pb.FunctionDef], path: str) -> None:
        self.library = library
        self.path = path

    def expand(self, node: pb.NodeDef, out: pb.GraphDef, depth: int) -> None:
        """Append ``node`` to ``out``, or, for a call, the callee's body (recursively)."""
        name = called_function(node, self.library)
        if name is None:
            out.node.append(node)
            return
        if depth >= MAX_DEPTH:
            raise GraphError(
                f"{self.path}: node '{node.name}': function calls nest deeper than {MAX_DEPTH} "
                "(recursive functions are not supported)"
            )
        for body_node in self._inlined_body(node, self._function(node, name)):
            self.expand(body_node, out, depth + 1)

    def _function(self, node: pb.NodeDef, name: str) -> pb.FunctionDef:
        if name not in self.library:
            raise GraphError(
                f"{self.path}: node '{node.name}' ({node.op}) calls function '{name}', "
                "which is not in the graph's function library"
            )
        return self.library[name]

    def _inlined_body(self, call: pb.NodeDef, fn: pb.FunctionDef) -> list[pb.NodeDef]:
        args = _call_args(call, fn, self.path)
        renamer = _Renamer(call.name, fn, args, self.library, self.path)
        body = [renamer.node(n) for n in fn.node_def]
        body.append(renamer.results(call))
        return body


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


class _Renamer:
    """Rewrites one function body's node names and inputs into the caller's namespace."""

    def __init__(
        self,
        prefix: str,
        fn: pb.FunctionDef,
        args: dict[str, str],
        library: dict[str, pb.FunctionDef],
        path: str,
    ) -> None:
        self.prefix, self.fn, self.args, self.path = prefix, fn, args, path
        self.library = library
        self.ops = {n.name: n.op for n in fn.node_def}

    def node(self, src: pb.NodeDef) -> pb.NodeDef:
        """``src`` renamed under the call, with flat ``node:k`` inputs."""
        dst = pb.NodeDef()
        dst.CopyFrom(src)
        dst.name = f"{self.prefix}/{src.name}"
        del dst.input[:]
        dst.input.extend(self.input(text) for text in src.input)
        return dst

    def results(self, call: pb.NodeDef) -> pb.NodeDef:
        """The ``IdentityN`` that stands for the call: its outputs are the function's results."""
        out = pb.NodeDef(name=call.name, op="IdentityN", device=call.device)
        outputs = self.fn.signature.output_arg
        missing = [a.name for a in outputs if a.name not in self.fn.ret]
        if missing:
            raise GraphError(
                f"{self.path}: function '{self.fn.signature.name}' returns no {missing}"
            )
        out.input.extend(self.input(self.fn.ret[a.name]) for a in outputs)
        out.attr["T"].list.type.extend(a.type for a in outputs)
        if "_output_shapes" in call.attr:
            out.attr["_output_shapes"].CopyFrom(call.attr["_output_shapes"])
        return out

    def input(self, text: str) -> str:
        """One body input (``arg``, ``node:out_arg:i``, ``^node``) in the caller's names."""
        if text.startswith("^"):
            name = text[1:]
            if name in self.ops:
                return f"^{self.prefix}/{name}"
            return "^" + self._arg(name).split(":")[0]
        parts = text.split(":")
        if len(parts) == 1:
            return self._arg(parts[0])
        if len(parts) != 3 or not parts[2].isdigit():
            raise GraphError(
                f"{self.path}: function '{self.fn.signature.name}': input '{text}' is not "
                "'node:output_arg:index'"
            )
        return self._output(parts[0], parts[1], int(parts[2]), text)

    def _arg(self, name: str) -> str:
        if name not in self.args:
            raise GraphError(
                f"{self.path}: function '{self.fn.signature.name}': '{name}' is neither an "
                "argument nor a node"
            )
        return self.args[name]

    def _output(self, node: str, arg: str, index: int, text: str) -> str:
        if node not in self.ops:
            raise GraphError(
                f"{self.path}: function '{self.fn.signature.name}': input '{text}' names no node"
            )
        where = f"{self.path}: function '{self.fn.signature.name}': input '{text}'"
        position = _arg_position(self.ops[node], arg, self.library, where)
        if position is None:
            return f"{self.prefix}/{node}:{index}"
        if index != 0:
            raise GraphError(f"{self.path}: '{text}': output argument '{arg}' is one tensor")
        return f"{self.prefix}/{node}:{position}"


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
