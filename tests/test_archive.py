"""Static libraries written by aotc/archive.py: linked by the system cc, byte-identical to GNU
``ar rcsD`` where binutils are installed, indexed for 32- and 64-bit, either-endian ELF."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from c_harness import CC, entry_points
from codegen_testing import compile_hlo

from aotc import archive
from aotc.archive import Member, archive_bytes, defined_symbols
from aotc.codegen import TargetSpec
from aotc.errors import OutputError

SCALE = """
HloModule scale
ENTRY main {
  x = f32[4] parameter(0)
  k = f32[4] constant({%s})
  y = f32[4] multiply(x, k)
  ROOT r = (f32[4]) tuple(y)
}"""

PROGRAM = r"""
#include <stdio.h>
#include "twice.h"
#include "a_model_with_a_long_name.h"
int main(void) {
  float x[4] = {1, 2, 3, 4}, y[4], z[4];
  static _Alignas(64) unsigned char temp[64];
  if (twice_run(x, y, temp) || a_model_with_a_long_name_run(x, z, temp)) return 1;
  for (int i = 0; i < 4; i++) printf("%g %g\n", y[i], z[i]);
  return 0;
}
"""


def two_models(target: TargetSpec | None = None) -> list[tuple[Member, str]]:
    """Two objects (one with a name too long for an ar header) and their headers."""
    out = []
    for name, k in (("twice", "2, 2, 2, 2"), ("a_model_with_a_long_name", "1, 10, 100, 1000")):
        _, model = compile_hlo(SCALE % k, name, target)
        out.append((Member(f"{name}.o", model.object_bytes), model.header))
    return out


def test_two_models_in_one_library_link_and_run(tmp_path: Path) -> None:
    models = two_models()
    for member, header in models:
        (tmp_path / member.name).with_suffix(".h").write_text(header)
    (tmp_path / "libmodels.a").write_bytes(archive_bytes([m for m, _ in models]))
    (tmp_path / "main.c").write_text(PROGRAM)
    app = tmp_path / "app"
    cmd = [CC, "-I", str(tmp_path), str(tmp_path / "main.c"), str(tmp_path / "libmodels.a")]
    subprocess.run([*cmd, "-o", str(app)], check=True)
    out = subprocess.run([str(app)], check=True, capture_output=True, text=True).stdout
    got = np.array([line.split() for line in out.splitlines()], dtype=np.float32)
    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_array_equal(got[:, 0], 2 * x)
    np.testing.assert_array_equal(got[:, 1], x * [1, 10, 100, 1000])


@pytest.mark.skipif(shutil.which("ar") is None, reason="binutils' ar is not installed")
def test_byte_identical_to_gnu_ar_deterministic_mode(tmp_path: Path) -> None:
    members = [m for m, _ in two_models()]
    for m in members:
        (tmp_path / m.name).write_bytes(m.data)
    subprocess.run(["ar", "rcsD", "gnu.a", *(m.name for m in members)], cwd=tmp_path, check=True)
    assert archive_bytes(members) == (tmp_path / "gnu.a").read_bytes()


@pytest.mark.skipif(shutil.which("nm") is None, reason="binutils' nm is not installed")
def test_64_bit_index_past_4_gib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "SYM32_LIMIT", 100)  # as if the archive were 4 GiB long
    members = [m for m, _ in two_models()]
    path = tmp_path / "lib.a"
    path.write_bytes(archive_bytes(members))
    assert path.read_bytes()[8:16] == b"/SYM64/ "
    index = subprocess.run(["nm", "--print-armap", str(path)], capture_output=True, text=True)
    assert "twice_run in twice.o" in index.stdout
    assert "a_model_with_a_long_name_run_buffers in a_model_with_a_long_name.o" in index.stdout


@pytest.mark.parametrize(
    "triple",
    [
        "x86_64-unknown-linux-gnu",
        "i686-unknown-linux-gnu",  # ELF32
        "powerpc64-unknown-linux-gnu",  # big-endian ELF64
        "armv7-unknown-linux-gnueabihf",  # ELF32, with mapping symbols
    ],
)
def test_index_lists_exactly_the_exported_entry_points(triple: str) -> None:
    _, model = compile_hlo(SCALE % "1, 1, 1, 1", "m", TargetSpec(triple))
    assert set(defined_symbols("m.o", model.object_bytes)) == entry_points("m")


def test_refusals() -> None:
    with pytest.raises(OutputError, match="m.o: not an ELF object"):
        archive_bytes([Member("m.o", b"\xcf\xfa\xed\xfe" + bytes(60))])  # Mach-O
    with pytest.raises(OutputError, match="truncated"):
        archive_bytes([Member("m.o", b"\x7fELF\x02\x01\x01" + bytes(9))])
    elf = two_models()[0][0].data
    with pytest.raises(OutputError, match="same name"):
        archive_bytes([Member("m.o", elf), Member("m.o", elf)])
    with pytest.raises(OutputError, match="not a valid archive member name"):
        archive_bytes([Member("dir/m.o", elf)])
