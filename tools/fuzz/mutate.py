"""Mutators: each turns a seed input into a case, a folder holding the files aotc reads."""

from __future__ import annotations

import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aotc.frontend.ops.registry import supported_ops
from aotc.hlo.opcodes import Opcode
from aotc.proto import aotc_tf_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
# Small fixtures of every input kind: their mutants compile in well under a second.
GRAPH_SEEDS = [
    "activations", "binary", "float64", "int64", "matmul", "plumbing", "reshape_cast", "unary",
    "conv2d", "gather", "pooling", "reductions", "slicing", "space_depth", "shape_ops",
]  # fmt: skip
HLO_SEEDS = ["jax_mlp", "jax_two", "tf_dense"]
SAVEDMODEL_SEEDS = ["module", "keras"]
KINDS = ("graphdef", "bytes", "yaml", "hlo", "savedmodel")

_DIMS = [0, 1, 2, 3, 4, 7, -1, -2, -5, 2**31, 2**40, 2**63 - 1]
_DTYPES = [v for v in pb.DataType.values() if 0 <= v < 30] + [99, 101]
_VALUES: list[Any] = [None, 0, -1, 1.5, "x", "nope", "a:1", "^a", "", [], [1, 2], [-1], {}, True]
_VALUES += [[2**40, 2**40]]


@dataclass(frozen=True)
class Case:
    """A mutated input: ``graph`` (a file or SavedModel folder) and an optional ``config``."""

    kind: str
    graph: Path
    config: Path | None


def make_case(kind: str, rng: random.Random, folder: Path) -> Case:
    """Write one mutated input of ``kind`` into the empty ``folder``."""
    return _MAKERS[kind](rng, folder)


# ---- GraphDefs ------------------------------------------------------------------------------


def _graph_seed(rng: random.Random) -> tuple[pb.GraphDef, Any]:
    name = rng.choice([s for s in GRAPH_SEEDS if (DATA / f"tf/{s}.pb").exists()])
    graph = pb.GraphDef.FromString((DATA / f"tf/{name}.pb").read_bytes())
    config_path = DATA / f"tf/{name}.yaml"
    return graph, yaml.safe_load(config_path.read_text()) if config_path.exists() else None


def _graphdef_case(rng: random.Random, folder: Path) -> Case:
    graph, config = _graph_seed(rng)
    for _ in range(rng.randint(1, 3)):
        mutate_graph(graph, rng)
    if rng.random() < 0.3:
        config = mutate_config(config, rng)
    if rng.random() < 0.5:
        path = folder / "g.pbtxt"
        path.write_text(str(graph))
    else:
        path = folder / "g.pb"
        path.write_bytes(graph.SerializeToString(deterministic=True))
    return Case("graphdef", path, _write_config(config, folder))


def _bytes_case(rng: random.Random, folder: Path) -> Case:
    graph, config = _graph_seed(rng)
    path = folder / "g.pb"
    path.write_bytes(mutate_bytes(graph.SerializeToString(deterministic=True), rng))
    return Case("bytes", path, _write_config(config, folder))


def mutate_graph(graph: pb.GraphDef, rng: random.Random) -> None:
    """One structural change to a random node (or, rarely, the whole graph)."""
    if not graph.node:
        graph.node.add(name="x", op=rng.choice(_ops()))
        return
    index = rng.randrange(len(graph.node))
    node = graph.node[index]
    what = rng.choice(["drop", "dup", "op", "attr", "del_attr", "input", "add_input", "name"])
    if what == "drop":
        del graph.node[index]
    elif what == "dup":
        copy = graph.node.add()
        copy.CopyFrom(node)
        copy.name += "_copy" if rng.random() < 0.5 else ""
    elif what == "op":
        node.op = rng.choice(_ops())
    elif what in ("attr", "del_attr"):
        key = rng.choice(sorted(node.attr) + ["T", "dtype", "shape", "value", "N", "axis"])
        if what == "del_attr":
            node.attr.pop(key, None)
        else:
            mutate_attr(node.attr[key], rng)
    elif what == "name":
        node.name = rng.choice(["", "x", "a:1", "^b", graph.node[0].name, "n/e/w"])
    else:
        _mutate_input(graph, node, rng, add=what == "add_input")


