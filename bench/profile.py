"""Per-kernel profile of a model compiled by aotc: where does the time go?

    .venv/bin/python bench/profile.py MODEL.pb [-c CONFIG] [--runs 30] [--top 30]

The model is translated and optimized as ``aotc compile`` does; then every kernel of the
optimized entry computation (a fusion or an unfused instruction) is extracted into a module of
its own, whose parameters are the kernel's runtime operands (constant operands stay constants,
so constant weights are still packed at compile time), compiled with ``compile_module`` and
JIT-run in this process. Each kernel's time is the median over ``--runs`` samples of a batch
of calls with preallocated buffers, less the time of calling an empty kernel (ctypes). The
table, sorted by time, gives the fused ops, FLOPs and achieved GFLOP/s; the last lines compare
the kernels' sum with the whole model run the same way.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aotc.codegen.compile import CompiledModel, TensorInfo, compile_module
from aotc.driver import optimize
from aotc.frontend.sources import load_source
from aotc.hlo.builder import ComputationBuilder
from aotc.hlo.flops import flops
from aotc.hlo.ir import Computation, Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.jit import JitModel, aligned_empty

#: Instructions that are no kernel of their own (bookkeeping, or the buffers themselves).
NOT_KERNELS = frozenset((Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT))


@dataclass(frozen=True)
class KernelTime:
    """One kernel's median time and what it computes."""

    name: str
    what: str  # "fusion kOutput: convolution,add,maximum" or the opcode
    shape: str
    flops: int
    seconds: float

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0


# ---- extraction ----------------------------------------------------------------------------------


def kernels(module: Module) -> list[Instruction]:
    """The entry's kernels in schedule order (the entry's instruction order)."""
    return [i for i in module.entry.instructions if i.opcode not in NOT_KERNELS]


def extract(module: Module, inst: Instruction) -> tuple[Module, list[TensorInfo]]:
    """A module computing ``inst`` alone: runtime operands become parameters."""
    b = ComputationBuilder(f"k_{inst.name}")
    operands = []
    args = []
    for op in dict.fromkeys(inst.operands):
        if op.opcode is Opcode.CONSTANT:
            operands.append(b.constant(op.literal, op.array_shape.dtype))
            continue
        operands.append(b.parameter(len(args), op.array_shape, f"p{len(args)}"))
        args.append(TensorInfo(f"p{len(args)}", op.array_shape))
    remap = dict(zip(map(id, dict.fromkeys(inst.operands)), operands, strict=True))
    clone = Instruction(
        inst.name,
        inst.opcode,
        inst.shape,
        [remap[id(op)] for op in inst.operands],
        inst.attrs,
        inst.literal,
        list(inst.called),
    )
    b.add(clone)
    entry = b.build(b.tuple([clone]))
    return Module(f"k_{inst.name}", entry, _callees(inst)), args


def _callees(inst: Instruction) -> list[Computation]:
    """The computations ``inst`` calls, transitively, callees before callers."""
    order: list[Computation] = []

    def visit(comp: Computation) -> None:
        for i in comp.instructions:
            for callee in i.called:
                if callee not in order:
                    visit(callee)
        if comp not in order:
            order.append(comp)

    for comp in inst.called:
        visit(comp)
    return order


def fused(inst: Instruction) -> list[Instruction]:
    if inst.opcode is not Opcode.FUSION:
        return [inst]
    return [i for i in inst.called[0].post_order() if i.opcode is not Opcode.PARAMETER]


def describe(inst: Instruction) -> str:
    if inst.opcode is not Opcode.FUSION:
        return inst.opcode.value
    ops = [i.opcode.value for i in fused(inst) if i.opcode is not Opcode.CONSTANT]
    return f"{getattr(inst.attrs, 'kind', '')}: {','.join(ops)}"


# ---- timing ----------------------------------------------------------------------------------


def timer(model: CompiledModel, seed: int = 0) -> Callable[[], None]:
    """One call of ``model`` on random inputs with preallocated buffers."""
    jit = JitModel.from_compiled(model)
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(a.shape).astype(a.dtype) for a in jit.args]
    results = [np.empty(r.shape, r.dtype) for r in jit.results]
    temp = aligned_empty(jit.temp_bytes)
    arg_table = _table(args)
    result_table = _table(results)
    entry = jit._entry  # noqa: SLF001 - the raw entry avoids per-call allocations

    def call() -> None:
        entry(arg_table, result_table, temp.ctypes.data)

    call.keep = (jit, args, results, temp)  # type: ignore[attr-defined]
    return call


