"""Dependency files: what a compile read, in Make syntax that GNU make parses back."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures import TF_DATA

import aotc
from aotc.depfile import compile_dependencies, depfile_text
from aotc.errors import OutputError

SAVEDMODEL = Path(__file__).parent / "data" / "savedmodel" / "module"
VERSION_FILE = Path(aotc.__file__)


def test_text_is_one_rule_plus_an_empty_rule_per_prerequisite() -> None:
    text = depfile_text([Path("out/m.o"), Path("out/m.h")], [Path("m.pb"), Path("m.yaml")])
    assert text == "out/m.o out/m.h: \\\n m.pb \\\n m.yaml\n\nm.pb:\n\nm.yaml:\n"


def test_graph_with_its_yaml_sibling_or_an_explicit_config(tmp_path: Path) -> None:
    graph = shutil.copy(TF_DATA / "matmul.pb", tmp_path / "g.pb")
    assert compile_dependencies(graph, None) == [Path(graph), VERSION_FILE]
    sibling = shutil.copy(TF_DATA / "matmul.yaml", tmp_path / "g.yaml")
    assert compile_dependencies(graph, None) == [Path(graph), Path(sibling), VERSION_FILE]
    other = tmp_path / "other.yaml"
    assert compile_dependencies(graph, other) == [Path(graph), other, VERSION_FILE]


def test_savedmodel_lists_its_checkpoint_files() -> None:
    deps = compile_dependencies(SAVEDMODEL, None)
    variables = sorted((SAVEDMODEL / "variables").iterdir())
    assert deps == [SAVEDMODEL / "saved_model.pb", *variables, VERSION_FILE]
    assert any(p.name.startswith("variables.data-") for p in variables)


def test_line_breaks_in_paths_are_refused() -> None:
    with pytest.raises(OutputError, match="line break"):
        depfile_text([Path("m.o")], [Path("a\nb.pb")])


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_reads_odd_file_names_back(tmp_path: Path) -> None:
    # A space, a '#' and a '$': if make misread one, it would look for a file that does not
    # exist and consider the target out of date at once.
    deps = [tmp_path / "a model.pb", tmp_path / "c#onfig$1.yaml"]
    for dep in deps:
        dep.write_text("")
    target = tmp_path / "m.o"
    (tmp_path / "m.d").write_text(depfile_text([target], deps))
    (tmp_path / "Makefile").write_text(f"include m.d\n{target}:\n\ttouch $@\n")
    target.touch()
    os.utime(target, (2e9, 2e9))  # newer than every prerequisite

    def up_to_date() -> bool:
        question = subprocess.run(["make", "-q", str(target)], cwd=tmp_path)
        assert question.returncode in (0, 1), "make could not read the depfile"
        return question.returncode == 0

    assert up_to_date()
    os.utime(deps[1], (2.1e9, 2.1e9))
    assert not up_to_date()
    deps[0].unlink()  # a prerequisite that went away is not an error (the empty rules)
    os.utime(deps[1], (1e9, 1e9))
    assert not up_to_date()


def test_checkpoint_of_a_graphdef_is_listed() -> None:
    data = Path(__file__).parent / "data" / "tfcompile"
    graph, prefix = data / "test_graph_tfadd_with_ckpt.pb", data / "test_graph_tfadd_with_ckpt.ckpt"
    deps = compile_dependencies(graph, None, str(prefix))
    assert deps[:3] == [graph, Path(f"{prefix}.data-00000-of-00001"), Path(f"{prefix}.index")]
