"""Compile memory stays small where a few bytes of graph describe a huge value (issue 14),
and within issue 15's bound for big weights: 3x the constants' bytes plus 300 MB.

A splat Const (one value, a 1 GiB shape) and a long Range stay symbolic (``broadcast`` of a
scalar, a scaled ``iota``) instead of being materialised by the front end. A MatMul by 128 MiB
of weights holds them at most twice at once (the GraphDef's bytes beside the parsed message;
later the literal beside the object, the weights packed straight into it); before aotc placed
big constants into the object itself, LLVM's module, assembler and output held them three
more times, beside a packed copy. Each
case compiles in a fresh interpreter that reports its own peak resident memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from aotc.codegen.sizes import object_sizes
from aotc.proto import aotc_tf_pb2 as pb

PEAK_LIMIT_BYTES = 600 << 20  # the interpreter, numpy and LLVM alone take about 130 MB


def _scalar(name: str, dtype: str, field: str, value: object) -> str:
    return (
        f'node {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: {dtype} }} }} '
        f'attr {{ key: "value" value {{ tensor {{ dtype: {dtype} tensor_shape {{ }} '
        f"{field}: {value} }} }} }} }}\n"
    )


def _max(name: str, source: str, t: str) -> str:
    return (
        f'node {{ name: "{name}" op: "Max" input: "{source}" input: "axis" '
        f'attr {{ key: "T" value {{ type: {t} }} }} '
        'attr { key: "Tidx" value { type: DT_INT32 } } '
        'attr { key: "keep_dims" value { b: true } } }\n'
    )


def _feed(t: str) -> str:
    return (
        f'node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: {t} }} }} '
        'attr { key: "shape" value { shape { dim { size: 1 } } } } }\n'
    )


def _add(t: str) -> str:
    attr = f'attr {{ key: "T" value {{ type: {t} }} }}'
    return f'node {{ name: "y" op: "Add" input: "x" input: "m" {attr} }}\n'


SPLAT_GIB = (  # y = x + max(splat 0.5 of shape [2^28]): a 1 GiB constant in 40 bytes
    _feed("DT_FLOAT")
    + 'node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
    'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 268435456 } } '
    "float_val: 0.5 } } } }\n"
    + _scalar("axis", "DT_INT32", "int_val", 0)
    + _max("m", "c", "DT_FLOAT")
    + _add("DT_FLOAT")
)
LONG_RANGE = (  # y = x + max(range(3, 5e8, 7)): a 286 MB int32 range
    _feed("DT_INT32")
    + _scalar("a", "DT_INT32", "int_val", 3)
    + _scalar("l", "DT_INT32", "int_val", 500000000)
    + _scalar("d", "DT_INT32", "int_val", 7)
    + 'node { name: "r" op: "Range" input: "a" input: "l" input: "d" '
    'attr { key: "Tidx" value { type: DT_INT32 } } }\n'
    + _scalar("axis", "DT_INT32", "int_val", 0)
    + _max("m", "r", "DT_INT32")
    + _add("DT_INT32")
)

_RUN = """
import json, resource, sys
import numpy as np
import aotc
fn = aotc.compile(sys.argv[1], cache=False)
x = np.ones(1, dtype=sys.argv[2])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"y": fn(x=x).tolist(), "peak": peak}))
"""


@pytest.mark.parametrize(
    ("graph", "dtype", "expected"),
    [(SPLAT_GIB, "float32", 1.5), (LONG_RANGE, "int32", 1 + 3 + (500000000 - 3 - 1) // 7 * 7)],
    ids=["splat-const-1GiB", "range-5e8"],
)
def test_huge_values_from_tiny_graphs_compile_in_little_memory(
    tmp_path: Path, graph: str, dtype: str, expected: float
) -> None:
    path = tmp_path / "g.pbtxt"
    path.write_text(graph)
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(path), dtype], capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["y"] == [expected]
    assert report["peak"] * 1024 < PEAK_LIMIT_BYTES, f"peak RSS {report['peak'] // 1024} MB"


WEIGHTS = (4096, 8192)  # 128 MiB of float32
# The peak is VmHWM, this process's own: ru_maxrss keeps the parent's (this test's) peak
# across a vfork and exec.
_CLI = """
import json, re, sys
from aotc.cli import main
try:
    main(["compile", "--no-cache", "--target-cpu", "x86-64-v3", *sys.argv[1:]])
except SystemExit as e:
    assert not e.code, e.code
status = open("/proc/self/status").read()
print(json.dumps({"peak": int(re.search(r"VmHWM:\\s*(\\d+) kB", status).group(1))}))
"""


def _matmul_graph(weights: np.ndarray) -> bytes:
    graph = pb.GraphDef()
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = pb.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=1)
    x.attr["shape"].shape.dim.add(size=weights.shape[0])
    w = graph.node.add(name="w", op="Const")
    w.attr["dtype"].type = pb.DT_FLOAT
    tensor = w.attr["value"].tensor
    tensor.dtype = pb.DT_FLOAT
    for d in weights.shape:
        tensor.tensor_shape.dim.add(size=d)
    tensor.tensor_content = weights.tobytes()
    y = graph.node.add(name="y", op="MatMul", input=["x", "w"])
    y.attr["T"].type = pb.DT_FLOAT
    return graph.SerializeToString()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_big_weights_compile_within_three_times_their_bytes(tmp_path: Path) -> None:
    weights = np.random.default_rng(3).standard_normal(WEIGHTS, dtype=np.float32)
    (tmp_path / "g.pb").write_bytes(_matmul_graph(weights))
    del weights
    feed = f"{{name: x, shape: [1, {WEIGHTS[0]}], dtype: float32}}"
    (tmp_path / "g.yaml").write_text(f"feeds:\n  - {feed}\nfetches:\n  - {{name: y}}\n")
    args = [str(tmp_path / "g.pb"), "-o", str(tmp_path / "g")]
    out = subprocess.run([sys.executable, "-c", _CLI, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    peak = json.loads(out.stdout.strip().splitlines()[-1])["peak"] * 1024
    constant_bytes = 4 * WEIGHTS[0] * WEIGHTS[1]
    assert object_sizes((tmp_path / "g.o").read_bytes()).rodata >= constant_bytes
    assert peak < 3 * constant_bytes + 300e6, f"peak RSS {peak / 1e6:.0f} MB"
