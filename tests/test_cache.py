"""The compilation cache: keys, disk entries, corruption, concurrent writers, and the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import aotc.cache
from aotc import __version__, cli
from aotc.cache import (
    CachePolicy,
    cache_key,
    compile_cached,
    compiler_fingerprint,
    default_cache_dir,
)
from aotc.driver import CompileResult, SourceOptions, TargetOverrides, compile_graph
from aotc.passes import DumpOptions, PipelineOptions

HLO = """HloModule neg
ENTRY main {
  x = f32[4] parameter(0)
  ROOT t = (f32[4]) tuple(negate(x))
}
""".replace("tuple(negate(x))", "tuple(n)").replace("  ROOT", "  n = f32[4] negate(x)\n  ROOT")


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "neg.hlo"
    path.write_text(HLO)
    return path


class Counting:
    """compile_graph, counting how often the cache let it run."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: object) -> CompileResult:
        self.calls += 1
        return compile_graph(*args)  # type: ignore[arg-type]


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counter = Counting()
    monkeypatch.setattr(aotc.cache, "compile_graph", counter)
    return counter


def on_disk(folder: Path) -> CachePolicy:
    return CachePolicy(folder=folder)


def test_default_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTC_CACHE_DIR", "/x/aotc-here")
    assert default_cache_dir() == Path("/x/aotc-here")
    monkeypatch.delenv("AOTC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert default_cache_dir() == Path("/xdg/aotc")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "aotc"


def test_key_covers_contents_config_target_and_options(model: Path, tmp_path: Path) -> None:
    base = cache_key(model)
    assert cache_key(model) == base
    config = tmp_path / "c.yaml"
    config.write_text("name: other\n")
    assert cache_key(model, config) != base
    assert cache_key(model, target=TargetOverrides(cpu="generic")) != base
    assert cache_key(model, options=SourceOptions(shapes={"x": (1,)})) != base
    assert cache_key(model, passes=PipelineOptions(disabled=frozenset({"cse"}))) != base
    (tmp_path / "neg.yaml").write_text("name: sibling\n")  # picked up by default: in the key
    assert cache_key(model) != base
    model.write_text(HLO.replace("negate", "abs"))
    assert cache_key(model) not in (base, cache_key(model, config))


def test_disk_hit_skips_compilation(model: Path, tmp_path: Path, counting: Counting) -> None:
    policy = on_disk(tmp_path / "cache")
    first, hit1 = compile_cached(model, policy=policy)
    second, hit2 = compile_cached(model, policy=policy)
    assert (hit1, hit2, counting.calls) == (False, True, 1)
    one, two = first.model, second.model
    assert two.object_bytes == one.object_bytes and two.header == one.header
    assert two.args == one.args and two.target == one.target
    assert second.report == first.report  # the report is cached with the artifacts


def test_policy_off_and_dumps_always_compile(
    model: Path, tmp_path: Path, counting: Counting
) -> None:
    policy = on_disk(tmp_path / "cache")
    compile_cached(model, policy=policy)
    assert not compile_cached(model, policy=CachePolicy(enabled=False, folder=tmp_path))[1]
    dump = PipelineOptions(dump=DumpOptions(tmp_path / "dumps"))
    assert not compile_cached(model, passes=dump, policy=policy)[1]
    assert counting.calls == 3 and list((tmp_path / "dumps").iterdir())
    memory = CachePolicy(disk=False, memory=True)
    first, hit1 = compile_cached(model, policy=memory)
    second, hit2 = compile_cached(model, policy=memory)
    assert (hit1, hit2, counting.calls) == (False, True, 4) and second is first


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entry_is_ignored_and_rebuilt(
    model: Path, tmp_path: Path, damage: str, counting: Counting
) -> None:
    policy = on_disk(tmp_path / "cache")
    compile_cached(model, policy=policy)
    entry = aotc.cache.DiskCache(policy.folder).path(cache_key(model))
    data = entry.read_bytes()
    broken = {
        "truncate": data[: len(data) // 2],
        "flip": data[:-10] + bytes([data[-10] ^ 1]) + data[-9:],
        "garbage": b"not a cache entry",
        "empty": b"",
    }[damage]
    entry.write_bytes(broken)
    _, hit = compile_cached(model, policy=policy)
    assert not hit and counting.calls == 2
    assert entry.read_bytes() != broken  # rewritten
    assert compile_cached(model, policy=policy)[1]


def test_unwritable_cache_is_skipped(model: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    result, hit = compile_cached(model, policy=on_disk(blocker))
    assert not hit and result.model.object_bytes


WRITER = """
import sys
from aotc.cache import CachePolicy, compile_cached
result, hit = compile_cached(sys.argv[1], policy=CachePolicy(folder=sys.argv[2]))
print(len(result.model.object_bytes))
"""


def test_two_processes_writing_the_same_entry(model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(model), str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    entries = list(folder.rglob("*"))
    assert [p.name for p in entries if p.is_file()] == [f"{cache_key(model)}.aotc"]  # no temps
    again, hit = compile_cached(model, policy=on_disk(folder))
    assert hit and str(len(again.model.object_bytes)) == outputs[0][0].strip()


def test_cli_uses_cache_dir_and_no_cache(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, folder = CliRunner(), tmp_path / "cc"
    out = str(tmp_path / "out" / "neg")
    args = ["compile", str(model), "-o", out, "--cache-dir", str(folder)]
    assert runner.invoke(cli.main, args).exit_code == 0
    assert len(list(folder.rglob("*.aotc"))) == 1

    def fail(*args: object) -> CompileResult:
        raise AssertionError("compiled although the cache holds the model")

    monkeypatch.setattr(aotc.cache, "compile_graph", fail)
    (tmp_path / "out" / "neg.o").unlink()
    result = runner.invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "neg.o").is_file()
    result = runner.invoke(cli.main, [*args, "--no-cache"])
    assert result.exit_code != 0  # --no-cache really compiles (and hits the failing stub)


def test_compiler_fingerprint_covers_the_sources() -> None:
    version, llvmlite_version, digest = compiler_fingerprint().split("/")
    assert version == __version__ and llvmlite_version and len(digest) == 64
