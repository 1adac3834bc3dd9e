"""Models cross-compiled for aarch64, armv7 (hard-float), riscv64 and x86-64 baseline, run.

Each (target, model) pair compiles once with the target's defaults (no cpu or features given),
links the ``c_harness`` program with the target's cross gcc and runs it under qemu-user; the
results must match TensorFlow's stored outputs as on the host (``test_end_to_end``). The x86-64
object is portable: it runs natively and under qemu as Nehalem and as Haswell, and must pick
the cpu level each has (``<name>_cpu_level()``: 1 on Nehalem, 3 on Haswell, this machine's
natively), every level's results matching TensorFlow's.

The models: the bundled example, a conv net, the transformer, and int32 inputs with C-style
integer division and float -> int casts (whose corner cases differ between instruction sets).
"""

from __future__ import annotations

import numpy as np
import pytest
from c_harness import run_compiled_level
from cross_testing import CROSS_TARGETS, require_toolchains
from fixtures import assert_close, load_example, load_fixture

from aotc.driver import compile_graph

MODELS = ["mlp", "model_lenet", "model_transformer", "reshape_cast"]


@pytest.mark.parametrize("model_name", MODELS)
@pytest.mark.parametrize("target_name", sorted(CROSS_TARGETS))
def test_cross_compiled_model_runs_and_matches_tensorflow(
    target_name: str, model_name: str
) -> None:
    cross = CROSS_TARGETS[target_name]
    require_toolchains(cross)
    fx = load_example() if model_name == "mlp" else load_fixture(model_name)
    model = compile_graph(fx.graph, fx.config, cross.target).model
    assert model.target.triple == cross.target.triple
    for runner, toolchain in cross.toolchains.items():
        typed, buffers, level = run_compiled_level(model, fx.args, toolchain=toolchain)
        assert level == cross.levels.get(runner, 0), f"{model_name} on {target_name} ({runner})"
        for i, (got, again, want) in enumerate(zip(typed, buffers, fx.results, strict=True)):
            what = f"{model_name} on {target_name} ({runner}) result{i}"
            np.testing.assert_array_equal(got, again, err_msg=f"{what}: calls differ")
            assert_close(got, want, what=what)
