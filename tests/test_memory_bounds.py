"""Compile memory stays small where a few bytes of graph describe a huge value (issue 14).

A splat Const (one value, a 1 GiB shape) and a long Range stay symbolic (``broadcast`` of a
scalar, a scaled ``iota``) instead of being materialised by the front end. Each case compiles
and runs in a fresh interpreter that reports its own peak resident memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
