"""The compile pipeline as one library call: graph + config -> HLO -> object file and header.

``compile_graph`` strings the stages together (``load_source`` -> ``optimize`` ->
``compile_module_assigned`` -> ``build_report``); ``aotc/outputs.py`` writes the files. The
types the callers pass down (``SourceOptions``, ``TargetOverrides``, the pipeline options) come
from here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aotc import progress
from aotc.codegen.compile import CompiledModel, TargetSpec, TensorInfo, compile_module_assigned
from aotc.config import Config
from aotc.errors import UsageError
from aotc.frontend.options import SourceOptions as SourceOptions  # for the CLI and the API
from aotc.frontend.signature import Signature
from aotc.frontend.sources import load_source
from aotc.hlo.ir import Module
from aotc.passes import DumpOptions, PipelineOptions, PipelineReport, default_pipeline, pass_names
from aotc.report import CompileReport, build_report


@dataclass(frozen=True)
class TargetOverrides:
    """Target settings given on the command line; ``None`` keeps the config's value."""

    triple: str | None = None
    cpu: str | None = None
    features: str | None = None


@dataclass(eq=False)
class CompileResult:
    """What a compile produced: the artifacts (``model``) and the compiler's report on them."""

    model: CompiledModel
    report: CompileReport


def compile_graph(
    graph_path: str | Path,
    config_path: str | Path | None = None,
    target: TargetOverrides = TargetOverrides(),
    options: SourceOptions | None = None,
    passes: PipelineOptions | None = None,
) -> CompileResult:
    """Compile a GraphDef (or SavedModel, or HLO text) to an in-memory object and header.

    ``passes`` sets how the optimization pipeline runs (dumps, disabled passes).
    """
    clock = _StageClock()
    source = load_source(graph_path, config_path, options)
    source.graph = None  # the GraphDef (a copy of every constant's bytes) is needed no more
    args, results = interface(source.signature, source.module)  # as declared: complex stays
    clock.lap("front end")
    pipeline = optimize(source.module, passes)
    clock.lap("passes")
    with progress.stage("codegen"):
        spec = _target_spec(source.config, target)
        model, assignment = compile_module_assigned(
            source.module,
            source.signature.name,
            args,
            results,
            spec,
            progress.detail,
            source.config.cpp_class,
            source.config.multicore,
        )
    clock.lap("codegen")
    report = build_report(assignment, pipeline.timings, source.notes, model, clock.seconds)
    return CompileResult(model, report)


class _StageClock:
    """Elapsed seconds per stage, each lap from the end of the one before."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = round(now - self._last, 4)
        self._last = now


def pipeline_options(
    dump_to: str | Path | None = None,
    dump_pass_re: str | None = None,
    dump_formats: Sequence[str] | None = None,
    disabled: Sequence[str] = (),
) -> PipelineOptions | None:
    """The pass options from the command line's values; None when all are at their defaults.

    ``dump_pass_re`` and ``dump_formats`` apply only with ``dump_to`` (None: not given).
    """
    names = pass_names()
    for name in disabled:
        if name not in names:
            raise UsageError(f"--disable-pass: unknown pass {name!r}; passes: {', '.join(names)}")
    if dump_to is None:
        if dump_pass_re is not None or dump_formats is not None:
            raise UsageError("--dump-format and --dump-pass-re apply only with --dump-to DIR")
        return PipelineOptions(disabled=frozenset(disabled)) if disabled else None
    try:
        dump = DumpOptions(Path(dump_to), dump_pass_re or ".*", frozenset(dump_formats or ["text"]))
    except (ValueError, re.error) as err:
        raise UsageError(f"--dump-format/--dump-pass-re: {err}") from None
    return PipelineOptions(dump=dump, disabled=frozenset(disabled))


def interface(sig: Signature, module: Module) -> tuple[list[TensorInfo], list[TensorInfo]]:
    """The compiled function's arguments (feeds, then variables) and results (fetches)."""
    params, feeds = module.entry.parameters, len(sig.feeds)
    args = [TensorInfo(f.name, p.array_shape) for f, p in zip(sig.feeds, params, strict=False)]
    args += [
        TensorInfo(v.name, p.array_shape, variable=True, updated=v.updated)
        for v, p in zip(sig.variables, params[feeds:], strict=True)
    ]
    fetched = module.entry.root.operands[: len(sig.fetches)]
    results = [TensorInfo(f.name, r.array_shape) for f, r in zip(sig.fetches, fetched, strict=True)]
    return args, results


def optimize(module: Module, options: PipelineOptions | None = None) -> PipelineReport:
    """Run the default pass pipeline on ``module`` in place (between translation and codegen)."""
    with progress.stage("optimize"):
        return default_pipeline(options).run_with_report(module)


def _target_spec(config: Config, overrides: TargetOverrides) -> TargetSpec:
    spec = TargetSpec(config.target.triple, config.target.cpu, config.target.features)
    changes = {k: v for k, v in vars(overrides).items() if v is not None}
    return replace(spec, **changes)
