"""Run one case and say what happened: the fuzzer's verdicts.

``rejected``: an AotcError (a clear user-facing error: fine). ``match``: compiled, and the JIT
result equals the reference evaluator's on random inputs. Anything else is a bug:
``internal`` (another exception), ``mismatch`` (the compiled code disagrees with the
evaluator); the driver adds ``crash`` (the process died) and ``hang``.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import aotc
from aotc.errors import AotcError
from aotc.frontend.sources import load_source
from aotc.hlo.evaluate import evaluate
from aotc.hlo.shape import Shape

BUGS = ("internal", "mismatch", "crash", "hang")
_MAX_INPUT_BYTES = 1 << 24  # bigger mutants are valid but slow to run: checked up to loading


@dataclass(frozen=True)
class Verdict:
    outcome: str  # rejected, match, big, or one of BUGS
    detail: str = ""  # for bugs: where (file:line exception) and what, used to group them

    @property
    def is_bug(self) -> bool:
        return self.outcome in BUGS


def judge(graph: Path, config: Path | None, run: bool = True) -> Verdict:
    """Load ``graph`` (with ``config``); if ``run``, also compile, run and compare."""
    try:
        return _judge(graph, config, run)
    except AotcError as err:
        return Verdict("rejected", str(err)[:200])
    except Exception as err:  # noqa: BLE001 - classifying the unexpected is the point
        frame = traceback.extract_tb(err.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno} {type(err).__name__}"
        return Verdict("internal", f"{where}: {str(err)[:160]}")


def _judge(graph: Path, config: Path | None, run: bool) -> Verdict:
    module = load_source(graph, config).module
    if not run:
        return Verdict("match")
    shapes = [p.shape for p in module.entry.parameters]
    if sum(s.byte_size for s in shapes if isinstance(s, Shape)) > _MAX_INPUT_BYTES:
        return Verdict("big")
    args = [_random_input(s, seed) for seed, s in enumerate(shapes)]
    expected = evaluate(module, args)
    got = aotc.compile(graph, config=config, cache=False)(*args)
    got = got if isinstance(got, list) else [got]
    expected = expected if isinstance(expected, list) else [expected]
    for i, (want, have) in enumerate(zip(expected, got, strict=True)):
        problem = _difference(np.asarray(want), np.asarray(have))
        if problem:
            return Verdict("mismatch", f"result {i}: {problem}")
    return Verdict("match")


def _random_input(shape: object, seed: int) -> np.ndarray:
    assert isinstance(shape, Shape)
    rng = np.random.default_rng(seed)
    dtype = shape.dtype.numpy
    if dtype.kind == "f":
        return rng.standard_normal(shape.dims).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape.dims) < 0.5
    if dtype.kind == "c":
        return (rng.standard_normal(shape.dims) + 1j * rng.standard_normal(shape.dims)).astype(
            dtype
        )
    return rng.integers(-5 if dtype.kind == "i" else 0, 6, shape.dims).astype(dtype)


def _difference(want: np.ndarray, have: np.ndarray) -> str:
    if want.shape != have.shape or want.dtype != have.dtype:
        got, expected = f"{have.dtype}{list(have.shape)}", f"{want.dtype}{list(want.shape)}"
        return f"{got} where the evaluator gives {expected}"
    if want.dtype.kind in "fc":
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        close = np.isclose(have, want, rtol=1e-4, atol=1e-5 * scale, equal_nan=True)
    else:
        close = have == want
    if close.all():
        return ""
    at = np.argwhere(~close)[0]
    return f"at {tuple(int(i) for i in at)}: {have[tuple(at)]} vs {want[tuple(at)]}"
