"""What an input path holds, recognized by content: the formats aotc reads, and the ones it
does not with what to do instead.

``input_format(path)`` returns ``Format.GRAPHDEF``, ``SAVEDMODEL`` or ``HLO``; for a Keras
(.h5, .keras), ONNX, TF Lite, TF.js or numpy file, a lone ``saved_model.pb``, or a folder that
is not a SavedModel, it raises an ``InputFileError`` that says what the input is and how to get
a GraphDef or SavedModel from it.
"""

from __future__ import annotations

import re
import zipfile
from enum import Enum
from pathlib import Path

from aotc.errors import InputFileError

_HEAD_BYTES = 1 << 16
HLO_SUFFIXES = frozenset({".hlo", ".hlotxt"})
_HLO_HEADER = re.compile(rb"\A(?:\s|//[^\n]*\n|/\*.*?\*/)*HloModule\b", re.S)
_SAVEDMODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
_TO_SAVEDMODEL = "; aotc reads TensorFlow GraphDefs, SavedModels and HLO text"
_KERAS_EXPORT = (
    f"{_TO_SAVEDMODEL}: in TensorFlow, export a SavedModel with "
    "`keras.models.load_model(PATH).export(DIR)` (tf.saved_model.save(model, DIR) before "
    "Keras 3) and compile DIR"
)


class Format(Enum):
    """An input format aotc reads."""

    GRAPHDEF = "a GraphDef"
    SAVEDMODEL = "a SavedModel directory"
    HLO = "HLO text"


def is_savedmodel(path: str | Path) -> bool:
    """True for a directory holding ``saved_model.pb`` or ``saved_model.pbtxt``."""
    p = Path(path)
    return p.is_dir() and any((p / name).is_file() for name in _SAVEDMODEL_FILES)


def input_format(path: str | Path) -> Format:
    """The format of ``path``; InputFileError for a missing, unreadable or foreign input."""
    p = Path(path)
    if p.is_dir():
        if is_savedmodel(p):
            return Format.SAVEDMODEL
        raise InputFileError(f"{p}: {_folder_problem(p)}")
    head = _head(p)
    foreign = _foreign_file(head, p)
    if foreign:
        raise InputFileError(f"{p}: {foreign}")
    if p.suffix.lower() in HLO_SUFFIXES or _HLO_HEADER.match(head):
        return Format.HLO
    return Format.GRAPHDEF


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(_HEAD_BYTES)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None


def _foreign_file(head: bytes, path: Path) -> str | None:
    """What a file in a format aotc does not read is, and what to do; None otherwise."""
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        if b"keras_version" in head or b"model_config" in head:
            return "is a Keras model (HDF5, .h5)" + _KERAS_EXPORT
        return f"is an HDF5 data file, not a model{_TO_SAVEDMODEL}"
    if head.startswith(b"PK\x03\x04"):
        return _zip_archive(path)
    if head[4:8] == b"TFL3":
        return (
            "is a TensorFlow Lite model (flatbuffer), which cannot be turned back into a graph"
            f"{_TO_SAVEDMODEL}: compile the SavedModel or GraphDef it was converted from"
        )
    if head.startswith(b"\x93NUMPY"):
        return "is a numpy array (.npy), not a model; arrays are inputs of `aotc run --input`"
    if head.lstrip().startswith(b"{") and b'"modelTopology"' in head:
        return (
            f"is a TensorFlow.js model (model.json){_TO_SAVEDMODEL}: compile the SavedModel "
            "it was converted from"
        )
    return _protobuf_model(head, path)


def _zip_archive(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        names = set()
    if "config.json" in names and ("metadata.json" in names or "model.weights.h5" in names):
        return "is a Keras model (.keras archive)" + _KERAS_EXPORT
    if names and all(n.endswith(".npy") for n in names):
        return "is a numpy .npz archive, not a model"
    return f"is a zip archive, not a model file{_TO_SAVEDMODEL}"


def _protobuf_model(head: bytes, path: Path) -> str | None:
    """ONNX models and SavedModel protos start with a varint field 1; a GraphDef never does
    (its field 1, ``node``, is a message)."""
    fields = _top_level_fields(head)
    if not fields or fields[0] != (1, 0):
        return None
    if set(fields[1:]) == {(2, 2)}:  # SavedModel: schema version, then MetaGraphDefs
        return (
            "is the saved_model.pb of a SavedModel; compile the folder that holds it "
            f"({path.resolve().parent}) with its variables/"
        )
    if (7, 2) in fields:  # ModelProto: ir_version, ..., graph
        return (
            f"is an ONNX model{_TO_SAVEDMODEL}: convert it to a SavedModel with onnx2tf "
            "(`onnx2tf -i PATH -o DIR`) and compile DIR"
        )
    return None


def _top_level_fields(data: bytes, limit: int = 16) -> list[tuple[int, int]]:
    """(field number, wire type) of the first protobuf fields in ``data``, up to the first
    that runs past its end or is no protobuf field."""
    fields: list[tuple[int, int]] = []
    pos = 0
    while pos < len(data) and len(fields) < limit:
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if tag < 0 or number == 0 or wire not in (0, 1, 2, 5):
            return fields
        fields.append((number, wire))
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            pos += max(length, 0)
        else:
            pos += 8 if wire == 1 else 4
    return fields


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; -1 when it is cut off or too long."""
    value = 0
    for shift in range(0, 64, 7):
        if pos >= len(data):
            return -1, pos
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    return -1, pos


def _folder_problem(folder: Path) -> str:
    """Why a folder without saved_model.pb is no input, and what to pass instead."""
    entries = sorted(folder.iterdir()) if _listable(folder) else []
    names = {p.name for p in entries}
    versions = [p.name for p in entries if is_savedmodel(p)]
    if versions:
        return (
            f"holds a SavedModel in {versions[-1]}/ (a TensorFlow Serving version folder); "
            f"compile {folder / versions[-1]}"
        )
    if "model.json" in names:
        return f"is a TensorFlow.js model{_TO_SAVEDMODEL}: compile the SavedModel it came from"
    if "checkpoint" in names or any(n.endswith(".index") for n in names):
        return (
            "holds a TensorFlow checkpoint (variable values without a graph); write a "
            "SavedModel with tf.saved_model.save(model, DIR) and compile DIR"
        )
    if "variables" in names:
        return "has variables/ but no saved_model.pb: an incomplete SavedModel"
    graphs = [n for n in sorted(names) if Path(n).suffix in (".pb", ".pbtxt", ".hlo")]
    if graphs:
        return f"is a directory; compile one of the files in it: {', '.join(graphs[:5])}"
    return (
        "is a directory without saved_model.pb; expected a GraphDef file, a SavedModel "
        "directory or HLO text"
    )


def _listable(folder: Path) -> bool:
    try:
        next(iter(folder.iterdir()), None)
        return True
    except OSError:
        return False
