"""Inputs other than a frozen GraphDef: SavedModel directories and HLO text files.

``load_source`` recognizes them by path and returns what the driver's ``Frontend`` holds; it
returns None for anything else, which the driver then loads as a GraphDef.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from aotc.config import Config
from aotc.errors import ConfigError, InputFileError
from aotc.frontend.graphdef import Graph
from aotc.frontend.hlo_input import is_hlo_file, load_hlo
from aotc.frontend.inputs import config_file
from aotc.frontend.savedmodel import is_savedmodel, load_savedmodel
from aotc.frontend.signature import Signature
from aotc.frontend.translate import translate_graph
from aotc.hlo.ir import Module
from aotc.hlo.verify import verify_module
from aotc.tf2xla_config import load_config_file


@dataclass(frozen=True)
class SourceOptions:
    """How to read the input: SavedModel choices (``--signature``, ``--tag``, ``--shape``),
    a GraphDef's ``--checkpoint`` (freeze its variables from that TF checkpoint prefix),
    and ``name`` (``--name``), which overrides the config's ``name:``.

    ``shapes`` maps a signature input key to a static shape for its unknown dimensions.
    """

    signature: str | None = None
    tags: tuple[str, ...] | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    checkpoint: str | None = None
    name: str | None = None

    def key(self) -> str:
        """A stable text form, for cache keys (the checkpoint's bytes are keyed apart)."""
        shapes = sorted((k, list(v)) for k, v in self.shapes.items())
        return repr((self.signature, self.tags, shapes, self.checkpoint, self.name))


@dataclass
class Source:
    """A loaded input: ``graph`` is None for HLO text, which has no TF graph."""

    graph: Graph | None
    config: Config
    signature: Signature
    module: Module
    notes: list[str] = field(default_factory=list)


def load_source(
    path: str | Path, config_path: str | Path | None, options: SourceOptions | None = None
) -> Source | None:
    """Load a SavedModel directory or an HLO text file; None for a GraphDef."""
    if Path(path).is_dir() and not is_savedmodel(path):
        raise InputFileError(
            f"{path}: is a directory without saved_model.pb; expected a GraphDef file, a "
            "SavedModel directory or HLO text"
        )
    saved, hlo = is_savedmodel(path), not Path(path).is_dir() and is_hlo_file(path)
    if not (saved or hlo):
        return None
    if options is not None and options.checkpoint:
        kind = "a SavedModel reads its own variables/" if saved else "HLO text has no variables"
        raise ConfigError(f"{path}: --checkpoint is for GraphDefs; {kind}")
    config = load_model_config(path, config_path, options or SourceOptions())
    if config.variables:
        kind = (
            "a SavedModel's variables are frozen from its checkpoint"
            if saved
            else ("HLO text has no variables")
        )
        raise ConfigError(f"{config.path}: variables: are for GraphDefs; {kind}")
    if hlo:
        loaded = load_hlo(path, config)
        return Source(None, config, loaded.signature, loaded.module)
    return _savedmodel_source(path, config, options or SourceOptions())


def load_model_config(
    path: str | Path, config_path: str | Path | None, options: SourceOptions
) -> Config:
    """The config of the model at ``path``: ``config_path``, else its ``.yaml`` sibling, else
    the defaults; ``options.name`` replaces the config's ``name:``."""
    found = config_file(path, config_path)
    config = load_config_file(found) if found else Config()
    return replace(config, name=options.name) if options.name else config


def _savedmodel_source(path: str | Path, config: Config, options: SourceOptions) -> Source:
    shapes = {**_config_shapes(config), **options.shapes}
    model = load_savedmodel(path, options.signature, options.tags, shapes, config.name)
    notes: list[str] = []
    module = translate_graph(model.graph, model.signature, notes)
    verify_module(module)
    return Source(model.graph, config, model.signature, module, notes)


def _config_shapes(config: Config) -> dict[str, tuple[int, ...]]:
    # A SavedModel's signature fixes feeds and fetches; a config may only give input shapes.
    where = config.path or "config"
    if config.fetches:
        raise ConfigError(
            f"{where}: fetches: a SavedModel's outputs come from its signature; remove "
            "`fetches:` and choose the signature with --signature"
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for i, feed in enumerate(config.feeds):
        if feed.shape is None or feed.ref.index != 0:
            raise ConfigError(
                f"{where}: feeds[{i}]: for a SavedModel, a feed entry names a signature input "
                "key and gives its `shape:` (or use --shape key=1,2,3)"
            )
        shapes[feed.ref.node] = feed.shape
    return shapes


def parse_shape_option(text: str) -> tuple[str, tuple[int, ...]]:
    """``x=1,224,224,3`` -> ("x", (1, 224, 224, 3)); ``x=`` is a scalar."""
    key, sep, dims = text.partition("=")
    parts = [p.strip() for p in dims.split(",")] if dims.strip() else []
    if not sep or not key or not all(p.isdigit() for p in parts):
        raise ConfigError(
            f"--shape {text!r}: expected NAME=D0,D1,... with non-negative integers, "
            "e.g. --shape x=1,224,224,3"
        )
    return key, tuple(int(p) for p in parts)


def shape_options(texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Several ``--shape`` options as a dict; a name given twice is an error."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        key, dims = parse_shape_option(text)
        if key in shapes:
            raise ConfigError(f"--shape {key} is given twice")
        shapes[key] = dims
    return shapes