def _mutate_input(graph: pb.GraphDef, node: pb.NodeDef, rng: random.Random, add: bool) -> None:
    ref = rng.choice([n.name for n in graph.node] + ["nope"]) + rng.choice(["", ":1", ":7", ":x"])
    if add or not node.input:
        node.input.append(("^" if add and rng.random() < 0.5 else "") + ref)
    else:
        node.input[rng.randrange(len(node.input))] = ref


def mutate_attr(attr: pb.AttrValue, rng: random.Random) -> None:
    kind = rng.choice(["i", "f", "b", "type", "shape", "s", "list", "tensor"])
    if kind == "i":
        attr.i = rng.choice([0, 1, -1, 3, 2**31, -(2**63), 2**63 - 1])
    elif kind == "f":
        attr.f = rng.choice([0.0, -1.5, 1e30, float("inf"), float("nan")])
    elif kind == "b":
        attr.b = rng.random() < 0.5
    elif kind == "type":
        attr.type = rng.choice(_DTYPES)  # type: ignore[assignment]
    elif kind == "shape":
        attr.shape.CopyFrom(_shape(rng))
    elif kind == "s":
        attr.s = rng.choice([b"", b"SAME", b"VALID", b"NCHW", b"\xff\xfe", b"ab...c"])
    elif kind == "list":
        attr.list.i.extend(rng.choice([-3, 0, 1, 2, 5]) for _ in range(rng.randint(0, 4)))
    else:
        _mutate_tensor(attr.tensor, rng)


def _shape(rng: random.Random) -> pb.TensorShapeProto:
    shape = pb.TensorShapeProto()
    for _ in range(rng.randint(0, 4)):
        shape.dim.add(size=rng.choice(_DIMS))
    shape.unknown_rank = rng.random() < 0.1
    return shape


def _mutate_tensor(tensor: pb.TensorProto, rng: random.Random) -> None:
    what = rng.choice(["dtype", "shape", "content", "values", "truncate"])
    if what == "dtype":
        tensor.dtype = rng.choice(_DTYPES)  # type: ignore[assignment]
    elif what == "shape":
        tensor.tensor_shape.CopyFrom(_shape(rng))
    elif what == "content":
        tensor.tensor_content = rng.randbytes(rng.randint(0, 64))
    elif what == "values":
        tensor.float_val.extend(rng.choice([0.0, 1e38, float("inf")]) for _ in range(3))
        tensor.int_val.extend(rng.choice([0, -1, 2**31 - 1]) for _ in range(3))
    else:
        tensor.tensor_content = tensor.tensor_content[: rng.randint(0, 16)]


def mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    what = rng.choice(["truncate", "flip", "append", "insert"])
    if what == "truncate" or not raw:
        return raw[: rng.randint(0, len(raw))]
    if what == "append":
        return raw + rng.randbytes(rng.randint(1, 16))
    at = rng.randrange(len(raw))
    if what == "insert":
        return raw[:at] + rng.randbytes(rng.randint(1, 8)) + raw[at:]
    return raw[:at] + bytes([raw[at] ^ rng.randint(1, 255)]) + raw[at + 1 :]


def _ops() -> list[str]:
    return sorted(set(supported_ops()) | {"Placeholder", "Const", "NoOp", "Bogus", ""})


# ---- YAML configs ---------------------------------------------------------------------------


def _yaml_case(rng: random.Random, folder: Path) -> Case:
    graph, config = _graph_seed(rng)
    path = folder / "g.pb"
    path.write_bytes(graph.SerializeToString(deterministic=True))
    config_path = folder / "g.yaml"
    if rng.random() < 0.7:
        config_path.write_text(yaml.safe_dump(mutate_config(config, rng)))
    else:
        config_path.write_text(_mutate_text(yaml.safe_dump(config or {}), rng, _YAML_JUNK))
    return Case("yaml", path, config_path)


_YAML_JUNK = ["[", "]", "{", ": ", "- ", "\t", "\x01", "&a ", "*a", "!!python/object ", "'", "#"]


