"""Compile work grows linearly with the graph: counted (Python calls, LLVM function sizes), not
timed. The big timed cases (a 20,000-op chain, AddN and ConcatV2 of 5,000 feeds, a doubling
function library) are ``make bench-compile`` (tools/bench_compile.py)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from codegen_testing import run_and_compare

import aotc
from aotc.codegen.emitter import emit_module_assigned
from aotc.driver import optimize
from aotc.errors import GraphError, HloError
from aotc.frontend import inline
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.hlo.fusion_plan import MAX_FUSED_OPERANDS
from aotc.hlo.ir import Module, Opcode
from aotc.hlo.text import parse_module
from aotc.passes import PipelineOptions, default_pipeline
from aotc.passes.fusion import Fusion
from aotc.proto import aotc_tf_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools import scale_graphs  # noqa: E402

X = np.array([1.0, -2.0, 3.5, -4.5], np.float32)


def _python_calls(work: Callable[[], object]) -> int:
    """The number of Python function calls ``work`` makes: deterministic, unlike time."""
    count = [0]

    def hook(frame: object, event: str, arg: object) -> None:
        count[0] += event == "call"

    sys.setprofile(hook)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count[0]


def _front_end_passes_and_emission(path: Path) -> Callable[[], object]:
    def work() -> object:
        source = load_source(path, None, None)
        optimize(source.module)
        return emit_module_assigned(source.module, "m")

    return work


@pytest.mark.parametrize(("kind", "n"), [("chain", 400), ("addn", 200), ("concat", 200)])
def test_compile_work_grows_linearly(kind: str, n: int, tmp_path: Path) -> None:
    """From n to 4n ops, loading, translating, every pass and emitting LLVM IR do 4x the work
    (a fusion pass re-walking the graph per candidate, or a quadratic scan, would be 16x)."""
    calls = []
    for size in (n, 4 * n):
        path = tmp_path / f"{kind}{size}.pb"
        path.write_bytes(getattr(scale_graphs, kind)(size).SerializeToString())
        calls.append(_python_calls(_front_end_passes_and_emission(path)))
    assert calls[1] <= 4.6 * calls[0], calls


def test_expanded_calls_cost_what_they_expand_to() -> None:
    """A call graph that doubles at each level: the passes' work follows the expanded size
    (fusion planning once followed every path up a group of ``add(x, x)``: exponential)."""
    calls = []
    for levels in (6, 8):
        module = parse_module(scale_graphs.doubling_calls_hlo(levels, same_operands=False))
        calls.append(_python_calls(lambda m=module: default_pipeline(PipelineOptions()).run(m)))
    assert calls[1] <= 4.6 * calls[0], calls


def _llvm_ir(kind: str, n: int, tmp_path: Path) -> str:
    path = tmp_path / f"{kind}{n}.pb"
    path.write_bytes(getattr(scale_graphs, kind)(n).SerializeToString())
    source = load_source(path, None, None)
    optimize(source.module)
    return str(emit_module_assigned(source.module, "m")[0])


def _function_sizes(text: str) -> dict[str, int]:
    """Instructions per defined function of LLVM IR text."""
    sizes: dict[str, int] = {}
    for body in text.split("\ndefine ")[1:]:
        name = re.search(r'@"([^"]+)"', body)
        assert name is not None
        sizes[name.group(1)] = body[: body.index("\n}")].count("\n  ")
    return sizes


@pytest.mark.parametrize("kind", ["concat", "addn"])
def test_llvm_functions_and_calls_stay_small(kind: str, tmp_path: Path) -> None:
    """LLVM's time grows with the square of a function's size (its loops, stack arguments,
    stores): with thousands of inputs, every kernel function and call stays as small as with
    a hundred; only the two entry points grow, linearly."""
    small, big = _llvm_ir(kind, 150, tmp_path), _llvm_ir(kind, 600, tmp_path)
    arguments = [
        max(c.count("ptr") for c in re.findall(r"call void @\"[^\"]+\"\(([^)]*)\)", text))
        for text in (small, big)
    ]
    assert arguments[1] <= arguments[0] <= 2 * Fusion().max_members, arguments
    kernels = [
        max(s for f, s in _function_sizes(text).items() if not f.startswith("m_run"))
        for text in (small, big)
    ]
    assert kernels[1] <= kernels[0], kernels
    entry = _function_sizes(big)["m_run_buffers"]
    allocas = big[big.index('@"m_run_buffers"') :].split("\nbody:")[0]
    assert "load" not in allocas and entry < 20 * 600  # pointers loaded where they are used


def _concat_hlo(sizes: list[int], dim: int, consumer: str | None = None) -> str:
    rows = 2
    shapes = [f"f32[{rows},{k}]" if dim == 1 else f"f32[{k},{rows}]" for k in sizes]
    total = f"f32[{rows},{sum(sizes)}]" if dim == 1 else f"f32[{sum(sizes)},{rows}]"
    lines = ["HloModule wide", "ENTRY main {"]
    lines += [f"  p{i} = {s} parameter({i})" for i, s in enumerate(shapes)]
    names = ", ".join(f"p{i}" for i in range(len(sizes)))
    lines.append(f"  c = {total} concatenate({names}), dimensions={{{dim}}}")
    out = "c"
    if consumer is not None:
        lines.append(f"  u = {total} {consumer}(c)")
        out = "u"
    lines += [f"  ROOT r = ({total}) tuple({out})", "}"]
    return "\n".join(lines) + "\n"


def _inputs(module: Module, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal(p.array_shape.dims).astype(np.float32) for p in module.entry.parameters
    ]


@pytest.mark.parametrize("dim", [0, 1])
def test_wide_concatenate_in_parts_matches_the_evaluator(dim: int) -> None:
    """70 operands (three kernel parts, a 70-argument ``_run`` whose pointer table is stored
    by helpers), of different sizes, one of them empty."""
    sizes = [1 + i % 3 for i in range(70)]
    sizes[40] = 0
    module = parse_module(_concat_hlo(sizes, dim))
    text = run_and_compare(module, _inputs(module), rtol=0)
    assert "kernel.c.part2" in text and "kernel.c.part3" not in text


def test_concatenate_wider_than_a_fusion_takes_is_not_fused() -> None:
    module = parse_module(_concat_hlo([2] * (MAX_FUSED_OPERANDS + 1), 1, consumer="negate"))
    want = evaluate(module, _inputs(module))
    default_pipeline(PipelineOptions()).run(module)
    assert any(i.opcode is Opcode.CONCATENATE for i in module.entry.instructions)
    np.testing.assert_array_equal(evaluate(module, _inputs(module)), want)


def test_fused_concatenate_branches_to_its_operand_by_binary_search() -> None:
    """A concatenation inside a fusion (not its root) of 9 operands of different sizes."""
    module = parse_module(_concat_hlo([1, 3, 2, 1, 4, 1, 2, 5, 1], 1, consumer="negate"))
    default_pipeline(PipelineOptions()).run(module)
    fusions = [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]
    assert fusions and fusions[0].called[0].root.opcode is Opcode.NEGATE
    text = run_and_compare(module, _inputs(module), rtol=0)
    assert text.count("icmp ult") < 40  # not one test per operand per element


def test_member_read_twice_is_emitted_once() -> None:
    """``s_k = s_{k-1} + s_{k-1}``, 60 levels in one fusion: composing generators without
    memoizing them would emit 2**60 additions."""
    lines = ["HloModule twice", "ENTRY main {", "  s0 = f32[4] parameter(0)"]
    lines += [f"  s{k} = f32[4] add(s{k - 1}, s{k - 1})" for k in range(1, 61)]
    lines += ["  ROOT r = (f32[4]) tuple(s60)", "}"]
    module = parse_module("\n".join(lines))
    default_pipeline(PipelineOptions()).run(module)
    assert sum(i.opcode is Opcode.FUSION for i in module.entry.instructions) == 1
    x = np.array([1.0, -2.0, 2.0**-60, 0.0], np.float32)
    text = run_and_compare(module, [x], rtol=0)
    assert text.count("fadd") < 200


def test_pure_calls_with_the_same_inputs_are_inlined_once(tmp_path: Path) -> None:
    """f_k(a) = f_{k-1}(a) + f_{k-1}(a), 16 levels: 2**16 copies of f_0 unless repeated
    calls share the first one's results (a SavedModel, as the probe made it)."""
    graph = scale_graphs.doubling_library(16)
    flat = inline.inline_functions(graph)
    assert len(flat.node) < 100
    saved = scale_graphs.write_savedmodel(graph, tmp_path / "saved", ["x"], "out")
    np.testing.assert_array_equal(aotc.compile(saved, cache=False)(X), -X * 2.0**16)


