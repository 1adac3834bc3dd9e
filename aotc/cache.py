"""The compilation cache: unchanged model + config + target + aotc version -> the same artifacts.

The key is a SHA-256 over everything that decides the output: the input's bytes (a GraphDef or
HLO file; for a SavedModel directory ``saved_model.pb`` and every file under ``variables/``),
the input's stem (the default C prefix), the config file's bytes and the name it is given by
(the explicit one, or the ``.yaml`` sibling aotc would pick up; the report's notes name it),
the target overrides, the SavedModel and name options, the pass options, the host
(``"host"`` targets resolve to this machine's cpu and features) and the compiler's own
fingerprint.

``compile_cached`` is the one cache policy, used by the CLI and the Python API alike: a
``CachePolicy`` says which caches to use, a compile that dumps HLO always runs (the dumps are
its point), and a result is stored only when the inputs did not change while compiling; the
``CacheOutcome`` it returns says whether the result came from a cache and what happened on the
way. ``MemoryCache`` keeps values for the life of the process; ``DiskCache``
(aotc/cache_folder.py) keeps signed entries of JSON and raw bytes (aotc/cache_entry.py) in a
folder (default: ``$AOTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotc``, else ``~/.cache/aotc``)
within a size cap.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llvmlite

from aotc import __version__
from aotc.cache_entry import MAGIC
from aotc.cache_folder import DiskCache, UnsafeCacheFolder
from aotc.cache_folder import default_cache_dir as default_cache_dir  # for the CLI and API
from aotc.codegen.target import TargetSpec, resolve_target
from aotc.driver import CompileResult, TargetOverrides, compile_graph
from aotc.frontend.freeze import checkpoint_files
from aotc.frontend.inputs import config_file, model_files
from aotc.frontend.options import SourceOptions
from aotc.frontend.signature import model_stem
from aotc.passes import PipelineOptions


def cache_key(
    model_path: str | Path,
    config_path: str | Path | None = None,
    target: TargetOverrides | None = None,
    options: SourceOptions | None = None,
    passes: PipelineOptions | None = None,
) -> str:
    """The hex SHA-256 that names this compilation's cache entry."""
    h = hashlib.sha256()
    parts = _key_parts(
        Path(model_path), config_path, target or TargetOverrides(), options or SourceOptions()
    )
    parts.append(_passes_key(passes or PipelineOptions()).encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # length-prefixed: parts cannot run together
        h.update(part)
    return h.hexdigest()


def _key_parts(
    path: Path, config_path: str | Path | None, target: TargetOverrides, options: SourceOptions
) -> list[bytes]:
    config = config_file(path, config_path)
    host = resolve_target(TargetSpec())
    meta = (compiler_fingerprint(), MAGIC, vars(target), options.key(), vars(host))
    names = (model_stem(path), None if config is None else str(config))
    parts = [repr((*meta, *names)).encode()]
    for name, data in _input_files(path):
        parts += [name.encode(), data]
    for file in checkpoint_files(options.checkpoint) if options.checkpoint else ():
        parts += [file.name.encode(), _read(file)]
    if config is not None:
        parts.append(_read(config))
    return parts


def _passes_key(passes: PipelineOptions) -> str:
    # Every option but the dumps, which bypass the cache (``CachePolicy.caches``).
    return repr((sorted(passes.disabled), passes.check_changed, passes.verify))


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

    where = "memory"

    def __init__(self) -> None:
        self._entries: dict[str, Any] = {}

    def get(self, key: str, notes: list[str]) -> Any | None:
        return self._entries.get(key)

    def put(self, key: str, value: Any, notes: list[str]) -> None:
        self._entries[key] = value

    def clear(self) -> None:
        self._entries.clear()


@dataclass
class CacheOutcome:
    """Whether a result came from a cache (``hit``, from ``where``), and what the caches had
    to say: ``warnings`` for everyone (a folder not used because others may write to it),
    ``notes`` for ``-v`` (an entry ignored and rebuilt, evictions)."""

    hit: bool = False
    where: str = ""  # "memory" or the disk cache's folder
    key: str = ""  # empty when no cache was consulted
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for ``aotc compile -v``."""
        if not self.key:
            return "cache: not used"
        if self.hit:
            return f"cache: hit, entry {self.key[:12]} from {self.where}"
        return f"cache: miss, entry {self.key[:12]}; compiled"


@dataclass(frozen=True)
class CachePolicy:
    """Which caches ``compile_cached`` looks results up in and stores them to.

    ``enabled=False`` compiles every time; ``disk``: the on-disk cache in ``folder`` (None:
    ``default_cache_dir()``) holding at most ``max_bytes`` (None: ``$AOTC_CACHE_MAX_BYTES``,
    else 2 GiB); ``memory``: this process's memory (what the Python API adds).
    """

    enabled: bool = True
    disk: bool = True
    folder: str | Path | None = None
    memory: bool = False
    max_bytes: int | None = None

    def caches(
        self, passes: PipelineOptions | None, outcome: CacheOutcome
    ) -> list[MemoryCache | DiskCache]:
        """The caches to consult, fastest first; none for a compile that dumps HLO. A disk
        folder that cannot or must not be used is left out (said in ``outcome``)."""
        if not self.enabled:
            return []
        if passes is not None and passes.dump is not None:
            outcome.notes.append("cache: not used: a compile with --dump-to always runs")
            return []
        memory = [_MEMORY] if self.memory else []
        return [*memory, *(_opened(DiskCache(self.folder, self.max_bytes), outcome))]


def _opened(disk: DiskCache, outcome: CacheOutcome) -> list[DiskCache]:
    try:
        disk.open()
    except UnsafeCacheFolder as err:
        outcome.warnings.append(f"{err}; not using it")
        return []
    except OSError as err:
        outcome.notes.append(f"cache: folder {disk.folder} cannot be used: {err.strerror or err}")
        return []
    return [disk]


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
) -> tuple[CompileResult, CacheOutcome]:
    """Compile through the caches of ``policy``; returns the result and where it came from."""
    target, options = target or TargetOverrides(), options or SourceOptions()
    outcome = CacheOutcome()
    caches = policy.caches(passes, outcome)
    if not caches:
        return compile_graph(model_path, config_path, target, options, passes), outcome
    key = outcome.key = cache_key(model_path, config_path, target, options, passes)
    for i, cache in enumerate(caches):
        found = cache.get(key, outcome.notes)
        if found is not None:
            for faster in caches[:i]:
                faster.put(key, found, outcome.notes)
            outcome.hit, outcome.where = True, cache.where
            return found, outcome
    result = compile_graph(model_path, config_path, target, options, passes)
    # Inputs rewritten while compiling (a build writing the model) must not be cached under
    # the old content's key.
    if cache_key(model_path, config_path, target, options, passes) != key:
        outcome.notes.append("cache: not stored: the inputs changed while compiling")
        return result, outcome
    for cache in caches:
        cache.put(key, result, outcome.notes)
    return result, outcome
