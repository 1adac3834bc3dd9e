"""Deep and colliding inputs: nothing recurses in proportion to the graph, and compile work
grows linearly with it (a 50,000-node chain, a 5,000-way name collision, through everything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from codegen_testing import run_and_compare
from llvmlite import ir as llvm_ir
from tf1_graphs import Tf1Graph

import aotc
from aotc.codegen.irtypes import VOID
from aotc.codegen.loops import function_builder, loop_nest
from aotc.errors import AotcError
from aotc.frontend.limits import MAX_RANK
from aotc.hlo import ir
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import MAX_FUSION_DEPTH, recorded_plan
from aotc.hlo.text import parse_module, print_module
from aotc.hlo.verify import verify_module
from aotc.passes import PipelineOptions, default_pipeline, schedule
from aotc.passes.dump import render_dot
from aotc.passes.dump_html import render_html
from aotc.passes.fusion import Fusion
from aotc.proto import aotc_tf_pb2 as pb

CHAIN = 50_000
COLLISIONS = 5_000
X = np.array([1.0, -2.0, 3.5, -4.5], np.float32)
# The chain repeats relu, negate, abs, add 0.5: each round turns v >= 0 into v + 0.5.
EXPECTED = np.maximum(X, 0) + np.float32(0.5 * (CHAIN // 4))
TF_CHAIN = ("Relu", "Neg", "Abs", "AddV2")
HLO_CHAIN = ("maximum({prev}, zeros)", "negate({prev})", "abs({prev})", "add({prev}, halves)")


def _float_attr(node: pb.NodeDef, value: float | None = None, dims: tuple[int, ...] = ()) -> None:
    node.attr["dtype" if value is not None else "T"].type = pb.DT_FLOAT
    if value is not None:
        tensor = node.attr["value"].tensor
        tensor.dtype = pb.DT_FLOAT
        tensor.float_val.append(value)
        for d in dims:
            tensor.tensor_shape.dim.add(size=d)


def _chain_graph_def(length: int = CHAIN) -> pb.GraphDef:
    g = pb.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = pb.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=4)
    _float_attr(g.node.add(name="half", op="Const"), 0.5)
    prev = "x"
    for i in range(length):
        op = TF_CHAIN[i % 4]
        inputs = [prev, "half"] if op == "AddV2" else [prev]
        _float_attr(g.node.add(name=f"n{i}", op=op, input=inputs))
        prev = f"n{i}"
    return g


def _chain_hlo(length: int = CHAIN) -> str:
    lines = [
        "HloModule chain",
        "ENTRY main {",
        "  x = f32[4] parameter(0)",
        "  zero = f32[] constant(0)",
        "  zeros = f32[4] broadcast(zero), dimensions={}",
        "  half = f32[] constant(0.5)",
        "  halves = f32[4] broadcast(half), dimensions={}",
    ]
    prev = "x"
    for i in range(length):
        lines.append(f"  n{i} = f32[4] {HLO_CHAIN[i % 4].format(prev=prev)}")
        prev = f"n{i}"
    lines += [f"  ROOT out = (f32[4]) tuple({prev})", "}"]
    return "\n".join(lines) + "\n"


def test_graphdef_chain_of_50000_nodes_compiles_and_runs(tmp_path: Path) -> None:
    path = tmp_path / "chain.pb"
    path.write_bytes(_chain_graph_def().SerializeToString())
    fn = aotc.compile(path, cache=False)
    np.testing.assert_array_equal(fn(X), EXPECTED)


def test_hlo_chain_of_50000_instructions_round_trips_and_compiles(tmp_path: Path) -> None:
    text = _chain_hlo()
    module = parse_module(text)
    verify_module(module)
    assert print_module(parse_module(print_module(module))) == print_module(module)
    path = tmp_path / "chain.hlo"
    path.write_text(text)
    fn = aotc.compile(path, cache=False)
    np.testing.assert_array_equal(fn(X), EXPECTED)


def test_5000_way_name_collision_compiles(tmp_path: Path) -> None:
    """Feeds literally named like XLA's uniqued names (``add.1`` ...) collide with every
    ``add`` the translation and the passes create."""
    path = tmp_path / "collide.pb"
    path.write_bytes(_collision_graph_def(COLLISIONS).SerializeToString())
    fn = aotc.compile(path, cache=False)
    args = [np.array([i, -i], np.float32) for i in range(1, COLLISIONS + 1)]
    expected = np.float32(COLLISIONS * (COLLISIONS + 1) // 2)
    np.testing.assert_array_equal(fn(*args), [expected, -expected])


def _collision_graph_def(count: int) -> pb.GraphDef:
    """Feeds ``add.1`` ... ``add.<count>``, summed by a chain of AddV2 nodes."""
    g = pb.GraphDef()
    for i in range(1, count + 1):
        feed = g.node.add(name=f"add.{i}", op="Placeholder")
        feed.attr["dtype"].type = pb.DT_FLOAT
        feed.attr["shape"].shape.dim.add(size=2)
    total = "add.1"
    for i in range(2, count + 1):
        _float_attr(g.node.add(name=f"sum.{i}", op="AddV2", input=[total, f"add.{i}"]))
        total = f"sum.{i}"
    return g


def test_5000_way_collision_with_names_the_passes_create() -> None:
    """Constant folding names its results ``constant``; 5,000 literal ``constant.N`` exist."""
    lines = ["HloModule collide", "ENTRY main {", "  x = f32[] parameter(0)"]
    prev = "x"
    for i in range(1, COLLISIONS + 1, 2):
        lines.append(f"  constant.{i} = f32[] constant({i})")
        lines.append(
            f"  constant.{i + 1} = f32[] constant(-{i + 1})"
        )  # all distinct: CSE keeps them
        lines.append(f"  folded.{i} = f32[] multiply(constant.{i}, constant.{i + 1})")
        lines.append(f"  add.{i} = f32[] add({prev}, folded.{i})")
        prev = f"add.{i}"
    lines += [f"  ROOT out = (f32[]) tuple({prev})", "}"]
    module = parse_module("\n".join(lines))
    literal = {i.name for i in module.entry.instructions}
    want = evaluate(module, [np.float32(1.5)])
    default_pipeline(PipelineOptions()).run(module)
    verify_module(module)
    names = [i.name for c in module.computations for i in c.instructions]
    assert len(set(names)) == len(names)
    assert any(n.startswith("constant.") and n not in literal for n in names)
    np.testing.assert_array_equal(evaluate(module, [np.float32(1.5)]), want)


@pytest.mark.parametrize("length", [2_000, 8_000])
def test_fusion_walks_each_instruction_a_constant_number_of_times(
    length: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work, not time: what post-order walks visit while fusing a chain is linear in it
    (it was quadratic: each candidate producer walked the whole graph below the group)."""
    module = parse_module(_chain_hlo(length))
    visits = {"walks": 0, "instructions": 0}
    original = ir._visit_post_order

    def counting(
        start: ir.Instruction,
        seen: set[int],
        order: list[ir.Instruction],
        within: set[int] | None = None,
    ) -> None:
        before = len(order)
        original(start, seen, order, within)
        visits["walks"] += 1
        visits["instructions"] += len(order) - before

    monkeypatch.setattr(ir, "_visit_post_order", counting)
    assert Fusion().run(module)
    assert visits["instructions"] <= 4 * length
    groups = sum(1 for i in module.entry.instructions if i.opcode is ir.Opcode.FUSION)
    assert visits["walks"] <= 3 * groups + 4


