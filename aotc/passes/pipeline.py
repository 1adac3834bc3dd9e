"""The pass contract and the pipeline that runs passes, as XLA's ``HloPassPipeline``.

A pass is anything with a ``name`` and ``run(module) -> changed`` that rewrites the module in
place; passes are small frozen dataclasses whose fields are their options. A ``Pipeline`` runs
passes in order and, after every pass that changed something, verifies the module and checks
that the entry signature is unchanged, naming the pass in the error. ``FixedPoint`` repeats a
pass (or a pipeline) until it stops changing the module. A pipeline nested in another runs under
the outermost pipeline's ``PipelineOptions``: passes disabled by name, dumps, the check that a
pass told the truth about ``changed``, and the per-pass timings in the ``PipelineReport``.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from aotc import progress
from aotc.errors import HloError
from aotc.hlo.ir import Computation, Module
from aotc.hlo.shape import storage_form
from aotc.hlo.text import print_module
from aotc.hlo.verify import verify_module
from aotc.passes.literals import raw_bytes

#: Dump formats and their file extensions.
DUMP_FORMATS: dict[str, str] = {"text": "txt", "dot": "dot", "html": "html"}


class Pass(Protocol):
    """A module-to-module rewrite, in place; ``run`` returns whether it changed anything."""

    @property
    def name(self) -> str: ...

    def run(self, module: Module) -> bool: ...


@dataclass(frozen=True)
class DumpOptions:
    """Write the module before the pipeline and after each changing pass matching ``pass_regex``.

    Files are ``NN-input.<ext>`` and ``NN-after-<pass>.<ext>`` in ``directory``, numbered in
    the order written, one per format in ``formats`` (see ``DUMP_FORMATS``).
    """

    directory: Path
    pass_regex: str = ".*"
    formats: frozenset[str] = frozenset({"text"})

    def __post_init__(self) -> None:
        unknown = sorted(set(self.formats) - set(DUMP_FORMATS))
        if unknown or not self.formats:
            unknown = unknown or ["(none)"]
            raise ValueError(f"unknown dump format {unknown[0]!r}; use {', '.join(DUMP_FORMATS)}")
        re.compile(self.pass_regex)


@dataclass(frozen=True)
class PipelineOptions:
    """How a pipeline runs: dumps, passes disabled by name, and debug checks."""

    dump: DumpOptions | None = None
    disabled: frozenset[str] = frozenset()
    check_changed: bool = False  # compare the printed module around every pass with `changed`
    verify: bool = True


@dataclass(frozen=True)
class PassTiming:
    name: str
    seconds: float
    changed: bool


@dataclass
class PipelineReport:
    """What a pipeline run did: whether it changed the module, and every pass run, in order."""

    changed: bool = False
    timings: list[PassTiming] = field(default_factory=list)
    dumped: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        """One line per pass name: runs, runs that changed the module, total milliseconds."""
        rows: dict[str, list[float]] = {}
        for t in self.timings:
            row = rows.setdefault(t.name, [0, 0, 0.0])
            row[0] += 1
            row[1] += t.changed
            row[2] += t.seconds
        lines = [f"{'pass':<24} {'runs':>5} {'changed':>8} {'ms':>9}"]
        lines += [f"{n:<24} {r:>5.0f} {c:>8.0f} {s * 1e3:>9.2f}" for n, (r, c, s) in rows.items()]
        return "\n".join(lines)


@dataclass(frozen=True)
class Pipeline:
    """Passes run in order under ``options``; itself a pass, so pipelines nest."""

    name: str
    passes: Sequence[Pass]
    options: PipelineOptions = PipelineOptions()

    def __post_init__(self) -> None:
        object.__setattr__(self, "passes", tuple(self.passes))

    def run(self, module: Module) -> bool:
        return self.run_with_report(module).changed

    def run_with_report(self, module: Module) -> PipelineReport:
        runner = _Runner(self.options)
        runner.dump(module, "input")
        runner.report.changed = runner.run(self, module)
        return runner.report

    def pass_names(self) -> list[str]:
        """Every pass name that ``PipelineOptions.disabled`` can name, in pipeline order."""
        return list(dict.fromkeys(_names(self)))


@dataclass(frozen=True)
class FixedPoint:
    """Run ``inner`` until it reports no change, at most ``max_iters`` times."""

    inner: Pass
    max_iters: int = 25

    @property
    def name(self) -> str:
        return f"fixed-point-{self.inner.name}"

    def run(self, module: Module) -> bool:
        return Pipeline(self.name, [self]).run(module)


def _names(p: Pass) -> list[str]:
    if isinstance(p, Pipeline):
        return [p.name, *(n for q in p.passes for n in _names(q))]
    if isinstance(p, FixedPoint):
        return [p.name, *_names(p.inner)]
    return [p.name]


# ---- running -------------------------------------------------------------------------------


@dataclass
class _Runner:
    options: PipelineOptions
    report: PipelineReport = field(default_factory=PipelineReport)

    def run(self, p: Pass, module: Module) -> bool:
        if p.name in self.options.disabled:
            return False
        if isinstance(p, Pipeline):
            changed = False
            for q in p.passes:
                changed |= self.run(q, module)
            return changed
        if isinstance(p, FixedPoint):
            return self._fixed_point(p, module)
        return self._leaf(p, module)

    def _fixed_point(self, p: FixedPoint, module: Module) -> bool:
        changed = False
        for _ in range(p.max_iters):
            if not self.run(p.inner, module):
                break
            changed = True
        return changed

    def _leaf(self, p: Pass, module: Module) -> bool:
        before = fingerprint(module) if self.options.check_changed else None
        signature = _storage_signature(module.entry)
        start = time.perf_counter()
        with progress.stage(f"pass {p.name}"):
            changed = p.run(module)
        self.report.timings.append(PassTiming(p.name, time.perf_counter() - start, changed))
        if before is not None:
            _check_truth(p.name, changed, before, fingerprint(module))
        if changed:
            if self.options.verify:
                _verify(p.name, module, signature)
            dump = self.options.dump
            if dump is not None and re.search(dump.pass_regex, p.name):
                self.dump(module, f"after-{p.name}")
        return changed

    def dump(self, module: Module, label: str) -> None:
        options = self.options.dump
        if options is None:
            return
        from aotc.passes.dump import render  # dump imports this module's constants

        options.directory.mkdir(parents=True, exist_ok=True)
        stem = f"{len(self.report.dumped) // len(options.formats):02d}-{_file_safe(label)}"
        for fmt in sorted(options.formats):
            path = options.directory / f"{stem}.{DUMP_FORMATS[fmt]}"
            path.write_text(render(module, fmt, title=f"{module.name}: {label}"))
            self.report.dumped.append(path)


def fingerprint(module: Module) -> str:
    """The printed module with every constant's bytes hashed instead of spelled out."""
    digest = hashlib.blake2b(digest_size=20)
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.literal is not None:
                digest.update(raw_bytes(inst.literal))
    return print_module(module, print_large_constants=False) + digest.hexdigest()


def _check_truth(name: str, changed: bool, before: str, after: str) -> None:
    if changed != (before != after):
        did = "changed the module" if before != after else "left the module unchanged"
        raise HloError(f"pass {name} returned changed={changed} but {did}")


def _verify(name: str, module: Module, signature: str) -> None:
    try:
        verify_module(module)
    except HloError as err:
        raise HloError(f"after pass {name}: {err}") from err
    now = _storage_signature(module.entry)
    if now != signature:
        raise HloError(f"after pass {name}: entry signature changed from {signature} to {now}")


def _storage_signature(entry: Computation) -> str:
    """The entry's parameter and result shapes as they lie in memory, which no pass may
    change (complex-lowering gives a complex value its real form, of the same bytes)."""
    params = ", ".join(str(storage_form(p.shape)) for p in entry.parameters)
    return f"({params}) -> {storage_form(entry.root.shape)}"


def _file_safe(label: str) -> str:
    return re.sub(r"[^\w.-]+", "_", label)
