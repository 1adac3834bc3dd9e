"""The pipeline: verification naming the pass, truthful `changed`, fixed points, disabling,
dumps, timings, and the default pipeline's pass names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from aotc.errors import HloError
from aotc.hlo.ir import Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape
from aotc.hlo.text import parse_module
from aotc.passes import (
    DCE,
    AlgebraicSimplifier,
    DumpOptions,
    FixedPoint,
    Pipeline,
    PipelineOptions,
    default_pipeline,
)

TEXT = """
HloModule m
ENTRY main {
  p = f32[4] parameter(0)
  one = f32[] constant(1)
  ob = f32[4] broadcast(one), dimensions={}
  a = f32[4] multiply(p, ob)
  dead = f32[4] negate(p)
  ROOT r = f32[4] exponential(a)
}
"""


@dataclass(frozen=True)
class BreaksShapes:
    """Sets a wrong shape on the root: the verifier must catch it."""

    name: ClassVar[str] = "breaks-shapes"

    def run(self, module: Module) -> bool:
        module.entry.root.shape = Shape(PrimitiveType.F32, (5,))
        return True


@dataclass(frozen=True)
class Lies:
    """Changes nothing but says it did (or changes something and says it did not)."""

    name: ClassVar[str] = "lies"
    really_change: bool = False

    def run(self, module: Module) -> bool:
        if self.really_change:
            module.entry.root.opcode = Opcode.LOG
        return not self.really_change


@dataclass(frozen=True)
class AlwaysChanges:
    """Flips exp <-> log on the root forever."""

    name: ClassVar[str] = "flip"

    def run(self, module: Module) -> bool:
        root = module.entry.root
        root.opcode = Opcode.LOG if root.opcode is Opcode.EXP else Opcode.EXP
        return True


def test_verifier_error_names_the_pass() -> None:
    pipeline = Pipeline("p", [DCE(), BreaksShapes()])
    with pytest.raises(HloError, match=r"after pass breaks-shapes: verifier: main/r: shape"):
        pipeline.run(parse_module(TEXT))


def test_entry_signature_change_is_caught() -> None:
    @dataclass(frozen=True)
    class DropsParameter:
        name: ClassVar[str] = "drops-parameter"

        def run(self, module: Module) -> bool:
            p = module.entry.parameters[0]
            module.entry.instructions = [i for i in module.entry.instructions if i is not p]
            module.entry.root = module.entry.instructions[0]  # the constant
            module.entry.instructions = [module.entry.root]
            return True

    with pytest.raises(HloError, match="after pass drops-parameter: entry signature changed"):
        Pipeline("p", [DropsParameter()]).run(parse_module(TEXT))


@pytest.mark.parametrize("really_change", [False, True])
def test_check_mode_catches_a_pass_lying_about_changed(really_change: bool) -> None:
    checked = Pipeline("p", [Lies(really_change)], PipelineOptions(check_changed=True))
    with pytest.raises(HloError, match=r"pass lies returned changed=(True|False) but"):
        checked.run(parse_module(TEXT))
    Pipeline("p", [Lies(really_change)], PipelineOptions(verify=False)).run(parse_module(TEXT))


def test_fixed_point_stops_when_nothing_changes_and_after_max_iters() -> None:
    module = parse_module(TEXT)
    report = Pipeline(
        "p", [FixedPoint(Pipeline("s", [AlgebraicSimplifier(), DCE()]))]
    ).run_with_report(module)
    assert report.changed
    assert [t.name for t in report.timings] == ["simplify", "dce"] * 2
    report = Pipeline("p", [FixedPoint(AlwaysChanges(), max_iters=7)]).run_with_report(module)
    assert len(report.timings) == 7


def test_disabled_passes_do_not_run() -> None:
    module = parse_module(TEXT)
    options = PipelineOptions(disabled=frozenset({"simplify"}))
    report = Pipeline("p", [AlgebraicSimplifier(), DCE()], options).run_with_report(module)
    assert [t.name for t in report.timings] == ["dce"]
    assert "multiply" in str([i.opcode.value for i in module.entry.instructions])


def test_dumps_are_numbered_in_order_and_filtered_by_regex(tmp_path: Path) -> None:
    dump = DumpOptions(tmp_path, pass_regex="^(simplify|dce)$", formats=frozenset({"text", "dot"}))
    pipeline = Pipeline("p", [AlgebraicSimplifier(), DCE()], PipelineOptions(dump=dump))
    pipeline.run(parse_module(TEXT))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "00-input.dot",
        "00-input.txt",
        "01-after-simplify.dot",
        "01-after-simplify.txt",
    ]  # fmt: skip (dce had nothing left to do: the simplifier removes what it kills)
    assert "multiply" in (tmp_path / "00-input.txt").read_text()
    assert "multiply" not in (tmp_path / "01-after-simplify.txt").read_text()


def test_dump_regex_selects_passes(tmp_path: Path) -> None:
    dump = DumpOptions(tmp_path, pass_regex="dce")
    pipeline = Pipeline("p", [DCE(), AlgebraicSimplifier()], PipelineOptions(dump=dump))
    assert [t.changed for t in pipeline.run_with_report(parse_module(TEXT)).timings] == [True] * 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00-input.txt", "01-after-dce.txt"]


def test_dump_options_validate() -> None:
    with pytest.raises(ValueError, match="unknown dump format 'pdf'"):
        DumpOptions(Path("."), formats=frozenset({"pdf"}))
    with pytest.raises(re.error):
        DumpOptions(Path("."), pass_regex="(")


def test_default_pipeline_names_and_report() -> None:
    pipeline = default_pipeline()
    names = pipeline.pass_names()
    assert {"simplify", "constant-folding", "cse", "dce"} <= set(names)
    report = pipeline.run_with_report(parse_module(TEXT))
    assert report.changed and "simplify" in report.summary()
