"""Synthetic graphs that grow in one direction, for compile-cost tests and benchmarks.

Each builder returns a TensorFlow ``GraphDef`` (aotc's own schema, ``aotc.proto``) of ``n``
ops of one kind, so compile work can be measured as a function of ``n``:

* ``chain(n)``: ``n`` elementwise ops, each reading the previous one;
* ``addn(n)``: one ``AddN`` of ``n`` feeds;
* ``concat(n)``: one ``ConcatV2`` of ``n`` feeds;
* ``doubling_library(levels)``: a function library in which ``f_k`` calls ``f_{k-1}`` twice
  (the inlined graph has ``2**levels`` copies of ``f_0``), and ``write_savedmodel`` writes any
  of them as a SavedModel folder.
"""

from __future__ import annotations

from pathlib import Path

from aotc.proto import aotc_tf_pb2 as pb

CHAIN_OPS = ("Relu", "Neg", "Abs", "AddV2")  # each round of four turns v >= 0 into v + 0.5


def _typed(node: pb.NodeDef) -> pb.NodeDef:
    node.attr["T"].type = pb.DT_FLOAT
    return node


def _placeholder(g: pb.GraphDef, name: str, dims: tuple[int, ...] = (4,)) -> None:
    x = g.node.add(name=name, op="Placeholder")
    x.attr["dtype"].type = pb.DT_FLOAT
    for d in dims:
        x.attr["shape"].shape.dim.add(size=d)


def _const(g: pb.GraphDef, name: str, value: float, dtype: int = pb.DT_FLOAT) -> None:
    node = g.node.add(name=name, op="Const")
    node.attr["dtype"].type = dtype
    tensor = node.attr["value"].tensor
    tensor.dtype = dtype
    if dtype == pb.DT_INT32:
        tensor.int_val.append(int(value))
    else:
        tensor.float_val.append(value)


def chain(n: int) -> pb.GraphDef:
    """``x -> relu -> neg -> abs -> add 0.5 -> relu ...``: ``n`` ops; fetch ``n{n-1}``."""
    g = pb.GraphDef()
    _placeholder(g, "x")
    _const(g, "half", 0.5)
    prev = "x"
    for i in range(n):
        op = CHAIN_OPS[i % 4]
        _typed(g.node.add(name=f"n{i}", op=op, input=[prev, "half"] if op == "AddV2" else [prev]))
        prev = f"n{i}"
    return g


def _feeds(g: pb.GraphDef, n: int) -> list[str]:
    for i in range(n):
        _placeholder(g, f"x{i}")
    return [f"x{i}" for i in range(n)]


def addn(n: int) -> pb.GraphDef:
    """``sum = AddN(x0, ..., x{n-1})``."""
    g = pb.GraphDef()
    node = _typed(g.node.add(name="sum", op="AddN", input=_feeds(g, n)))
    node.attr["N"].i = n
    return g


def concat(n: int) -> pb.GraphDef:
    """``cat = ConcatV2(x0, ..., x{n-1}, axis=0)``."""
    g = pb.GraphDef()
    _const(g, "axis", 0, pb.DT_INT32)
    node = _typed(g.node.add(name="cat", op="ConcatV2", input=[*_feeds(g, n), "axis"]))
    node.attr["N"].i = n
    node.attr["Tidx"].type = pb.DT_INT32
    return g


def doubling_library(levels: int) -> pb.GraphDef:
    """``out = f{levels}(x)``, ``f_k(a) = f_{k-1}(a) + f_{k-1}(a)``, ``f_0(a) = -a``."""
    g = pb.GraphDef()
    _placeholder(g, "x")
    _call(g.node.add(name="out", op="StatefulPartitionedCall", input=["x"]), f"f{levels}")
    for k in range(levels + 1):
        f = g.library.function.add()
        f.signature.name = f"f{k}"
        f.signature.input_arg.add(name="a", type=pb.DT_FLOAT)
        f.signature.output_arg.add(name="o", type=pb.DT_FLOAT)
        if k == 0:
            _typed(f.node_def.add(name="n", op="Neg", input=["a"]))
            f.ret["o"] = "n:y:0"
            continue
        for c in ("c0", "c1"):
            _call(f.node_def.add(name=c, op="PartitionedCall", input=["a"]), f"f{k - 1}")
        _typed(f.node_def.add(name="s", op="AddV2", input=["c0:output:0", "c1:output:0"]))
        f.ret["o"] = "s:z:0"
    return g


def _call(node: pb.NodeDef, function: str) -> None:
    node.attr["f"].func.name = function
    node.attr["Tin"].list.type.append(pb.DT_FLOAT)
    node.attr["Tout"].list.type.append(pb.DT_FLOAT)