def test_list_schedule_work_is_linear_in_a_wide_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 kernels ready at once: each step must not rescan everything ready."""
    lines = ["HloModule wide", "ENTRY main {", "  x = f32[8] parameter(0)"]
    lines += [f"  n{i} = f32[8] add(x, x)" for i in range(COLLISIONS)]
    lines += [f"  s{i} = f32[8] multiply(n{i}, n{i + 1})" for i in range(COLLISIONS - 1)]
    names = ", ".join(f"s{i}" for i in range(COLLISIONS - 1))
    lines += [f"  ROOT out = ({', '.join(['f32[8]'] * (COLLISIONS - 1))}) tuple({names})", "}"]
    module = parse_module("\n".join(lines))
    calls = [0]
    original = schedule._gain

    def counting(*args: object) -> int:
        calls[0] += 1
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(schedule, "_gain", counting)
    order = schedule.greedy_schedule(module.entry, schedule.MemoryModel.of(module.entry))
    assert len(order) == len(module.entry.instructions)
    assert calls[0] <= 6 * len(order)


NESTING = 1_200  # loops inside loops: deeper than Python's default recursion limit


def _nested_loops(depth: int) -> str:
    """``depth`` while loops, each body running the next loop once, then adding 1."""
    out = ["HloModule nested"]
    for k in range(depth, 0, -1):
        out += [
            f"cond{k} {{",
            f"  c{k} = (s32[], f32[]) parameter(0)",
            f"  i{k} = s32[] get-tuple-element(c{k}), index=0",
            f"  one{k} = s32[] constant(1)",
            f"  ROOT lt{k} = pred[] compare(i{k}, one{k}), direction=LT",
            "}",
            f"body{k} {{",
            f"  b{k} = (s32[], f32[]) parameter(0)",
            f"  bi{k} = s32[] get-tuple-element(b{k}), index=0",
            f"  x{k} = f32[] get-tuple-element(b{k}), index=1",
            f"  inc{k} = s32[] constant(1)",
            f"  ni{k} = s32[] add(bi{k}, inc{k})",
        ]
        value = f"x{k}"
        if k < depth:
            out += [
                f"  z{k} = s32[] constant(0)",
                f"  t{k} = (s32[], f32[]) tuple(z{k}, x{k})",
                f"  w{k} = (s32[], f32[]) while(t{k}), condition=cond{k + 1}, body=body{k + 1}",
                f"  wx{k} = f32[] get-tuple-element(w{k}), index=1",
            ]
            value = f"wx{k}"
        out += [
            f"  f{k} = f32[] constant(1)",
            f"  nx{k} = f32[] add({value}, f{k})",
            f"  ROOT r{k} = (s32[], f32[]) tuple(ni{k}, nx{k})",
            "}",
        ]
    out += [
        "ENTRY main {",
        "  x = f32[] parameter(0)",
        "  z = s32[] constant(0)",
        "  t = (s32[], f32[]) tuple(z, x)",
        "  w = (s32[], f32[]) while(t), condition=cond1, body=body1",
        "  y = f32[] get-tuple-element(w), index=1",
        "  ROOT out = (f32[]) tuple(y)",
        "}",
    ]
    return "\n".join(out) + "\n"


def test_loops_nested_1200_deep_verify_print_evaluate_dump_and_compile(tmp_path: Path) -> None:
    text = _nested_loops(NESTING)
    module = parse_module(text)
    verify_module(module)
    assert print_module(parse_module(print_module(module))) == print_module(module)
    want = np.float32(0.5 + NESTING)
    assert evaluate(module, [np.float32(0.5)]) == [want]
    assert "<svg" in render_html(module) and "digraph" in render_dot(module)
    path = tmp_path / "nested.hlo"
    path.write_text(text)
    assert aotc.compile(path, cache=False)(np.float32(0.5)) == want


def _fused_chain(depth: int, dot: bool = False) -> str:
    """A fused computation ``depth`` instructions deep (a dot first, for an output fusion)."""
    shape = "f32[8,16]"
    lines = ["HloModule deep", "fused_computation {", f"  p = {shape} parameter(0)"]
    prev = "p"
    if dot:
        lines += [
            "  w = f32[16,16] parameter(1)",
            f"  d = {shape} dot(p, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
        ]
        prev = "d"
    for i in range(depth - dot):
        lines.append(f"  n{i} = {shape} {'negate' if i % 2 else 'abs'}({prev})")
        prev = f"n{i}"
    lines[-1] = "  ROOT" + lines[-1][1:]
    operands = "x, w" if dot else "x"
    kind = "kOutput" if dot else "kLoop"
    lines += [
        "}",
        "ENTRY main {",
        f"  x = {shape} parameter(0)",
        *(["  w = f32[16,16] parameter(1)"] if dot else []),
        f"  f = {shape} fusion({operands}), kind={kind}, calls=fused_computation",
        f"  ROOT out = ({shape}) tuple(f)",
        "}",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("dot", [False, True], ids=["loop", "output"])
def test_fusion_at_the_depth_bound_is_emitted_as_one_kernel(dot: bool) -> None:
    """The fused emitter composes one generator per level: at the bound it must still fit
    in Python's default recursion limit, as one kernel (the plan is kept)."""
    module = parse_module(_fused_chain(MAX_FUSION_DEPTH, dot))
    fusion = next(i for i in module.entry.instructions if i.opcode is ir.Opcode.FUSION)
    assert recorded_plan(fusion) is not None
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.array_shape.dims).astype(np.float32)
            for p in module.entry.parameters]  # fmt: skip
    run_and_compare(module, args, rtol=1e-5)


