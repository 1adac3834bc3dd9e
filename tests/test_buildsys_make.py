"""GNU make with aotc.mk: two models compiled by the AOTC_MODEL rule, linked into one program
whose numbers must match TensorFlow's; editing one model's inputs recompiles only that one."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from buildsys_testing import AOTC, check_app, make_project, run, stamps


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_two_models_build_run_and_rebuild_exactly_what_changed(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src", "Makefile")
    make = ["make", f"AOTC={AOTC}", "build/app"]
    run(make, cwd=src)
    check_app(src / "build" / "app", tmp_path / "run")
    files = [src / "build" / name for name in ("mlp.o", "mlp.h", "matmul.o", "app")]

    def rebuilt_after(*touched: str) -> set[str]:
        before = stamps(files)
        time.sleep(0.01)  # the edit is newer than the outputs, whatever the clock's resolution
        for name in touched:
            os.utime(src / "models" / name)
        run(make, cwd=src)
        after = stamps(files)
        return {name for name in before if before[name] != after[name]}

    assert rebuilt_after() == set()
    assert rebuilt_after("mlp.yaml") == {"mlp.o", "mlp.h", "app"}
    assert rebuilt_after("matmul.yaml") == {"matmul.o", "app"}  # the graph's .yaml sibling
    before = stamps(files)
    (src / "build" / "mlp.h").unlink()  # either output missing reruns the compile
    run(make, cwd=src)
    after = stamps(files)
    assert {name for name in before if before[name] != after[name]} == {"mlp.o", "mlp.h", "app"}
    check_app(src / "build" / "app", tmp_path / "run")


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_cpp_class_header_is_a_target_of_the_rule(tmp_path: Path) -> None:
    src = make_project(tmp_path / "src", "Makefile")
    make = ["make", f"AOTC={AOTC}", "build/app_cpp"]
    run(make, cwd=src)
    check_app(src / "build" / "app_cpp", tmp_path / "run")
    header = src / "build" / "mlp_cc.hpp"
    header.unlink()  # the C++ header missing reruns that model's compile, and only that one
    others = stamps([src / "build" / "matmul_cc.o"])
    run(make, cwd=src)
    assert header.is_file() and stamps([src / "build" / "matmul_cc.o"]) == others
