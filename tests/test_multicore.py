"""The multi-core entry point: bit-identical to the single-threaded run on every pool size.

The fixtures' kernels are below the work from which the emitter splits a kernel
(``parallel.TASK_NS``), so the tests lower it to split every kernel that can be split.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from c_harness import CC, entry_points, exported_and_undefined_symbols, multicore_entry_points
from click.testing import CliRunner
from codegen_testing import compile_entry, compile_hlo
from cross_testing import CROSS_TARGETS, require_toolchains
from fixtures import CONTROL_FLOW_DATA, TF_DATA, load_fixture
from hlo_programs import build
from mt_harness import INCLUDE, TSAN_CFLAGS, run_multicore, split_every_kernel

import aotc
from aotc.cli import main
from aotc.codegen import CompiledModel, parallel
from aotc.driver import compile_graph
from aotc.errors import ConfigError
from aotc.frontend.options import SourceOptions
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import DotDims, Instruction
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module
from aotc.passes.fusion import Fusion

FIXTURES = [
    (TF_DATA, "model_mobilenet"),
    (TF_DATA, "model_resnet"),
    (TF_DATA, "model_unet"),
    (TF_DATA, "model_lenet"),
    (TF_DATA, "model_transformer"),
    (TF_DATA, "depthwise"),
    (TF_DATA, "batch_matmul"),
    (CONTROL_FLOW_DATA, "keras_lstm_seq"),  # GEMMs in a while-loop body
    (CONTROL_FLOW_DATA, "switch_case"),  # kernels in branches
]


@pytest.fixture
def split_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offer every kernel a split: the fixtures' kernels are below the size that pays."""
    split_every_kernel(monkeypatch)


def _compiled(folder: Path, name: str) -> tuple[CompiledModel, list]:
    fx = load_fixture(name, folder)
    return compile_graph(fx.graph, fx.config).model, fx.args


def _assert_identical(name: str, reference: list, pooled: dict[int, list]) -> None:
    for threads, results in pooled.items():
        for k, (got, want) in enumerate(zip(results, reference, strict=True)):
            assert got.tobytes() == want.tobytes(), f"{name}: result {k}, pool of {threads}"


@pytest.mark.parametrize(("folder", "name"), FIXTURES, ids=[n for _, n in FIXTURES])
def test_pools_match_the_single_threaded_run(
    folder: Path, name: str, split_everything: None
) -> None:
    model, args = _compiled(folder, name)
    reference, pooled = run_multicore(model, args)
    _assert_identical(name, reference, pooled)


_REDUCES = {
    # a global pool's [1, C]: split over tiles of channels
    "global_pool": ("f32[1,9,7,40]", "f32[1,40]", "{1,2}"),
    # kept innermost dim under an outer kept dim: split over the outer rows
    "kept_inner": ("f32[5,11,24]", "f32[5,24]", "{1}"),
    # reduced innermost dim: split over the output elements
    "rows": ("f32[6,3,50]", "f32[6,3]", "{2}"),
}


@pytest.mark.parametrize("fused", [False, True], ids=["alone", "fused"])
@pytest.mark.parametrize("case", list(_REDUCES))
def test_split_reductions_match_the_evaluator_on_every_pool(
    case: str, fused: bool, split_everything: None
) -> None:
    operand, result, dims = _REDUCES[case]
    module = parse_module(f"""HloModule r
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
ENTRY main {{
  x = {operand} parameter(0)
  e = {operand} exponential(x)
  zero = f32[] constant(0)
  r = {result} reduce(e, zero), dimensions={dims}, to_apply=add
  ROOT out = ({result}) tuple(r)
}}""")
    if fused:  # the exponential computed inside the reduction's loops
        Fusion().run(module)
    model = compile_entry(module, "m")
    assert _task_functions(model), "the reduction is split"
    x = np.random.default_rng(5).standard_normal(module.entry.parameters[0].array_shape.dims)
    inputs = [x.astype(np.float32)]
    (want,) = evaluate(module, inputs)
    reference, pooled = run_multicore(model, inputs)
    np.testing.assert_allclose(reference[0], want, rtol=2e-6)
    _assert_identical(case, reference, pooled)


