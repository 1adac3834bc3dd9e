"""The front end's one entry: any input aotc reads, recognized by content, as verified HLO.

``load_source(path, config_path, options)`` picks the loader by what ``path`` holds
(``formats.input_format``): a GraphDef (binary or text), a SavedModel directory or HLO text.
It reads the config once (``load_model_config``: the explicit one, or ``path``'s ``.yaml``
sibling; aotc's YAML or tfcompile's), refuses options and config entries that do not apply to
the input, resolves the signature (freezing a GraphDef's variables from ``--checkpoint``),
translates the graph, checks sizes and verifies the module. Errors that name only a node get the
input's path in front.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from aotc import progress
from aotc.abi import cpp_class_parts
from aotc.config import Config
from aotc.errors import AotcError, ConfigError, UsageError
from aotc.frontend.formats import Format, input_format
from aotc.frontend.freeze import freeze_checkpoint
from aotc.frontend.functionalize import has_v1_control_flow
from aotc.frontend.graphdef import Graph, functionalized, pruned, read_graph
from aotc.frontend.hlo_input import load_hlo
from aotc.frontend.inputs import config_file
from aotc.frontend.limits import check_feed_sizes, check_module_sizes
from aotc.frontend.options import SourceOptions
from aotc.frontend.savedmodel import load_savedmodel
from aotc.frontend.signature import Signature, resolve_signature
from aotc.frontend.tf2xla_config import load_config_file
from aotc.frontend.translate import translate_graph
from aotc.hlo.ir import Module
from aotc.hlo.verify import verify_module
from aotc.tensor_ref import TensorRef


@dataclass
class Source:
    """A loaded input: the graph (None for HLO text, which has no TF graph), the config, the
    compiled function's signature and its HLO; ``notes`` say what was dropped or renamed."""

    graph: Graph | None
    config: Config
    signature: Signature
    module: Module
    notes: list[str] = field(default_factory=list)


def load_source(
    path: str | Path, config_path: str | Path | None = None, options: SourceOptions | None = None
) -> Source:
    """Load ``path`` (GraphDef, SavedModel directory or HLO text) and translate it to HLO."""
    options = options or SourceOptions()
    with naming_file(path):
        with progress.stage("load"):
            kind = input_format(path)
            check_options(kind, options, path)
            config = load_model_config(path, config_path, options)
            _check_config(kind, config)
            parse_notes: list[str] = []
            if kind is Format.HLO:
                loaded = load_hlo(path, config)
                graph, signature, module = None, loaded.signature, loaded.module
                parse_notes = loaded.notes
            else:
                graph, signature = _GRAPH_LOADERS[kind](path, config, options)
            check_feed_sizes(((f.name, f.dtype, f.shape) for f in signature.feeds), str(path))
        notes = parse_notes + _name_notes(config, signature)
        if graph is None:
            check_module_sizes(module, str(path))
        else:
            with progress.stage("translate"):
                module = translate_graph(graph, signature, notes)
                check_module_sizes(module, str(path))
                verify_module(module)
    return Source(graph, config, signature, module, notes)


@contextmanager
def naming_file(path: str | Path) -> Iterator[None]:
    """Prefix ``path`` to errors that name only a node ("node 'x' (Relu): ...")."""
    try:
        yield
    except AotcError as err:
        if str(err).startswith("node '"):
            raise type(err)(f"{path}: {err}") from None
        raise


def load_model_config(
    path: str | Path, config_path: str | Path | None, options: SourceOptions
) -> Config:
    """The config of the model at ``path``: ``config_path``, else its ``.yaml`` sibling, else
    the defaults; ``options.name``, ``options.cpp_class`` and ``options.multicore`` replace the
    config's."""
    found = config_file(path, config_path)
    config = load_config_file(found) if found else Config()
    if options.cpp_class:
        try:
            cpp_class_parts(options.cpp_class)
        except ValueError as e:
            given = options.spell("cpp_class") + ("" if options.api else " ")
            raise UsageError(f"{given}{options.cpp_class!r}: {e}") from None
        config = replace(config, cpp_class=options.cpp_class)
    if options.multicore is not None:
        config = replace(config, multicore=options.multicore)
    return replace(config, name=options.name) if options.name else config