def test_deeper_input_fusion_is_inlined_and_fused_again(tmp_path: Path) -> None:
    """5,000 levels: no plan (no generator recursion that deep); the call inliner inlines it."""
    text = _fused_chain(5_000)
    module = parse_module(text)
    fusion = next(i for i in module.entry.instructions if i.opcode is ir.Opcode.FUSION)
    assert recorded_plan(fusion) is None
    path = tmp_path / "deep.hlo"
    path.write_text(text)
    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    np.testing.assert_array_equal(aotc.compile(path, cache=False)(x), -np.abs(x))


def test_loop_nest_of_any_rank_needs_no_recursion() -> None:
    module = llvm_ir.Module("nest")
    fn = llvm_ir.Function(module, llvm_ir.FunctionType(VOID, []), "nest")
    b = function_builder(fn)
    with loop_nest(b, [2] * 1_500 + [1]) as index:
        assert len(index) == 1_501
    b.ret_void()
    assert str(module).count("icmp slt") == 1_500


def test_rank_above_the_limit_is_an_error(tmp_path: Path) -> None:
    dims = ",".join(["1"] * (MAX_RANK + 1))
    path = tmp_path / "rank.hlo"
    path.write_text(f"HloModule r\nENTRY m {{\n  x = f32[{dims}] parameter(0)\n"
                    f"  ROOT n = f32[{dims}] negate(x)\n}}\n")  # fmt: skip
    with pytest.raises(AotcError, match=f"rank {MAX_RANK + 1}; aotc supports ranks up to"):
        aotc.compile(path, cache=False)


