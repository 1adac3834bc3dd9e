"""Every kind of bad input: one line naming the file/node/key, exit code 1, no output files.

Also: a non-AotcError is an internal error (exit 3, one line, no traceback unless asked for),
Ctrl-C leaves nothing behind, and unwritable output paths are clean errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import TF_DATA

import aotc.atomic
import aotc.driver
from aotc.cli import INTERNAL_ERROR_EXIT, main

MLP = TF_DATA / "mlp_b1.pb"
MLP_CONFIG = TF_DATA / "mlp_b1.yaml"

FLOAT_T = 'attr { key: "T" value { type: DT_FLOAT } }'


def placeholder(name: str = "x", dims: str = "dim { size: 2 } dim { size: 3 }") -> str:
    return (
        f'node {{ name: "{name}" op: "Placeholder" '
        'attr { key: "dtype" value { type: DT_FLOAT } } '
        f'attr {{ key: "shape" value {{ shape {{ {dims} }} }} }} }}\n'
    )


def relu(name: str, source: str) -> str:
    return f'node {{ name: "{name}" op: "Relu" input: "{source}" {FLOAT_T} }}\n'


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def assert_one_line_error(code: int, output: str, *needles: str, exit_code: int = 1) -> str:
    assert code == exit_code, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert "Traceback" not in output
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def compile_fails(graph: Path, *needles: str, config: Path | None = None) -> str:
    """Compile ``graph``; assert one error line with ``needles`` and no files in out/."""
    args = ["compile", str(graph), "-o", "out/m"] + (["-c", str(config)] if config else [])
    code, output = run(args)
    line = assert_one_line_error(code, output, "aotc: error: ", *needles)
    assert not Path("out").exists() or not list(Path("out").iterdir())
    return line


# ---- graph files ------------------------------------------------------------------------------


def bad_graph(name: str, content: str | bytes) -> Path:
    path = Path(name)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.mark.parametrize("cut", [1, 100, 5000, 60000])
def test_truncated_pb(cut: int) -> None:
    graph = bad_graph("trunc.pb", MLP.read_bytes()[:cut])
    compile_fails(graph, "trunc.pb")


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_pb(seed: int) -> None:
    import numpy as np

    data = np.random.default_rng(seed).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    compile_fails(bad_graph("random.pb", data), "random.pb")


def test_empty_pb() -> None:
    compile_fails(bad_graph("empty.pb", b""), "empty.pb", "no nodes")


def test_pbtxt_syntax_error_has_line_and_column() -> None:
    text = placeholder() + 'node { name: "y" op: "Relu" input: "x" \n  attr { key: "T" value { '
    line = compile_fails(bad_graph("syntax.pbtxt", text + "type: DT_FLOAT } }\n  oops }\n"))
    assert "syntax.pbtxt:4:" in line and "syntax error" in line


def test_cycle() -> None:
    text = placeholder() + (
        f'node {{ name: "a" op: "AddV2" input: "x" input: "b" {FLOAT_T} }}\n'
        + relu("b", "a")
        + relu("y", "a")
    )
    compile_fails(bad_graph("cycle.pbtxt", text), "cycle.pbtxt", "cycle", "a", "b")


def test_input_names_missing_node() -> None:
    text = placeholder() + relu("y", "nope")
    compile_fails(bad_graph("dangling.pbtxt", text), "dangling.pbtxt", "'y'", "nope")


def test_input_names_missing_output_index() -> None:
    text = placeholder() + relu("y", "x:3")
    compile_fails(bad_graph("index.pbtxt", text), "index.pbtxt", "'y'", "x:3")


def test_malformed_input_name() -> None:
    text = placeholder() + relu("y", "x:abc")
    compile_fails(bad_graph("inname.pbtxt", text), "'y'", "x:abc")


def test_duplicate_node_name() -> None:
    text = placeholder() + relu("y", "x") + relu("y", "x")
    compile_fails(bad_graph("dup.pbtxt", text), "dup.pbtxt", "duplicate node name 'y'")


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("Floor", 0, FLOAT_T),
        ("Rsqrt", 5, FLOAT_T),
        ("RealDiv", 1, FLOAT_T),
        ("AddN", 0, FLOAT_T + ' attr { key: "N" value { i: 0 } }'),
        ("Pack", 0, FLOAT_T + ' attr { key: "N" value { i: 0 } }'),
        ("ConcatV2", 0, FLOAT_T),
        ("ConcatV2", 1, FLOAT_T),
    ],
)
def test_wrong_input_count_names_the_node(op: str, inputs: int, attrs: str) -> None:
    """Input counts are checked where translators receive them, for every rule shape."""
    sources = "".join(' input: "x"' for _ in range(inputs))
    graph = placeholder() + f'node {{ name: "bad" op: "{op}"{sources} {attrs} }}\n'
    compile_fails(bad_graph("g.pbtxt", graph), "'bad'", op)


def const(name: str, tensor: str, dtype: str = "DT_FLOAT") -> str:
    return (
        f'node {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: {dtype} }} }} '
        f'attr {{ key: "value" value {{ tensor {{ {tensor} }} }} }} }}\n'
    )


def add_const(tensor: str, dtype: str = "DT_FLOAT") -> str:
    return (
        placeholder()
        + const("c", tensor, dtype)
        + f'node {{ name: "y" op: "AddV2" input: "x" input: "c" {FLOAT_T} }}\n'
    )


def test_const_content_does_not_match_shape() -> None:
    tensor = 'dtype: DT_FLOAT tensor_shape { dim { size: 3 } } tensor_content: "\\000\\000\\000"'
    compile_fails(bad_graph("content.pbtxt", add_const(tensor)), "'c'", "tensor_content", "3")


def test_const_with_too_many_values() -> None:
    tensor = "dtype: DT_FLOAT tensor_shape { dim { size: 2 } } float_val: [1, 2, 3]"
    compile_fails(bad_graph("values.pbtxt", add_const(tensor)), "'c'", "3 values")


def test_const_of_absurd_size_is_refused_without_allocating() -> None:
    dims = "dim { size: 1099511627776 } dim { size: 1099511627776 }"
    tensor = f"dtype: DT_FLOAT tensor_shape {{ {dims} }} float_val: 1"
    compile_fails(bad_graph("hugeconst.pbtxt", add_const(tensor)), "'c'", "refuses")


@pytest.mark.parametrize("dim", ["-5", "-9223372036854775808"])
def test_negative_dimension(dim: str) -> None:
    text = placeholder(dims=f"dim {{ size: {dim} }} dim {{ size: 3 }}") + relu("y", "x")
    compile_fails(bad_graph("negative.pbtxt", text), "negative.pbtxt", "negative dimension")


@pytest.mark.parametrize(
    "dims",
    [
        "dim { size: 1099511627776 } dim { size: 1099511627776 }",  # 2**80 elements
        "dim { size: 9223372036854775807 } dim { size: 3 }",  # int64 max: no wraparound
        "dim { size: 65536 } dim { size: 65536 }",  # 16 GiB of float32: over the limit
    ],
)
def test_absurdly_large_feed_is_refused(dims: str) -> None:
    text = placeholder(dims=dims) + relu("y", "x")
    compile_fails(bad_graph("huge.pbtxt", text), "huge.pbtxt", "feed 'x'", "refuses")


def test_absurdly_large_intermediate_is_refused() -> None:
    shape = "dtype: DT_INT32 tensor_shape { dim { size: 3 } } int_val: [65536, 65536, 3]"
    text = (
        placeholder(dims="dim { size: 3 }")
        + const("s", shape, "DT_INT32")
        + f'node {{ name: "y" op: "BroadcastTo" input: "x" input: "s" {FLOAT_T} '
        'attr { key: "Tidx" value { type: DT_INT32 } } }\n'
    )
    compile_fails(bad_graph("bigmid.pbtxt", text), "bigmid.pbtxt", "[65536, 65536, 3]", "refuses")


@pytest.mark.parametrize("dtype", ["DT_STRING", "DT_FLOAT8_E5M2", "DT_RESOURCE", "DT_QINT8"])
def test_unsupported_dtype(dtype: str) -> None:
    text = (
        f'node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: {dtype} }} }} '
        'attr { key: "shape" value { shape { dim { size: 2 } } } } }\n'
        f'node {{ name: "y" op: "Identity" input: "x" '
        f'attr {{ key: "T" value {{ type: {dtype} }} }} }}\n'
    )
    compile_fails(bad_graph("dtype.pbtxt", text), "dtype.pbtxt", dtype)


def test_unknown_dtype_number() -> None:
    text = (
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: 999 } } '
        'attr { key: "shape" value { shape { dim { size: 2 } } } } }\n' + relu("y", "x")
    )
    compile_fails(bad_graph("dtype999.pbtxt", text), "DataType(999)")


def test_graph_is_a_directory() -> None:
    Path("folder.pb").mkdir()
    code, output = run(["compile", "folder.pb"])  # a directory must be a SavedModel
    assert code == 1 and "folder.pb: is a directory without saved_model.pb" in output
    assert "Traceback" not in output


# ---- configs ----------------------------------------------------------------------------------

BAD_CONFIGS = {
    "not a mapping": ("- x\n- y\n", ["expected a mapping"]),
    "a scalar": ("42\n", ["expected a mapping"]),
    "unknown top key": ("fetchez: [Identity]\n", ["fetchez", "did you mean 'fetches'"]),
    "unknown feed key": ("feeds: [{name: x, shap: [1, 784]}]\n", ["feeds[0]", "shap"]),
    "unknown target key": ("target: {tripel: host}\n", ["target", "tripel"]),
    "feeds not a list": ("feeds: x\n", ["feeds", "expected a list"]),
    "shape not a list": ("feeds: [{name: x, shape: 784}]\n", ["feeds[0].shape"]),
    "negative dim": ("feeds: [{name: x, shape: [1, -784]}]\n", ["feeds[0].shape"]),
    "bool dim": ("feeds: [{name: x, shape: [true, 784]}]\n", ["feeds[0].shape"]),
    "bad dtype": ("feeds: [{name: x, dtype: float128}]\n", ["feeds[0].dtype", "float128"]),
    "name not a string": ("name: [a]\n", ["name"]),
    "triple not a string": ("target: {triple: 5}\n", ["target.triple"]),
    "shape conflicts": ("feeds: [{name: x, shape: [1, 785]}]\n", ["feeds[0]", "785", "784"]),
    "rank conflicts": ("feeds: [{name: x, shape: [784]}]\n", ["feeds[0]", "784"]),
    "dtype conflicts": ("feeds: [{name: x, dtype: int32}]\n", ["feeds[0]", "int32", "float32"]),
    "duplicate feed": ("feeds: [x, x]\n", ["feeds[1]", "duplicate feed"]),
    "duplicate fetch": ("fetches: [Identity, Identity]\n", ["fetches[1]", "duplicate"]),
    "fetch is a feed": ("feeds: [x]\nfetches: [x]\n", ["fetches[0]", "also a feed"]),
    "duplicate key": ("feeds: [x]\nfeeds: [x]\n", ["duplicate key 'feeds'"]),
    "yaml syntax": ("feeds: [x\nfetches: y\n", ["bad.yaml:", "YAML syntax error"]),
    "control character": ("name: a\x01b\n", ["bad.yaml: character 8", "#x0001"]),
    "nested 5000 deep": ("feeds: " + "[" * 5000 + "]" * 5000 + "\n", ["nested deeper than 64"]),
    "feed not in graph": ("feeds: [{name: nope, shape: [1]}]\n", ["feeds[0]", "nope"]),
    "fetch output index": ("fetches: ['x:4']\n", ["fetches[0]", "x:4"]),
    "huge config shape": (
        "feeds: [{name: x, shape: [1099511627776, 1099511627776]}]\n",
        ["refuses"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config(case: str) -> None:
    text, needles = BAD_CONFIGS[case]
    config = Path("bad.yaml")
    config.write_text(text)
    graph = MLP
    if case == "huge config shape":  # a graph whose Placeholder shape is unknown
        graph = bad_graph("unknown.pbtxt", placeholder(dims="dim { size: -1 } dim { size: -1 }"))
        graph.write_text(graph.read_text() + relu("y", "x"))
    line = compile_fails(graph, *needles, config=config)
    assert "bad.yaml" in line or "unknown.pbtxt" in line


def test_config_not_utf8() -> None:
    config = Path("bad.yaml")
    config.write_bytes(b"name: \xff\xfe\n")
    compile_fails(MLP, "bad.yaml", "UTF-8", config=config)


def test_missing_config() -> None:
    compile_fails(MLP, "nothere.yaml", config=Path("nothere.yaml"))


# ---- output paths ------------------------------------------------------------------------------


def test_missing_output_folder_is_created() -> None:
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "a/b/c/m"])
    assert code == 0, output
    assert sorted(p.name for p in Path("a/b/c").iterdir()) == ["m.h", "m.o"]


def test_output_under_a_file_is_a_clean_error() -> None:
    Path("afile").write_text("not a folder")
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "afile/sub/m"])
    assert_one_line_error(code, output, "afile/sub/m.o", "cannot write output")
    assert Path("afile").read_text() == "not a folder"


def test_output_folder_that_cannot_be_created() -> None:
    # /proc refuses new entries even for root, unlike a chmod'ed folder.
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "/proc/aotc_test/m"])
    assert_one_line_error(code, output, "/proc/aotc_test/m.o", "cannot write output")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_read_only_output_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", str(folder / "m")])
        assert_one_line_error(code, output, "ro/m.o", "cannot write output")
        assert not list(folder.iterdir())
    finally:
        folder.chmod(0o755)


def test_output_is_a_directory() -> None:
    Path("m.o").mkdir()
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "m"])
    assert_one_line_error(code, output, "m.o")
    assert not Path("m.h").exists() and [p.name for p in Path(".").iterdir()] == ["m.o"]


# ---- interrupted writes and internal errors ----------------------------------------------------


def test_interrupt_while_writing_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    real_replace = os.replace

    def interrupted(src: str, dst: str) -> None:
        if str(dst).endswith(".h"):  # after the object is in place: the worst moment
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(aotc.atomic.os, "replace", interrupted)
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "out/m"])
    assert code == 130 and "interrupted" in output
    leftovers = [p.name for p in Path("out").iterdir()]
    assert not [n for n in leftovers if n.startswith(".")], leftovers  # no temp files


def test_interrupt_mid_write_leaves_no_temp_file(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fdopen = os.fdopen

    class Exploding:
        def __init__(self, fd: int, mode: str) -> None:
            self.file = real_fdopen(fd, mode)

        def __enter__(self) -> Exploding:
            return self

        def __exit__(self, *exc: object) -> None:
            self.file.close()

        def write(self, data: bytes) -> None:
            self.file.write(data[:10])
            raise KeyboardInterrupt

    monkeypatch.setattr(aotc.atomic.os, "fdopen", Exploding)
    # --no-cache: the interrupt must hit the output files, not the cache entry.
    code, output = run(["compile", str(MLP), "-c", str(MLP_CONFIG), "-o", "out/m", "--no-cache"])
    assert code == 130, output
    assert list(Path("out").iterdir()) == []


def test_internal_error_is_one_line_with_exit_code_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("something aotc did not expect\nsecond line")

    monkeypatch.setattr("aotc.cache.compile_graph", broken)
    code, output = run(["compile", str(MLP), "-o", "out/m"])
    line = assert_one_line_error(
        code, output, "internal error", "ValueError", "please report", exit_code=INTERNAL_ERROR_EXIT
    )
    assert "second line" not in line
    assert not Path("out").exists()


def test_internal_error_in_another_command_is_caught_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("aotc.inspection.graphdef.load_graph", broken)
    code, output = run(["inspect", str(MLP)])
    assert_one_line_error(code, output, "RecursionError", exit_code=INTERNAL_ERROR_EXIT)


def test_traceback_flag_shows_the_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("boom")

    monkeypatch.setattr("aotc.cache.compile_graph", broken)
    with pytest.raises(ValueError, match="boom"):
        CliRunner().invoke(main, ["--traceback", "compile", str(MLP)], catch_exceptions=False)


def test_usage_errors_still_exit_2() -> None:
    assert run(["compile"])[0] == 2
    assert run(["nosuchcommand"])[0] == 2
    assert run(["run", str(MLP), "--bogus"])[0] == 2


# ---- found in review: sizes on every input kind, constant subgraphs, odd paths -------------


def test_huge_hlo_parameter_is_refused() -> None:
    hlo = bad_graph(
        "big.hlo",
        "HloModule big\nENTRY main {\n  p = f32[100000,100000,100] parameter(0)\n"
        "  ROOT n = f32[100000,100000,100] negate(p)\n}\n",
    )
    compile_fails(hlo, "big.hlo", "feed 'p'", "bytes")


def test_huge_savedmodel_shape_is_refused() -> None:
    keras = Path(__file__).parent / "data" / "savedmodel" / "keras"
    code, output = run(["compile", str(keras), "--shape", "features=100000000000,8", "-o", "m"])
    assert_one_line_error(code, output, "feed 'features'", "bytes")
    assert not list(Path(".").glob("m.*"))


def test_huge_constant_subgraph_is_refused_not_evaluated() -> None:
    dims = "tensor { dtype: DT_INT32 tensor_shape { dim { size: 3 } } int_val: 100000 "
    dims += "int_val: 100000 int_val: 100 }"
    graph = bad_graph(
        "fill.pbtxt",
        placeholder("x", "dim { size: 4 }")
        + f'node {{ name: "dims" op: "Const" attr {{ key: "value" value {{ {dims} }} }} }}\n'
        + 'node { name: "one" op: "Const" attr { key: "value" value { tensor { dtype: DT_INT32 '
        + "tensor_shape { } int_val: 1 } } } }\n"
        + 'node { name: "f" op: "Fill" input: "dims" input: "one" }\n'
        + 'node { name: "r" op: "Reshape" input: "x" input: "f" }\n',
    )
    compile_fails(graph, "fill.pbtxt", "'r' (Reshape)", "at most")


def test_compile_dot_names_outputs_after_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "mymodel"
    folder.mkdir()
    (folder / "m.pb").write_bytes(MLP.read_bytes())
    os.chdir(folder)
    code, output = run(["compile", "."])
    assert_one_line_error(code, output, "aotc: error: ", ".")  # a folder without saved_model.pb


def test_config_with_a_list_as_key() -> None:
    config = bad_graph("listkey.yaml", "? [a, b]\n: 1\n")
    compile_fails(MLP, "listkey.yaml", config=config)
