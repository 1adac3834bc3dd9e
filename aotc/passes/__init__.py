"""HLO-to-HLO passes and the pipeline that runs them between translation and codegen.

``default_pipeline(options)`` is the compiler's pass list. Later stages (fusion, scheduling,
buffer assignment) append their passes to ``default_passes`` in order; every pass follows
the ``Pass`` protocol of ``aotc.passes.pipeline``.
"""

from __future__ import annotations

from aotc.passes.attention import AttentionFusion
from aotc.passes.bitcast_width import BitcastWidthLowering
from aotc.passes.call_inliner import CallInliner
from aotc.passes.complex_lowering import ComplexLowering
from aotc.passes.conditional import ConditionalSimplifier
from aotc.passes.constant_folding import ConstantFolding
from aotc.passes.conv_transpose import ConvTransposePhases
from aotc.passes.cse import CSE
from aotc.passes.dce import DCE
from aotc.passes.expand_fusion import ExpandFusion
from aotc.passes.flatten import FlattenCallGraph
from aotc.passes.fusion import Fusion
from aotc.passes.merge_dots import MergeDots
from aotc.passes.pipeline import (
    DUMP_FORMATS,
    DumpOptions,
    FixedPoint,
    Pass,
    PassTiming,
    Pipeline,
    PipelineOptions,
    PipelineReport,
)
from aotc.passes.rng_bit_generator import RngBitGeneratorExpander
from aotc.passes.schedule import Schedule
from aotc.passes.simplify import AlgebraicSimplifier
from aotc.passes.while_loop import WhileLoopSimplifier

__all__ = [
    "AttentionFusion",
    "AlgebraicSimplifier",
    "CSE",
    "CallInliner",
    "ComplexLowering",
    "ConditionalSimplifier",
    "ConstantFolding",
    "BitcastWidthLowering",
    "ConvTransposePhases",
    "RngBitGeneratorExpander",
    "DCE",
    "DUMP_FORMATS",
    "DumpOptions",
    "ExpandFusion",
    "FixedPoint",
    "FlattenCallGraph",
    "Fusion",
    "MergeDots",
    "Pass",
    "PassTiming",
    "Pipeline",
    "PipelineOptions",
    "PipelineReport",
    "Schedule",
    "WhileLoopSimplifier",
    "default_passes",
    "default_pipeline",
    "simplification_pipeline",
]


def simplification_pipeline() -> Pipeline:
    """Simplify, fold constants, simplify loops and conditionals, merge and drop code (in every
    computation: loop bodies and branches too), until nothing changes."""
    return Pipeline(
        "simplification",
        [
            AlgebraicSimplifier(),
            ConstantFolding(),
            WhileLoopSimplifier(),
            ConditionalSimplifier(),
            CSE(),
            DCE(),
        ],
    )


def default_passes() -> list[Pass]:
    """The compiler's passes, in order."""
    return [
        BitcastWidthLowering(),  # first: the only bitcast-convert kernels know is elementwise
        RngBitGeneratorExpander(),  # codegen has no kernel for it
        CSE(),  # then: a call or loop repeated with the same operands is expanded once
        CallInliner(),  # then every later pass sees flat computations
        FlattenCallGraph(),  # then every loop, branch and call has a computation of its own
        ComplexLowering(),  # codegen computes reals only: c64 as (re, im) pairs, fft as dots
        ConvTransposePhases(),
        FixedPoint(simplification_pipeline()),
        MergeDots(),  # after simplification: weights are constants, batch broadcasts gone
        Fusion(),
        AttentionFusion(),  # after fusion: it takes in the softmax and transpose fusions
        ExpandFusion(),  # after fusion: it nests one output fusion in another
        Schedule(),  # last: the entry's order is the schedule; a pass after it must keep it
        # buffer assignment runs in codegen (aotc/codegen/buffers.py), in the entry's order
    ]


def default_pipeline(options: PipelineOptions | None = None) -> Pipeline:
    """The pipeline ``aotc compile`` runs between translation and code generation."""
    return Pipeline("default", default_passes(), options or PipelineOptions())


def pass_names() -> list[str]:
    """The names ``--disable-pass`` accepts."""
    return default_pipeline().pass_names()
