"""A fixed, seeded sample of ``make fuzz`` (tools/fuzz), and every case it has minimized.

Each case is a mutated GraphDef, GraphDef bytes, YAML config, HLO text file or SavedModel; aotc
must either reject it with an AotcError or compile it to code that matches the reference
evaluator. Never an internal error, a mismatch or a crash.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.fuzz.mutate import DATA, GRAPH_SEEDS, KINDS, make_case  # noqa: E402
from tools.fuzz.oracle import judge  # noqa: E402

SAMPLE_PER_KIND = 100
RUN_EVERY = 5  # one case in five is also compiled, run and compared
REGRESSIONS = sorted(p for p in (DATA / "fuzz").glob("*") if p.is_dir())


@pytest.mark.parametrize("kind", KINDS)
def test_seeded_sample_has_no_bugs(kind: str, tmp_path: Path) -> None:
    rng = random.Random(f"aotc-fuzz-{kind}")
    bugs = []
    for n in range(SAMPLE_PER_KIND):
        folder = tmp_path / str(n)
        folder.mkdir()
        case = make_case(kind, rng, folder)
        verdict = judge(case.graph, case.config, run=n % RUN_EVERY == 0)
        if verdict.is_bug:
            bugs.append(f"case {n}: {verdict.outcome}: {verdict.detail}")
    assert not bugs, "\n".join(bugs)


def test_minimized_fuzz_findings_stay_fixed() -> None:
    failing = []
    for case in REGRESSIONS:
        graph = next(p for p in case.iterdir() if p.suffix in (".pb", ".pbtxt", ".hlo", ""))
        config = case / "g.yaml"
        verdict = judge(graph, config if config.exists() else None)
        if verdict.is_bug:
            failing.append(f"{case.name}: {verdict.outcome}: {verdict.detail}")
    assert not failing, "\n".join(failing)


@pytest.mark.parametrize("name", [s for s in GRAPH_SEEDS if (DATA / f"tf/{s}.pb").exists()])
def test_seeds_compile_and_match(name: str) -> None:
    config = DATA / f"tf/{name}.yaml"
    verdict = judge(DATA / f"tf/{name}.pb", config if config.exists() else None)
    assert verdict.outcome == "match", verdict.detail
