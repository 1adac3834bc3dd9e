"""``--cpp-class``: the header-only C++ class shaped like tfcompile's (issue 12, item 6).

A program written against tfcompile's class API (tests/data/tfcompile/cpp_class_test.cc, as
tfcompile's own tests use it) is built against the classes of tfcompile's test graphs with
``-std=c++11`` and ``-std=c++17``, ``-Wall -Wextra -Werror``, linked with the objects and run:
its checks are TensorFlow's numbers, the variable graphs called several times. The header also
has a golden file (``AOTC_UPDATE_GOLDEN=1`` rewrites it) and compiles alone with ``-pedantic``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import aotc
from aotc.cli import main
from aotc.codegen import TensorInfo
from aotc.codegen.cpp_class import render_cpp_class
from aotc.driver import compile_graph
from aotc.errors import ConfigError, UsageError
from aotc.frontend.options import SourceOptions
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.outputs import Outputs, write_outputs

DATA = Path(__file__).parent / "data" / "tfcompile"
GOLDEN = Path(__file__).parent / "golden" / "demo_model.hpp"
CXX = os.environ.get("CXX", "g++")
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
needs_cxx = pytest.mark.skipif(shutil.which(CXX) is None, reason=f"no C++ compiler ({CXX})")

# tfcompile's own test targets (tensorflow/compiler/aot/tests/BUILD) and their cpp_class.
CLASSES = {
    "test_graph_tfadd": "AddComp",
    "test_graph_tfcond": "CondComp",
    "test_graph_tfgather": "GatherComp",
    "test_graph_tfmatmul": "foo::bar::MatMulComp",
    "test_graph_tfmatmulandadd": "::foo::bar::MatMulAndAddComp",
    "test_graph_tfvariable": "VariableComp",
    "test_graph_tfvariable_readonly": "VariableReadonlyComp",
    "test_graph_tfvariable_sequential_updates": "VariableSequentialUpdatesComp",
}

F32 = PrimitiveType.F32
DEMO_ARGS = [
    TensorInfo("x", Shape(F32, (2, 3))),
    TensorInfo("split:1", Shape(PrimitiveType.S32, ())),
    TensorInfo("data", Shape(PrimitiveType.U8, (0, 2))),
    TensorInfo("step", Shape(PrimitiveType.F16, (1,)), variable=True, updated=True),
    TensorInfo("table", Shape(PrimitiveType.F64, (2, 2)), variable=True),
]
DEMO_RESULTS = [
    TensorInfo("y", Shape(F32, (2, 2))),
    TensorInfo('odd "name" */', Shape(PrimitiveType.PRED, (4,))),
]


def demo_header() -> str:
    return render_cpp_class("demo::nested::Demo", "demo_model", DEMO_ARGS, DEMO_RESULTS, 128)


def test_header_matches_golden_file() -> None:
    text = demo_header()
    if os.environ.get("AOTC_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "header changed; rerun with AOTC_UPDATE_GOLDEN=1"


@needs_cxx
@pytest.mark.parametrize("std", ["c++11", "c++14", "c++17", "c++20"])
def test_header_compiles_alone_with_pedantic_warnings(std: str, tmp_path: Path) -> None:
    header = tmp_path / "demo_model.hpp"
    header.write_text(demo_header())
    cmd = [CXX, f"-std={std}", *WARNINGS, "-pedantic", "-fsyntax-only", "-x", "c++", header]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_named_accessors_only_for_usable_names() -> None:
    text = demo_header()
    assert "arg_x_data()" in text and "var_step_data()" in text and "var_table(" in text
    assert "arg_data_data" not in text  # 'data' would hide the base's arg_data(i)
    assert "No named accessors" in text and "'split:1', argument 2 'data'" in text
    assert "void set_var_table_data(const double* data)" in text  # read-only: const
    assert "uint16_t& var_step()" in text  # f16 as its bits; shape [1] takes no index
    assert "arg2(" not in text  # no element accessor without elements


@pytest.fixture(scope="module")
def tfcompile_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tfcompile's test graphs compiled with their configs and classes: .o, .h and .hpp."""
    out = tmp_path_factory.mktemp("classes")
    for name, cpp_class in CLASSES.items():
        graph, config = DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt"
        result = compile_graph(graph, config, options=SourceOptions(cpp_class=cpp_class))
        write_outputs(result.model, Outputs(out / name), graph, config)
    return out


