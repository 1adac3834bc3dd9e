"""The sharp edges a new user hits in the first hour (issue 10's papercuts), one test each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fixtures import TF_DATA

import aotc
from aotc.cli import BROKEN_PIPE_EXIT, main
from aotc.codegen.target import TargetSpec, resolve_target
from aotc.config import load_config
from aotc.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
MLP = TF_DATA / "mlp_b1.pb"
MLP_CONFIG = TF_DATA / "mlp_b1.yaml"
SAVED = Path(__file__).parent / "data" / "savedmodel"
HLO = Path(__file__).parent / "data" / "hlo"
CC = shutil.which("cc") or "cc"

UNKNOWN_BATCH = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } }
node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def one_line_error(args: list[str], *needles: str, exit_code: int = 1) -> str:
    code, output = run(args)
    assert code == exit_code, output
    (line,) = output.strip().splitlines()
    assert line.startswith("aotc: error: ") and "Traceback" not in output
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# ---- the command line ----------------------------------------------------------------------


def test_a_closed_output_pipe_ends_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # `aotc ops | head` once head has gone: every write meets a closed pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "aotc", "ops", "--format", "markdown"],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == BROKEN_PIPE_EXIT and done.stderr == b""


@pytest.mark.parametrize("out", ["build/", "existing"])
def test_output_folder_gets_the_files_inside_it(out: str) -> None:
    Path("existing").mkdir()
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", out])
    assert code == 0, output
    folder = Path(out.rstrip("/"))
    assert sorted(p.name for p in folder.iterdir()) == ["mlp_b1.h", "mlp_b1.o"]
    assert not Path(f"{folder}.o").exists()


def test_shape_option_sets_a_graphdef_feed_shape() -> None:
    Path("g.pbtxt").write_text(UNKNOWN_BATCH)
    one_line_error(["compile", "g.pbtxt"], "'x'", "[?, 3]", "--shape x=1,3")
    code, output = run(["compile", "g.pbtxt", "--shape", "x=5,3", "-o", "g"])
    assert code == 0, output
    assert "#define G_ARG0_BYTES 60" in Path("g.h").read_text()
    one_line_error(["compile", "g.pbtxt", "--shape", "z=5,3"], "--shape names z, not a feed")
    one_line_error(["compile", "g.pbtxt", "--shape", "x=5,4"], "--shape x=5,4", "[?, 3]")
    fn = aotc.compile("g.pbtxt", shapes={"x": (2, 3)})
    np.testing.assert_array_equal(fn(np.array([[-1, 2, 3]] * 2, np.float32))[0], [0, 2, 3])


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            ["--signature", "serving_default"],
            ["--signature applies only to a SavedModel", "GraphDef"],
        ),
        (["--tag", "serve"], ["--tag applies only to a SavedModel directory"]),
        (["--signature", "s", "--tag", "serve"], ["--signature and --tag apply only"]),
    ],
)
def test_savedmodel_options_on_a_graphdef_are_refused(args: list[str], needles: list[str]) -> None:
    one_line_error(["compile", str(MLP), "-o", "m", *args], *needles, exit_code=2)
    assert not Path("m.o").exists()


def test_shape_on_hlo_text_is_refused() -> None:
    hlo = str(HLO / "jax_two.hlo")
    one_line_error(["compile", hlo, "--shape", "x=1"], "does not apply to HLO text", exit_code=2)


def test_cache_dir_help_names_xdg_cache_home() -> None:
    code, output = run(["compile", "--help"])
    assert code == 0 and "$XDG_CACHE_HOME" in output


def test_api_errors_name_the_api_arguments() -> None:
    with pytest.raises(ConfigError) as err:
        aotc.compile(SAVED / "keras")
    assert "shapes={'features': (1, 8)}" in str(err.value) and "--shape" not in str(err.value)
    with pytest.raises(aotc.errors.UsageError, match="signature= applies only"):
        aotc.compile(MLP, signature="serving_default")


def test_run_writes_outputs_into_their_own_folder() -> None:
    np.save("x.npy", np.zeros((1, 784), np.float32))
    code, output = run(["run", str(MLP), "-c", str(MLP_CONFIG), "--input", "x=x.npy"])
    assert code == 0, output
    assert sorted(p.name for p in Path(".").iterdir()) == ["mlp_b1_outputs", "x.npy"]
    assert [p.name for p in Path("mlp_b1_outputs").iterdir()] == ["Identity.npy"]


def test_config_name_that_is_no_c_identifier_gets_a_note() -> None:
    text = re.sub(r"^name: .*$", "name: 3-mlp", MLP_CONFIG.read_text(), flags=re.M)
    Path("c.yaml").write_text(text)
    code, output = run(["compile", str(MLP), "-c", "c.yaml", "-o", "m"])
    assert code == 0, output
    (note,) = [line for line in output.splitlines() if line.startswith("aotc: note: ")]
    assert "'3-mlp'" in note and "m3_mlp_run" in note and "c.yaml" in note
    assert "int m3_mlp_run(" in Path("m.h").read_text()


TYPOS = {"x86_64": ("+avx513f", "+avx512f"), "aarch64": ("+neom", "+neon")}


def test_bad_target_feature_names_only_the_bad_one() -> None:
    arch = resolve_target(TargetSpec()).triple.split("-")[0]
    if arch not in TYPOS:
        pytest.skip(f"no typo example for {arch}")
    typo, meant = TYPOS[arch]  # the host: its 1,500-character feature string is in play
    line = one_line_error(["compile", str(MLP), "--target-features", typo], repr(typo))
    assert f"did you mean {meant!r}" in line and len(line) < 300


# ---- inputs in formats aotc does not read ----------------------------------------------------


def _onnx() -> bytes:
    # ModelProto: ir_version (1), producer_name (2), graph (7), opset_import (8).
    graph = b"\x0a\x04node"
    return (
        b"\x08\x08"
        + b"\x12\x07pytorch"
        + b"\x3a"
        + bytes([len(graph)])
        + graph
        + b"\x42\x02\x10\x11"
    )


FOREIGN = {
    "model.h5": (b"\x89HDF\r\n\x1a\n" + b"\0" * 64 + b"keras_version", ["Keras model", "export"]),
    "model.onnx": (_onnx(), ["ONNX model", "onnx2tf"]),
    "model.tflite": (b"\x1c\0\0\0TFL3" + b"\0" * 64, ["TensorFlow Lite", "converted from"]),
    "x.npy": (b"\x93NUMPY\x01\x00", ["numpy array"]),
    "saved_model.pb": (
        b"\x08\x01\x12\x80\x80\x01" + b"\0" * 32,
        ["saved_model.pb of a SavedModel"],
    ),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_foreign_file_formats_say_what_they_are(name: str) -> None:
    data, needles = FOREIGN[name]
    Path(name).write_bytes(data)
    one_line_error(["compile", name, "-o", "m"], name, *needles)
    assert not Path("m.o").exists()


def test_keras_v3_archive_is_recognized() -> None:
    with zipfile.ZipFile("model.keras", "w") as archive:
        archive.writestr("metadata.json", "{}")
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n")
    one_line_error(["compile", "model.keras"], "Keras model (.keras archive)", "export(DIR)")


def test_folders_that_are_not_savedmodels_say_what_to_pass() -> None:
    shutil.copytree(SAVED / "module", "serving/3")
    one_line_error(["compile", "serving"], "SavedModel in 3/", "serving/3")
    Path("ckpt").mkdir()
    Path("ckpt/checkpoint").write_text("model_checkpoint_path: 'x'\n")
    one_line_error(["compile", "ckpt"], "TensorFlow checkpoint", "tf.saved_model.save")
    Path("graphs").mkdir()
    shutil.copy(MLP, "graphs/a.pb")
    one_line_error(["compile", "graphs"], "compile one of the files in it: a.pb")


# ---- inspect and run take what compile takes ---------------------------------------------------


def test_inspect_shows_a_savedmodels_signatures() -> None:
    code, output = run(["inspect", str(SAVED / "keras")])
    assert code == 0, output
    assert "SavedModel, tags serve" in output and "serving_default (compiled):" in output
    assert re.search(r"inputs: +features: float32\[\?,8\]", output), output
    assert "unsupported ops: none" in output
    code, output = run(["inspect", str(SAVED / "keras"), "--emit-config", "k.yaml"])
    assert code == 0, output
    assert load_config("k.yaml").feeds[0].shape == (1, 8)
    assert run(["compile", str(SAVED / "keras"), "-c", "k.yaml", "-o", "k"])[0] == 0


def test_inspect_shows_hlo_arguments_and_results() -> None:
    code, output = run(["inspect", str(HLO / "jax_two.hlo")])
    assert code == 0, output
    assert "arguments:\n  x: float32[" in output and "results:\n  result0: " in output
    one_line_error(["inspect", str(HLO / "jax_two.hlo"), "--emit-config", "c.yaml"], exit_code=2)


def test_run_takes_a_savedmodel_directory() -> None:
    np.save("f.npy", np.ones((1, 8), np.float32))
    args = ["run", str(SAVED / "keras"), "--shape", "features=1,8", "--input", "features=f.npy"]
    code, output = run([*args, "--reference", "-d", "out"])
    assert code == 0, output
    assert "max |diff| vs reference" in output and (Path("out") / "output_0.npy").is_file()


# ---- the demo, the README and the layout --------------------------------------------------------


def test_demo_program_is_c99() -> None:
    code, output = run(["compile", str(REPO / "examples/mlp/mlp.pb"), "-c",
                        str(REPO / "configs/mlp.yaml"), "-o", "build/"])  # fmt: skip
    assert code == 0, output
    flags = ["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]
    cmd = [CC, "-O2", *flags, str(REPO / "examples/mlp/main.c"), "build/mlp.o", "-Ibuild", "-lm"]
    subprocess.run([*cmd, "-o", "demo"], check=True, capture_output=True, timeout=120)
    done = subprocess.run(["./demo"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stdout


def _make_recipe(target: str) -> list[str]:
    text = (REPO / "Makefile").read_text()
    recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, target
    return [line.strip() for line in recipe.group(1).splitlines()]


def test_readme_demo_commands_are_the_makefiles() -> None:
    readme = (REPO / "README.md").read_text()
    for line in _make_recipe("demo"):
        command = line.replace("$(AOTC)", "aotc").replace("$(CC)", "cc")
        assert command in readme, f"README does not show the demo step {command!r}"


def test_make_targets_named_in_docs_exist() -> None:
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    texts = [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("bench/*.py")]
    texts += [*REPO.glob("bench/*.md"), *REPO.glob("examples/**/*.c")]
    for path in texts:
        for target in re.findall(r"`make ([\w-]+)", path.read_text()):
            assert target in targets, f"{path.name} names `make {target}`, which does not exist"


def test_example_configs_live_in_configs_and_load() -> None:
    configs = sorted((REPO / "configs").glob("*.yaml"))
    assert configs and not list((REPO / "examples").rglob("*.yaml"))
    for path in configs:
        load_config(path)
    assert "configs/mlp.yaml" in (REPO / "README.md").read_text()