def _nested_functions(depth: int) -> pb.GraphDef:
    """``call`` runs f0; f_k(a) = -f_{k+1}(a), the last one -a: ``depth`` negations."""
    g = pb.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = pb.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=2)
    _call(g.node.add(name="call", op="PartitionedCall", input=["x"]), "f0")
    for k in range(depth):
        f = g.library.function.add()
        f.signature.name = f"f{k}"
        f.signature.input_arg.add(name="a", type=pb.DT_FLOAT)
        f.signature.output_arg.add(name="o", type=pb.DT_FLOAT)
        operand = "a"
        if k + 1 < depth:
            _call(f.node_def.add(name="c", op="PartitionedCall", input=["a"]), f"f{k + 1}")
            operand = "c:output:0"
        _float_attr(f.node_def.add(name="n", op="Neg", input=[operand]))
        f.ret["o"] = "n:y:0"
    return g


def _call(node: pb.NodeDef, function: str) -> None:
    node.attr["f"].func.name = function
    node.attr["Tin"].list.type.append(pb.DT_FLOAT)
    node.attr["Tout"].list.type.append(pb.DT_FLOAT)


def test_functions_nested_1501_deep_are_inlined(tmp_path: Path) -> None:
    path = tmp_path / "nested.pb"
    path.write_bytes(_nested_functions(1_501).SerializeToString())
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(aotc.compile(path, cache=False)(x), -x)


