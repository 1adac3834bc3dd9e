"""Bazel: aotc_library in a workspace with two models and a cc_binary linking both, built
offline (only Bazel's built-in C++ rules), whose numbers must match TensorFlow's; the same two
with cpp_class, run through their classes by a C++11 cc_binary. The compile
actions are sandboxed (so every input is declared), list aotc's own sources as inputs, and
after `bazel clean` a second build is served entirely from a --disk_cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from buildsys_testing import AOTC, check_app, make_project, run, tool_env

# Debian's bazel-bootstrap (Bazel 4.2) fetches rules_cc and rules_java from the network for its
# own tools/cpp and tools/jdk packages, and Debian's bazel-rules-cc needs a newer Bazel. Offline,
# both are stand-ins that re-export Bazel's built-in rules, as the pinned versions did.
SHIMS = {
    "rules_cc": (
        "cc",
        ["cc_binary", "cc_library", "cc_test", "cc_toolchain", "cc_toolchain_suite"],
    ),
    "rules_java": (
        "java",
        ["java_binary", "java_import", "java_library", "java_runtime", "java_toolchain"],
    ),
}


def write_shims(root: Path) -> list[str]:
    flags = []
    for repo, (package, rules) in SHIMS.items():
        (root / repo / package).mkdir(parents=True)
        for build_file in ("WORKSPACE", "BUILD", f"{package}/BUILD"):
            (root / repo / build_file).write_text("")
        defs = "".join(f"{rule} = native.{rule}\n" for rule in rules)
        (root / repo / package / "defs.bzl").write_text(defs)
        flags.append(f"--override_repository={repo}={root / repo}")
    return flags


def spawns(log: Path) -> list[dict]:  # type: ignore[type-arg]
    """The entries of a --execution_log_json_file: JSON objects one after another."""
    text, decoder, at, entries = log.read_text(), json.JSONDecoder(), 0, []
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        entry, at = decoder.raw_decode(text, at)
        entries.append(entry)
    return entries


def aotc_spawns(log: Path) -> list[dict]:  # type: ignore[type-arg]
    return [s for s in spawns(log) if s["mnemonic"] == "AotcCompile"]


@pytest.mark.skipif(
    shutil.which("bazel") is None, reason="bazel (bazel-bootstrap) is not installed"
)
def test_aotc_library_builds_offline_and_hits_the_disk_cache_after_clean(tmp_path: Path) -> None:
    ws = make_project(tmp_path / "ws", "BUILD.bazel")
    rules = run([AOTC, "--bazel-dir"], cwd=tmp_path).strip()
    (ws / "WORKSPACE").write_text(
        f'local_repository(name = "aotc", path = "{rules}")\n'
        'load("@aotc//:configure.bzl", "aotc_configure")\n'
        "aotc_configure()\n"
    )
    bazel = ["bazel", f"--output_user_root={tmp_path / 'root'}", "--max_idle_secs=60"]
    flags = [*write_shims(tmp_path / "shims"), f"--disk_cache={tmp_path / 'disk-cache'}"]
    targets = ["//:app", "//:app_cpp", "//:module"]
    try:
        first, second = tmp_path / "first.json", tmp_path / "second.json"
        run([*bazel, "build", *flags, f"--execution_log_json_file={first}", *targets], ws)
        check_app(ws / "bazel-bin" / "app", tmp_path / "run")
        check_app(ws / "bazel-bin" / "app_cpp", tmp_path / "run")
        assert "int module_run(" in (ws / "bazel-bin" / "module.h").read_text()  # a SavedModel
        assert "class MatMul final" in (ws / "bazel-bin" / "matmul_cc.hpp").read_text()
        compiles = aotc_spawns(first)
        assert len(compiles) == 5 and all("sandbox" in str(s["runner"]) for s in compiles)
        inputs = {i["path"] for i in compiles[0]["inputs"]}
        assert "external/aotc_compiler/sources/__init__.py" in inputs  # aotc itself is an input
        run([*bazel, "clean"], ws)
        run([*bazel, "build", *flags, f"--execution_log_json_file={second}", *targets], ws)
        assert [s["remoteCacheHit"] for s in aotc_spawns(second)] == [True] * 5
        check_app(ws / "bazel-bin" / "app", tmp_path / "run")
        check_app(ws / "bazel-bin" / "app_cpp", tmp_path / "run")
    finally:
        subprocess.run([*bazel, "shutdown"], cwd=ws, env=tool_env(), capture_output=True)