def _table(arrays: Sequence[np.ndarray]) -> ctypes.Array[ctypes.c_void_p]:
    table = (ctypes.c_void_p * max(len(arrays), 1))()
    for i, array in enumerate(arrays):
        table[i] = array.ctypes.data
    return table


def median_seconds(call: Callable[[], None], runs: int, min_batch_s: float = 2e-3) -> float:
    """Median per-call time over ``runs`` batches, each long enough to time reliably."""
    call()
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-7)
    batch = max(1, int(min_batch_s / once))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples)


def call_overhead(runs: int) -> float:
    """The time of calling an (almost) empty kernel: subtracted from each kernel's time."""
    b = ComputationBuilder("empty")
    x = b.parameter(0, Shape(PrimitiveType.F32, (1,)), "x")
    neg = b.unary(Opcode.NEGATE, x)
    infos = [TensorInfo("x", x.array_shape)]
    module = Module("empty", b.build(b.tuple([neg])))
    return median_seconds(timer(compile_module(module, "k", infos, infos)), runs)


def profile_kernel(
    module: Module, inst: Instruction, runs: int, overhead: float = 0.0
) -> KernelTime:
    """Compile ``inst`` alone and time it, less the call ``overhead``."""
    sub, args = extract(module, inst)
    results = [TensorInfo("out", inst.array_shape)]
    compiled = compile_module(sub, "k", args, results)
    seconds = max(median_seconds(timer(compiled), runs) - overhead, 0.0)
    shape = str(inst.shape)
    return KernelTime(inst.name, describe(inst), shape, sum(map(flops, fused(inst))), seconds)


# ---- the command ---------------------------------------------------------------------------------


def profile_model(
    graph: str | Path, config: str | Path | None, runs: int
) -> tuple[list[KernelTime], float]:
    """Each kernel's time, slowest first, and the whole model's time."""
    front = load_source(graph, config)
    optimize(front.module)
    module = front.module
    whole = compile_module(
        module,
        "model",
        [TensorInfo(f"a{i}", p.array_shape) for i, p in enumerate(module.entry.parameters)],
        [TensorInfo(f"r{i}", r.array_shape) for i, r in enumerate(module.entry.root.operands)],
    )
    overhead = call_overhead(runs)
    total = max(median_seconds(timer(whole), runs) - overhead, 0.0)  # noise can undershoot
    times = [profile_kernel(module, k, runs, overhead) for k in kernels(module) if not k.is_tuple]
    return sorted(times, key=lambda t: -t.seconds), total


def _gflops(flop: float, seconds: float) -> str:
    return f"{flop / seconds / 1e9:.1f}" if seconds > 0 else "n/a"


def format_table(times: Sequence[KernelTime], total: float, top: int) -> str:
    kernel_sum = sum(t.seconds for t in times)
    lines = [
        f"{'us':>9} {'%':>5} {'MFLOP':>8} {'GFLOP/s':>8}  {'kernel':<22} {'shape':<22} fused ops",
    ]
    for t in times[:top]:
        share = 100 * t.seconds / kernel_sum if kernel_sum else 0.0
        lines.append(
            f"{t.seconds * 1e6:9.1f} {share:5.1f} {t.flops / 1e6:8.2f} {t.gflops:8.1f}  "
            f"{t.name:<22} {t.shape:<22} {t.what}"
        )
    if len(times) > top:
        rest = sum(t.seconds for t in times[top:])
        lines.append(f"{rest * 1e6:9.1f}        ({len(times) - top} more kernels)")
    flop_total = sum(t.flops for t in times)
    lines.append(
        f"sum of {len(times)} kernels: {kernel_sum * 1e6:.1f} us; whole model: "
        f"{total * 1e6:.1f} us ({flop_total / 1e6:.1f} MFLOP, {_gflops(flop_total, total)} GFLOP/s)"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph", help="GraphDef (.pb/.pbtxt), SavedModel dir or HLO text")
    parser.add_argument("-c", "--config", help="the model's YAML config")
    parser.add_argument("--runs", type=int, default=30, help="timed batches per kernel")
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    args = parser.parse_args(argv)
    times, total = profile_model(args.graph, args.config, args.runs)
    print(format_table(times, total, args.top))


if __name__ == "__main__":
    main()
