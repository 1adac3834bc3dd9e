"""Read TensorFlow V2 checkpoints (tensor bundles) without TensorFlow.

A checkpoint ``prefix`` (a SavedModel's ``variables/variables``) is ``prefix.index``, a sorted
string table in LevelDB's format (TensorFlow's ``core/lib/io/table``), plus data shards
``prefix.data-00000-of-0000N``. The table maps each tensor's checkpoint key to a
``BundleEntryProto`` saying which shard holds the tensor and where; the empty key holds the
``BundleHeaderProto``.

Table layout: data blocks, a metaindex block, an index block (last key of each data block ->
its handle), and a 48-byte footer (two block handles, padding, magic number). Each block ends
in restart points, and is followed by a 1-byte compression type and a masked CRC-32C. Keys are
prefix-compressed against the previous key. TensorFlow writes uncompressed blocks; a
snappy-compressed table is rejected with a clear error.

CRC-32C is checked in pure Python for the table's blocks and for tensors up to
``CRC_CHECK_LIMIT`` bytes; larger tensors are not checked (the pure-Python CRC runs at a few
MB/s, which would dominate compile time for big models).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from google.protobuf import message

from aotc.errors import InputFileError, UnsupportedError
from aotc.frontend.tensor import numpy_dtype, shape_from_proto
from aotc.proto import aotc_tf_pb2 as pb

TABLE_MAGIC = 0xDB4775248B80FB57
FOOTER_BYTES = 48
BLOCK_TRAILER_BYTES = 5  # compression type + masked crc
CRC_CHECK_LIMIT = 1 << 20
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_NO_COMPRESSION, _SNAPPY = 0, 1
_CRC_MASK_DELTA = 0xA282EAD8


# ---- CRC-32C (Castagnoli), as TensorFlow's crc32c::Value / Mask ------------------------------


@cache
def _crc_table() -> tuple[int, ...]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


def crc32c(data: bytes) -> int:
    """The CRC-32C of ``data``."""
    table, crc = _crc_table(), 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TensorFlow stores CRCs rotated and offset, so a CRC of data holding CRCs stays useful."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & 0xFFFFFFFF


# ---- the sorted string table -----------------------------------------------------------------


@dataclass(frozen=True)
class BlockHandle:
    """Where a block lives in the table file (its trailer follows it)."""

    offset: int
    size: int


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _handle(data: bytes, pos: int = 0) -> tuple[BlockHandle, int]:
    offset, pos = _varint(data, pos)
    size, pos = _varint(data, pos)
    return BlockHandle(offset, size), pos


class Table:
    """An immutable sorted table (LevelDB format) read whole into memory."""

    def __init__(self, data: bytes, path: str) -> None:
        self.data, self.path = data, path
        if len(data) < FOOTER_BYTES:
            raise self._error("too short for a table footer")
        footer = data[-FOOTER_BYTES:]
        (magic,) = struct.unpack("<Q", footer[-8:])
        if magic != TABLE_MAGIC:
            raise self._error("bad magic number; not a TensorFlow checkpoint index")
        try:
            _, pos = _handle(footer)  # the metaindex: filters, which TensorFlow never writes
            self.index, _ = _handle(footer, pos)
        except ValueError as e:
            raise self._error(f"bad footer ({e})") from None

    def _error(self, problem: str) -> InputFileError:
        return InputFileError(f"{self.path}: {problem}")

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) pair, in key order."""
        for _, handle_bytes in self._block_entries(self.index):
            handle, _ = _handle(handle_bytes)
            yield from self._block_entries(handle)

    def _block_entries(self, handle: BlockHandle) -> Iterator[tuple[bytes, bytes]]:
        block = self._block(handle)
        try:
            yield from _entries(block)
        except (ValueError, IndexError, struct.error) as e:
            raise self._error(f"corrupt block at offset {handle.offset} ({e})") from None

    def _block(self, handle: BlockHandle) -> bytes:
        end = handle.offset + handle.size
        if end + BLOCK_TRAILER_BYTES > len(self.data):
            raise self._error(f"block at offset {handle.offset} runs past the end of the file")
        contents = self.data[handle.offset : end + 1]  # the block and its compression type
        kind = contents[-1]
        (stored,) = struct.unpack("<I", self.data[end + 1 : end + BLOCK_TRAILER_BYTES])
        if masked_crc32c(contents) != stored:
            raise self._error(f"checksum mismatch in block at offset {handle.offset}")
        if kind == _SNAPPY:
            raise self._error(
                "snappy-compressed checkpoint tables are not supported (TensorFlow writes "
                "uncompressed ones); re-save the model with TensorFlow"
            )
        if kind != _NO_COMPRESSION:
            raise self._error(f"unknown block compression type {kind}")
        return contents[:-1]


def _entries(block: bytes) -> Iterator[tuple[bytes, bytes]]:
    # The restart array (uint32s, then their count) ends the block; entries come before it.
    (restarts,) = struct.unpack("<I", block[-4:])
    limit = len(block) - 4 - 4 * restarts
    if limit < 0:
        raise ValueError("restart array larger than the block")
    key, pos = b"", 0
    while pos < limit:
        shared, pos = _varint(block, pos)
        unshared, pos = _varint(block, pos)
        value_len, pos = _varint(block, pos)
        if shared > len(key) or pos + unshared + value_len > limit:
            raise ValueError("entry runs past the block")
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + value_len]
        pos += value_len


