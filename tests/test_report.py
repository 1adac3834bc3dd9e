"""The compile report, and temp bytes against the peak-live bound on every TF fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from codegen_testing import compile_hlo_report
from fixtures import fixture_names, load_fixture
from hlo_programs import DENSE_RELU, SOFTMAX
from pass_testing import fused

from aotc.cli import main
from aotc.codegen.buffers import assign_buffers
from aotc.codegen.kernels import kernel_scratch_bytes
from aotc.codegen.target import TargetSpec, create_target_machine
from aotc.codegen.vector import VectorInfo, vector_info
from aotc.driver import compile_graph
from aotc.frontend.sources import load_source
from aotc.hlo.flops import flops
from aotc.hlo.text import print_module
from aotc.passes import default_pipeline


@pytest.mark.parametrize("name", fixture_names())
def test_temp_bytes_within_ten_percent_of_peak_live_bound(name: str) -> None:
    fx = load_fixture(name)
    module = load_source(fx.graph, fx.config).module
    default_pipeline().run(module)
    host = host_vector()
    assignment = assign_buffers(module.entry, scratch_size=lambda k: kernel_scratch_bytes(k, host))
    temp, bound = assignment.temp_bytes, assignment.peak_live_bytes
    kernels = len(assignment.kernels)
    print(f"{name}: {kernels} kernels, temp {temp} bytes, peak-live bound {bound} bytes")
    assert bound <= temp <= 1.1 * bound


def test_report_lists_fused_kernels_with_costs() -> None:
    _, report = compile_hlo_report(print_module(fused(DENSE_RELU)))
    (kernel,) = report.kernels
    assert kernel.opcode == "fusion" and kernel.kind == "kOutput"
    assert {"dot", "add", "maximum"} <= set(kernel.fused_ops)
    assert kernel.flops == 2 * 4 * 16 * 32 + 2 * 4 * 16  # the dot, the add and the max
    assert kernel.bytes_read == 4 * (4 * 32 + 32 * 16 + 16)
    assert kernel.bytes_written == 4 * 4 * 16
    data = json.loads(json.dumps(report.to_json()))
    # the only temp bytes are the GEMM's packing scratch (runtime B)
    scratch = kernel_scratch_bytes(fused(DENSE_RELU).entry.root.operands[0], host_vector())
    assert data["temp_bytes"] == scratch > 0 and data["kernels"][0]["kind"] == "kOutput"
    assert "kernels: 1 (1 fused)" in report.summary()


def host_vector() -> VectorInfo:
    return vector_info(create_target_machine(TargetSpec())[1])


def test_flops_of_a_softmax_reduce() -> None:
    module = fused(SOFTMAX)
    reduces = [i for c in module.computations for i in c.instructions if i.opcode.value == "reduce"]
    assert [flops(r) for r in reduces] == [8000, 8000]


@pytest.mark.parametrize("cache", ["--no-cache", "cached"])
def test_cli_writes_report_and_prints_summary(tmp_path: Path, cache: str) -> None:
    fx = load_fixture("mlp_b1")
    out = tmp_path / "mlp"
    report = tmp_path / "report.json"
    args = ["compile", str(fx.graph), "-c", str(fx.config), "-o", str(out)]
    args += ["--report", str(report), "-v"]
    args += ["--no-cache"] if cache == "--no-cache" else ["--cache-dir", str(tmp_path / "cc")]
    if cache == "cached":  # the report comes from the cache entry
        assert CliRunner().invoke(main, args).exit_code == 0
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert data["kernels"] and data["temp_bytes"] <= 1.1 * data["peak_live_bytes"]
    assert "temp bytes:" in result.output and "constant bytes:" in result.output
    # the pipeline's timings: every pass that ran, and -v's passes line
    assert {"simplify", "fusion", "schedule"} <= {p["name"] for p in data["passes"]}
    assert all(p["seconds"] >= 0 for p in data["passes"])
    assert f"passes: {len(data['passes'])} runs" in result.output
    # the compile call's stages: what bench/run.py sets beside tfcompile's own call
    assert list(data["stage_seconds"]) == ["front end", "passes", "codegen"]
    assert all(s > 0 for s in data["stage_seconds"].values())
    assert "time: front end " in result.output


def test_report_of_the_driver_has_pass_timings() -> None:
    fx = load_fixture("mlp_b1")
    result = compile_graph(fx.graph, fx.config)
    assert result.report.kernels and result.report.temp_bytes == result.model.temp_bytes
    assert [p.name for p in result.report.passes][-1] == "schedule"
