"""The compilation cache: keys, signed entries, tampering, eviction, concurrent writers,
folder permissions, and the CLI (``--cache-*``, ``aotc cache info|list|clear|prune``)."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import aotc.cache
from aotc import __version__, cli
from aotc.cache import (
    CacheOutcome,
    CachePolicy,
    cache_key,
    compile_cached,
    compiler_fingerprint,
    default_cache_dir,
)
from aotc.cache_entry import BadEntry, decode_entry, encode_entry
from aotc.cache_folder import SECRET, DiskCache, default_max_bytes, parse_size
from aotc.driver import CompileResult, SourceOptions, TargetOverrides, compile_graph
from aotc.errors import CodegenError, UsageError
from aotc.jit import JitModel
from aotc.passes import DumpOptions, PipelineOptions

TF_DATA = Path(__file__).parent / "data" / "tf"
LENET, MLP = TF_DATA / "model_lenet.pb", TF_DATA / "mlp_b1.pb"
AOTC_SOURCES = Path(aotc.cache.__file__).parent

HLO = """HloModule neg
ENTRY main {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  ROOT t = (f32[4]) tuple(n)
}
"""


def hlo_model(folder: Path, op: str = "negate", stem: str = "neg") -> Path:
    path = folder / f"{stem}.hlo"
    path.write_text(HLO.replace("negate", op))
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return hlo_model(tmp_path)


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


def on_disk(folder: Path, max_bytes: int | None = None) -> CachePolicy:
    return CachePolicy(folder=folder, max_bytes=max_bytes)


def entry_path(folder: Path, model: Path) -> Path:
    return DiskCache(folder).path(cache_key(model))


# --- keys ----------------------------------------------------------------------------------


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
    (tmp_path / "neg.yaml").write_text("name: sibling\n")  # picked up by default: in the key
    assert cache_key(model) != base
    model.write_text(HLO.replace("negate", "abs"))
    assert cache_key(model) not in (base, cache_key(model, config))


# A different value for every field of every option type given to the compile. A field added
# to one of them fails here until it is either in the key or known not to change the output.
CHANGED = {
    SourceOptions: {
        "signature": "other",
        "tags": ("train",),
        "shapes": {"x": (1,)},
        "checkpoint": "ckpt/model",
        "name": "renamed",
        "cpp_class": "ns::Model",
        "multicore": False,
    },
    TargetOverrides: {"triple": "aarch64-unknown-linux-gnu", "cpu": "generic", "features": "+fma"},
    PipelineOptions: {"disabled": frozenset({"cse"}), "check_changed": True, "verify": False},
}
NOT_IN_KEY = {
    (SourceOptions, "api"),  # changes only the wording of errors, never a cached result
    (PipelineOptions, "dump"),  # a compile that dumps HLO never uses the cache
}


@pytest.mark.parametrize("kind", list(CHANGED), ids=lambda k: k.__name__)
def test_every_option_that_changes_the_output_is_in_the_key(model: Path, kind: type) -> None:
    fields = {f.name for f in dataclasses.fields(kind)} - {n for k, n in NOT_IN_KEY if k is kind}
    assert fields == set(CHANGED[kind]), "a new option: put it in the cache key or NOT_IN_KEY"
    argument = {SourceOptions: "options", TargetOverrides: "target", PipelineOptions: "passes"}
    base = cache_key(model, **{argument[kind]: kind()})
    assert base == cache_key(model)
    for name, value in CHANGED[kind].items():
        assert cache_key(model, **{argument[kind]: kind(**{name: value})}) != base, name


def test_identical_graphs_under_two_names_get_their_own_prefixes(tmp_path: Path) -> None:
    policy = on_disk(tmp_path / "cache")
    for stem in ("alpha", "beta"):
        shutil.copy(MLP, tmp_path / f"{stem}.pb")
    assert cache_key(tmp_path / "alpha.pb") != cache_key(tmp_path / "beta.pb")
    for stem, other in (("alpha", "beta"), ("beta", "alpha")):
        result, outcome = compile_cached(tmp_path / f"{stem}.pb", policy=policy)
        assert not outcome.hit
        assert f"{stem}_run_buffers" in result.model.header and other not in result.model.header
    assert compile_cached(tmp_path / "beta.pb", policy=policy)[1].hit


# --- entries -------------------------------------------------------------------------------


def test_disk_hit_skips_compilation(model: Path, tmp_path: Path, counting: Counting) -> None:
    policy = on_disk(tmp_path / "cache")
    first, miss = compile_cached(model, policy=policy)
    second, hit = compile_cached(model, policy=policy)
    assert (miss.hit, hit.hit, counting.calls) == (False, True, 1)
    assert hit.where == str(tmp_path / "cache") and hit.key == cache_key(model)
    one, two = first.model, second.model
    assert two.object_bytes == one.object_bytes and two.header == one.header
    assert two.args == one.args and two.target == one.target and two.name == one.name
    assert two.temp_bytes == one.temp_bytes
    assert second.report == first.report  # the report is cached with the artifacts
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(JitModel(two)(x)[0], -x)  # the JIT links the cached object
    with pytest.raises(CodegenError, match="not kept"):
        _ = two.llvm_ir  # the IR is not stored, and says so rather than being empty


def test_entries_hold_the_object_and_header_not_llvm_ir(tmp_path: Path) -> None:
    result, _ = compile_cached(LENET, policy=on_disk(tmp_path / "cache"))
    data = entry_path(tmp_path / "cache", LENET).read_bytes()
    assert result.model.object_bytes in data and result.model.header.encode() in data
    assert b"target datalayout" not in data and b"!llvm." not in data
    assert len(data) < len(result.model.object_bytes) + len(result.model.header) + 64 * 1024


def test_policy_off_and_dumps_always_compile(
    model: Path, tmp_path: Path, counting: Counting
) -> None:
    policy = on_disk(tmp_path / "cache")
    compile_cached(model, policy=policy)
    assert not compile_cached(model, policy=CachePolicy(enabled=False, folder=tmp_path))[1].hit
    dump = PipelineOptions(dump=DumpOptions(tmp_path / "dumps"))
    assert not compile_cached(model, passes=dump, policy=policy)[1].hit
    assert counting.calls == 3 and list((tmp_path / "dumps").iterdir())
    memory = CachePolicy(disk=False, memory=True)
    first, miss = compile_cached(model, policy=memory)
    second, hit = compile_cached(model, policy=memory)
    assert (miss.hit, hit.hit, hit.where, counting.calls) == (False, True, "memory", 4)
    assert second is first


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "metadata"])
def test_damaged_or_tampered_entry_is_ignored_and_rebuilt(
    model: Path, tmp_path: Path, damage: str, counting: Counting
) -> None:
    policy = on_disk(tmp_path / "cache")
    compile_cached(model, policy=policy)
    entry = entry_path(tmp_path / "cache", model)
    data = entry.read_bytes()
    broken = {
        "truncate": data[: len(data) // 2],
        "flip": data[:-100] + bytes([data[-100] ^ 1]) + data[-99:],  # in the object or header
        "garbage": b"not a cache entry",
        "empty": b"",
        # the model's name changed as an attacker would: a well-formed entry, unsigned
        "metadata": data.replace(b'"name":"neg"', b'"name":"pwn"'),
    }[damage]
    assert broken != data
    entry.write_bytes(broken)
    result, outcome = compile_cached(model, policy=policy)
    assert not outcome.hit and counting.calls == 2 and result.model.name == "neg"
    assert any(n.startswith(f"cache: ignored entry {outcome.key[:12]}") for n in outcome.notes)
    assert entry.read_bytes() != broken  # rewritten
    assert compile_cached(model, policy=policy)[1].hit


def test_swapped_entries_each_still_give_their_own_model(tmp_path: Path) -> None:
    policy = on_disk(tmp_path / "cache")
    for graph in (LENET, MLP):
        compile_cached(graph, policy=policy)
    lenet, mlp = entry_path(tmp_path / "cache", LENET), entry_path(tmp_path / "cache", MLP)
    lenet_bytes, mlp_bytes = lenet.read_bytes(), mlp.read_bytes()
    lenet.write_bytes(mlp_bytes)
    mlp.write_bytes(lenet_bytes)
    assert lenet_bytes != mlp_bytes
    for graph, name, other in ((LENET, "model_lenet", "mlp_b1"), (MLP, "mlp_b1", "model_lenet")):
        result, outcome = compile_cached(graph, policy=policy)
        assert not outcome.hit and "stored for another key" in "\n".join(outcome.notes)
        header = result.model.header
        assert f"{name}_run_buffers" in header and f"{other}_run" not in header
    for graph in (LENET, MLP):  # rebuilt: now each entry is its own model's
        assert compile_cached(graph, policy=policy)[1].hit


def test_an_entry_signed_with_another_folders_secret_is_refused(
    model: Path, tmp_path: Path
) -> None:
    result, outcome = compile_cached(model, policy=on_disk(tmp_path / "cache"))
    secret = (tmp_path / "cache" / SECRET).read_bytes()
    data = encode_entry(outcome.key, result, secret)
    assert decode_entry(data, outcome.key, secret).model.header == result.model.header
    with pytest.raises(BadEntry, match="checksum"):
        decode_entry(data, outcome.key, bytes(32))
    with pytest.raises(BadEntry, match="another key"):
        decode_entry(data, "0" * 64, secret)


class _Planted:
    """What an attacker would store in the old pickle format: unpickling creates a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, (str(self.marker),))  # type: ignore[return-value]


