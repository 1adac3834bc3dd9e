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
Handles that chain does not reach are found as TF2's loader finds them, through the object
graph (``object_graph.py``): Keras 3 models' variables are restored only that way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from google.protobuf import message, text_format

from aotc.abi import c_identifier
from aotc.errors import ConfigError, InputFileError
from aotc.frontend.formats import is_savedmodel as is_savedmodel
from aotc.frontend.freeze import freeze_reads
from aotc.frontend.functionalize import has_v1_control_flow
from aotc.frontend.graphdef import Graph, functionalized, pruned
from aotc.frontend.inline import functions_of, inline_functions
from aotc.frontend.object_graph import captured_variable_keys
from aotc.frontend.options import SourceOptions
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


def load_savedmodel(
    path: str | Path, options: SourceOptions | None = None, name: str | None = None
) -> SavedModel:
    """Load SavedModel ``path`` with the signature and tags of ``options``; its ``shapes`` fix
    unknown input dimensions by input key."""
    options = options or SourceOptions()
    root = Path(path)
    saved = read_savedmodel(root)
    meta = meta_graph(saved, tuple(options.tags or DEFAULT_TAGS), root, options)
    sig_key = options.signature or DEFAULT_SIGNATURE
    sig_def = signature_def(meta, sig_key, root, options)
    pb_path = str(root / "saved_model.pb")
    flat = inline_functions(meta.graph_def, pb_path)
    functions = functions_of(meta.graph_def)
    feeds = _feeds(sig_def, sig_key, options, root)
    fetches = _fetches(sig_def)
    graph = Graph(flat, pb_path, functions)
    freeze_reads(
        graph, flat, [f.ref for f in fetches], [f.ref for f in feeds], root / VARIABLE_PREFIX,
        object_keys=partial(captured_variable_keys, meta),
    )  # fmt: skip
    graph = Graph(flat, pb_path, functions)  # re-index: nodes were replaced
    if has_v1_control_flow(flat):  # after freezing, the frozen values enter the loops
        graph = functionalized(pruned(graph, [f.ref for f in fetches], [f.ref for f in feeds]))
    sig = Signature(c_identifier(name or _default_name(root)), tuple(feeds), tuple(fetches))
    return SavedModel(graph, sig, meta)


def _default_name(root: Path) -> str:
    return root.resolve().name or "model"


# ---- saved_model.pb, tags, signature ---------------------------------------------------------


def read_savedmodel(root: Path) -> pb.SavedModel:
    """``saved_model.pb`` (or ``.pbtxt``) of the SavedModel directory ``root``."""
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


def meta_graph(
    saved: pb.SavedModel, tags: tuple[str, ...], root: Path, options: SourceOptions
) -> pb.MetaGraphDef:
    """The MetaGraphDef with exactly ``tags``; the error lists the tag sets there are."""
    for meta in saved.meta_graphs:
        if set(meta.meta_info_def.tags) == set(tags):
            return meta
    available = "; ".join(",".join(m.meta_info_def.tags) or "(none)" for m in saved.meta_graphs)
    raise ConfigError(
        f"{root}: no MetaGraphDef with tags '{','.join(tags)}'; it has: {available} "
        f"(choose one with {options.spell('tags')})"
    )


def signature_def(
    meta: pb.MetaGraphDef, key: str, root: Path, options: SourceOptions
) -> pb.SignatureDef:
    """The SignatureDef ``key``; the error lists the keys there are."""
    if key in meta.signature_def:
        return meta.signature_def[key]
    names = signature_keys(meta)
    raise ConfigError(
        f"{root}: no signature '{key}'; it has: {', '.join(names) or '(none)'} "
        f"(choose one with {options.spell('signature')})"
    )


def signature_keys(meta: pb.MetaGraphDef) -> list[str]:
    """The signatures a user can choose, sorted (the init op's is TensorFlow's own)."""
    return sorted(k for k in meta.signature_def if k != _INIT_SIGNATURE)


def _feeds(
    sig: pb.SignatureDef, sig_key: str, options: SourceOptions, root: Path
) -> list[TensorSpec]:
    unknown = sorted(set(options.shapes) - set(sig.inputs))
    if unknown:
        raise ConfigError(
            f"{root}: {options.spell('shapes')} names {', '.join(unknown)}, not an input of "
            f"signature '{sig_key}' (inputs: {', '.join(sorted(sig.inputs))})"
        )
    return [_feed(key, sig.inputs[key], options, root) for key in sorted(sig.inputs)]


def _feed(key: str, info: pb.TensorInfo, options: SourceOptions, root: Path) -> TensorSpec:
    where = f"{root}: signature input '{key}'"
    ref = _tensor_ref(info, where)
    dtype = numpy_dtype(info.dtype, where)
    declared = shape_from_proto(info.tensor_shape, where)
    return TensorSpec(key, ref, dtype, _feed_shape(key, declared, options, where))


def _feed_shape(
    key: str, declared: tuple[int, ...] | None, options: SourceOptions, where: str
) -> tuple[int, ...]:
    given = options.shapes.get(key)
    if given is not None:
        given = tuple(int(d) for d in given)
        fits = declared is None or (
            len(declared) == len(given)
            and all(d in (-1, g) for d, g in zip(declared, given, strict=True))
        )
        if not fits or any(g < 0 for g in given):
            raise ConfigError(
                f"{where}: {options.spell_shape(key, given)} does not fit {_show(declared)}"
            )
        return given
    if declared is None or -1 in declared:
        example = tuple(1 if d == -1 else d for d in declared or (1,))
        raise ConfigError(
            f"{where} has shape {_show(declared)} with unknown dimensions; aotc needs static "
            f"shapes: give one with {options.spell_shape(key, example)}"
        )
    return declared


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
