"""``ir_print.function_text`` prints every function aotc emits as llvmlite does, byte for byte.

The models cover what kernels emit: register-tiled convolutions and GEMMs with their drivers,
depthwise and pooling loops, the transformer's attention and math library (erf, exp, tanh,
sin/cos with their tables), while loops and conditionals, half-precision conversions, integer
kernels, sorts, the cpu-level dispatch (inline asm) and the multi-core tasks; each at the three
x86-64 levels.
"""

from __future__ import annotations

import pytest
from fixtures import CONTROL_FLOW_DATA, TF_DATA

from aotc.codegen import emitter
from aotc.codegen.dispatch import X86_64_LEVELS
from aotc.codegen.ir_print import function_text
from aotc.driver import optimize
from aotc.frontend.sources import load_source

MODELS = [
    TF_DATA / "model_mobilenet.pb",
    TF_DATA / "model_transformer.pb",
    TF_DATA / "model_lenet.pb",
    TF_DATA / "math_unary2.pb",
    TF_DATA / "f16_mixed_model.pb",
    TF_DATA / "sort_topk.pb",
    TF_DATA / "int64.pb",
    CONTROL_FLOW_DATA / "dynamic_rnn_v1.pb",
]


@pytest.mark.parametrize("graph", MODELS, ids=lambda p: p.stem)
def test_function_text_is_llvmlite_text(graph) -> None:
    source = load_source(graph)
    optimize(source.module)
    llvm_module, _ = emitter.emit_module_assigned(source.module, "m", X86_64_LEVELS)
    functions = [f for f in llvm_module.functions if f.blocks]
    assert len(functions) > 5
    for fn in functions:
        assert function_text(fn) == str(fn), fn.name