def test_a_pickle_entry_of_the_old_format_is_never_loaded(
    model: Path, tmp_path: Path, counting: Counting
) -> None:
    entry, marker = entry_path(tmp_path / "cache", model), tmp_path / "code-ran"
    payload = pickle.dumps(_Planted(marker))
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"AOTCCACHE2\n" + hashlib.sha256(payload).digest() + payload)
    _, outcome = compile_cached(model, policy=on_disk(tmp_path / "cache"))
    assert not outcome.hit and counting.calls == 1 and not marker.exists()
    assert any("not an entry of this cache format" in n for n in outcome.notes)


def test_no_module_on_the_cache_path_can_execute_stored_code() -> None:
    unsafe = {"pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}
    for name in ("cache.py", "cache_entry.py", "cache_folder.py", "atomic.py", "report.py"):
        tree = ast.parse((AOTC_SOURCES / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("eval", "exec", "__import__"), f"{name}:{node.lineno}"
                continue
            else:
                continue
            assert not imported & unsafe, f"aotc/{name}:{node.lineno} imports {imported & unsafe}"


def test_unusable_cache_folder_is_skipped(model: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    result, outcome = compile_cached(model, policy=on_disk(blocker))
    assert not outcome.hit and result.model.object_bytes and not outcome.warnings
    assert any("cannot be used" in n for n in outcome.notes)


# --- folder permissions --------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_folder_others_may_write_to_is_ignored_with_one_warning(
    model: Path, tmp_path: Path, mode: int, counting: Counting
) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(mode)
    for _ in range(2):
        _, outcome = compile_cached(model, policy=on_disk(folder))
        assert not outcome.hit and len(outcome.warnings) == 1
        assert (
            str(folder) in outcome.warnings[0] and "writable by other users" in outcome.warnings[0]
        )
    assert counting.calls == 2 and list(folder.iterdir()) == []  # nothing read, nothing written


def test_a_sticky_shared_folder_is_used(model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "sticky"
    folder.mkdir()
    folder.chmod(0o1777)  # like /tmp: others cannot replace our files
    compile_cached(model, policy=on_disk(folder))
    _, outcome = compile_cached(model, policy=on_disk(folder))
    assert outcome.hit and not outcome.warnings


def test_a_folder_of_another_user_is_ignored(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(aotc.cache_folder.os, "geteuid", lambda: folder.stat().st_uid + 1)
    _, outcome = compile_cached(model, policy=on_disk(folder))
    assert not outcome.hit and "owned by another user" in outcome.warnings[0]
    assert list(folder.iterdir()) == []


def test_the_secret_is_private_and_a_readable_one_disables_the_folder(
    model: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    compile_cached(model, policy=on_disk(folder))
    secret = folder / SECRET
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == 32
    assert folder.stat().st_mode & 0o077 == 0  # created private
    secret.chmod(0o644)
    _, outcome = compile_cached(model, policy=on_disk(folder))
    assert not outcome.hit and "not private" in outcome.warnings[0]


# --- size cap and eviction -----------------------------------------------------------------


def test_size_cap_from_option_environment_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTC_CACHE_MAX_BYTES", raising=False)
    assert default_max_bytes() == 2 << 30
    monkeypatch.setenv("AOTC_CACHE_MAX_BYTES", "500M")
    assert default_max_bytes() == 500 << 20 and DiskCache("x").max_bytes == 500 << 20
    assert DiskCache("x", 1234).max_bytes == 1234
    assert [parse_size(t, "--cache-max") for t in ("7", "3K", "2GiB", "1 mb")] == [
        7,
        3 << 10,
        2 << 30,
        1 << 20,
    ]
    monkeypatch.setenv("AOTC_CACHE_MAX_BYTES", "lots")
    with pytest.raises(UsageError, match="AOTC_CACHE_MAX_BYTES: 'lots' is not a size"):
        default_max_bytes()


def test_eviction_under_a_small_cap_keeps_the_most_recently_used(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    a, b, c = (hlo_model(tmp_path, op, op) for op in ("negate", "abs", "floor"))
    for graph in (a, b):
        compile_cached(graph, policy=on_disk(folder))
    path_a, path_b = entry_path(folder, a), entry_path(folder, b)
    os.utime(path_a, ns=(10**9, 10**9))  # a is older than b ...
    os.utime(path_b, ns=(2 * 10**9, 2 * 10**9))
    assert compile_cached(a, policy=on_disk(folder))[1].hit  # ... until this hit touches it
    size_a, size_b = path_a.stat().st_size, path_b.stat().st_size
    _, outcome = compile_cached(c, policy=on_disk(folder, size_a + size_b + size_b // 2))
    assert path_a.exists() and entry_path(folder, c).exists() and not path_b.exists()
    assert "cache: evicted 1 least recently used entries" in "\n".join(outcome.notes)
    assert compile_cached(a, policy=on_disk(folder))[1].hit
    assert not compile_cached(b, policy=on_disk(folder))[1].hit


WRITER = """
import sys
from aotc.cache import CachePolicy, compile_cached
policy = CachePolicy(folder=sys.argv[1], max_bytes=int(sys.argv[2]))
for _ in range(3):
    for graph in sys.argv[3:]:
        result, outcome = compile_cached(graph, policy=policy)
        print(graph, len(result.model.object_bytes), int(outcome.hit))
"""


def test_two_processes_writing_and_evicting_concurrently(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    graphs = [str(hlo_model(tmp_path, op, op)) for op in ("negate", "abs", "floor", "ceil")]
    compile_cached(graphs[0], policy=on_disk(tmp_path / "probe"))
    size = entry_path(tmp_path / "probe", Path(graphs[0])).stat().st_size
    cap = size * 5 // 2  # room for two: most stores evict, in both processes at once
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(folder), str(cap), *order],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for order in (graphs, graphs[::-1])
    ]
    outputs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.startswith(".")]  # no temporary files left
    entries = [p for p in files if p.suffix == ".aotc"]
    assert entries and sum(p.stat().st_size for p in entries) <= cap
    secret = (folder / SECRET).read_bytes()  # one secret, shared by both
    runs = [line.split() for out, _ in outputs for line in out.splitlines()]
    assert sum(int(hit) for *_, hit in runs) < len(runs) - len(graphs)  # evictions made misses
    sizes = {graph: size for graph, size, _ in runs}
    for graph in graphs:
        path = entry_path(folder, Path(graph))
        if path.exists():  # every entry left is valid and is its own model's
            model = decode_entry(path.read_bytes(), cache_key(graph), secret).model
            assert str(len(model.object_bytes)) == sizes[graph]
            assert model.name == Path(graph).stem


# --- the command line ----------------------------------------------------------------------


def compile_args(model: Path, tmp_path: Path, *more: str) -> list[str]:
    out = str(tmp_path / "out" / "neg")
    return ["compile", str(model), "-o", out, "--cache-dir", str(tmp_path / "cc"), *more]


def test_cli_uses_cache_dir_and_no_cache(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, args = CliRunner(), compile_args(model, tmp_path)
    result = runner.invoke(cli.main, args)
    assert result.exit_code == 0 and "(from the cache)" not in result.output
    assert len(list((tmp_path / "cc").rglob("*.aotc"))) == 1

    def fail(*args: object) -> CompileResult:
        raise AssertionError("compiled although the cache holds the model")

    monkeypatch.setattr(aotc.cache, "compile_graph", fail)
    (tmp_path / "out" / "neg.o").unlink()
    result = runner.invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].endswith("neg.h (from the cache)")
    assert (tmp_path / "out" / "neg.o").is_file()
    result = runner.invoke(cli.main, [*args, "--no-cache"])
    assert result.exit_code != 0  # --no-cache really compiles (and hits the failing stub)


def test_cli_verbose_says_hit_or_miss(model: Path, tmp_path: Path) -> None:
    runner, args = CliRunner(), compile_args(model, tmp_path, "-v")
    key = cache_key(model)[:12]
    first = runner.invoke(cli.main, args).output.splitlines()
    assert first[-2] == f"cache: miss, entry {key}; compiled"
    assert first[-1].startswith(f"cache: stored entry {key} (")
    second = runner.invoke(cli.main, args).output.splitlines()
    assert second[-1] == f"cache: hit, entry {key} from {tmp_path / 'cc'}"


def test_cli_cache_max_evicts_and_a_bad_size_is_a_usage_error(model: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(cli.main, compile_args(model, tmp_path, "--cache-max", "1K", "-v"))
    assert result.exit_code == 0 and "evicted 1 least recently used" in result.output
    assert list((tmp_path / "cc").rglob("*.aotc")) == []
    result = runner.invoke(cli.main, compile_args(model, tmp_path, "--cache-max", "big"))
    assert (
        result.exit_code == 2 and "aotc: error: --cache-max: 'big' is not a size" in result.output
    )


def test_cli_warns_once_about_an_unsafe_folder(model: Path, tmp_path: Path) -> None:
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc").chmod(0o777)
    result = CliRunner().invoke(cli.main, compile_args(model, tmp_path))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if "warning" in line]
    assert warnings == [
        f"aotc: warning: cache folder {tmp_path / 'cc'} is writable by other users (mode 777; "
        "chmod go-w it); not using it"
    ]


def test_cache_subcommands(tmp_path: Path) -> None:
    runner, folder = CliRunner(), tmp_path / "cc"
    graphs = [hlo_model(tmp_path, op, op) for op in ("negate", "abs", "floor")]
    for graph in graphs:
        compile_cached(graph, policy=on_disk(folder))
    os.utime(entry_path(folder, graphs[0]), ns=(10**9, 10**9))  # the least recently used
    sizes = {g.stem: entry_path(folder, g).stat().st_size for g in graphs}

    def cache(*args: str) -> list[str]:
        result = runner.invoke(cli.main, ["cache", *args, "--cache-dir", str(folder)])
        assert result.exit_code == 0, result.output
        return result.output.splitlines()

    info = cache("info")
    assert info[:3] == [f"folder: {folder}", "entries: 3", info[2]]
    assert f"({sum(sizes.values())} bytes)" in info[2] and info[3].startswith("cap: 2.0 GiB")
    listed = cache("list")
    names = [line.split()[1] for line in listed]
    assert sorted(names) == ["abs", "floor", "negate"] and names[-1] == "negate"  # LRU last
    assert {line.split()[0] for line in listed} == {cache_key(g)[:12] for g in graphs}
    keep = sizes["abs"] + sizes["floor"]
    assert cache("prune", "--max", str(keep))[0].startswith("removed 1 entry")
    assert not entry_path(folder, graphs[0]).exists()
    assert cache("prune", "--max", str(keep))[0].startswith("removed 0 entries")
    assert cache("clear")[0].startswith("removed 2 entries")
    assert cache("list") == [] and cache("info")[1] == "entries: 0"
    assert (folder / SECRET).exists()


def test_cache_subcommands_refuse_to_clear_an_unsafe_folder(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    runner = CliRunner()
    result = runner.invoke(cli.main, ["cache", "clear", "--cache-dir", str(folder)])
    assert result.exit_code == 1 and "not removing anything there" in result.output
    result = runner.invoke(cli.main, ["cache", "info", "--cache-dir", str(folder)])
    assert result.exit_code == 0 and "aotc compile does not use it" in result.output


def test_outcome_summary_when_no_cache_is_used() -> None:
    assert CacheOutcome().summary() == "cache: not used"


def test_compiler_fingerprint_covers_the_sources() -> None:
    version, llvmlite_version, digest = compiler_fingerprint().split("/")
    assert version == __version__ and llvmlite_version and len(digest) == 64


def test_several_graphs_say_which_came_from_the_cache_and_warn_once(tmp_path: Path) -> None:
    graphs = [str(hlo_model(tmp_path, op, op)) for op in ("negate", "abs")]
    runner, folder = CliRunner(), tmp_path / "cc"
    args = ["compile", *graphs, "-d", str(tmp_path / "out"), "-j", "1", "--cache-dir", str(folder)]
    compile_cached(graphs[0], policy=on_disk(folder))
    lines = runner.invoke(cli.main, args).output.splitlines()
    assert sorted(line.endswith("(from the cache)") for line in lines) == [False, True]
    assert any(line.endswith("negate.h (from the cache)") for line in lines)
    folder.chmod(0o777)
    lines = runner.invoke(cli.main, args).output.splitlines()
    assert len([line for line in lines if "aotc: warning: cache folder" in line]) == 1
    assert not any("(from the cache)" in line for line in lines)
