"""One compile cache entry as bytes: JSON metadata and the raw object and headers, signed.

Nothing in an entry is ever executed or unpickled: the metadata is JSON (the full cache key,
the model's interface and target, the compile report, the sizes of the raw parts) and the
object file, the C header and the C++ class header (``--cpp-class``; empty without one) are
stored as they are written to disk. The LLVM IR is not kept (the JIT links the object itself).
Layout::

    MAGIC | metadata length (8 bytes, little-endian) | metadata JSON | object | header
          | C++ header | MAC

The MAC is an HMAC-SHA256 over everything before it, keyed by the cache folder's secret, so
a truncated, damaged or forged entry is refused before its JSON is parsed; an entry copied
to another key's name is refused because the key inside it differs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from aotc.codegen.compile import CompiledModel
from aotc.codegen.interface import TensorInfo
from aotc.codegen.target import TargetSpec
from aotc.driver import CompileResult
from aotc.errors import CodegenError
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.report import CompileReport

MAGIC = b"AOTCCACHE4\n"  # the format version: an entry of another format is never read
_LENGTH = 8
_MAC = hashlib.sha256().digest_size
_MAX_METADATA = 1 << 30
#: How many bytes of an entry ``metadata_length`` needs.
METADATA_START = len(MAGIC) + _LENGTH


class BadEntry(Exception):
    """An entry that must not be used; the message says why (for ``aotc compile -v``)."""


def encode_entry(key: str, result: CompileResult, secret: bytes) -> bytes:
    """The bytes of the entry storing ``result`` under ``key``."""
    model = result.model
    raw = {"object": model.object_bytes, "header": model.header.encode()}
    raw["cpp_header"] = model.cpp_header.encode()
    meta = {
        "key": key,
        "model": _model_json(model),
        "report": result.report.to_json(),
        "sizes": {part: len(data) for part, data in raw.items()},
    }
    text = json.dumps(meta, separators=(",", ":"), allow_nan=False).encode()
    body = b"".join([MAGIC, len(text).to_bytes(_LENGTH, "little"), text, *raw.values()])
    return body + _mac(secret, body)


def decode_entry(data: bytes, key: str, secret: bytes) -> CompileResult:
    """The result stored in ``data``; ``BadEntry`` unless it is intact, signed with
    ``secret`` and stored for ``key``."""
    body, mac = data[:-_MAC], data[-_MAC:]
    if not data.startswith(MAGIC):
        raise BadEntry("not an entry of this cache format")
    if len(data) < len(MAGIC) + _LENGTH + _MAC or not hmac.compare_digest(mac, _mac(secret, body)):
        raise BadEntry("checksum mismatch (truncated, damaged or tampered with)")
    meta, rest = _split_metadata(body)
    if meta.get("key") != key:
        raise BadEntry(f"stored for another key ({str(meta.get('key'))[:12]})")
    try:
        return _result(meta, rest)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise BadEntry(f"malformed metadata ({type(err).__name__}: {err})") from None


def read_metadata(data: bytes) -> dict[str, Any]:
    """The metadata at the start of ``data`` (an entry's first bytes; not verified: for
    listing only). ``BadEntry`` when it is not there."""
    if not data.startswith(MAGIC):
        raise BadEntry("not an entry of this cache format")
    return _split_metadata(data)[0]


def metadata_length(prefix: bytes) -> int:
    """How many bytes of an entry ``read_metadata`` needs, from its first ``METADATA_START``."""
    if not prefix.startswith(MAGIC) or len(prefix) < METADATA_START:
        raise BadEntry("not an entry of this cache format")
    size = int.from_bytes(prefix[len(MAGIC) : METADATA_START], "little")
    if size > _MAX_METADATA:
        raise BadEntry("metadata length out of range")
    return len(MAGIC) + _LENGTH + size


def _mac(secret: bytes, body: bytes) -> bytes:
    return hmac.new(secret, body, hashlib.sha256).digest()


def _split_metadata(data: bytes) -> tuple[dict[str, Any], bytes]:
    end = metadata_length(data)
    if end > len(data):
        raise BadEntry("truncated metadata")
    try:
        meta = json.loads(data[METADATA_START:end])
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadEntry(f"unreadable metadata ({err})") from None
    if not isinstance(meta, dict):
        raise BadEntry("malformed metadata (not an object)")
    return meta, data[end:]


def _result(meta: dict[str, Any], raw: bytes) -> CompileResult:
    sizes = [int(meta["sizes"][part]) for part in ("object", "header", "cpp_header")]
    if min(sizes) < 0 or sum(sizes) != len(raw):
        raise ValueError("the raw parts do not have the sizes the metadata gives")
    object_bytes, header, cpp_header = _parts(raw, sizes)
    model = _model(meta["model"], object_bytes, header.decode(), cpp_header.decode())
    return CompileResult(model, CompileReport.from_json(meta["report"]))


def _parts(raw: bytes, sizes: list[int]) -> list[bytes]:
    """``raw`` cut into consecutive parts of ``sizes`` bytes."""
    parts, start = [], 0
    for size in sizes:
        parts.append(raw[start : start + size])
        start += size
    return parts


def _model_json(model: CompiledModel) -> dict[str, Any]:
    return {
        "name": model.name,
        "temp_bytes": model.temp_bytes,
        "args": [_tensor_json(a) for a in model.args],
        "results": [_tensor_json(r) for r in model.results],
        "target": vars(model.target),
    }


def _model(
    data: dict[str, Any], object_bytes: bytes, header: str, cpp_header: str
) -> CompiledModel:
    return CompiledModel(
        name=str(data["name"]),
        object_bytes=object_bytes,
        header=header,
        cpp_header=cpp_header,
        llvm_ir=_ir_not_cached,
        temp_bytes=int(data["temp_bytes"]),
        args=[_tensor(a) for a in data["args"]],
        results=[_tensor(r) for r in data["results"]],
        target=TargetSpec(**{k: str(v) for k, v in data["target"].items()}),
    )


def _ir_not_cached() -> str:
    raise CodegenError(
        "the LLVM IR of a model from the compile cache is not kept; compile without the "
        "cache (--no-cache, or cache=False) to see it"
    )


def _tensor_json(info: TensorInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "dtype": info.shape.dtype.value,
        "dims": list(info.shape.dims),
        "variable": info.variable,
        "updated": info.updated,
    }


def _tensor(data: dict[str, Any]) -> TensorInfo:
    dims = tuple(int(d) for d in data["dims"])
    shape = Shape(PrimitiveType(data["dtype"]), dims)
    return TensorInfo(str(data["name"]), shape, bool(data["variable"]), bool(data["updated"]))
