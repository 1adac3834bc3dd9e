"""Shared by the CMake, Make and Bazel tests: a project with two models (tests/data/buildsys),
the program that runs them, and checks of its numbers against TensorFlow's outputs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from fixtures import TF_DATA, assert_close, load_fixture

REPO = Path(__file__).resolve().parent.parent
BUILDSYS = Path(__file__).parent / "data" / "buildsys"
EXAMPLE = REPO / "examples" / "mlp"
CONFIGS = REPO / "configs"
SAVEDMODEL = Path(__file__).parent / "data" / "savedmodel" / "module"
AOTC = Path(sys.executable).with_name("aotc")  # the aotc of this test run's environment


def make_project(root: Path, *build_files: str) -> Path:
    """``root`` with app.c and app.cc (its C++ twin, using the models' --cpp-class classes), the
    named build files, models/{mlp,matmul}.{pb,yaml} and the SavedModel folder models/module."""
    (root / "models").mkdir(parents=True)
    for name in ("app.c", "app.cc", *build_files):
        shutil.copy(BUILDSYS / name, root / name)
    for src in (EXAMPLE / "mlp.pb", CONFIGS / "mlp.yaml", TF_DATA / "matmul.pb"):
        shutil.copy(src, root / "models" / src.name)
    shutil.copy(TF_DATA / "matmul.yaml", root / "models" / "matmul.yaml")
    shutil.copytree(SAVEDMODEL, root / "models" / "module")
    return root


def tool_env() -> dict[str, str]:
    """The environment for build tools: this run's aotc first on PATH."""
    return {**os.environ, "PATH": f"{AOTC.parent}{os.pathsep}{os.environ['PATH']}"}


def run(cmd: list[str | Path], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=tool_env(), capture_output=True, text=True)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}{done.stderr}"
    return done.stdout


def check_app(app: Path, work: Path) -> None:
    """Run the program on TF's inputs for both models and compare with TF's outputs."""
    mlp = np.load(EXAMPLE / "expected.npz")
    matmul = load_fixture("matmul")
    cases = {"mlp": ([mlp["x"]], [mlp["y"]]), "matmul": (matmul.args, matmul.results)}
    work.mkdir(exist_ok=True)
    for model, (args, _) in cases.items():
        for i, arg in enumerate(args):
            (work / f"{model}.arg{i}").write_bytes(np.ascontiguousarray(arg).tobytes())
    run([app, work], cwd=work)
    for model, (_, results) in cases.items():
        for j, want in enumerate(results):
            data = (work / f"{model}.result{j}").read_bytes()
            got = np.frombuffer(data, dtype=want.dtype).reshape(want.shape)
            assert_close(got, want, what=f"{model} result{j}")


def stamps(paths: list[Path]) -> dict[str, tuple[int, int]]:
    """Inode and mtime of each file: aotc replaces its outputs, so a rewrite changes both."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}