def mutate_config(config: Any, rng: random.Random) -> Any:
    config = dict(config or {})
    what = rng.choice(["drop", "set", "feed", "dup", "swap", "unknown", "whole"])
    if what == "whole":
        return rng.choice(_VALUES)
    key = rng.choice(["name", "feeds", "fetches", "target"])
    if what == "drop":
        config.pop(key, None)
    elif what == "set":
        config[key] = rng.choice(_VALUES)
    elif what == "unknown":
        config["bogus"] = 1
    elif what == "dup" and config.get("feeds"):
        config["feeds"] = [*config["feeds"], config["feeds"][0]]
    elif what == "swap" and config.get("feeds") and config.get("fetches"):
        config["fetches"] = [*config["fetches"], config["feeds"][0]]
    elif config.get("feeds"):
        feed = dict(config["feeds"][0]) if isinstance(config["feeds"][0], dict) else {}
        value = rng.choice([*_VALUES, [rng.choice(_DIMS) for _ in range(3)], "int8", "bool"])
        feed[rng.choice(["name", "shape", "dtype", "bogus"])] = value
        config["feeds"] = [feed, *config["feeds"][1:]]
    return config


def _write_config(config: Any, folder: Path) -> Path | None:
    if config is None:
        return None
    path = folder / "g.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


# ---- HLO text -------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
_SPELLINGS = [op.value for op in Opcode]


def _hlo_case(rng: random.Random, folder: Path) -> Case:
    text = (DATA / f"hlo/{rng.choice(HLO_SEEDS)}.hlo").read_text()
    for _ in range(rng.randint(1, 3)):
        text = mutate_hlo(text, rng)
    path = folder / "m.hlo"
    path.write_text(text)
    return Case("hlo", path, None)


def mutate_hlo(text: str, rng: random.Random) -> str:
    """A token-level change: a number, an opcode, a dtype, an operand, or a whole line."""
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    what = rng.choice(["number", "opcode", "dtype", "operand", "drop", "dup", "junk"])
    line = lines[i]
    if what == "number" and _NUMBER.search(line):
        spans = list(_NUMBER.finditer(line))
        m = rng.choice(spans)
        line = line[: m.start()] + str(rng.choice([0, 1, -1, 3, 2**31, 10**12])) + line[m.end() :]
    elif what == "opcode":
        line = re.sub(r"\b[a-z][a-z-]+\(", rng.choice(_SPELLINGS) + "(", line, count=1)
    elif what == "dtype":
        line = re.sub(
            r"\b(f32|s32|pred|f16|s64|u8)\[",
            rng.choice(["f64[", "s8[", "pred[", "bf16["]),
            line,
            count=1,
        )
    elif what == "operand":
        names = re.findall(r"%?[\w.]+(?=[,)])", line)
        if names:
            line = line.replace(rng.choice(names), rng.choice(names + ["nope"]), 1)
    elif what == "drop":
        del lines[i]
        return "\n".join(lines)
    elif what == "dup":
        lines.insert(i, line)
    else:
        line = _mutate_text(line, rng, ["(", ")", "{", "}", ",", "=", "ROOT ", "[", "]", "-"])
    lines[i] = line
    return "\n".join(lines)


def _mutate_text(text: str, rng: random.Random, junk: list[str]) -> str:
    at = rng.randint(0, len(text))
    piece = rng.choice(junk) * rng.choice([1, 1, 2, 100, 3000])
    return text[:at] + piece + text[at + rng.choice([0, 0, 1, 5]) :]


# ---- SavedModels ----------------------------------------------------------------------------


def _savedmodel_case(rng: random.Random, folder: Path) -> Case:
    target = folder / "saved"
    shutil.copytree(DATA / f"savedmodel/{rng.choice(SAVEDMODEL_SEEDS)}", target)
    what = rng.choice(["graph", "bytes", "variables"])
    model_pb = target / "saved_model.pb"
    if what == "graph":
        saved = pb.SavedModel.FromString(model_pb.read_bytes())
        graph = saved.meta_graphs[0].graph_def
        for _ in range(rng.randint(1, 3)):
            mutate_graph(graph, rng)
        model_pb.write_bytes(saved.SerializeToString(deterministic=True))
    elif what == "bytes":
        model_pb.write_bytes(mutate_bytes(model_pb.read_bytes(), rng))
    else:
        files = sorted(p for p in (target / "variables").iterdir() if p.is_file())
        victim = rng.choice(files)
        victim.write_bytes(mutate_bytes(victim.read_bytes(), rng))
    return Case("savedmodel", target, None)


_MAKERS = {
    "graphdef": _graphdef_case,
    "bytes": _bytes_case,
    "yaml": _yaml_case,
    "hlo": _hlo_case,
    "savedmodel": _savedmodel_case,
}
