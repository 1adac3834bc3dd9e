"""HLO text as XLA prints it (tests/data/hlo/xla/, see its README): every file parses,
verifies and round-trips; where aotc has all its opcodes it compiles and matches what XLA
computed (or, for the hand-written files, the reference evaluator); otherwise the error lists
the opcodes aotc lacks."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import aotc
from aotc.errors import HloError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Opcode
from aotc.hlo.text import parse_module, print_module

CORPUS = Path(__file__).parent / "data" / "hlo" / "xla"
FILES = sorted(CORPUS.glob("*.hlo"), key=lambda p: p.name)
_OPCODE_USE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-]*)\(", re.M)


def _lacking(text: str) -> set[str]:
    """The opcodes the file uses that aotc's table does not have."""
    known = {op.value for op in Opcode}
    return {m[1] for m in _OPCODE_USE.finditer(text)} - known


def test_the_corpus_is_large_enough() -> None:
    assert len(FILES) >= 12
    supported = sum(not _lacking(p.read_text()) for p in FILES)
    assert supported >= 10 and supported < len(FILES)  # both paths are exercised


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_corpus_file_parses_round_trips_and_compiles(path: Path) -> None:
    text = path.read_text()
    lacking = _lacking(text)
    if lacking:
        with pytest.raises(HloError, match="unsupported opcode") as e:
            parse_module(text, str(path))
        assert {m for m in re.findall(r"'([a-z0-9\-]+)' \(\d+x", str(e.value))} == lacking
        return
    module = load_hlo(path).module
    printed = print_module(module)
    assert print_module(parse_module(printed)) == printed
    args, want = _values(path, module)
    _assert_close(evaluate(module, args), want)
    _assert_close(aotc.compile(path, cache=False)(*args), want)


def _values(path: Path, module: object) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Arguments and expected results: XLA's (the .npz), else random ones and the evaluator's."""
    npz = path.with_suffix(".npz")
    if npz.exists():
        data = np.load(npz)
        args = [data[k] for k in sorted((k for k in data if k.startswith("arg")), key=_index)]
        return args, [data[k] for k in sorted((k for k in data if k.startswith("r")), key=_index)]
    rng = np.random.default_rng(5)
    params = module.entry.parameters  # type: ignore[attr-defined]
    args = [rng.standard_normal(p.array_shape.dims).astype(p.array_shape.dtype.numpy)
            for p in params]  # fmt: skip
    return args, _flat(evaluate(module, args))  # type: ignore[arg-type]


def _index(key: str) -> int:
    return int(re.sub(r"\D", "", key))


def _assert_close(got: object, want: list[np.ndarray]) -> None:
    assert len(_flat(got)) == len(want)
    for g, w in zip(_flat(got), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _flat(values: object) -> list[np.ndarray]:
    return [np.asarray(v) for v in (values if isinstance(values, (list, tuple)) else [values])]


def test_names_reused_across_computations_are_renamed_with_a_note() -> None:
    notes: list[str] = []
    module = parse_module((CORPUS / "names_reused.hlo").read_text(), "m.hlo", notes)
    names = [i.name for c in module.computations for i in c.instructions]
    assert len(set(names)) == len(names)
    assert [p.name for p in module.entry.parameters] == ["p0", "p1"]  # the entry keeps its own
    assert "m.hlo: renamed 6 instruction(s) whose names repeat in another computation" in notes
    ignored = next(n for n in notes if "ignored XLA attributes" in n)
    for key in ("metadata", "sharding", "frontend_attributes", "origin", "statistics",
                "backend_config", "control-predecessors"):  # fmt: skip
        assert key in ignored


def test_bitcasts_between_layouts_are_the_transposes_they_amount_to() -> None:
    module = parse_module((CORPUS / "bitcast_layouts.hlo").read_text())
    p = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    column_major = p.transpose(2, 1, 0).ravel()  # the bytes of t = f32[2,3,4]{0,1,2}
    a, b, c = evaluate(module, [p])
    np.testing.assert_array_equal(a, column_major.reshape(4, 6))
    np.testing.assert_array_equal(b, p.ravel().reshape(8, 3).T)
    np.testing.assert_array_equal(c, column_major.reshape(4, 6).T)


MEANINGFUL = {
    "dot algorithm": (
        "ENTRY e {\n  p = f32[2,2] parameter(0)\n  ROOT d = f32[2,2] dot(p, p), "
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32\n}",
        "dot 'd': attribute 'algorithm=dot_bf16_bf16_f32' changes what it computes",
    ),
    "unknown attribute": (
        "ENTRY e {\n  p = f32[2] parameter(0)\n"
        "  ROOT n = f32[2] negate(p), flush_denormals=true\n}",
        "negate 'n': attribute 'flush_denormals=true' changes what it computes and aotc does "
        "not support it",
    ),
    "tiled bitcast": (
        "ENTRY e {\n  p = f32[8,128]{1,0:T(8,128)} parameter(0)\n"
        "  ROOT b = f32[1024]{0} bitcast(p)\n}",
        "bitcast 'b': layout {1,0:T(8,128)} is unsupported",
    ),
}


@pytest.mark.parametrize("case", MEANINGFUL)
def test_attributes_that_change_the_results_are_errors_naming_the_instruction(case: str) -> None:
    text, message = MEANINGFUL[case]
    with pytest.raises(HloError, match=re.escape(message)):
        parse_module(text)


def test_compare_types_that_mean_aotcs_compare_are_accepted() -> None:
    module = parse_module(
        "ENTRY e {\n  p = f32[2] parameter(0)\n  i = s32[2] parameter(1)\n"
        "  c = pred[2] compare(p, p), direction=LT, type=FLOAT\n"
        "  d = pred[2] compare(i, i), direction=LT, type=SIGNED\n"
        "  ROOT t = (pred[2], pred[2]) tuple(c, d)\n}"
    )
    assert len(module.entry.instructions) == 5


def test_every_lacking_opcode_is_listed_once_with_its_count() -> None:
    text = (
        "HloModule m\n\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
        '  c = f32[4] custom-call(p), custom_call_target="foo", api_version=API_VERSION_TYPED_FFI\n'
        "  r = f32[4] all-reduce(c), replica_groups={}, to_apply=sum\n"
        "  ROOT r2 = f32[4] all-reduce(r), replica_groups={{0}}, to_apply=sum\n}\n"
    )
    with pytest.raises(HloError) as e:
        parse_module(text, "m.hlo")
    assert str(e.value) == (
        "m.hlo:11:14: unsupported opcode(s) 'all-reduce' (2x, first at line 12), "
        "'custom-call' (1x, first at line 11)"
    )
