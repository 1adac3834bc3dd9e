"""`aotc compile` for build systems: --emit lib, --depfile, --name, several GRAPHs with -j,
--list, and the paths of the shipped CMake, Make and Bazel files."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import TF_DATA

import aotc
from aotc.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mlp"
CONFIGS = EXAMPLE.parent.parent / "configs"
CC = os.environ.get("CC", "cc")


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_emit_lib_with_a_depfile_links_with_cc(tmp_path: Path) -> None:
    models = tmp_path / "models"  # the graph with its config beside it, found without -c
    models.mkdir()
    for source in (EXAMPLE / "mlp.pb", CONFIGS / "mlp.yaml"):
        shutil.copy(source, models / source.name)
    code, out = run("compile", models / "mlp.pb", "-o", "build/mlp", "--emit", "lib",
                    "--depfile", "build/mlp.d")  # fmt: skip
    assert code == 0 and "wrote build/libmlp.a and build/mlp.h" in out, out
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["libmlp.a", "mlp.d", "mlp.h"]
    depfile = (tmp_path / "build" / "mlp.d").read_text()
    rule = depfile.split("\n\n")[0]  # the sibling config is found and listed, with aotc's version
    assert rule.startswith("build/libmlp.a build/mlp.h:")
    for dep in (models / "mlp.pb", models / "mlp.yaml", Path(aotc.__file__)):
        assert str(dep) in rule
    cmd = [CC, "-O2", str(EXAMPLE / "main.c"), "-Ibuild", "-Lbuild", "-lmlp", "-lm", "-o", "app"]
    subprocess.run(cmd, check=True)
    assert "OK" in subprocess.run(["./app"], capture_output=True, text=True, check=True).stdout


def test_name_sets_the_c_prefix_and_is_part_of_the_cache_key(tmp_path: Path) -> None:
    for name in ("first", "second"):
        code, out = run("compile", EXAMPLE / "mlp.pb", "-c", CONFIGS / "mlp.yaml", "-o", name,
                        "--name", name)  # fmt: skip
        assert code == 0, out
        header = (tmp_path / f"{name}.h").read_text()
        assert f"int {name}_run(" in header and "mlp_run" not in header


def test_several_graphs_compile_in_parallel_and_one_failure_spares_the_others(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.pbtxt"
    broken.write_text("node { name: 'x' op: 'FancyOp' }")
    graphs = [TF_DATA / "matmul.pb", broken, TF_DATA / "binary.pb"]
    code, out = run("compile", *graphs, "-d", "out", "-j", "2")
    assert code == 1, out
    assert "wrote out/matmul.o and out/matmul.h" in out and "wrote out/binary.o" in out
    assert "aotc: error: " in out and "FancyOp" in out and "1 of 3 models failed" in out
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["binary.h", "binary.o", "matmul.h", "matmul.o"]  # nothing of broken


def test_list_file_names_graphs_relative_to_its_folder(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    for name in ("matmul.pb", "matmul.yaml", "binary.pb", "binary.yaml"):
        shutil.copy(TF_DATA / name, models / name)
    (models / "all.txt").write_text("# the models of this folder\nmatmul.pb\n\nbinary.pb  # two\n")
    code, out = run("compile", "--list", models / "all.txt", "-d", "out", "-q")
    assert code == 0 and out == "", out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "binary.h", "binary.o", "matmul.h", "matmul.o",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["a.pb", "b.pb", "-o", "x"], "-o: for one GRAPH only (2 were given)"),
        (["a.pb", "b.pb", "--depfile", "x.d", "--name", "n"], "--depfile, --name: for one GRAPH"),
        (["a.pb", "-o", "x", "-d", "y"], "either -o PREFIX or -d DIR"),
        ([], "needs a GRAPH (or --list FILE)"),
        (["--list", "missing.txt"], "--list missing.txt: cannot read it"),
        (["one/m.pb", "two/m.pb", "-d", "out"], "would both write out/m.o"),
    ],
)
def test_usage_errors(args: list[str], needle: str) -> None:
    code, out = run("compile", *args)
    assert code == 2 and needle in out, out
    assert not Path("x").exists() and not Path("out").exists()


def test_build_system_files_are_where_the_options_say() -> None:
    for flag, name in (("--cmake-dir", "aotcConfig.cmake"), ("--bazel-dir", "aotc.bzl")):
        code, out = run(flag)
        assert code == 0 and (Path(out.strip()) / name).is_file(), out
    code, out = run("--make-include")
    assert code == 0 and Path(out.strip()).name == "aotc.mk" and Path(out.strip()).is_file()
