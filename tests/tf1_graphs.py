"""TF1 control flow GraphDefs built by hand, as ``tf.compat.v1`` builds them with control flow
v1: while frames (Enter -> Merge -> Switch(LoopCond) -> Identity ... NextIteration, Exit),
``Switch``/``Merge`` conditionals with pivots, and ``_SwitchN``/``Merge`` cases.

Constants inside a frame or branch hang on a pivot by a control input, as TF puts them there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from aotc.driver import optimize
from aotc.frontend.sources import load_source
from aotc.frontend.tensor import tf_dtype
from aotc.hlo.evaluate import evaluate
from aotc.proto import aotc_tf_pb2 as pb

LoopFn = Callable[["Tf1Graph", list[str], list[str]], list[str]]
BranchFn = Callable[["Tf1Graph", list[str], str], str]


class Tf1Graph:
    """A GraphDef under construction; each method adds nodes and returns tensor names."""

    def __init__(self) -> None:
        self.proto = pb.GraphDef()
        self.count = 0

    def node(self, op: str, *inputs: str, name: str | None = None, **attrs: object) -> str:
        self.count += 1
        node = self.proto.node.add(name=name or f"{op.lower()}_{self.count}", op=op)
        node.input.extend(inputs)
        for key, value in attrs.items():
            _set(node.attr[key], value)
        return node.name

    def placeholder(self, name: str, dtype: type = np.float32) -> str:
        return self.node("Placeholder", name=name, dtype=pb.AttrValue(type=tf_dtype(dtype)))

    def const(self, value: object, *controls: str, dtype: type = np.float32) -> str:
        array = np.asarray(value, dtype)
        return self.node(
            "Const", *(f"^{c.split(':')[0]}" for c in controls), value=array,
            dtype=pb.AttrValue(type=tf_dtype(array.dtype)),
        )  # fmt: skip

    def while_loop(
        self,
        frame: str,
        cond: LoopFn,
        body: LoopFn,
        loop_vars: Sequence[str],
        invariants: Sequence[str] = (),
    ) -> list[str]:
        """``tf.while_loop``: ``cond(g, merges, invariants)`` returns ``[pred]``, ``body(g,
        values, invariants)`` the next values; the Exits are returned."""
        enter = dict(frame_name=frame, parallel_iterations=10)
        enters = [self.node("Enter", v, is_constant=False, **enter) for v in loop_vars]
        consts = [self.node("Enter", v, is_constant=True, **enter) for v in invariants]
        merges = [self.node("Merge", e, e) for e in enters]  # input 1: the NextIteration
        loop_cond = self.node("LoopCond", cond(self, merges, consts)[0])
        switches = [self.node("Switch", m, loop_cond) for m in merges]
        values = [self.node("Identity", f"{s}:1") for s in switches]
        for merge, result in zip(merges, body(self, values, consts), strict=True):
            nxt = self.node("NextIteration", result)
            self._node(merge).input[1] = nxt
        return [self.node("Exit", s) for s in switches]

    def cond(self, pred: str, inputs: Sequence[str], then: BranchFn, other: BranchFn) -> str:
        """``tf.cond`` of one result; each branch gets its switched inputs and its pivot."""
        pivots = self.node("Switch", pred, pred)
        switches = [self.node("Switch", x, pred) for x in inputs]
        t = then(self, [f"{s}:1" for s in switches], self.node("Identity", f"{pivots}:1"))
        f = other(self, list(switches), self.node("Identity", pivots))
        return self.node("Merge", f, t)

    def case(self, index: str, x: str, branches: Sequence[BranchFn]) -> str:
        """A lowered ``tf.switch_case`` of one input and one result."""
        n = len(branches)
        pivots = self.node("_SwitchN", index, index, num_outs=n)
        switch = self.node("_SwitchN", x, index, num_outs=n)
        results = [
            fn(self, [f"{switch}:{b}"], self.node("Identity", f"{pivots}:{b}"))
            for b, fn in enumerate(branches)
        ]
        return self.node("Merge", *results)

    def _node(self, name: str) -> pb.NodeDef:
        return next(n for n in self.proto.node if n.name == name)

    def write(self, folder: Path, feeds: dict[str, np.ndarray], fetches: list[str]) -> Path:
        path = folder / "graph.pb"
        path.write_bytes(self.proto.SerializeToString())
        lines = ["feeds:"]
        for name, value in feeds.items():
            lines.append(f"  - {{name: {name}, shape: {list(value.shape)}, dtype: {value.dtype}}}")
        lines += ["fetches:", *(f"  - {{name: {f}}}" for f in fetches)]
        (folder / "graph.yaml").write_text("\n".join(lines) + "\n")
        return path


def run(g: Tf1Graph, folder: Path, feeds: dict[str, np.ndarray], fetches: list[str]) -> list:
    """The fetches' values, evaluated from the translated HLO and again after the optimizer
    (both must agree)."""
    path = g.write(folder, feeds, fetches)
    module = load_source(path, folder / "graph.yaml").module
    args = list(feeds.values())
    before = evaluate(module, args)
    optimize(module)
    after = evaluate(module, args)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    return list(before)


def _set(attr: pb.AttrValue, value: object) -> None:
    if isinstance(value, pb.AttrValue):
        attr.CopyFrom(value)
    elif isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, np.ndarray):
        tensor = attr.tensor
        tensor.dtype = tf_dtype(value.dtype)
        tensor.tensor_shape.dim.extend(pb.TensorShapeProto.Dim(size=d) for d in value.shape)
        tensor.tensor_content = value.tobytes()
    else:
        raise TypeError(value)
