"""The compilation cache: unchanged model + config + target + aotc version -> the same artifacts.

The key is a SHA-256 over everything that decides the output: the input's bytes (a GraphDef or
HLO file; for a SavedModel directory ``saved_model.pb`` and every file under ``variables/``),
the config file's bytes (the explicit one, or the ``.yaml`` sibling aotc would pick up), the
target overrides, the SavedModel options, the disabled passes, the host (``"host"`` targets
resolve to this machine's cpu and features) and the compiler's own fingerprint.

``compile_cached`` is the one cache policy, used by the CLI and the Python API alike: a
``CachePolicy`` says which caches to use, a compile that dumps HLO always runs (the dumps are
its point), and a result is stored only when the inputs did not change while compiling.
``MemoryCache`` keeps values for the life of the process. ``DiskCache`` stores one file per key
under a folder (default: ``$AOTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotc``, else
``~/.cache/aotc``): written to a temporary name and renamed, so concurrent writers never expose
a partial file; each file carries a checksum, and an entry that is truncated, corrupt or from an
incompatible aotc is ignored (and deleted) so the model is rebuilt.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite

from aotc import __version__
from aotc.atomic import write_atomically
from aotc.codegen.compile import CompiledModel
from aotc.codegen.target import TargetSpec, resolve_target
from aotc.driver import CompileResult, TargetOverrides, compile_graph
from aotc.errors import OutputError
from aotc.frontend.freeze import checkpoint_files
from aotc.frontend.inputs import config_file, model_files
from aotc.frontend.options import SourceOptions
from aotc.passes import PipelineOptions

FORMAT = b"AOTCCACHE2\n"
_DIGEST_BYTES = 32


def default_cache_dir() -> Path:
    """``$AOTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotc``, else ``~/.cache/aotc``."""
    if os.environ.get("AOTC_CACHE_DIR"):
        return Path(os.environ["AOTC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aotc"


def cache_key(
    model_path: str | Path,
    config_path: str | Path | None = None,
    target: TargetOverrides | None = None,
    options: SourceOptions | None = None,
    passes: PipelineOptions | None = None,
) -> str:
    """The hex SHA-256 that names this compilation's cache entry."""
    h = hashlib.sha256()
    disabled = sorted(passes.disabled) if passes else []
    parts = _key_parts(
        Path(model_path), config_path, target or TargetOverrides(), options or SourceOptions()
    )
    parts.append(repr(disabled).encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # length-prefixed: parts cannot run together
        h.update(part)
    return h.hexdigest()


def _key_parts(
    path: Path, config_path: str | Path | None, target: TargetOverrides, options: SourceOptions
) -> list[bytes]:
    config = config_file(path, config_path)
    host = resolve_target(TargetSpec())
    meta = repr(
        (compiler_fingerprint(), FORMAT, vars(target), options.key(), vars(host), config is None)
    )
    parts = [meta.encode()]
    for name, data in _input_files(path):
        parts += [name.encode(), data]
    for file in checkpoint_files(options.checkpoint) if options.checkpoint else ():
        parts += [file.name.encode(), _read(file)]
    if config is not None:
        parts.append(_read(config))
    return parts


@functools.cache
def compiler_fingerprint() -> str:
    """aotc's version, llvmlite's, and a hash of aotc's own sources.

    The sources count because a changed compiler must not be served an old object, also
    between releases (a checkout under development keeps one version number).
    """
    h = hashlib.sha256()
    package = Path(__file__).parent
    for source in sorted(package.rglob("*.py")):
        h.update(source.relative_to(package).as_posix().encode())
        h.update(source.read_bytes())
    return f"{__version__}/{llvmlite.__version__}/{h.hexdigest()}"


def _input_files(path: Path) -> list[tuple[str, bytes]]:
    if not path.is_dir():
        return [("", _read(path))]
    return [(str(p.relative_to(path)), _read(p)) for p in model_files(path)]


def _read(path: Path) -> bytes:
    # An unreadable input is not the cache's business: the compile reports it properly.
    try:
        return path.read_bytes()
    except OSError as e:
        return f"<unreadable: {type(e).__name__}>".encode()


class MemoryCache:
    """Values by key for the life of the process."""

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}

    def get(self, key: str) -> Any | None:
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self._entries[key] = value

    def clear(self) -> None:
        self._entries.clear()


