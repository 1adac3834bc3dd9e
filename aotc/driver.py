"""The compile pipeline as one library call: graph + config -> HLO -> object file and header."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from aotc import progress
from aotc.codegen.compile import CompiledModel, TargetSpec, TensorInfo, compile_module_assigned
from aotc.config import Config
from aotc.errors import AotcError, UsageError
from aotc.frontend.freeze import freeze_checkpoint
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.limits import check_feed_sizes, check_module_sizes
from aotc.frontend.signature import (
    Signature,
    resolve_signature,
)
from aotc.frontend.sources import SourceOptions, load_model_config, load_source
from aotc.frontend.translate import translate_graph
from aotc.hlo.ir import Module
from aotc.hlo.verify import verify_module
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


@dataclass
class Frontend:
    """What the front end produced: the graph, its resolved signature and the HLO module.

    ``graph`` is None for HLO text input, which has no TensorFlow graph.
    """

    graph: Graph | None
    config: Config
    signature: Signature
    module: Module
    notes: list[str] = field(default_factory=list)  # for the report, e.g. dropped Asserts


def load_frontend(
    graph_path: str | Path,
    config_path: str | Path | None = None,
    options: SourceOptions | None = None,
) -> Frontend:
    """Load the graph and config, resolve feeds and fetches, and translate to verified HLO.

    ``graph_path`` may also be a SavedModel directory or an HLO text file (``options`` picks
    the SavedModel's signature, tags and input shapes).
    """
    with progress.stage("load"), errors_name_file(graph_path):
        source = load_source(graph_path, config_path, options)
    if source is not None:
        with errors_name_file(graph_path):
            _check_sizes(source.signature, source.module, str(graph_path))
        return Frontend(source.graph, source.config, source.signature, source.module, source.notes)
    with progress.stage("load"), errors_name_file(graph_path):
        graph = load_graph(graph_path)
        config = load_model_config(graph_path, config_path, options or SourceOptions())
        signature = resolve_signature(graph, config, Path(graph_path))
        if options is not None and options.checkpoint:
            graph = freeze_checkpoint(graph, signature, options.checkpoint)
        check_feed_sizes(((f.name, f.dtype, f.shape) for f in signature.feeds), graph.path)
    notes: list[str] = []
    with progress.stage("translate"), errors_name_file(graph_path):
        module = translate_graph(graph, signature, notes)
        check_module_sizes(module, graph.path)
        verify_module(module)
    return Frontend(graph, config, signature, module, notes)


def _check_sizes(signature: Signature, module: Module, where: str) -> None:
    """No feed and no intermediate over the size limit (the C ABI states sizes as size_t)."""
    check_feed_sizes(((f.name, f.dtype, f.shape) for f in signature.feeds), where)
    check_module_sizes(module, where)


@contextmanager
def errors_name_file(path: str | Path) -> Iterator[None]:
    """Prefix ``path`` to errors that name only a node ("node 'x' (Relu): ...")."""
    try:
        yield
    except AotcError as err:
        if str(err).startswith("node '"):
            raise type(err)(f"{path}: {err}") from None
        raise


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
    front = load_frontend(graph_path, config_path, options)
    pipeline = optimize(front.module, passes)
    args, results = interface(front.signature, front.module)
    with progress.stage("codegen"):
        spec = _target_spec(front.config, target)
        model, assignment = compile_module_assigned(
            front.module, front.signature.name, args, results, spec
        )
    return CompileResult(model, build_report(assignment, pipeline.timings, front.notes))


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