@needs_cxx
@pytest.mark.parametrize("std", ["c++11", "c++17"])
def test_tfcompile_style_program_gives_tensorflows_numbers(
    std: str, tfcompile_classes: Path, tmp_path: Path
) -> None:
    sources = [DATA / "cpp_class_test.cc", DATA / "cpp_class_test_second.cc"]
    objects = [tfcompile_classes / f"{name}.o" for name in CLASSES]
    program = tmp_path / "cpp_class_test"
    cmd = [CXX, f"-std={std}", "-O1", *WARNINGS, "-I", tfcompile_classes, *sources, *objects]
    build = subprocess.run([*cmd, "-o", program], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    done = subprocess.run([program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all checks passed" in done.stdout


def run_cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["compile", *map(str, args), "--no-cache"])
    return result.exit_code, result.output


def test_cli_writes_the_class_header_next_to_the_c_header(tmp_path: Path) -> None:
    name = "test_graph_tfmatmul"
    graph, config = DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt"
    prefix, depfile = tmp_path / "mm", tmp_path / "mm.d"
    code, output = run_cli(graph, "-c", config, "-o", prefix, "--cpp-class", "foo::MatMul")
    assert code == 0, output
    assert output.strip() == f"wrote {prefix}.o, {prefix}.h and {prefix}.hpp"
    text = (tmp_path / "mm.hpp").read_text()
    assert "namespace foo {\n" in text and "class MatMul final" in text
    assert f'extern "C" int {name}_run_buffers(' in text
    code, output = run_cli(graph, "-c", config, "-o", prefix, "--depfile", depfile)
    assert code == 0 and not (tmp_path / "mm.hpp").exists()  # a stale class header goes
    code, _ = run_cli(graph, "-c", config, "-o", prefix, "--cpp-class", "A", "--depfile", depfile)
    assert depfile.read_text().startswith(f"{prefix}.o {prefix}.h {prefix}.hpp:")


@pytest.mark.parametrize(
    ("cpp_class", "problem"),
    [
        ("foo::", "'' is not a C++ identifier (expected ns::Class)"),
        ("foo::2x", "'2x' is not a C++ identifier (expected ns::Class)"),
        ("ns::class", "'class' is a C++ keyword"),
        ("__ns::A", "'__ns' is reserved for the C++ implementation"),
    ],
)
def test_a_bad_class_name_is_one_line_and_writes_nothing(
    cpp_class: str, problem: str, tmp_path: Path
) -> None:
    graph = DATA / "test_graph_tfadd.pb"
    config = DATA / "test_graph_tfadd.config.pbtxt"
    code, output = run_cli(graph, "-c", config, "-o", tmp_path / "m", "--cpp-class", cpp_class)
    assert code == 2
    assert output == f"aotc: error: --cpp-class {cpp_class!r}: {problem}\n"
    assert list(tmp_path.iterdir()) == []


def test_cpp_class_is_for_one_graph_only(tmp_path: Path) -> None:
    graphs = [DATA / "test_graph_tfadd.pb", DATA / "test_graph_tfmatmul.pb"]
    code, output = run_cli(*graphs, "-d", tmp_path, "--cpp-class", "A")
    assert code == 2 and "--cpp-class: for one GRAPH only (2 were given)" in output


def yaml_config(tmp_path: Path, cpp_class: str) -> Path:
    config = tmp_path / "add.yaml"
    config.write_text(
        "feeds: [{name: x_const, shape: [1]}, {name: y_const, shape: [1]}]\n"
        f"fetches: [x_y_sum]\ncpp_class: {cpp_class}\n"
    )
    return config


def test_yaml_config_names_the_class_and_the_option_overrides_it(tmp_path: Path) -> None:
    graph, config = DATA / "test_graph_tfadd.pb", yaml_config(tmp_path, "demo::Add")
    model = compile_graph(graph, config).model
    assert "namespace demo {" in model.cpp_header and "class Add final" in model.cpp_header
    assert "arg_x_const_data()" in model.cpp_header  # the YAML feed names
    model = compile_graph(graph, config, options=SourceOptions(cpp_class="Other")).model
    assert "class Other final" in model.cpp_header and "namespace demo" not in model.cpp_header
    assert compile_graph(graph, DATA / "test_graph_tfadd.config.pbtxt").model.cpp_header == ""


def test_a_bad_class_name_in_the_yaml_names_the_key(tmp_path: Path) -> None:
    config = yaml_config(tmp_path, "'a::b c'")
    with pytest.raises(ConfigError, match=r"add.yaml: cpp_class: 'a::b c': 'b c' is not a C\+\+"):
        compile_graph(DATA / "test_graph_tfadd.pb", config)


def test_python_api_takes_cpp_class(tmp_path: Path) -> None:
    graph = DATA / "test_graph_tfadd.pb"
    fn = aotc.compile(graph, config=DATA / "test_graph_tfadd.config.pbtxt", cpp_class="ns::Add")
    assert "class Add final" in fn.cpp_header
    assert fn(x_const=[1], y_const=[2]).tolist() == [3]
    plain = aotc.compile(graph, config=DATA / "test_graph_tfadd.config.pbtxt")
    assert plain.cpp_header == ""  # another cache entry: the class is part of the key
    with pytest.raises(UsageError, match=r"cpp_class='1': '1' is not a C\+\+ identifier"):
        aotc.compile(graph, config=DATA / "test_graph_tfadd.config.pbtxt", cpp_class="1")


def test_a_cache_hit_writes_the_class_header_too(tmp_path: Path) -> None:
    name = "test_graph_tfmatmulandadd"
    graph, config = DATA / f"{name}.pb", DATA / f"{name}.config.pbtxt"
    args = ["compile", graph, "-c", config, "--cache-dir", tmp_path / "cache", "-q"]
    for prefix in (tmp_path / "first", tmp_path / "second"):  # a compile, then a hit
        result = CliRunner().invoke(main, [*map(str, args), "-o", str(prefix), "--cpp-class", "A"])
        assert result.exit_code == 0, result.output
    first, second = (tmp_path / f"{p}.hpp" for p in ("first", "second"))
    assert second.read_text() == first.read_text() and "result_x_y_sum_data()" in first.read_text()
    other = [*map(str, args), "-o", str(tmp_path / "third"), "--cpp-class", "B"]
    assert CliRunner().invoke(main, other).exit_code == 0
    assert "class B final" in (tmp_path / "third.hpp").read_text()  # not the cached class A
