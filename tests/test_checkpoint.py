"""The tensor-bundle reader on checkpoints TensorFlow wrote, and on damaged copies of them."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from aotc.errors import InputFileError
from aotc.frontend.checkpoint import FOOTER_BYTES, Checkpoint, Table, crc32c, masked_crc32c

SAVED = Path(__file__).parent / "data" / "savedmodel"


def _copy(tmp_path: Path, model: str = "module") -> Path:
    shutil.copytree(SAVED / model / "variables", tmp_path / "variables")
    return tmp_path / "variables" / "variables"


def test_crc32c_known_values() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert crc32c(b"") == 0
    crc = crc32c(b"abc")
    assert masked_crc32c(b"abc") == ((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def test_reads_every_key_and_the_header() -> None:
    ckpt = Checkpoint(SAVED / "keras" / "variables" / "variables")
    assert ckpt.header.num_shards == 1
    # Keys share long prefixes, so this exercises the table's prefix compression.
    assert "_all_variables/0/.ATTRIBUTES/VARIABLE_VALUE" in ckpt.entries
    assert "variables/3/.ATTRIBUTES/VARIABLE_VALUE" in ckpt.entries
    assert ckpt.keys() == sorted(ckpt.keys())


def test_tensor_values_have_dtype_and_shape() -> None:
    ckpt = Checkpoint(SAVED / "module" / "variables" / "variables")
    w = ckpt.read("w/.ATTRIBUTES/VARIABLE_VALUE")
    b = ckpt.read("b/.ATTRIBUTES/VARIABLE_VALUE")
    assert (w.dtype, w.shape, b.shape) == (np.float32, (4, 3), (3,))
    assert not w.flags.writeable
    # The same variable under two keys (Keras tracks it twice) reads the same bytes.
    keras = Checkpoint(SAVED / "keras" / "variables" / "variables")
    np.testing.assert_array_equal(
        keras.read("variables/0/.ATTRIBUTES/VARIABLE_VALUE"),
        keras.read("_all_variables/0/.ATTRIBUTES/VARIABLE_VALUE"),
    )


def test_unknown_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no tensor 'nope'"):
        Checkpoint(SAVED / "module" / "variables" / "variables").read("nope")


def test_corrupt_tensor_data_fails_its_checksum(tmp_path: Path) -> None:
    prefix = _copy(tmp_path)
    data = Path(f"{prefix}.data-00000-of-00001")
    ckpt = Checkpoint(prefix)
    entry = ckpt.entries["w/.ATTRIBUTES/VARIABLE_VALUE"]
    raw = bytearray(data.read_bytes())
    raw[entry.offset] ^= 0x40
    data.write_bytes(bytes(raw))
    with pytest.raises(InputFileError, match="tensor 'w/.*checksum mismatch"):
        Checkpoint(prefix).read("w/.ATTRIBUTES/VARIABLE_VALUE")


def test_corrupt_index_block_is_detected(tmp_path: Path) -> None:
    prefix = _copy(tmp_path)
    index = Path(f"{prefix}.index")
    raw = bytearray(index.read_bytes())
    raw[3] ^= 0x01  # inside the first data block
    index.write_bytes(bytes(raw))
    with pytest.raises(InputFileError, match="checksum mismatch in block"):
        Checkpoint(prefix)


def test_bad_magic_and_short_files(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="bad magic"):
        Table(b"\0" * 100, "x.index")
    with pytest.raises(InputFileError, match="too short"):
        Table(b"\0" * 10, "x.index")


def test_snappy_blocks_are_rejected_clearly(tmp_path: Path) -> None:
    prefix = _copy(tmp_path)
    index = Path(f"{prefix}.index")
    raw = bytearray(index.read_bytes())
    table = Table(bytes(raw), "x")
    handle = table.index  # mark the index block as snappy-compressed, with a valid checksum
    end = handle.offset + handle.size
    raw[end] = 1
    raw[end + 1 : end + 5] = struct.pack("<I", masked_crc32c(bytes(raw[handle.offset : end + 1])))
    index.write_bytes(bytes(raw))
    with pytest.raises(InputFileError, match="snappy"):
        Checkpoint(prefix)
    assert len(raw) > FOOTER_BYTES


def test_missing_data_shard_is_named(tmp_path: Path) -> None:
    prefix = _copy(tmp_path)
    Path(f"{prefix}.data-00000-of-00001").unlink()
    with pytest.raises(InputFileError, match=r"variables\.data-00000-of-00001: no such file"):
        Checkpoint(prefix).read("w/.ATTRIBUTES/VARIABLE_VALUE")