def _tf1_nested_loops(depth: int) -> pb.GraphDef:
    """``depth`` TF1 while frames each inside the body of the last, each running once; the
    innermost body adds 1. Built level by level down, then closed level by level up."""
    g = Tf1Graph()
    value = g.node("Placeholder", name="x", dtype=pb.AttrValue(type=pb.DT_FLOAT))
    g._node(value).attr["shape"].shape.dim.add(size=4)
    levels = []
    for k in range(depth):
        enter = dict(frame_name=f"loop{k}", is_constant=False)
        counter = g.node(
            "Merge", *[g.node("Enter", g.const(0, value, dtype=np.int32), **enter)] * 2
        )
        carry = g.node("Merge", *[g.node("Enter", value, **enter)] * 2)
        go = g.node("LoopCond", g.node("Less", counter, g.const(1, counter, dtype=np.int32)))
        switches = (g.node("Switch", counter, go), g.node("Switch", carry, go))
        step, value = (g.node("Identity", f"{s}:1") for s in switches)
        levels.append((counter, carry, switches[1], step))
    result = g.node("AddV2", value, g.const(1.0, value))
    for counter, carry, switch, step in reversed(levels):
        one = g.const(1, step, dtype=np.int32)
        g._node(counter).input[1] = g.node("NextIteration", g.node("AddV2", step, one))
        g._node(carry).input[1] = g.node("NextIteration", result)
        result = g.node("Exit", switch)
    g.node("Identity", result, name="out")
    return g.proto


def test_tf1_loops_nested_1200_deep_are_functionalized_and_compile(tmp_path: Path) -> None:
    path = tmp_path / "nested.pb"
    path.write_bytes(_tf1_nested_loops(NESTING).SerializeToString())
    np.testing.assert_array_equal(aotc.compile(path, cache=False)(X), X + 1)


# Below Python's default: what recursion is bounded by a constant (fused generators, about two
# frames per fused level up to MAX_FUSION_DEPTH; tuple shapes; the libraries aotc calls) fits,
# while anything recursing once per node, name, loop or function fails on inputs a few times
# deeper, at a fraction of the 50,000-node tests' cost. Modules are imported first, so the
# import machinery's frames do not count.
LOW_RECURSION_LIMIT = 600
_UNDER_LOW_LIMIT = """
import json, sys
import aotc.cli, aotc.driver, aotc.jit, aotc.inspection
sys.setrecursionlimit(int(sys.argv[1]))
for argv in json.loads(sys.argv[2]):
    try:
        aotc.cli.main(argv, standalone_mode=False)
    except SystemExit as e:
        assert not e.code, argv
"""


def _aotc_under_low_limit(commands: list[list[str]]) -> str:
    """Run the CLI commands in one process under ``LOW_RECURSION_LIMIT``; their stdout."""
    cmd = [sys.executable, "-c", _UNDER_LOW_LIMIT, str(LOW_RECURSION_LIMIT), json.dumps(commands)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_cli_needs_no_recursion_in_proportion_to_the_input(tmp_path: Path) -> None:
    depth = 2 * LOW_RECURSION_LIMIT
    inputs = {  # name: (content, the value of its one feed x, or None: compile only)
        "chain.pb": (_chain_graph_def(2 * depth).SerializeToString(), X),
        "functions.pb": (_nested_functions(depth).SerializeToString(), X[:2]),
        "collide.pb": (_collision_graph_def(depth).SerializeToString(), None),
        "chain.hlo": (_chain_hlo(2 * depth).encode(), X),
        "loops.hlo": (_nested_loops(depth).encode(), np.float32(0.5)),
        "fused.hlo": (_fused_chain(depth).encode(), np.ones((8, 16), np.float32)),
    }
    commands, runs = [], 0
    for name, (content, x) in inputs.items():
        path = tmp_path / name
        path.write_bytes(content)
        commands.append(["inspect", str(path)])
        if x is None:
            commands.append(["compile", str(path), "-o", str(tmp_path / name), "-q"])
            continue
        np.save(tmp_path / f"{name}.x.npy", x)
        feed = f"x={tmp_path / name}.x.npy"
        commands.append(
            ["run", str(path), "-i", feed, "-d", f"{tmp_path / name}.out", "--reference"]
        )
        runs += 1
    out = _aotc_under_low_limit(commands)
    assert out.count("max |diff| vs reference 0") == runs, out
    assert (tmp_path / "collide.pb.o").stat().st_size > 0
