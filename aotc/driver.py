"""The compile pipeline as one library call: graph + config -> HLO -> object file and header."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from aotc.codegen.compile import CompiledModel, TargetSpec, TensorInfo, compile_module
from aotc.config import Config, load_config
from aotc.errors import OutputError
from aotc.frontend.graphdef import Graph, load_graph
from aotc.frontend.signature import Signature, default_config_path, resolve_signature
from aotc.frontend.translate import translate_graph
from aotc.hlo.ir import Module
from aotc.hlo.verify import verify_module


@dataclass(frozen=True)
class TargetOverrides:
    """Target settings given on the command line; ``None`` keeps the config's value."""

    triple: str | None = None
    cpu: str | None = None
    features: str | None = None


@dataclass
class Frontend:
    """What the front end produced: the graph, its resolved signature and the HLO module."""

    graph: Graph
    config: Config
    signature: Signature
    module: Module


def load_frontend(graph_path: str | Path, config_path: str | Path | None = None) -> Frontend:
    """Load the graph and config, resolve feeds and fetches, and translate to verified HLO."""
    graph = load_graph(graph_path)
    config_path = config_path or default_config_path(Path(graph_path))
    config = load_config(config_path) if config_path else Config()
    signature = resolve_signature(graph, config, Path(graph_path))
    module = translate_graph(graph, signature)
    verify_module(module)
    return Frontend(graph, config, signature, module)


def compile_graph(
    graph_path: str | Path,
    config_path: str | Path | None = None,
    target: TargetOverrides = TargetOverrides(),
) -> CompiledModel:
    """Compile a GraphDef to an in-memory object file and header."""
    front = load_frontend(graph_path, config_path)
    sig = front.signature
    args = [
        TensorInfo(f.name, p.array_shape)
        for f, p in zip(sig.feeds, front.module.entry.parameters, strict=True)
    ]
    results = [
        TensorInfo(f.name, r.array_shape)
        for f, r in zip(sig.fetches, front.module.entry.root.operands, strict=True)
    ]
    return compile_module(front.module, sig.name, args, results, _target_spec(front.config, target))


def _target_spec(config: Config, overrides: TargetOverrides) -> TargetSpec:
    spec = TargetSpec(config.target.triple, config.target.cpu, config.target.features)
    changes = {k: v for k, v in vars(overrides).items() if v is not None}
    return replace(spec, **changes)


def output_paths(graph_path: str | Path, out: str | Path | None) -> tuple[Path, Path]:
    """``-o build/mlp`` -> build/mlp.o, build/mlp.h; no ``-o``: ``<stem>.o`` in the cwd."""
    prefix = Path(out) if out else Path(Path(graph_path).stem)
    return prefix.with_name(prefix.name + ".o"), prefix.with_name(prefix.name + ".h")


def write_artifacts(model: CompiledModel, object_path: Path, header_path: Path) -> None:
    """Write both files atomically: each goes to a temporary name and is renamed when done."""
    staged: list[tuple[Path, Path]] = []
    try:
        for final, data in (
            (object_path, model.object_bytes),
            (header_path, model.header.encode()),
        ):
            staged.append((_stage(final, data), final))
    except OutputError:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, final in staged:
        os.replace(tmp, final)


def _stage(path: Path, data: bytes) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
    except OSError as err:
        raise OutputError(
            f"{path}: cannot write output: {err.strerror or err}; choose a writable folder with -o"
        ) from None
    return Path(tmp)
