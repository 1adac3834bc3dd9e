"""Load a TensorFlow SavedModel directory as a frozen, flat graph plus a signature.

``load_savedmodel(dir)`` reads ``saved_model.pb`` (or ``.pbtxt``), picks the MetaGraphDef by
tags and the SignatureDef by key, inlines the function library (``inline.py``), replaces every
variable read the signature needs with a ``Const`` holding the checkpoint's value
(``checkpoint.py``), and turns the signature into aotc's ``Signature``: arguments are the
signature's inputs sorted by key, results its outputs sorted by key (the order TensorFlow
flattens a signature's dicts in), each named by its key.

Variables are matched to checkpoint keys the way TensorFlow restores them: the graph's restore
function (``saver_def.restore_op_name``) runs ``RestoreV2`` with a list of checkpoint keys and
assigns output ``i`` to one variable handle. After inlining, that is a flat chain
``RestoreV2:i -> (Identity) -> AssignVariableOp(handle)`` (``Assign`` for TF1 variables).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import message, text_format

from aotc.abi import c_identifier
from aotc.errors import ConfigError, InputFileError
from aotc.frontend.freeze import freeze_reads
from aotc.frontend.graphdef import Graph
from aotc.frontend.inline import functions_of, inline_functions
from aotc.frontend.signature import FetchSpec, Signature, TensorSpec
from aotc.frontend.tensor import numpy_dtype, shape_from_proto
from aotc.proto import aotc_tf_pb2 as pb
from aotc.tensor_ref import TensorRef

DEFAULT_SIGNATURE = "serving_default"
DEFAULT_TAGS = ("serve",)
VARIABLE_PREFIX = Path("variables") / "variables"
_INIT_SIGNATURE = "__saved_model_init_op"


@dataclass
class SavedModel:
    """What aotc takes from a SavedModel: the frozen flat graph and the compiled signature."""

    graph: Graph
    signature: Signature
    meta_graph: pb.MetaGraphDef


def is_savedmodel(path: str | Path) -> bool:
    """True for a directory holding ``saved_model.pb`` or ``saved_model.pbtxt``."""
    p = Path(path)
    return p.is_dir() and any((p / f"saved_model.{s}").is_file() for s in ("pb", "pbtxt"))


def load_savedmodel(
    path: str | Path,
    signature: str | None = None,
    tags: Sequence[str] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    name: str | None = None,
) -> SavedModel:
    """Load SavedModel ``path``; ``shapes`` fixes unknown input dimensions by input key."""
    root = Path(path)
    saved = _read_savedmodel(root)
    meta = _meta_graph(saved, tuple(tags or DEFAULT_TAGS), root)
    sig_key = signature or DEFAULT_SIGNATURE
    sig_def = _signature_def(meta, sig_key, root)
    pb_path = str(root / "saved_model.pb")
    flat = inline_functions(meta.graph_def, pb_path)
    functions = functions_of(meta.graph_def)
    feeds = _feeds(sig_def, sig_key, dict(shapes or {}), root)
    fetches = _fetches(sig_def)
    graph = Graph(flat, pb_path, functions)
    freeze_reads(
        graph, flat, [f.ref for f in fetches], [f.ref for f in feeds], root / VARIABLE_PREFIX
    )
    graph = Graph(flat, pb_path, functions)  # re-index: nodes were replaced
    sig = Signature(c_identifier(name or _default_name(root)), tuple(feeds), tuple(fetches))
    return SavedModel(graph, sig, meta)


def _default_name(root: Path) -> str:
    return root.resolve().name or "model"


# ---- saved_model.pb, tags, signature ---------------------------------------------------------


def _read_savedmodel(root: Path) -> pb.SavedModel:
    if not root.is_dir():
        raise InputFileError(f"{root}: not a SavedModel directory")
    saved = pb.SavedModel()
    binary, text = root / "saved_model.pb", root / "saved_model.pbtxt"
    try:
        if binary.is_file():
            saved.ParseFromString(binary.read_bytes())
        elif text.is_file():
            text_format.Parse(text.read_text(), saved)
        else:
            raise InputFileError(f"{root}: no saved_model.pb in this directory")
    except (message.DecodeError, text_format.ParseError) as e:
        raise InputFileError(f"{root}: saved_model.pb does not parse: {e}") from None
    except OSError as e:
        raise InputFileError(f"{root}: cannot read saved_model.pb: {e.strerror or e}") from None
    if not saved.meta_graphs:
        raise InputFileError(f"{root}: saved_model.pb holds no MetaGraphDef")
    return saved


def _meta_graph(saved: pb.SavedModel, tags: tuple[str, ...], root: Path) -> pb.MetaGraphDef:
    for meta in saved.meta_graphs:
        if set(meta.meta_info_def.tags) == set(tags):
            return meta
    available = "; ".join(",".join(m.meta_info_def.tags) or "(none)" for m in saved.meta_graphs)
    raise ConfigError(
        f"{root}: no MetaGraphDef with tags '{','.join(tags)}'; it has: {available} "
        "(choose one with --tag)"
    )


def _signature_def(meta: pb.MetaGraphDef, key: str, root: Path) -> pb.SignatureDef:
    if key in meta.signature_def:
        return meta.signature_def[key]
    names = sorted(k for k in meta.signature_def if k != _INIT_SIGNATURE)
    raise ConfigError(
        f"{root}: no signature '{key}'; it has: {', '.join(names) or '(none)'} "
        "(choose one with --signature)"
    )


def _feeds(
    sig: pb.SignatureDef, sig_key: str, shapes: dict[str, Sequence[int]], root: Path
) -> list[TensorSpec]:
    unknown = sorted(set(shapes) - set(sig.inputs))
    if unknown:
        raise ConfigError(
            f"{root}: --shape names {', '.join(unknown)}, not an input of signature "
            f"'{sig_key}' (inputs: {', '.join(sorted(sig.inputs))})"
        )
    return [_feed(key, sig.inputs[key], shapes.get(key), root) for key in sorted(sig.inputs)]


def _feed(key: str, info: pb.TensorInfo, shape: Sequence[int] | None, root: Path) -> TensorSpec:
    where = f"{root}: signature input '{key}'"
    ref = _tensor_ref(info, where)
    dtype = numpy_dtype(info.dtype, where)
    declared = shape_from_proto(info.tensor_shape, where)
    return TensorSpec(key, ref, dtype, _feed_shape(key, declared, shape, where))


def _feed_shape(
    key: str, declared: tuple[int, ...] | None, given: Sequence[int] | None, where: str
) -> tuple[int, ...]:
    if given is not None:
        given = tuple(int(d) for d in given)
        fits = declared is None or (
            len(declared) == len(given)
            and all(d in (-1, g) for d, g in zip(declared, given, strict=True))
        )
        if not fits or any(g < 0 for g in given):
            raise ConfigError(
                f"{where}: --shape {key}={_dims(given)} does not fit {_show(declared)}"
            )
        return given
    if declared is None or -1 in declared:
        example = _dims(tuple(1 if d == -1 else d for d in declared or (1,)))
        raise ConfigError(
            f"{where} has shape {_show(declared)} with unknown dimensions; aotc needs static "
            f"shapes: give one with --shape {key}={example}"
        )
    return declared


def _dims(shape: Sequence[int]) -> str:
    return ",".join(str(d) for d in shape)


def _show(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "of unknown rank"
    return "[" + ", ".join("?" if d == -1 else str(d) for d in shape) + "]"


def _fetches(sig: pb.SignatureDef) -> list[FetchSpec]:
    return [
        FetchSpec(key, _tensor_ref(sig.outputs[key], f"signature output '{key}'"))
        for key in sorted(sig.outputs)
    ]


def _tensor_ref(info: pb.TensorInfo, where: str) -> TensorRef:
    if info.WhichOneof("encoding") != "name":
        raise ConfigError(f"{where} is a sparse or composite tensor; aotc compiles dense tensors")
    return TensorRef.parse(info.name)