def write_savedmodel(graph: pb.GraphDef, folder: Path, feeds: list[str], fetch: str) -> Path:
    """``graph`` as a SavedModel (tag ``serve``, signature ``serving_default``) in ``folder``."""
    saved = pb.SavedModel()
    meta = saved.meta_graphs.add()
    meta.meta_info_def.tags.append("serve")
    meta.graph_def.CopyFrom(graph)
    sig = meta.signature_def["serving_default"]
    placeholders = {n.name: n for n in graph.node if n.op == "Placeholder"}
    for feed in feeds:
        sig.inputs[feed].name = f"{feed}:0"
        sig.inputs[feed].dtype = pb.DT_FLOAT
        sig.inputs[feed].tensor_shape.CopyFrom(placeholders[feed].attr["shape"].shape)
    sig.outputs["out"].name = f"{fetch}:0"
    sig.outputs["out"].dtype = pb.DT_FLOAT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "saved_model.pb").write_bytes(saved.SerializeToString(deterministic=True))
    return folder


def doubling_calls_hlo(levels: int, same_operands: bool = True) -> str:
    """HLO text: ``c_k(p) = c_{k-1}(p) + c_{k-1}(p)`` (or ``c_{k-1}(c_{k-1}(p))`` when not
    ``same_operands``: an expansion ``2**levels`` long), ``c_0(p) = -p``."""
    lines = ["HloModule doubling_calls", "c0 {", "  p0 = f32[4] parameter(0)"]
    lines += ["  ROOT n0 = f32[4] negate(p0)", "}"]
    for k in range(1, levels + 1):
        second = f"p{k}" if same_operands else f"a{k}"
        lines += [
            f"c{k} {{",
            f"  p{k} = f32[4] parameter(0)",
            f"  a{k} = f32[4] call(p{k}), to_apply=c{k - 1}",
            f"  b{k} = f32[4] call({second}), to_apply=c{k - 1}",
            f"  ROOT s{k} = f32[4] add(a{k}, b{k})",
            "}",
        ]
    lines += ["ENTRY main {", "  x = f32[4] parameter(0)"]
    lines += [f"  y = f32[4] call(x), to_apply=c{levels}", "  ROOT r = (f32[4]) tuple(y)", "}"]
    return "\n".join(lines) + "\n"


def doubling_loops_hlo(levels: int, same_operands: bool = True) -> str:
    """HLO text: the body of loop ``k`` runs two loops with body ``k-1`` (from the same carry,
    or the second from the first's result when not ``same_operands``), once each."""
    carry = "(s32[], f32[4])"
    lines = ["HloModule doubling_loops", "cond {", f"  c = {carry} parameter(0)"]
    lines += ["  i = s32[] get-tuple-element(c), index=0", "  one = s32[] constant(1)"]
    lines += ["  ROOT lt = pred[] compare(i, one), direction=LT", "}"]
    lines += _loop_body(0, carry, ["  y0 = f32[4] negate(x0)"])
    for k in range(1, levels + 1):
        second = f"t{k}" if same_operands else f"u{k}"
        lines += _loop_body(k, carry, [
            f"  t{k} = {carry} tuple(zero{k}, x{k})",
            f"  v{k} = {carry} while(t{k}), condition=cond, body=body{k - 1}",
            f"  e{k} = f32[4] get-tuple-element(v{k}), index=1",
            f"  u{k} = {carry} tuple(zero{k}, e{k})",
            f"  w{k} = {carry} while({second}), condition=cond, body=body{k - 1}",
            f"  f{k} = f32[4] get-tuple-element(w{k}), index=1",
            f"  y{k} = f32[4] add(e{k}, f{k})",
        ])  # fmt: skip
    lines += ["ENTRY main {", "  x = f32[4] parameter(0)", "  zero = s32[] constant(0)"]
    lines += [f"  t = {carry} tuple(zero, x)", f"  w = {carry} while(t), condition=cond, "
              f"body=body{levels}", "  y = f32[4] get-tuple-element(w), index=1",
              "  ROOT r = (f32[4]) tuple(y)", "}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _loop_body(k: int, carry: str, work: list[str]) -> list[str]:
    """Loop body ``k``: ``work`` from ``x{k}`` to ``y{k}``, and the counter plus one."""
    head = [f"body{k} {{", f"  b{k} = {carry} parameter(0)"]
    head += [f"  i{k} = s32[] get-tuple-element(b{k}), index=0"]
    head += [f"  x{k} = f32[4] get-tuple-element(b{k}), index=1", f"  zero{k} = s32[] constant(0)"]
    tail = [f"  one{k} = s32[] constant(1)", f"  j{k} = s32[] add(i{k}, one{k})"]
    return [*head, *work, *tail, f"  ROOT r{k} = {carry} tuple(j{k}, y{k})", "}"]
