"""The command line: compiles, and every bad input gives one clear line, exit 1, no outputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import TF_DATA

from aotc.cli import main

PLACEHOLDER = """
node { name: "x" op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: %s } dim { size: 3 } } } } }
"""


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # outputs without -o land in the current folder


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def assert_one_line_error(code: int, output: str, *needles: str) -> None:
    assert code == 1, output
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotc: error: "), output
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"


def test_compile_writes_object_and_header(tmp_path: Path) -> None:
    out = tmp_path / "out" / "mlp"
    code, output = run(
        ["compile", str(TF_DATA / "mlp_b1.pb"), "-c", str(TF_DATA / "mlp_b1.yaml"), "-o", str(out)]
    )
    assert code == 0, output
    assert out.with_suffix(".o").read_bytes()[:4] == b"\x7fELF"
    assert "int mlp_b1_run(" in out.with_suffix(".h").read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["mlp.h", "mlp.o"]


def test_compile_without_config_or_output_uses_graph_stem(tmp_path: Path) -> None:
    graph = tmp_path / "tiny.pbtxt"
    write(
        graph,
        PLACEHOLDER % 2 + 'node { name: "y" op: "Relu" input: "x" '
        'attr { key: "T" value { type: DT_FLOAT } } }',
    )
    code, output = run(["compile", str(graph)])
    assert code == 0, output
    assert "tiny.o" in output and "tiny.h" in output


BAD_GRAPHS = {
    "missing.pb": (None, ["missing.pb"]),
    "random.pb": (b"\x8a\x01garbage\xff\xfe not a graph at all", ["random.pb"]),
    "unsupported.pbtxt": (
        PLACEHOLDER % 2
        + 'node { name: "a" op: "FancyOp" input: "x" }\n'
        + 'node { name: "b" op: "OtherOp" input: "a" }',
        ["'a' (FancyOp)", "'b' (OtherOp)", "aotc ops"],
    ),
    "unknown_dim.pbtxt": (
        PLACEHOLDER % -1 + 'node { name: "y" op: "Relu" input: "x" '
        'attr { key: "T" value { type: DT_FLOAT } } }',
        ["x", "shape"],
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_GRAPHS))
def test_bad_graph_gives_one_line_and_no_output(tmp_path: Path, name: str) -> None:
    content, needles = BAD_GRAPHS[name]
    graph = tmp_path / name
    if isinstance(content, bytes):
        graph.write_bytes(content)
    elif content is not None:
        graph.write_text(content)
    out = tmp_path / "out"
    code, output = run(["compile", str(graph), "-o", str(out / "m")])
    assert_one_line_error(code, output, *needles)
    assert not out.exists() or not any(out.iterdir())


BAD_CONFIGS = {
    "unknown key": ("feeds: [{name: x, shape: [1, 784]}]\nfetchez: [y]\n", ["fetchez"]),
    "mistyped shape": ("feeds: [{name: x, shape: abc}]\n", ["shape"]),
    "feed not in graph": ("feeds: [{name: nope, shape: [1, 784]}]\n", ["nope"]),
    "fetch not in graph": ("fetches: [{name: missing_out}]\n", ["missing_out"]),
    "not a mapping": ("- just\n- a list\n", ["mapping"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_gives_one_line_and_no_output(tmp_path: Path, case: str) -> None:
    text, needles = BAD_CONFIGS[case]
    config = write(tmp_path / "bad.yaml", text)
    out = tmp_path / "out"
    code, output = run(
        ["compile", str(TF_DATA / "mlp_b1.pb"), "-c", str(config), "-o", str(out / "m")]
    )
    assert_one_line_error(code, output, "bad.yaml", *needles)
    assert not out.exists()


def test_unknown_target_is_a_clear_error(tmp_path: Path) -> None:
    code, output = run(
        [
            "compile",
            str(TF_DATA / "mlp_b1.pb"),
            "-c",
            str(TF_DATA / "mlp_b1.yaml"),
            "--target-triple",
            "nonsense-vendor-os",
            "-o",
            str(tmp_path / "m"),
        ]
    )
    assert_one_line_error(code, output, "nonsense-vendor-os")
    assert not list(tmp_path.glob("m.*"))


def test_usage_error_exits_2(tmp_path: Path) -> None:
    code, _ = run(["compile"])
    assert code == 2


def test_ops_lists_supported_ops(tmp_path: Path) -> None:
    code, output = run(["ops"])
    assert code == 0
    assert {"MatMul", "Softmax", "Reshape", "Cast"} <= set(output.split())
    code, output = run(["ops", "--format", "markdown"])
    assert code == 0 and "| `MatMul` |" in output


def test_docs_ops_table_is_current() -> None:
    code, output = run(["ops", "--format", "markdown"])
    docs = Path(__file__).parents[1] / "docs" / "ops.md"
    assert code == 0 and docs.read_text() == output, "docs/ops.md is stale: run `make docs`"


def test_quiet_compile_prints_nothing(tmp_path: Path) -> None:
    code, output = run(["compile", str(TF_DATA / "mlp_b1.pb"), "-q", "-o", str(tmp_path / "m")])
    assert code == 0 and output == ""
    assert (tmp_path / "m.o").exists()


def test_compiling_a_float_model_does_not_import_ml_dtypes(tmp_path: Path) -> None:
    # importing ml_dtypes costs about half a second, more than compiling a small model
    script = (
        "import sys; from aotc.cli import main; main(sys.argv[1:], standalone_mode=False); "
        "assert 'ml_dtypes' not in sys.modules, 'ml_dtypes imported'"
    )
    args = ["compile", str(TF_DATA / "matmul.pb"), "-o", str(tmp_path / "m"), "--no-cache"]
    subprocess.run([sys.executable, "-c", script, *args], check=True, cwd=tmp_path)