def _check_config(kind: Format, config: Config) -> None:
    if config.variables and kind is not Format.GRAPHDEF:
        why = (
            "a SavedModel's variables are frozen from its checkpoint"
            if kind is Format.SAVEDMODEL
            else "HLO text has no variables"
        )
        raise ConfigError(f"{config.path}: variables: are for GraphDefs; {why}")


def check_options(kind: Format, options: SourceOptions, path: str | Path) -> None:
    """Options that do not apply to this input are refused, never ignored."""
    if kind is not Format.SAVEDMODEL:
        given = [n for n, v in (("signature", options.signature), ("tags", options.tags)) if v]
        if given:
            names = " and ".join(options.spell(n) for n in given)
            verb = "apply" if len(given) > 1 else "applies"
            raise UsageError(
                f"{path}: {names} {verb} only to a SavedModel directory; this is {kind.value}"
            )
    if kind is not Format.GRAPHDEF and options.checkpoint:
        why = (
            "a SavedModel reads its own variables/"
            if kind is Format.SAVEDMODEL
            else ("HLO text has no variables")
        )
        raise UsageError(f"{path}: {options.spell('checkpoint')} is for GraphDefs; {why}")
    if kind is Format.HLO and options.shapes:
        raise UsageError(
            f"{path}: {options.spell('shapes')} does not apply to HLO text, whose shapes are static"
        )


def _graphdef(path: str | Path, config: Config, options: SourceOptions) -> tuple[Graph, Signature]:
    graph = functionalized(_pruned_to_fetches(read_graph(path), config))
    signature = resolve_signature(graph, config, Path(path), options)
    if options.checkpoint:
        graph = freeze_checkpoint(graph, signature, options.checkpoint)
    return graph, signature


def _savedmodel(
    path: str | Path, config: Config, options: SourceOptions
) -> tuple[Graph, Signature]:
    shapes = {**_config_shapes(config, options), **options.shapes}
    model = load_savedmodel(path, replace(options, shapes=shapes), config.name)
    return model.graph, model.signature


def _pruned_to_fetches(graph: Graph, config: Config) -> Graph:
    """``graph`` pruned to what the config's fetches need, before TF1 control flow is
    functionalized (as tfcompile orders it: what the fetches do not need cannot fail the
    compile). Without fetches, or naming a tensor the graph lacks (an error the signature
    reports in the config's terms), the graph stays whole."""
    feeds = [f.ref for f in config.feeds] + [TensorRef(v.node) for v in config.variables]
    fetches = [f.ref for f in config.fetches]
    known = all(graph.has_tensor(r) for r in (*fetches, *feeds))
    if not fetches or not known or not has_v1_control_flow(graph.proto):
        return graph
    return pruned(graph, fetches, feeds)


_GRAPH_LOADERS: dict[
    Format, Callable[[str | Path, Config, SourceOptions], tuple[Graph, Signature]]
] = {Format.GRAPHDEF: _graphdef, Format.SAVEDMODEL: _savedmodel}


def _config_shapes(config: Config, options: SourceOptions) -> dict[str, tuple[int, ...]]:
    # A SavedModel's signature fixes feeds and fetches; a config may only give input shapes.
    where = config.path or "config"
    if config.fetches:
        raise ConfigError(
            f"{where}: fetches: a SavedModel's outputs come from its signature; remove "
            f"`fetches:` and choose the signature with {options.spell('signature')}"
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for i, feed in enumerate(config.feeds):
        if feed.shape is None or feed.ref.index != 0:
            raise ConfigError(
                f"{where}: feeds[{i}]: for a SavedModel, a feed entry names a signature input "
                f"key and gives its `shape:` (or use {options.spell_shape('key', (1, 2, 3))})"
            )
        shapes[feed.ref.node] = feed.shape
    return shapes


def _name_notes(config: Config, signature: Signature) -> list[str]:
    """A config ``name:`` that is no C identifier is changed: say to what."""
    if config.name is None or config.name == signature.name:
        return []
    return [
        f"{config.path}: name '{config.name}' is not a C identifier; the symbols are "
        f"{signature.name}_run, {signature.name}_run_buffers and {signature.name.upper()}_*"
    ]
