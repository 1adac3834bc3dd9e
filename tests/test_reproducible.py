"""Same inputs, same bytes: compiles in separate processes (different hash seeds), from different
working directories and to different output paths produce identical .o and .h files, which
contain no absolute paths, no temp-folder names and (being identical across time) no timestamps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from fixtures import TF_DATA

REPO = Path(__file__).resolve().parent.parent


def compile_in(cwd: Path, graph: Path, config: Path, prefix: str, seed: str) -> tuple[bytes, bytes]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    cmd = [sys.executable, "-m", "aotc", "compile", str(graph), "-c", str(config), "-o", prefix]
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    out = cwd / prefix
    return out.with_name(out.name + ".o").read_bytes(), out.with_name(out.name + ".h").read_bytes()


def test_compiles_are_byte_identical_and_path_free(tmp_path: Path) -> None:
    # The graph is copied so that the two compiles read it through different absolute paths.
    first, second = tmp_path / "one" / "deep" / "dir", tmp_path / "two"
    first.mkdir(parents=True)
    second.mkdir()
    for name in ("mlp_b1.pb", "mlp_b1.yaml"):
        shutil.copy(TF_DATA / name, second / name)
    a = compile_in(first, TF_DATA / "mlp_b1.pb", TF_DATA / "mlp_b1.yaml", "build/mlp", "1")
    b = compile_in(second, Path("mlp_b1.pb"), Path("mlp_b1.yaml"), "out/other", "12345")
    assert a[0] == b[0], "object files differ"
    assert a[1] == b[1], "headers differ"
    for data in a:
        for path in (REPO, tmp_path, first, Path.home(), Path("/tmp")):
            assert str(path).encode() not in data, f"{path} found in an artifact"
        assert b"build/mlp" not in data and b"mlp_b1.pb" not in data


def test_in_process_compiles_are_identical() -> None:
    from aotc.driver import compile_graph

    graph, config = TF_DATA / "binary.pbtxt", TF_DATA / "binary.yaml"
    one, two = compile_graph(graph, config).model, compile_graph(graph, config).model
    assert one.object_bytes == two.object_bytes and one.header == two.header
    assert one.llvm_ir == two.llvm_ir
