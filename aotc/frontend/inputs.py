"""The files one compile reads: what a cache key hashes and what a dependency file lists."""

from __future__ import annotations

from pathlib import Path

from aotc.frontend.signature import default_config_path


def model_files(model_path: str | Path) -> list[Path]:
    """The model's own files: a GraphDef or HLO file itself; for a SavedModel directory,
    ``saved_model.pb`` (or ``.pbtxt``) and every file under ``variables/`` (checkpoint index
    and shards), sorted. Files that do not exist are left out: the compile reports them."""
    path = Path(model_path)
    if not path.is_dir():
        return [path]
    files = [path / "saved_model.pb", path / "saved_model.pbtxt"]
    variables = path / "variables"
    if variables.is_dir():
        files += sorted(p for p in variables.rglob("*") if p.is_file())
    return [p for p in files if p.is_file()]


def config_file(model_path: str | Path, config_path: str | Path | None) -> Path | None:
    """The config the compile reads: the one given, else the model's ``.yaml`` sibling."""
    return Path(config_path) if config_path else default_config_path(model_path)
