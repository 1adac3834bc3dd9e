"""Packaging: `python -m build` makes a wheel and an sdist; the wheel, installed into a fresh
virtual environment outside the checkout, runs the README's main command from another folder;
and no folder named `aotc` in the current directory shadows the installed package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import aotc

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "mlp"
CC = os.environ.get("CC", "cc")


def run(cmd: list[str | Path], cwd: Path, **kwargs: object) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}{done.stderr}"
    return str(done.stdout)


def build_dist(src: Path, out: Path) -> None:
    """The wheel and sdist in ``out``, built from a copy of what the package is made of."""
    shutil.copytree(REPO / "aotc", src / "aotc", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], cwd=src)


def fresh_venv(root: Path) -> Path:
    """A new environment with the wheel's dependencies visible (those of this test run: no
    network) but neither aotc nor anything else of the checkout."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    python = root / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root)
    deps = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    Path(site.strip(), "_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return python


def check_contents(dist: Path) -> None:
    version = aotc.__version__
    (wheel,) = dist.glob(f"aotc-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    assert {"aotc/__init__.py", "aotc/cli.py", "aotc/proto/aotc_tf_pb2.py"} <= names
    shipped = {"aotc/cmake/aotcConfig.cmake", "aotc/make/aotc.mk", "aotc/bazel/aotc.bzl"}
    shipped |= {"aotc/include/aotc_threadpool.h"}
    shared = {f"aotc-{version}.data/data/share/cmake/aotc/aotcConfig.cmake"}
    assert shipped | shared <= names
    assert not any(n.startswith(("tests/", "examples/", "bench/")) for n in names)
    (sdist,) = dist.glob(f"aotc-{version}.tar.gz")
    with tarfile.open(sdist) as tar:
        members = set(tar.getnames())
    assert {f"aotc-{version}/pyproject.toml", f"aotc-{version}/aotc/__init__.py"} <= members


def test_wheel_installs_and_compiles_from_another_folder(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build_dist(tmp_path / "src", dist)
    check_contents(dist)
    python = fresh_venv(tmp_path / "venv")
    (wheel,) = dist.glob("*.whl")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index"]
    run([*pip, wheel], cwd=tmp_path)
    work = tmp_path / "elsewhere"
    (work / "aotc").mkdir(parents=True)  # the trap: a folder named aotc in the current one
    for source in (EXAMPLE / "mlp.pb", REPO / "configs" / "mlp.yaml", EXAMPLE / "main.c"):
        shutil.copy(source, work / source.name)
    where = run([python, "-c", "import aotc; aotc.compile; print(aotc.__file__)"], cwd=work)
    assert Path(where.strip()).is_relative_to(tmp_path / "venv")
    aotc_command = tmp_path / "venv" / "bin" / "aotc"
    run([aotc_command, "compile", "mlp.pb", "-c", "mlp.yaml", "-o", "build/mlp"], cwd=work)
    run([CC, "-O2", "main.c", "build/mlp.o", "-Ibuild", "-lm", "-o", "app"], cwd=work)
    assert "OK" in run([work / "app"], cwd=work)
    check_cmake_finds(tmp_path / "venv", work / "cmake")


def check_cmake_finds(venv: Path, project: Path) -> None:
    """find_package(aotc) without hints, with only the environment's bin folder on PATH."""
    include = Path(run([venv / "bin" / "aotc", "--include-dir"], cwd=venv).strip())
    assert include.is_relative_to(venv) and (include / "aotc_threadpool.h").is_file()
    cmake_dir = Path(run([venv / "bin" / "aotc", "--cmake-dir"], cwd=venv).strip())
    assert cmake_dir.is_relative_to(venv) and (cmake_dir / "aotcConfig.cmake").is_file()
    if shutil.which("cmake") is None:
        return
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(probe LANGUAGES NONE)\n"
        "find_package(aotc 0.1 REQUIRED)\n"
        'message(STATUS "found ${aotc_DIR} ${AOTC_EXECUTABLE} ${aotc_VERSION}")\n'
    )
    others = [p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "aotc").exists()]
    env = {**os.environ, "PATH": os.pathsep.join([str(venv / "bin"), *others])}
    out = run(["cmake", "-S", project, "-B", project / "build"], cwd=project, env=env)
    found = f"found {venv / 'share' / 'cmake' / 'aotc'} {venv / 'bin' / 'aotc'} {aotc.__version__}"
    assert found in out, out


def test_editable_install_is_not_shadowed_by_the_clone_folder(tmp_path: Path) -> None:
    # From the folder above a clone named `aotc`, the clone itself (no __init__.py) is a
    # candidate namespace package; the editable install must still win.
    if Path(aotc.__file__).resolve().parent.parent != REPO:
        pytest.skip("aotc is not installed in editable mode from this checkout")
    (tmp_path / "aotc").symlink_to(REPO, target_is_directory=True)
    code = "import aotc; aotc.compile; print(aotc.__file__)"
    where = run([sys.executable, "-c", code], cwd=tmp_path)
    assert Path(where.strip()).resolve() == REPO / "aotc" / "__init__.py"