def test_stateful_calls_are_each_inlined() -> None:
    """A function with a stateful op runs at every call: its calls are never merged."""
    graph = scale_graphs.doubling_library(3)
    f0 = next(f for f in graph.library.function if f.signature.name == "f0")
    f0.node_def.add(name="seed", op="RandomUniform", input=["a"])
    flat = inline.inline_functions(graph)
    assert sum(n.op == "RandomUniform" for n in flat.node) == 2**3


def test_exponential_library_is_refused_before_inlining() -> None:
    """f_k(a) = f_{k-1}(f_{k-1}(a)), 40 levels: 2**40 nodes, refused at once, by name."""
    graph = scale_graphs.doubling_library(40)
    for f in graph.library.function:
        for node in f.node_def:
            if node.name == "c1":
                node.input[:] = ["c0:output:0"]
    message = rf"more than {inline.MAX_INLINED_NODES} nodes: node 'out' calls function 'f40'"
    with pytest.raises(GraphError, match=message):
        inline.inline_functions(graph)


@pytest.mark.parametrize("make", [scale_graphs.doubling_calls_hlo, scale_graphs.doubling_loops_hlo])
def test_hlo_call_graph_doubling_with_the_same_operands_is_expanded_once(
    make: Callable[[int, bool], str],
) -> None:
    """30 levels, each computing twice the level below (the evaluator would take 2**30 steps
    before the passes)."""
    module = parse_module(make(30, True))
    default_pipeline(PipelineOptions()).run(module)
    assert sum(len(c.instructions) for c in module.computations) < 200
    np.testing.assert_array_equal(evaluate(module, [X]), [-X * 2.0**30])


@pytest.mark.parametrize("make", [scale_graphs.doubling_calls_hlo, scale_graphs.doubling_loops_hlo])
def test_hlo_call_graph_expanding_exponentially_is_refused(
    make: Callable[[int, bool], str],
) -> None:
    module = parse_module(make(30, False))
    with pytest.raises(HloError, match=r"computation (c|body)\d+ expands to \d+ instructions"):
        default_pipeline(PipelineOptions()).run(module)


def test_doubling_library_as_graphdef_compiles(tmp_path: Path) -> None:
    path = tmp_path / "lib.pb"
    graph = scale_graphs.doubling_library(20)
    path.write_bytes(graph.SerializeToString())
    assert isinstance(graph, pb.GraphDef)
    np.testing.assert_array_equal(aotc.compile(path, cache=False)(X), -X * 2.0**20)
