"""Compiling many models at once (``aotc compile a.pb b.pb -j 4``): one process per compile.

Each model is a ``CompileJob`` (its graph, config and outputs); the options of the command
line are shared (``CompileSettings``). ``compile_job`` runs one in this process, as the CLI
does for a single model; ``compile_jobs`` runs many in a pool of worker processes and reports
each outcome as it finishes. A failing model does not stop the others: its error travels back
to the parent (pickled, as ``concurrent.futures`` does) and is reported there.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from aotc.cache import CacheOutcome, CachePolicy, compile_cached
from aotc.codegen.workers import set_codegen_workers
from aotc.driver import CompileResult, SourceOptions, TargetOverrides
from aotc.errors import UsageError
from aotc.outputs import Outputs, output_prefix, write_outputs
from aotc.passes import PipelineOptions


@dataclass(frozen=True)
class CompileJob:
    """One model: its input, its config (None: the graph's .yaml sibling) and its outputs."""

    graph: str
    config: str | None
    outputs: Outputs


@dataclass(frozen=True)
class CompileSettings:
    """What every model of one command shares: target, input options, passes, cache."""

    target: TargetOverrides = TargetOverrides()
    options: SourceOptions = SourceOptions()
    passes: PipelineOptions | None = None
    policy: CachePolicy = CachePolicy()


def graph_paths(graphs: Sequence[str], list_file: str | None) -> list[str]:
    """The GRAPH arguments, then those of ``--list FILE``; at least one."""
    paths = list(graphs)
    if list_file:
        paths += read_graph_list(list_file)
    if not paths:
        raise UsageError("aotc compile needs a GRAPH (or --list FILE); see aotc compile --help")
    return paths


def read_graph_list(list_file: str) -> list[str]:
    """The GRAPHs of a list file: one per line, relative to its folder; # starts a comment."""
    try:
        text = Path(list_file).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"--list {list_file}: cannot read it: {err}") from None
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [str(Path(list_file).parent / line) for line in lines if line]


def plan_jobs(
    paths: Sequence[str],
    config: str | None,
    output: str | None,
    output_dir: str | None,
    emit: str = "obj",
    depfile: str | None = None,
) -> list[CompileJob]:
    """One job per model: outputs at ``-o PREFIX``, else ``-d DIR``/stem, else stem here."""
    if output and output_dir:
        raise UsageError("give either -o PREFIX or -d DIR, not both")
    deps = Path(depfile) if depfile else None
    return [
        CompileJob(path, config, Outputs(output_prefix(path, output, output_dir), emit, deps))
        for path in paths
    ]


def compile_job(job: CompileJob, settings: CompileSettings) -> tuple[CompileResult, CacheOutcome]:
    """Compile one model and write its files; returns the result and where it came from."""
    s = settings
    result, outcome = compile_cached(job.graph, job.config, s.target, s.options, s.passes, s.policy)
    write_outputs(result.model, job.outputs, job.graph, job.config, s.options.checkpoint)
    return result, outcome


def _worker(job: CompileJob, settings: CompileSettings) -> CacheOutcome:
    # Only the cache outcome goes back: the parent needs no object bytes.
    return compile_job(job, settings)[1]


def compile_jobs(
    jobs: Sequence[CompileJob],
    settings: CompileSettings,
    workers: int,
    finished: Callable[[CompileJob, Future[CacheOutcome]], None],
) -> None:
    """Compile ``jobs`` in up to ``workers`` processes; ``finished(job, future)`` is called in
    this process as each one ends (``future.result()`` re-raises the job's error). Workers are
    spawned, not forked, so that no LLVM state is inherited. Ctrl-C cancels what has not
    started; what has is interrupted too (the workers share the terminal's process group) and
    leaves no files behind (outputs are written atomically). The ``workers`` are shared: a
    model's code generation (``codegen/workers.py``) gets what the models at once leave."""
    check_distinct_outputs(jobs)
    context = multiprocessing.get_context("spawn")
    processes = min(workers, len(jobs))
    each = max(1, workers // processes)  # codegen workers of each model: no oversubscription
    with ProcessPoolExecutor(
        processes, mp_context=context, initializer=set_codegen_workers, initargs=(each,)
    ) as pool:
        futures = {pool.submit(_worker, job, settings): job for job in jobs}
        try:
            for future in as_completed(futures):
                finished(futures[future], future)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def check_distinct_outputs(jobs: Sequence[CompileJob]) -> None:
    """Two models writing the same file would race: refuse before compiling anything."""
    seen: dict[Path, str] = {}
    for job in jobs:
        for path in (job.outputs.binary, job.outputs.header, job.outputs.cpp_header):
            key = Path(os.path.abspath(path))
            if key in seen:
                raise UsageError(
                    f"{job.graph} and {seen[key]} would both write {path}; give them "
                    "different stems or compile them separately with -o"
                )
            seen[key] = job.graph


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
