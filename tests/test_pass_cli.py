"""`aotc compile --dump-to/--dump-pass-re/--dump-format/--disable-pass`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import HLO_DATA, TF_DATA

from aotc.cli import main

GRAPH = str(TF_DATA / "matmul.pb")


def run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_dump_to_writes_numbered_files(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    code, out = run(
        ["compile", GRAPH, "-o", str(tmp_path / "m"), "--dump-to", str(dump),
         "--dump-format", "text,html", "--dump-pass-re", "^simplify$"]
    )  # fmt: skip
    assert code == 0, out
    names = sorted(p.name for p in dump.iterdir())
    assert names[:2] == ["00-input.html", "00-input.txt"]
    assert all("-after-simplify." in n for n in names[2:])
    assert (dump / "00-input.txt").read_text().startswith("HloModule")


def test_unknown_pass_name_is_a_usage_error_listing_the_names(tmp_path: Path) -> None:
    code, out = run(["compile", GRAPH, "-o", str(tmp_path / "m"), "--disable-pass", "nope"])
    assert code == 2
    assert "unknown pass 'nope'" in out and "simplify" in out and "constant-folding" in out


def test_bad_dump_format_is_a_usage_error(tmp_path: Path) -> None:
    code, out = run(["compile", GRAPH, "--dump-to", str(tmp_path), "--dump-format", "text,svg"])
    assert code == 2 and "unknown dump format 'svg'" in out


def test_disable_pass_still_compiles(tmp_path: Path) -> None:
    args = ["compile", GRAPH, "-o", str(tmp_path / "m"), "--no-cache"]
    code, out = run([*args, "--disable-pass", "simplification", "--disable-pass", "cse"])
    assert code == 0, out
    assert (tmp_path / "m.o").exists()


@pytest.mark.parametrize("option", [["--dump-format", "html"], ["--dump-pass-re", "cse"]])
def test_dump_options_without_dump_to_are_refused(tmp_path: Path, option: list[str]) -> None:
    code, out = run(["compile", GRAPH, "-o", str(tmp_path / "m"), *option])
    assert code == 2 and "apply only with --dump-to" in out
    assert not (tmp_path / "m.o").exists()


@pytest.mark.parametrize("lowering", ["bitcast-width-lowering", "rng-bit-generator-expander"])
def test_disabling_a_lowering_codegen_needs_names_it(tmp_path: Path, lowering: str) -> None:
    # JAX's rbg key is a u64[2] state bitcast from u32[4], fed to rng-bit-generator
    graph = str(HLO_DATA / "jax_rng_rbg.hlo")
    code, out = run(["compile", graph, "-o", str(tmp_path / "m"), "--disable-pass", lowering])
    assert code == 1, out
    assert f"made by the {lowering} pass; do not disable it" in out
    assert not list(tmp_path.iterdir())
