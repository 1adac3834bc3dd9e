"""CMake: find_package(aotc) + aotc_add_model, with the Ninja and the Unix Makefiles generators.

Two models go into one static library linked into one program, whose numbers must match
TensorFlow's; the same two with CPP_CLASS go into another, linked into a C++11 program built
with -Wall -Wextra -Werror that runs them through their classes; a SavedModel goes into a
library of its own. Editing one model's config, graph
or checkpoint recompiles that model only; a build with nothing changed recompiles nothing (the
depfile aotc writes is what CMake's rules follow).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from buildsys_testing import AOTC, check_app, make_project, run, stamps

import aotc

GENERATORS = {"Ninja": "ninja", "Unix Makefiles": "make"}


@pytest.mark.parametrize("generator", GENERATORS)
def test_two_models_build_run_and_rebuild_exactly_what_changed(
    generator: str, tmp_path: Path
) -> None:
    for tool in ("cmake", GENERATORS[generator]):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    src, build = make_project(tmp_path / "src", "CMakeLists.txt"), tmp_path / "build"
    cmake_dir = run([AOTC, "--cmake-dir"], cwd=tmp_path).strip()
    configure = ["cmake", "-S", src, "-B", build, "-G", generator, f"-Daotc_DIR={cmake_dir}"]
    run(configure, cwd=tmp_path)
    run(["cmake", "--build", build], cwd=tmp_path)
    check_app(build / "app", tmp_path / "run")
    check_app(build / "app_cpp", tmp_path / "run")
    objects, saved = build / "aotc" / "models", build / "aotc" / "saved"
    classes = build / "aotc" / "cpp_models"
    depfile = (objects / "mlp.d").read_text()
    assert str(Path(aotc.__file__)) in depfile and "mlp.yaml" in depfile
    assert "class Mlp final" in (classes / "mlp_cc.hpp").read_text()

    def rebuilt_after(*touched: str) -> set[str]:
        files = [objects / "mlp.o", objects / "matmul.o", saved / "module.o", build / "app"]
        files += [classes / "mlp_cc.o", classes / "matmul_cc.o", build / "app_cpp"]
        before = stamps(files)
        time.sleep(0.01)  # the edit is newer than the outputs, whatever the clock's resolution
        for name in touched:
            os.utime(src / "models" / name)
        run(["cmake", "--build", build], cwd=tmp_path)
        after = stamps(files)
        return {name for name in before if before[name] != after[name]}

    assert rebuilt_after() == set()
    run(configure, cwd=tmp_path)  # configuring again changes no command
    assert rebuilt_after() == set()
    assert rebuilt_after("mlp.yaml") == {"mlp.o", "app", "mlp_cc.o", "app_cpp"}
    matmul = {"matmul.o", "app", "matmul_cc.o", "app_cpp"}
    assert rebuilt_after("matmul.yaml") == matmul  # found as the graph's sibling
    assert rebuilt_after("matmul.pb") == matmul
    assert rebuilt_after("module/variables/variables.index") == {"module.o"}  # a checkpoint
    check_app(build / "app", tmp_path / "run")
    check_app(build / "app_cpp", tmp_path / "run")