def test_a_gemv_of_one_panel_splits_its_vectors(split_everything: None) -> None:
    """A squeeze-excite dense layer (one row, few outputs, constant weights) is shared by
    its vectors: 2.5 and 3 of them here (1 of 16, 40 and 48 outputs; 5 and 6 on AVX2)."""
    rng = np.random.default_rng(11)

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list:
        weights = [rng.standard_normal((300, n)).astype(np.float32) for n in (40, 48)]
        return [b.dot(ps[0], b.constant(w), DotDims((1,), (0,))) for w in weights]

    module = build([Shape(PrimitiveType.F32, (1, 300))], body)
    model = compile_entry(module, "m")
    assert len(_task_functions(model)) >= 2
    inputs = [rng.standard_normal((1, 300)).astype(np.float32)]
    reference, pooled = run_multicore(model, inputs, (1, 2, 3))
    for want, got in zip(evaluate(module, inputs), reference, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    _assert_identical("gemv", reference, pooled)


def test_kernels_are_split(split_everything: None) -> None:
    """The fixtures do reach the pool: tasks exist and the entry reads the pool."""
    model, _ = _compiled(TF_DATA, "model_mobilenet")
    assert len(_task_functions(model)) >= 10


def _task_functions(model: CompiledModel) -> list[str]:
    return [
        line for line in model.llvm_ir.splitlines() if line.startswith("define") and ".task" in line
    ]


def test_the_cost_model_splits_long_kernels_only() -> None:
    """A 256x256x256 GEMM (33 MFLOP) is split; the small fixture's kernels of a few
    microseconds run whole (split, they got slower on two threads), and its results still
    match on every pool."""
    _, big = compile_hlo(
        "HloModule m\nENTRY main {\n  a = f32[256,256] parameter(0)\n"
        "  b = f32[256,256] parameter(1)\n  d = f32[256,256] dot(a, b), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
        "  ROOT t = (f32[256,256]) tuple(d)\n}\n"
    )
    assert _task_functions(big)
    model, args = _compiled(TF_DATA, "model_mobilenet")
    assert not _task_functions(model)
    reference, pooled = run_multicore(model, args, (2,))
    _assert_identical("model_mobilenet", reference, pooled)


def test_worth_tasks_weighs_arithmetic_and_bytes() -> None:
    assert parallel.worth_tasks(0, 64 * 1024) == 0  # a small elementwise kernel
    assert parallel.worth_tasks(400_000, 70_000) == 0  # a small convolution
    flops = int(4 * parallel.TASK_NS * parallel.FLOPS_PER_NS)
    assert parallel.worth_tasks(flops, 0) == 4
    assert parallel.worth_tasks(0, int(3 * parallel.TASK_NS * parallel.BYTES_PER_NS)) == 3
    flops = int(1.5 * parallel.TASK_NS * parallel.FLOPS_PER_NS)  # a ResNet block's kernel
    assert parallel.worth_tasks(flops, 0) == 0
    assert parallel.worth_tasks(flops, 0, input_split=True) >= 2
    # a squeeze-excite dense layer: 230 KB of weights the run streams from memory splits;
    # the same bytes in the caches do not
    assert parallel.worth_tasks(1000, 230_000, streamed_bytes=230_000) >= 2
    assert parallel.worth_tasks(1000, 230_000) == 0


def test_no_data_races_under_thread_sanitizer(split_everything: None) -> None:
    model, args = _compiled(TF_DATA, "model_mobilenet")
    reference, pooled = run_multicore(model, args, (2, 3), TSAN_CFLAGS)
    _assert_identical("model_mobilenet", reference, pooled)


_POOL_STRESS = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <time.h>
#include "aotc_threadpool.h"
static int marks[16];
static int call;
static void task(void *arg, int i) {
  for (volatile int k = 0; k < 30000; ++k) (void)arg; /* long enough for workers to join */
  marks[i] = call;
}
int main(void) {
  aotc_threadpool *pool = aotc_threadpool_create(3);
  if (!pool) return 2;
  for (call = 1; call <= 3000; ++call) {
    int n = call % 10;
    pool->parallel_for(pool->ctx, n, task, NULL);
    for (int i = 0; i < n; ++i)
      if (marks[i] != call) { printf("call %d task %d not run\n", call, i); return 1; }
    if (call % 97 == 0) nanosleep(&(struct timespec){0, 200000}, NULL); /* workers sleep */
  }
  aotc_threadpool_destroy(pool);
  return 0;
}
"""


def test_the_pool_runs_every_task_once_awake_and_asleep(tmp_path: Path) -> None:
    """Every task of every job runs, seen by the caller on return, with workers spinning and
    with workers asleep (a short spin makes them sleep between most jobs); under TSan."""
    (tmp_path / "stress.c").write_text(_POOL_STRESS)
    exe = tmp_path / "stress"
    flags = ["-std=c99", "-O1", "-DAOTC_THREADPOOL_SPIN=20", "-I", str(INCLUDE), *TSAN_CFLAGS]
    subprocess.run([CC, *flags, str(tmp_path / "stress.c"), "-o", str(exe), "-pthread"], check=True)
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("lang", ["c", "c++"])
def test_headers_compile_warning_free(lang: str, tmp_path: Path) -> None:
    model, _ = _compiled(TF_DATA, "mlp_b8")
    (tmp_path / "mlp_b8.h").write_text(model.header)
    source = tmp_path / ("main.c" if lang == "c" else "main.cc")
    # both orders: the shared include guard keeps one definition of aotc_threadpool
    source.write_text(
        '#include "mlp_b8.h"\n#include "aotc_threadpool.h"\n#include "mlp_b8.h"\n'
        "int main(void) { aotc_threadpool *p = aotc_threadpool_create(2);\n"
        "  int n = p ? p->num_threads : 0; aotc_threadpool_destroy(p); return n != 2; }\n"
    )
    std = ["-std=c99"] if lang == "c" else ["-x", "c++", "-std=c++11"]
    compiler = CC if lang == "c" else "c++"
    cmd = [compiler, *std, "-Wall", "-Wextra", "-Werror", "-pthread", "-I", str(tmp_path)]
    cmd += ["-I", str(INCLUDE), str(source), "-o", str(tmp_path / "main")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    subprocess.run([str(tmp_path / "main")], check=True)


def test_cpp_class_runs_the_multicore_entry_with_a_pool(
    split_everything: None, tmp_path: Path
) -> None:
    """Run() on aotc's pool gives the bytes of Run() without one (and of the C entry)."""
    fx = load_fixture("model_lenet")
    options = SourceOptions(cpp_class="ns::Lenet")
    model = compile_graph(fx.graph, fx.config, options=options).model
    (tmp_path / "lenet.o").write_bytes(model.object_bytes)
    (tmp_path / "lenet.hpp").write_text(model.cpp_header)
    fx.args[0].astype("float32").tofile(tmp_path / "x.bin")
    bytes_out = model.results[0].shape.byte_size
    (tmp_path / "main.cc").write_text(
        f"""#include <cstdio>
#include <cstring>
#include "lenet.hpp"
#include "aotc_threadpool.h"
int main() {{
  ns::Lenet plain, pooled;
  std::FILE *f = std::fopen("{tmp_path / "x.bin"}", "rb");
  if (!f || std::fread(plain.arg_data(0), 1, plain.arg_size(0), f) != (size_t)plain.arg_size(0))
    return 2;
  std::fclose(f);
  std::memcpy(pooled.arg_data(0), plain.arg_data(0), plain.arg_size(0));
  aotc_threadpool *pool = aotc_threadpool_create(3);
  pooled.set_thread_pool(pool);
  if (!plain.Run() || !pooled.Run() || !pooled.Run()) return 3;
  int same = std::memcmp(plain.result_data(0), pooled.result_data(0), {bytes_out}) == 0;
  aotc_threadpool_destroy(pool);
  return same ? 0 : 4;
}}
"""
    )
    exe = tmp_path / "main"
    cmd = ["c++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-pthread", "-I", str(tmp_path)]
    cmd += ["-I", str(INCLUDE), str(tmp_path / "main.cc"), str(tmp_path / "lenet.o")]
    subprocess.run([*cmd, "-o", str(exe)], check=True, capture_output=True, text=True)
    assert subprocess.run([str(exe)]).returncode == 0
    assert "lenet_run_buffers_mt" in model.cpp_header


def _yaml_without_multicore(tmp_path: Path, source: Path) -> Path:
    config = tmp_path / "model.yaml"
    config.write_text(source.read_text() + "\nmulticore: false\n")
    return config


def test_the_flag_leaves_the_multicore_entry_out(tmp_path: Path) -> None:
    """--no-multicore, ``multicore: false`` and ``multicore=False``: no _mt symbols, none
    declared (microcontrollers); the config's value is overridden by the option."""
    fx = load_fixture("mlp_b8")
    off = SourceOptions(multicore=False)
    models = {
        "option": compile_graph(fx.graph, fx.config, options=off).model,
        "yaml": compile_graph(fx.graph, _yaml_without_multicore(tmp_path, fx.config)).model,
        "api": aotc.compile(fx.graph, fx.config, multicore=False, cache=False).result.model,
    }
    for how, model in models.items():
        defined, _ = exported_and_undefined_symbols(model.object_bytes)
        assert defined == entry_points("mlp_b8") - multicore_entry_points("mlp_b8"), how
        assert "_mt" not in model.header and "aotc_threadpool" not in model.header, how
    on = SourceOptions(multicore=True)
    yaml_off = _yaml_without_multicore(tmp_path, fx.config)
    model = compile_graph(fx.graph, yaml_off, options=on).model
    assert multicore_entry_points("mlp_b8") <= exported_and_undefined_symbols(model.object_bytes)[0]


def test_cli_flag_and_include_dir(tmp_path: Path) -> None:
    fx = load_fixture("mlp_b8")
    runner = CliRunner()
    shown = runner.invoke(main, ["--include-dir"])
    assert shown.exit_code == 0 and Path(shown.output.strip(), "aotc_threadpool.h").is_file()
    out = tmp_path / "m"
    args = ["compile", str(fx.graph), "-c", str(fx.config), "-o", str(out), "--no-multicore"]
    assert runner.invoke(main, [*args, "--no-cache", "-q"]).exit_code == 0
    defined, _ = exported_and_undefined_symbols((tmp_path / "m.o").read_bytes())
    assert not multicore_entry_points("mlp_b8") & defined


def test_a_bad_multicore_value_names_the_key(tmp_path: Path) -> None:
    fx = load_fixture("mlp_b8")
    config = tmp_path / "model.yaml"
    config.write_text(fx.config.read_text() + "\nmulticore: maybe\n")
    with pytest.raises(ConfigError, match="multicore"):
        compile_graph(fx.graph, config)


@pytest.mark.parametrize("arch", ["aarch64", "armv7"])
def test_cross_targets_match_under_qemu(arch: str, split_everything: None) -> None:
    """AArch64, and 32-bit ARM (4-byte pointers and size_t: the pool struct's layout)."""
    cross = CROSS_TARGETS[arch]
    require_toolchains(cross)
    fx = load_fixture("model_lenet")
    model = compile_graph(fx.graph, fx.config, cross.target).model
    (toolchain,) = cross.toolchains.values()
    reference, pooled = run_multicore(model, fx.args, (0, 2, 3), toolchain=toolchain)
    _assert_identical(f"model_lenet on {arch}", reference, pooled)