# ---- the tensor bundle -----------------------------------------------------------------------


class Checkpoint:
    """A V2 checkpoint: tensor names -> ``BundleEntryProto``, read lazily from the shards."""

    def __init__(self, prefix: str | Path) -> None:
        self.prefix = Path(prefix)
        index_path = Path(f"{self.prefix}.index")
        table = Table(_read(index_path), str(index_path))
        self.header = pb.BundleHeaderProto()
        self.entries: dict[str, pb.BundleEntryProto] = {}
        for key, value in table.items():
            self._add(key, value, str(index_path))
        if self.header.endianness != pb.BundleHeaderProto.LITTLE:
            raise UnsupportedError(f"{index_path}: big-endian checkpoints are not supported")
        self._shards: dict[int, bytes] = {}

    def _add(self, key: bytes, value: bytes, path: str) -> None:
        target: message.Message = self.header if not key else pb.BundleEntryProto()
        try:
            target.ParseFromString(value)
        except message.DecodeError:
            raise InputFileError(f"{path}: entry {key!r} is not a BundleEntryProto") from None
        if key:
            self.entries[key.decode("utf-8", "replace")] = target  # type: ignore[assignment]

    def keys(self) -> list[str]:
        """Every tensor name in the checkpoint, sorted."""
        return sorted(self.entries)

    def read(self, key: str) -> np.ndarray:
        """The tensor stored under ``key``, as a read-only array."""
        entry = self._entry(key)
        where = f"{self.prefix}: tensor '{key}'"
        dtype = numpy_dtype(entry.dtype, where)
        shape = shape_from_proto(entry.shape, where) or ()
        data = self._bytes(entry, where)
        if len(data) < CRC_CHECK_LIMIT and masked_crc32c(data) != entry.crc32c:
            raise InputFileError(f"{where}: checksum mismatch; the checkpoint is corrupt")
        return _decode(data, dtype, shape, where)

    def read_string(self, key: str) -> bytes:
        """The scalar string stored under ``key`` (TensorFlow's bundle layout for strings:
        each element's varint64 length, a masked CRC-32C of the lengths, then the bytes; the
        entry's CRC covers the lengths as little-endian uint32, that checksum and the bytes)."""
        entry = self._entry(key)
        where = f"{self.prefix}: tensor '{key}'"
        if entry.dtype != pb.DT_STRING or shape_from_proto(entry.shape, where):
            raise InputFileError(f"{where} is not a scalar string")
        data = self._bytes(entry, where)
        length, pos = _varint(data, 0)
        if pos + 4 + length != len(data):
            raise InputFileError(f"{where}: a string of {length} bytes in {len(data)}")
        checked = struct.pack("<I", length) + data[pos:]
        if len(data) < CRC_CHECK_LIMIT and masked_crc32c(checked) != entry.crc32c:
            raise InputFileError(f"{where}: checksum mismatch; the checkpoint is corrupt")
        return data[pos + 4 :]

    def object_graph(self) -> pb.TrackableObjectGraph | None:
        """The objects the checkpoint was saved from (TF2's object-based checkpoints), whose
        variables' attributes name their checkpoint keys; None for a name-based one."""
        if OBJECT_GRAPH_KEY not in self.entries:
            return None
        graph = pb.TrackableObjectGraph()
        try:
            graph.ParseFromString(self.read_string(OBJECT_GRAPH_KEY))
        except message.DecodeError:
            raise InputFileError(f"{self.prefix}: {OBJECT_GRAPH_KEY} does not parse") from None
        return graph

    def _entry(self, key: str) -> pb.BundleEntryProto:
        if key not in self.entries:
            raise InputFileError(f"{self.prefix}: no tensor '{key}' in the checkpoint")
        entry = self.entries[key]
        if entry.slices:
            raise UnsupportedError(
                f"{self.prefix}: tensor '{key}' is saved in slices (a partitioned variable); "
                "aotc reads only whole tensors"
            )
        return entry

    def _bytes(self, entry: pb.BundleEntryProto, where: str) -> bytes:
        shard = self._shard(entry.shard_id)
        end = entry.offset + entry.size
        if end > len(shard):
            raise InputFileError(f"{where}: data runs past the end of shard {entry.shard_id}")
        return shard[entry.offset : end]

    def _shard(self, shard_id: int) -> bytes:
        if shard_id not in self._shards:
            count = max(self.header.num_shards, 1)
            path = Path(f"{self.prefix}.data-{shard_id:05d}-of-{count:05d}")
            self._shards[shard_id] = _read(path)
        return self._shards[shard_id]


def _decode(data: bytes, dtype: np.dtype, shape: tuple[int, ...], where: str) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if len(data) != count * dtype.itemsize:
        raise InputFileError(
            f"{where}: {len(data)} bytes stored but {dtype}{list(shape)} needs "
            f"{count * dtype.itemsize}"
        )
    array = np.frombuffer(data, dtype.newbyteorder("<")).astype(dtype, copy=False)
    array = array.reshape(shape)
    array.flags.writeable = False
    return array


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file (is the checkpoint complete?)") from None
    except OSError as e:
        raise InputFileError(f"{path}: cannot read: {e.strerror or e}") from None
