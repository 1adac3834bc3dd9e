"""Portable x86-64 objects: what they carry per cpu level, how the target resolves to them.

Running them at each level (natively, and under qemu as Nehalem and Haswell) is
``test_cross.py``'s; here: the levels a target gets, which kernels are emitted per level and
which once, the level a one-cpu object reports, and the sizes in the compile report.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from c_harness import run_compiled_level
from codegen_testing import compile_hlo
from cross_testing import CROSS_TARGETS, require_toolchains
from fixtures import load_example

import aotc.codegen.target as target_module
from aotc.codegen import TargetSpec
from aotc.codegen.dispatch import X86_64_LEVELS, cpu_levels
from aotc.codegen.target import PORTABLE, clang_default, resolve_target
from aotc.config import Target
from aotc.driver import compile_graph
from aotc.errors import CodegenError
from aotc.hlo.evaluate import evaluate

X86_64 = "x86_64-unknown-linux-gnu"

# A kernel worth vectorizing (16 KiB in, 16 KiB out) and a tiny one (16 bytes each way).
BIG_AND_TINY = """
HloModule m
ENTRY main {
  x = f32[4096] parameter(0)
  s = f32[4] parameter(1)
  t = f32[4096] tanh(x)
  a = f32[4] add(s, s)
  ROOT r = (f32[4096], f32[4]) tuple(t, a)
}"""


def test_the_config_default_is_portable_and_dispatches_only_on_x86_64() -> None:
    assert Target().cpu == PORTABLE
    assert cpu_levels(resolve_target(TargetSpec(X86_64, PORTABLE))) == X86_64_LEVELS
    arm = "aarch64-unknown-linux-gnu"
    default = clang_default(arm)
    assert resolve_target(TargetSpec(arm, PORTABLE)) == TargetSpec(arm, "generic", default.features)
    # features (or a cpu) make an object for one cpu: the baseline with those features
    one = resolve_target(TargetSpec(X86_64, PORTABLE, "+avx2"))
    assert one == TargetSpec(X86_64, "x86-64", "+avx2")
    assert [lv.number for lv in cpu_levels(one)] == [0]
    assert [lv.number for lv in cpu_levels(resolve_target(TargetSpec("i686-linux-gnu")))] == [0]


def test_vectorizing_kernels_are_emitted_per_level_and_tiny_ones_once() -> None:
    module, model = compile_hlo(BIG_AND_TINY, "m", TargetSpec(X86_64, PORTABLE))
    defined = re.findall(r'^define .*?@"?([\w.\-]+)"?\(', model.llvm_ir, re.M)
    big = [name for name in defined if name.endswith("kernel.t")]
    assert sorted(big) == ["x86-64-v3.kernel.t", "x86-64-v4.kernel.t", "x86-64.kernel.t"]
    assert defined.count("kernel.a") == 1, defined
    assert '"target-cpu"="x86-64-v4"' in model.llvm_ir
    assert [lv.number for lv in model.levels] == [1, 3, 4]
    x = np.linspace(-3, 3, 4096, dtype=np.float32)
    s = np.arange(4, dtype=np.float32)
    typed, buffers, level = run_compiled_level(model, [x, s])
    assert level in (1, 3, 4)
    for got, again, want in zip(typed, buffers, evaluate(module, [x, s]), strict=True):
        np.testing.assert_array_equal(got, again)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)


# A loop carrying a copy of each argument: x's 8,000 bytes (a batch-1 RNN's time-major input)
# and w's 12,000; each iteration adds w into the state.
CARRIED = """
HloModule carried
cond {
  c = (s32[], f32[50,1,40], f32[3000]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  b = (s32[], f32[50,1,40], f32[3000]) parameter(0)
  bi = s32[] get-tuple-element(b), index=0
  one = s32[] constant(1)
  next = s32[] add(bi, one)
  h = f32[50,1,40] get-tuple-element(b), index=1
  bw = f32[3000] get-tuple-element(b), index=2
  ws = f32[2000] slice(bw), slice={[0:2000]}
  wr = f32[50,1,40] reshape(ws)
  t = f32[50,1,40] add(h, wr)
  ROOT out = (s32[], f32[50,1,40], f32[3000]) tuple(next, t, bw)
}
ENTRY main {
  x = f32[50,1,40] parameter(0)
  w = f32[3000] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[50,1,40], f32[3000]) tuple(zero, x, w)
  loop = (s32[], f32[50,1,40], f32[3000]) while(init), condition=cond, body=body
  r = f32[50,1,40] get-tuple-element(loop), index=1
  ROOT results = (f32[50,1,40]) tuple(r)
}"""


def test_copies_are_one_loop_emitted_once_up_to_8_kib_and_run_at_every_level() -> None:
    cross = CROSS_TARGETS["x86-64"]
    require_toolchains(cross)
    module, model = compile_hlo(CARRIED, "m", TargetSpec(X86_64, PORTABLE))
    defined = re.findall(r'^define .*?@"?([\w.\-]+)"?\(', model.llvm_ir, re.M)
    assert "carryin.loop.1" in defined, defined  # 8,000 bytes: once
    per_level = [name for name in defined if name.endswith("carryin.loop.2")]
    assert per_level == [f"{cpu}.carryin.loop.2" for cpu in ("x86-64", "x86-64-v3", "x86-64-v4")]
    x = np.linspace(-3, 3, 2000, dtype=np.float32).reshape(50, 1, 40)
    w = np.linspace(0, 1, 3000, dtype=np.float32)
    (want,) = evaluate(module, [x, w])
    for runner, toolchain in cross.toolchains.items():
        typed, buffers, level = run_compiled_level(model, [x, w], toolchain=toolchain)
        assert level == cross.levels[runner], runner
        np.testing.assert_array_equal(typed[0], buffers[0])
        np.testing.assert_array_equal(typed[0], want, err_msg=runner)


def test_an_object_for_one_cpu_reports_level_0() -> None:
    _, model = compile_hlo(BIG_AND_TINY, "m", TargetSpec(X86_64, "x86-64-v3"))
    assert "detect_cpu_level" not in model.llvm_ir
    inputs = [np.zeros(4096, np.float32), np.ones(4, np.float32)]
    assert run_compiled_level(model, inputs)[2] == 0


def test_a_portable_x86_64_object_needs_an_x86_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(target_module.llvm, "get_process_triple", lambda: "aarch64-linux-gnu")
    with pytest.raises(CodegenError, match="--target-cpu x86-64"):
        compile_hlo(BIG_AND_TINY, "m", TargetSpec(X86_64, PORTABLE))


def test_report_states_the_objects_sizes_and_levels() -> None:
    fx = load_example()
    result = compile_graph(fx.graph, fx.config)
    report, model = result.report, result.model
    assert (report.text_bytes, report.rodata_bytes) == (model.sizes.text, model.sizes.rodata)
    assert report.text_bytes > 0 and report.rodata_bytes > 300_000  # the MLP's weights
    assert report.cpu_levels == [lv.number for lv in model.levels]
    assert f".text {report.text_bytes} bytes" in report.summary()