class DiskCache:
    """Compiled models in files named by key under ``folder``."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.aotc"

    def get(self, key: str) -> CompileResult | None:
        """The stored result, or None when missing, unreadable, corrupt or incompatible."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        result = _decode(data)
        if result is None:
            path.unlink(missing_ok=True)  # a broken entry: drop it so it gets rebuilt
        return result

    def put(self, key: str, result: CompileResult) -> None:
        """Store ``result`` atomically; a cache that cannot be written is skipped silently."""
        path = self.path(key)
        try:
            write_atomically(path, _encode(result))
        except (OutputError, pickle.PicklingError, TypeError, AttributeError):
            return


def _encode(result: CompileResult) -> bytes:
    # Fields by name, not the object: a CompiledModel that gained a field still loads old ones.
    model = {f.name: getattr(result.model, f.name) for f in dataclasses.fields(result.model)}
    payload = pickle.dumps((model, result.report), protocol=pickle.HIGHEST_PROTOCOL)
    return FORMAT + hashlib.sha256(payload).digest() + payload


def _decode(data: bytes) -> CompileResult | None:
    header, rest = data[: len(FORMAT)], data[len(FORMAT) :]
    digest, payload = rest[:_DIGEST_BYTES], rest[_DIGEST_BYTES:]
    if header != FORMAT or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        model, report = pickle.loads(payload)
        return CompileResult(CompiledModel(**model), report)
    except Exception:  # an entry from an incompatible aotc build: treat it as missing
        return None


@dataclass(frozen=True)
class CachePolicy:
    """Which caches ``compile_cached`` looks results up in and stores them to.

    ``enabled=False`` compiles every time; ``disk``: the on-disk cache in ``folder`` (None:
    ``default_cache_dir()``); ``memory``: this process's memory (what the Python API adds).
    """

    enabled: bool = True
    disk: bool = True
    folder: str | Path | None = None
    memory: bool = False

    def caches(self, passes: PipelineOptions | None) -> list[MemoryCache | DiskCache]:
        """The caches to consult, fastest first; none for a compile that dumps HLO."""
        if not self.enabled or (passes is not None and passes.dump is not None):
            return []
        disk = [DiskCache(self.folder)] if self.disk else []
        return [*([_MEMORY] if self.memory else []), *disk]


_MEMORY = MemoryCache()


def clear_memory_cache() -> None:
    """Forget every result compiled in this process (the disk cache is untouched)."""
    _MEMORY.clear()


def compile_cached(
    model_path: str | Path,
    config_path: str | Path | None = None,
    target: TargetOverrides | None = None,
    options: SourceOptions | None = None,
    passes: PipelineOptions | None = None,
    policy: CachePolicy = CachePolicy(),
) -> tuple[CompileResult, bool]:
    """Compile through the caches of ``policy``; returns the result and whether it was a hit."""
    target, options = target or TargetOverrides(), options or SourceOptions()
    caches = policy.caches(passes)
    if not caches:
        return compile_graph(model_path, config_path, target, options, passes), False
    key = cache_key(model_path, config_path, target, options, passes)
    for i, cache in enumerate(caches):
        found = cache.get(key)
        if found is not None:
            for faster in caches[:i]:
                faster.put(key, found)
            return found, True
    result = compile_graph(model_path, config_path, target, options, passes)
    # Inputs rewritten while compiling (a build writing the model) must not be cached under
    # the old content's key.
    if cache_key(model_path, config_path, target, options, passes) == key:
        for cache in caches:
            cache.put(key, result)
    return result, False
