"""`aotc inspect`, `aotc run`, --version, --help, -v/-q, and the progress line."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from codegen_testing import entry_signature
from fixtures import TF_DATA, assert_close, load_fixture

from aotc import __version__, progress
from aotc.cli import main
from aotc.codegen.compile import compile_module_assigned
from aotc.config import load_config
from aotc.driver import compile_graph
from aotc.frontend.sources import load_source
from aotc.passes import default_pipeline

MLP = TF_DATA / "mlp_b1.pb"


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# ---- version and help --------------------------------------------------------------------------


def test_version() -> None:
    for flag in ("--version", "-V"):
        code, output = run([flag])
        assert code == 0 and output.strip() == f"aotc, version {__version__}"


@pytest.mark.parametrize("command", [[], ["compile"], ["inspect"], ["run"], ["ops"]])
def test_every_command_has_help_with_examples(command: list[str]) -> None:
    code, output = run([*command, "--help"])
    assert code == 0, output
    assert "Examples:" in output and "aotc " in output.split("Examples:")[1]


# ---- inspect -----------------------------------------------------------------------------------


def test_inspect_text() -> None:
    code, output = run(["inspect", str(MLP)])
    assert code == 0, output
    assert "30 nodes" in output and "103.5 KiB in constants" in output
    assert "MatMul x3" in output
    assert "x: float32[1,784]" in output
    assert "candidate outputs: Identity" in output
    assert "unsupported ops: none" in output


def test_inspect_json() -> None:
    code, output = run(["inspect", str(TF_DATA / "binary.pbtxt"), "--json"])
    assert code == 0, output
    data = json.loads(output)
    assert data["node_count"] == 36 and data["ops"]["Placeholder"] == 4
    assert data["placeholders"][0] == {"name": "a", "dtype": "float32", "shape": [2, 3, 4]}
    assert data["outputs"][:2] == ["Identity", "Identity_1"] and data["unsupported"] == {}
    assert data["constant_bytes"] > 0


UNSUPPORTED = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } }
node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 4 } } } } } }
node { name: "a" op: "FancyOp" input: "x" }
node { name: "b" op: "FancyOp" input: "a" }
node { name: "z" op: "Relu" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_inspect_reports_unsupported_ops_and_unknown_dims() -> None:
    Path("g.pbtxt").write_text(UNSUPPORTED)
    code, output = run(["inspect", "g.pbtxt", "--json"])
    assert code == 0, output
    data = json.loads(output)
    assert data["unsupported"] == {"FancyOp": ["a", "b"]}
    assert data["placeholders"] == [{"name": "x", "dtype": "float32", "shape": [-1, 3]}]
    assert data["constant_bytes"] == 16 and data["outputs"] == ["z"]
    code, output = run(["inspect", "g.pbtxt"])
    assert "x: float32[?,3]" in output and "FancyOp: a, b" in output


def test_inspect_bad_graph_is_one_line() -> None:
    Path("bad.pb").write_bytes(b"\x00\x01garbage")
    code, output = run(["inspect", "bad.pb"])
    assert code == 1 and len(output.strip().splitlines()) == 1 and "bad.pb" in output


@pytest.mark.parametrize("name", ["mlp_b1", "binary", "int64", "plumbing"])
def test_emitted_config_compiles(name: str) -> None:
    graph = TF_DATA / f"{name}.pb"
    code, output = run(["inspect", str(graph), "--emit-config", "start.yaml", "-q"])
    assert code == 0 and output == ""
    load_config("start.yaml")  # valid
    code, output = run(["compile", str(graph), "-c", "start.yaml", "-o", "out/m"])
    assert code == 0, output
    assert not [p for p in Path(".").iterdir() if p.name.startswith(".")]  # no temp files


def test_emitted_config_for_unknown_dims_is_valid_and_marked() -> None:
    Path("g.pbtxt").write_text(UNSUPPORTED)
    code, output = run(["inspect", "g.pbtxt", "--emit-config", "g.yaml"])
    assert code == 0 and "wrote g.yaml" in output
    text = Path("g.yaml").read_text()
    assert "shape: [1, 3]  # was unknown" in text
    config = load_config("g.yaml")
    assert config.feeds[0].shape == (1, 3) and str(config.fetches[0].ref) == "z"


def test_emit_config_does_not_overwrite_without_force() -> None:
    Path("m.yaml").write_text("# mine\n")
    code, output = run(["inspect", str(MLP), "--emit-config", "m.yaml"])
    assert code == 1 and "--force" in output
    assert Path("m.yaml").read_text() == "# mine\n"
    code, _ = run(["inspect", str(MLP), "--emit-config", "m.yaml", "--force", "-q"])
    assert code == 0 and "fetches:" in Path("m.yaml").read_text()


def test_emit_config_into_unwritable_place() -> None:
    Path("afile").write_text("")
    code, output = run(["inspect", str(MLP), "--emit-config", "afile/m.yaml"])
    assert code == 1 and len(output.strip().splitlines()) == 1 and "afile/m.yaml" in output


# ---- run ---------------------------------------------------------------------------------------


def save_inputs(name: str) -> list[str]:
    fixture = load_fixture(name)
    options = []
    for spec, array in zip(load_config(fixture.config).feeds, fixture.args, strict=True):
        path = f"{spec.ref.node.replace('/', '_')}.npy"
        np.save(path, array)
        options += ["--input", f"{spec.ref}={path}"]
    return options


def test_run_saves_outputs_and_prints_summary() -> None:
    fixture = load_fixture("mlp_b1")
    options = save_inputs("mlp_b1")
    code, output = run(["run", str(MLP), *options, "--output-dir", "out", "--reference"])
    assert code == 0, output
    line = output.strip().splitlines()[-1]
    assert line.startswith("Identity: float32[1,10] min ") and "mean 0.1" in line
    assert "max |diff| vs reference" in line and "out/Identity.npy" in line
    assert_close(np.load("out/Identity.npy"), fixture.results[0], rtol=1e-4)


def test_run_multi_output_and_int_fixture() -> None:
    fixture = load_fixture("int64")
    options = save_inputs("int64")
    code, output = run(["run", str(fixture.graph), "-c", str(fixture.config), *options, "-q"])
    assert code == 0 and output == ""
    config = load_config(fixture.config)
    for fetch, expected in zip(config.fetches, fixture.results, strict=True):
        saved = np.load(f"int64_outputs/{str(fetch.ref).replace(':', '_')}.npy")  # the default
        np.testing.assert_array_equal(saved, expected)


def test_run_verbose_lists_inputs() -> None:
    code, output = run(["run", str(MLP), *save_inputs("mlp_b1"), "-v", "-d", "o"])
    assert code == 0 and "input x: float32[1,784] <- x.npy" in output


@pytest.mark.parametrize(
    "make, needles",
    [
        (lambda: np.save("x.npy", np.zeros((1, 784), np.float64)), ["x.npy", "float64"]),
        (lambda: np.save("x.npy", np.zeros((2, 784), np.float32)), ["x.npy", "[2,784]"]),
        (lambda: Path("x.npy").write_bytes(b"\x93NUMPY garbage"), ["x.npy", "not a readable"]),
        (lambda: Path("x.npy").write_text("just text\n"), ["x.npy", "not a readable"]),
        (lambda: np.savez("x.npy", a=np.zeros(2)), ["x.npy", ".npz"]),
        (lambda: None, ["x.npy", "no such file"]),
    ],
)
def test_run_rejects_bad_input_files(make: object, needles: list[str]) -> None:
    make()  # type: ignore[operator]
    if Path("x.npy.npz").exists():
        Path("x.npy.npz").rename("x.npy")
    code, output = run(["run", str(MLP), "--input", "x=x.npy", "-d", "out"])
    assert code == 1, output
    assert len(output.strip().splitlines()) == 1
    for needle in needles:
        assert needle in output
    assert not Path("out").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        ([], "missing --input for x: float32[1,784]"),
        (["--input", "x=x.npy", "--input", "y=x.npy"], "no input of that name"),
        (["--input", "x=x.npy", "--input", "x=x.npy"], "given twice"),
        (["--input", "x.npy"], "expected NAME=FILE.npy"),
    ],
)
def test_run_rejects_bad_input_names(args: list[str], needle: str) -> None:
    np.save("x.npy", np.zeros((1, 784), np.float32))
    code, output = run(["run", str(MLP), *args])
    assert code == 1 and needle in output and len(output.strip().splitlines()) == 1


def test_run_compiles_for_the_host_even_with_a_cross_target_config() -> None:
    Path("cross.yaml").write_text(
        "feeds: [x]\nfetches: [Identity]\n"
        "target: {triple: aarch64-unknown-linux-gnu, cpu: neoverse-n1}\n"
    )
    options = save_inputs("mlp_b1")
    code, output = run(["run", str(MLP), "-c", "cross.yaml", *options, "-q"])
    assert code == 0, output


def test_run_output_names_are_made_file_safe() -> None:
    from aotc.runner import safe_filename, save_outputs

    assert safe_filename("dense/BiasAdd:1") == "dense_BiasAdd_1"
    assert safe_filename("../../etc/passwd") == "_.._etc_passwd"
    from aotc.runner import Output

    outs = [Output("a/b", np.zeros(1)), Output("a:b", np.ones(1)), Output("A_b", np.ones(2))]
    saved = save_outputs(outs, "o")
    assert [p.path.name for p in saved if p.path] == ["a_b.npy", "a_b_1.npy", "A_b_2.npy"]
    assert np.load("o/a_b_1.npy")[0] == 1


# ---- progress ----------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_when_not_a_terminal() -> None:
    stream = io.StringIO()
    with progress.display(stream=stream, delay=0.0), progress.stage("codegen"):
        time.sleep(0.5)
    assert stream.getvalue() == ""


def test_progress_is_silent_for_quick_work() -> None:
    stream = FakeTerminal()
    with progress.display(stream=stream, delay=5.0), progress.stage("codegen"):
        time.sleep(0.3)
    assert stream.getvalue() == ""


def test_progress_shows_stage_on_a_terminal_and_erases_itself() -> None:
    stream = FakeTerminal()
    with progress.display(stream=stream, delay=0.0):
        with progress.stage("translate"):
            time.sleep(0.5)
        with progress.stage("codegen"):
            time.sleep(0.5)
    text = stream.getvalue()
    assert "aotc: translate (" in text and "aotc: codegen (" in text
    assert text.endswith("\r\x1b[K")


def test_progress_shows_how_far_a_stage_is() -> None:
    stream = FakeTerminal()
    with progress.display(stream=stream, delay=0.0), progress.stage("codegen"):
        progress.detail("kernels 3/5")
        time.sleep(0.5)
    assert "aotc: codegen: kernels 3/5 (" in stream.getvalue()


def test_codegen_reports_kernels_done_of_all() -> None:
    module = load_source(MLP, TF_DATA / "mlp_b1.yaml").module
    default_pipeline().run(module)
    heard: list[str] = []
    _, assignment = compile_module_assigned(
        module, "m", *entry_signature(module), on_progress=heard.append
    )
    total = len(assignment.kernels)
    assert total > 1 and heard == [
        *(f"kernels {k}/{total}" for k in range(1, total + 1)),
        "LLVM optimization",
        "object code",
    ]


def test_the_driver_shows_codegen_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[str] = []
    monkeypatch.setattr(progress, "detail", heard.append)
    result = compile_graph(MLP, TF_DATA / "mlp_b1.yaml")
    kernels = len(result.report.kernels) * len(result.model.levels)  # emitted once per level
    assert heard[0] == f"kernels 1/{kernels}" and heard[-3:] == [
        f"kernels {kernels}/{kernels}",
        "LLVM optimization",
        "object code",
    ]


def test_stage_without_display_does_nothing() -> None:
    with progress.stage("load"):
        pass


def test_compile_quiet_and_progress_off_in_tests() -> None:
    code, output = run(["compile", str(MLP), "-o", "m"])
    assert code == 0 and output.strip() == "wrote m.o and m.h"  # no progress characters
