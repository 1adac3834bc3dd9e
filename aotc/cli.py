"""The ``aotc`` command line: parse options, call the library, print, set exit codes."""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from aotc import __version__, progress
from aotc.batch import (
    CompileJob,
    CompileSettings,
    compile_job,
    compile_jobs,
    default_workers,
    graph_paths,
    plan_jobs,
)
from aotc.cache import CacheOutcome, CachePolicy
from aotc.cache_folder import (
    MAX_BYTES_ENV,
    DiskCache,
    EntryFile,
    UnsafeCacheFolder,
    format_size,
    parse_size,
)
from aotc.codegen.workers import set_codegen_workers
from aotc.driver import CompileResult, SourceOptions, TargetOverrides, pipeline_options
from aotc.errors import AotcError, OutputError, UsageError
from aotc.outputs import EMITS
from aotc.report import write_report

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# Exit codes: 1 user error (AotcError), 2 usage error (click), 3 a bug in aotc, 130 Ctrl-C,
# 141 the reader of the output went away (128 + SIGPIPE, as a shell reports a killed writer).
INTERNAL_ERROR_EXIT = 3
BROKEN_PIPE_EXIT = 141


def guarded(fn: Callable[[], T], show_traceback: bool = False) -> T:
    """Run ``fn`` under the CLI's error policy: an AotcError is one line and its exit code;
    any other exception is a bug, reported as one line with exit code 3 (with the traceback
    only when ``--traceback`` was given)."""
    try:
        result = fn()
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return result
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(BROKEN_PIPE_EXIT)
    except AotcError as err:
        click.echo(f"aotc: error: {err}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        click.echo("aotc: interrupted; no output was written", err=True)
        sys.exit(130)
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        raise  # click's own usage errors and exits
    except Exception as err:
        if show_traceback:
            raise
        click.echo(_internal_error_line(err), err=True)
        sys.exit(INTERNAL_ERROR_EXIT)


def _silence_stdout() -> None:
    """``aotc ops | head``: the reader closed the pipe, which is no error. Point stdout at
    /dev/null so that nothing else tries to write to the dead pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (tests)
        pass


def _internal_error_line(err: Exception) -> str:
    detail = (str(err).strip().splitlines() or [""])[0][:200]
    return (
        f"aotc: internal error: {type(err).__name__}: {detail}; please report it "
        "(rerun with 'aotc --traceback ...' for details)"
    )


def _traceback_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("traceback"))


def reports_errors(fn: F) -> F:
    """Apply the CLI's error policy (see ``guarded``) to one command function."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return guarded(lambda: fn(*args, **kwargs), _traceback_requested())

    return wrapper  # type: ignore[return-value]


class AotcGroup(click.Group):
    """The command group; every subcommand runs under the error policy of ``guarded``."""

    def invoke(self, ctx: click.Context) -> Any:
        return guarded(lambda: super(AotcGroup, self).invoke(ctx), _traceback_requested())


def quiet_option(fn: F) -> F:
    """``-q/--quiet``: print nothing but errors, and no progress line."""
    return click.option(
        "-q", "--quiet", is_flag=True, help="Print only errors; no progress or summary."
    )(fn)


def verbose_option(help_text: str) -> Callable[[F], F]:
    """``-v/--verbose`` with a command-specific meaning."""
    return click.option("-v", "--verbose", is_flag=True, help=help_text)


# What `aotc --cmake-dir` and its siblings print: files aotc ships for build systems.
_BUILD_FILES = {
    "--cmake-dir": ("cmake", "Print the folder of aotc's CMake package config (aotc_DIR)."),
    "--make-include": ("make/aotc.mk", "Print the path of aotc.mk, the Make include."),
    "--bazel-dir": ("bazel", "Print the folder of aotc's Bazel rules (a local_repository)."),
    "--include-dir": (
        "include",
        "Print the folder of aotc's C headers (aotc_threadpool.h: a pthread pool for "
        "<name>_run_buffers_mt).",
    ),
}


def build_file_options(fn: F) -> F:
    """``--cmake-dir``, ``--make-include``, ``--bazel-dir``, ``--include-dir``: print a path
    and exit."""
    for flag, (relative, help_text) in _BUILD_FILES.items():

        def show(ctx: click.Context, _: click.Parameter, value: bool, path: str = relative) -> None:
            if value and not ctx.resilient_parsing:
                click.echo(Path(__file__).parent / path)
                ctx.exit()

        fn = click.option(
            flag, is_flag=True, expose_value=False, is_eager=True, callback=show, help=help_text
        )(fn)
    return fn


@click.group(cls=AotcGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="aotc")
@build_file_options
@click.option(
    "--traceback", is_flag=True, help="Show Python tracebacks for internal errors (debugging)."
)
def main(traceback: bool) -> None:
    """aotc: compile TensorFlow graphs ahead of time into an object file and a C header.

    \b
    Examples:
      aotc inspect mlp.pb --emit-config mlp.yaml   # look inside, write a starting config
      aotc compile mlp.pb -c mlp.yaml -o build/mlp # -> build/mlp.o + build/mlp.h
      aotc run mlp.pb -c mlp.yaml --input x=x.npy --reference
      aotc ops                                     # the TensorFlow ops aotc translates

    Exit codes: 0 success, 1 error in the input, 2 usage error, 3 internal error (a bug),
    141 the output pipe was closed (aotc ops | head).
    """
    # What the imports made (about 44,000 objects: modules, classes, functions) lives as long
    # as the process; moved out of the collector's reach, a full collection (codegen makes one)
    # does not walk it: 12 ms less per compile.
    gc.freeze()


def shape_option(fn: F) -> F:
    """``--shape``: static shapes for inputs whose graph shape has unknown dimensions."""
    return click.option(
        "--shape",
        "shapes",
        multiple=True,
        metavar="NAME=D0,D1,...",
        help="Static shape of an input (a GraphDef feed or a SavedModel signature input), "
        "over the graph's and the config's (repeatable).",
    )(fn)


def signature_options(fn: F) -> F:
    """``--signature``, ``--tag``: which function of a SavedModel directory to read."""
    fn = click.option(
        "--tag",
        "tags",
        multiple=True,
        help="SavedModel MetaGraphDef tag (repeatable). Default: serve.",
    )(fn)
    signature_help = "SavedModel signature key. Default: serving_default."
    return click.option("--signature", help=signature_help)(fn)


def cache_dir_option(fn: F) -> F:
    """``--cache-dir``: the compilation cache's folder."""
    return click.option(
        "--cache-dir",
        metavar="DIR",
        help="Compilation cache folder. Default: $AOTC_CACHE_DIR, else $XDG_CACHE_HOME/aotc, "
        "else ~/.cache/aotc.",
    )(fn)


def cache_options(fn: F) -> F:
    """``--cache-dir``, ``--cache-max`` and ``--no-cache``: the compilation cache."""
    fn = click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")(fn)
    fn = click.option(
        "--cache-max",
        metavar="SIZE",
        help=f"Size cap of the cache folder (e.g. 500M, 2G); the least recently used entries "
        f"go first. Default: ${MAX_BYTES_ENV}, else 2G.",
    )(fn)
    return cache_dir_option(fn)


def size_option(text: str | None, flag: str) -> int | None:
    """A size option's bytes; None when not given."""
    return None if text is None else parse_size(text, flag)


def pass_options(fn: F) -> F:
    """``--dump-to``, ``--dump-pass-re``, ``--dump-format``, ``--disable-pass``."""
    fn = click.option(
        "--disable-pass",
        "disabled_passes",
        multiple=True,
        metavar="NAME",
        help="Skip an optimization pass by name (repeatable); a wrong name lists the names.",
    )(fn)
    fn = click.option(
        "--dump-format",
        metavar="FORMATS",
        help="Comma-separated dump formats: text (HLO), dot (Graphviz), html (drawn graph). "
        "Default: text.",
    )(fn)
    fn = click.option(
        "--dump-pass-re",
        metavar="REGEX",
        help="Dump only after passes whose name matches REGEX. Default: every pass.",
    )(fn)
    return click.option(
        "--dump-to",
        metavar="DIR",
        type=click.Path(file_okay=False),
        help="Write the HLO before optimization and after each pass that changed it to DIR.",
    )(fn)


def source_options(
    signature: str | None,
    tags: tuple[str, ...],
    shapes: tuple[str, ...],
    checkpoint: str | None = None,
) -> SourceOptions:
    """The SavedModel options (and a GraphDef's ``--checkpoint``) as the library takes them."""
    return SourceOptions(signature, tags or None, shape_options(shapes), checkpoint)


def parse_shape_option(text: str) -> tuple[str, tuple[int, ...]]:
    """``x=1,224,224,3`` -> ("x", (1, 224, 224, 3)); ``x=`` is a scalar."""
    key, sep, dims = text.partition("=")
    parts = [p.strip() for p in dims.split(",")] if dims.strip() else []
    if not sep or not key or not all(p.isascii() and p.isdigit() for p in parts):
        raise click.BadParameter(
            f"{text!r}: expected NAME=D0,D1,... with non-negative integers, e.g. x=1,224,224,3",
            param_hint="--shape",
        )
    return key, tuple(int(p) for p in parts)


def shape_options(texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Several ``--shape`` options as a dict; a name given twice is a usage error."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        key, dims = parse_shape_option(text)
        if key in shapes:
            raise click.BadParameter(f"{key} is given twice", param_hint="--shape")
        shapes[key] = dims
    return shapes


def output_options(fn: F) -> F:
    """``-o``, ``-d``, ``--emit``, ``--depfile``: which files a compile writes, and where."""
    fn = click.option(
        "--depfile",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help="Also write a Make-format dependency file: what the compile read (graph, config, "
        "SavedModel variables, aotc's version), for Make, Ninja and CMake.",
    )(fn)
    fn = click.option(
        "--emit",
        type=click.Choice(EMITS),
        default="obj",
        show_default=True,
        help="obj: PREFIX.o; lib: a static library libPREFIX.a (no ar needed). Both with PREFIX.h.",
    )(fn)
    fn = click.option(
        "-d",
        "--output-dir",
        type=click.Path(file_okay=False),
        metavar="DIR",
        help="Write each model's files to DIR/<graph stem>.* (instead of -o).",
    )(fn)
    return click.option(
        "-o",
        "--output",
        "output",
        metavar="PREFIX",
        help="Output path prefix: writes PREFIX.o and PREFIX.h; a folder (existing, or ending "
        "in /) gets <graph stem>.o and .h inside it. Default: the graph's stem.",
    )(fn)


def many_options(fn: F) -> F:
    """``--list`` and ``-j``: compile many models in parallel processes."""
    fn = click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=1),
        metavar="N",
        help="Use up to N processes: models compiled at once (one process each), or one "
        "model's code generation split over N. Default: the CPU count.",
    )(fn)
    return click.option(
        "--list",
        "list_file",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help="Read more GRAPHs from FILE, one per line, relative to its folder (# comments).",
    )(fn)


@main.command("compile")
@click.argument("graphs", metavar="GRAPH...", nargs=-1, type=click.Path())
@click.option(
    "-c",
    "--config",
    type=click.Path(dir_okay=False),
    help="Config: YAML (feeds, fetches, target), or a tfcompile config (*.config.pbtxt, "
    "*.config.pb). Default: GRAPH's .yaml if present.",
)
@output_options
@click.option("--name", help="C name prefix of the model (overrides the config's name:).")
@click.option(
    "--cpp-class",
    metavar="NS::NAME",
    help="Also write PREFIX.hpp: a header-only C++ class shaped like tfcompile's (overrides "
    "the config's cpp_class:).",
)
@click.option(
    "--no-multicore",
    is_flag=True,
    help="Leave out <name>_run_buffers_mt and <name>_temp_bytes_mt, the multi-core entry "
    "points (microcontrollers; overrides the config's multicore:).",
)
@click.option("--target-triple", help="LLVM target triple, e.g. aarch64-unknown-linux-gnu.")
@click.option("--target-cpu", help="LLVM CPU name, e.g. generic, skylake-avx512, neoverse-n1.")
@click.option("--target-features", help='LLVM feature string, e.g. "+avx2,+fma".')
@signature_options
@shape_option
@click.option(
    "--checkpoint",
    metavar="PREFIX",
    help="Freeze GRAPH's variables from this TensorFlow (V2) checkpoint, as tfcompile's "
    "freeze_checkpoint does; declared variables stay arguments.",
)
@cache_options
@pass_options
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    help="Write a JSON report: kernels (fused ops, FLOPs, bytes), temp and constant bytes.",
)
@many_options
@verbose_option("Print a short summary: kernels, temp bytes vs the peak-live bound, constants.")
@quiet_option
@reports_errors
def compile_command(
    graphs: tuple[str, ...],
    config: str | None,
    output: str | None,
    output_dir: str | None,
    emit: str,
    depfile: str | None,
    name: str | None,
    cpp_class: str | None,
    no_multicore: bool,
    target_triple: str | None,
    target_cpu: str | None,
    target_features: str | None,
    signature: str | None,
    tags: tuple[str, ...],
    shapes: tuple[str, ...],
    checkpoint: str | None,
    cache_dir: str | None,
    cache_max: str | None,
    no_cache: bool,
    dump_to: str | None = None,
    dump_pass_re: str | None = None,
    dump_format: str | None = None,
    disabled_passes: tuple[str, ...] = (),
    report_path: str | None = None,
    list_file: str | None = None,
    jobs: int | None = None,
    verbose: bool = False,
    quiet: bool = False,
) -> None:
    """Compile GRAPH to PREFIX.o and PREFIX.h; several GRAPHs in parallel processes.

    GRAPH is a frozen GraphDef (.pb or .pbtxt), a SavedModel directory, or XLA HLO text
    (.hlo, as JAX and TensorFlow print it). An unchanged model is served from the cache.
    With several GRAPHs each uses its own .yaml sibling and writes its own files.

    \b
    Examples:
      aotc compile mlp.pb -c mlp.yaml -o build/mlp
      aotc compile mlp.pb -o build/mlp --emit lib --depfile build/mlp.d
      aotc compile mlp.pb --target-triple aarch64-unknown-linux-gnu --target-cpu generic
      aotc compile saved_model/ --signature serving_default --shape x=1,224,224,3
      aotc compile graph.pb -c graph.config.pbtxt --checkpoint ckpt/model.ckpt
      aotc compile graph.pb -c graph.config.pbtxt --cpp-class foo::bar::MatMulComp
      aotc compile model.hlo -o build/model
      aotc compile models/*.pb -d build -j 8
    """
    paths = graph_paths(graphs, list_file)
    one_graph_only(len(paths), {"-c": config, "-o": output, "--depfile": depfile, "--name": name})
    one_graph_only(len(paths), {"--cpp-class": cpp_class})
    one_graph_only(len(paths), {"--checkpoint": checkpoint, "--report": report_path})
    one_graph_only(len(paths), {"--dump-to": dump_to, "-v": verbose})
    formats = None if dump_format is None else [f.strip() for f in dump_format.split(",")]
    settings = CompileSettings(
        TargetOverrides(target_triple, target_cpu, target_features),
        replace(
            source_options(signature, tags, shapes, checkpoint),
            name=name,
            cpp_class=cpp_class,
            multicore=False if no_multicore else None,
        ),
        pipeline_options(dump_to, dump_pass_re, formats, disabled_passes),
        CachePolicy(
            enabled=not no_cache, folder=cache_dir, max_bytes=size_option(cache_max, "--cache-max")
        ),
    )
    todo = plan_jobs(paths, config, output, output_dir, emit, depfile)
    if len(todo) > 1:
        compile_many(todo, settings, jobs or default_workers(), quiet)
        return
    set_codegen_workers(jobs)
    with progress.display(enabled=not quiet):
        result, outcome = compile_job(todo[0], settings)
    if not quiet:
        _warn(outcome.warnings)
        click.echo(_wrote(todo[0].outputs.written(result.model), outcome))
    _compile_report(result, report_path, verbose, quiet)
    if verbose and not quiet:
        click.echo("\n".join([outcome.summary(), *outcome.notes]))


def _wrote(files: Sequence[Path], outcome: CacheOutcome) -> str:
    """The final line of a compile: what was written, and whether it came from the cache."""
    cached = " (from the cache)" if outcome.hit else ""
    *others, last = files
    return f"wrote {', '.join(map(str, others))} and {last}{cached}"


def _warn(lines: Sequence[str]) -> None:
    for line in lines:
        click.echo(f"aotc: warning: {line}", err=True)


def one_graph_only(count: int, options: dict[str, object]) -> None:
    """Options that name one model's files or details are usage errors with several GRAPHs."""
    given = [flag for flag, value in options.items() if value]
    if count > 1 and given:
        raise UsageError(f"{', '.join(given)}: for one GRAPH only ({count} were given)")


def compile_many(
    jobs: list[CompileJob], settings: CompileSettings, workers: int, quiet: bool
) -> None:
    """Several models in parallel processes; each error is one line, the others go on."""
    codes: list[int] = []
    warned: set[str] = set()  # a cache folder's warning is the same for every model

    def finished(job: CompileJob, future: Future[CacheOutcome]) -> None:
        try:
            outcome = future.result()
        except AotcError as err:
            click.echo(f"aotc: error: {err}", err=True)
            codes.append(err.exit_code)
            return
        except Exception as err:
            if _traceback_requested():
                raise
            click.echo(f"{job.graph}: {_internal_error_line(err)}", err=True)
            codes.append(INTERNAL_ERROR_EXIT)
            return
        if not quiet:
            _warn([w for w in outcome.warnings if w not in warned])
            warned.update(outcome.warnings)
            click.echo(_wrote([job.outputs.binary, job.outputs.header], outcome))

    compile_jobs(jobs, settings, workers, finished)
    if codes:
        click.echo(f"aotc: {len(codes)} of {len(jobs)} models failed", err=True)
        sys.exit(max(codes))


def _compile_report(result: CompileResult, path: str | None, verbose: bool, quiet: bool) -> None:
    """``--report`` and ``-v`` of ``aotc compile``; without ``-v``, the report's notes (what
    was dropped or renamed) are one line each on stderr."""
    if path:
        write_report(result.report, path)
        click.echo(f"wrote {path}")
    if quiet:
        return
    if verbose:
        click.echo(result.report.summary())
        return
    for note in result.report.notes:
        click.echo(f"aotc: note: {note}", err=True)


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown"]),
    default="text",
    help="One op per line, or a markdown table with notes.",
)
def ops(fmt: str) -> None:
    """List the TensorFlow ops aotc can translate.

    \b
    Examples:
      aotc ops | grep -i conv
      aotc ops --format markdown > docs/ops.md
    """
    from aotc.inspection import supported_ops

    table = supported_ops()
    if fmt == "text":
        click.echo("\n".join(table))
        return
    click.echo(
        f"# Supported TensorFlow ops\n\n{len(table)} ops; generated by "
        "`aotc ops --format markdown` (`make docs`).\n"
    )
    click.echo("| TF op | notes |\n|---|---|")
    for op, note in table.items():
        click.echo(f"| `{op}` | {note} |")


@main.command("inspect")
@click.argument("graph", type=click.Path())
@signature_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON, for tools.")
@click.option(
    "--emit-config",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write a starting config (GraphDef: Placeholders as feeds, candidate outputs as "
    "fetches; SavedModel: input shapes): YAML, or tfcompile's format for FILE.config.pbtxt "
    "(text) and FILE.config.pb (binary).",
)
@click.option("--force", is_flag=True, help="Let --emit-config overwrite an existing file.")
@verbose_option("List every node of each unsupported op (default: the first 5).")
@quiet_option
def inspect_command(
    graph: str,
    signature: str | None,
    tags: tuple[str, ...],
    as_json: bool,
    emit_config: str | None,
    force: bool,
    verbose: bool,
    quiet: bool,
) -> None:
    """Summarize GRAPH before compiling it.

    A GraphDef: ops, Placeholders, candidate outputs, unsupported ops, constant bytes. A
    SavedModel directory: tag sets, signatures with their inputs and outputs, and what the
    compiled signature needs. HLO text: arguments, results, opcodes.

    \b
    Examples:
      aotc inspect model.pb
      aotc inspect model.pb --json | jq .placeholders
      aotc inspect model.pb --emit-config model.yaml && aotc compile model.pb -c model.yaml
      aotc inspect saved_model/ --signature serving_default
    """
    from aotc.inspection import emit_config as write_config
    from aotc.inspection import inspect_input

    summary = inspect_input(graph, SourceOptions(signature, tags or None))
    if emit_config:
        write_config(summary, emit_config, overwrite=force)
    if quiet:
        return
    if as_json:
        click.echo(json.dumps(summary.to_json(), indent=2))
    else:
        click.echo(summary.format_text(max_names=None if verbose else 5))
    if emit_config and not as_json:
        click.echo(f"wrote {emit_config}")


@main.command("run")
@click.argument("graph", type=click.Path())
@click.option(
    "-c",
    "--config",
    type=click.Path(dir_okay=False),
    help="Config: YAML or tfcompile (*.config.pbtxt, *.config.pb). Default: GRAPH's .yaml.",
)
@signature_options
@shape_option
@click.option(
    "-i",
    "--input",
    "inputs",
    multiple=True,
    metavar="NAME=FILE.npy",
    help="An input array for feed NAME; repeat for each feed.",
)
@click.option(
    "-d",
    "--output-dir",
    type=click.Path(file_okay=False),
    help="Folder for the outputs, one <fetch name>.npy each (created if missing). "
    "Default: <graph stem>_outputs.",
)
@click.option(
    "--reference",
    is_flag=True,
    help="Also run the numpy reference evaluator and print the max |difference| per output.",
)
@verbose_option("Also print the model's inputs before running.")
@quiet_option
def run_command(
    graph: str,
    config: str | None,
    signature: str | None,
    tags: tuple[str, ...],
    shapes: tuple[str, ...],
    inputs: tuple[str, ...],
    output_dir: str | None,
    reference: bool,
    verbose: bool,
    quiet: bool,
) -> None:
    """Compile GRAPH for this machine in-process (JIT), run it on .npy inputs, save outputs.

    GRAPH is anything `aotc compile` takes: a GraphDef, a SavedModel directory or HLO text.

    \b
    Examples:
      aotc run mlp.pb -c mlp.yaml --input x=x.npy
      aotc run mlp.pb --input x=x.npy --output-dir out --reference
      aotc run saved_model/ --shape features=1,8 --input features=f.npy
    """
    from aotc.runner import (
        default_output_dir,
        format_output,
        parse_input_options,
        run_graph,
        save_outputs,
    )

    files = parse_input_options(inputs)
    options = source_options(signature, tags, shapes)
    with progress.display(enabled=not quiet):
        result = run_graph(graph, config, files, options, reference=reference)
        saved = save_outputs(result.outputs, output_dir or default_output_dir(graph))
    if verbose and not quiet:
        click.echo(
            "\n".join(f"input {spec.describe()} <- {files[spec.name]}" for spec in result.inputs)
        )
    if not quiet:
        click.echo("\n".join(format_output(out) for out in saved))


@main.group("cache")
def cache_group() -> None:
    """Look at and manage the compilation cache.

    \b
    Examples:
      aotc cache info                  # folder, entries, total size, cap
      aotc cache list                  # one line per entry, most recently used first
      aotc cache prune --max 500M      # evict the least recently used down to 500M
      aotc cache clear --cache-dir build/aotc-cache
    """


@cache_group.command("info")
@cache_dir_option
def cache_info(cache_dir: str | None) -> None:
    """Print the cache folder, its entries, their total size and the size cap."""
    disk = DiskCache(cache_dir)
    _warn(_unsafe_folder(disk))
    entries = disk.entries()
    total = sum(e.size for e in entries)
    click.echo(f"folder: {disk.folder}")
    click.echo(f"entries: {len(entries)}")
    click.echo(f"total: {format_size(total)} ({total} bytes)")
    click.echo(
        f"cap: {format_size(disk.max_bytes)} ({disk.max_bytes} bytes; set with "
        f"${MAX_BYTES_ENV} or --cache-max)"
    )


@cache_group.command("list")
@cache_dir_option
def cache_list(cache_dir: str | None) -> None:
    """One line per entry, most recently used first: key prefix, model, size, last use."""
    disk = DiskCache(cache_dir)
    _warn(_unsafe_folder(disk))
    for entry in sorted(disk.entries(), key=lambda e: e.last_use_ns, reverse=True):
        used = datetime.fromtimestamp(entry.last_use_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")
        click.echo(
            f"{entry.key[:12]}  {entry.model_name():<24} {format_size(entry.size):>10}  {used}"
        )


@cache_group.command("clear")
@cache_dir_option
def cache_clear(cache_dir: str | None) -> None:
    """Remove every entry."""
    disk = _managed(DiskCache(cache_dir))
    removed = disk.clear()
    click.echo(f"removed {_entries_text(removed)} from {disk.folder}")


@cache_group.command("prune")
@cache_dir_option
@click.option(
    "--max",
    "max_size",
    metavar="SIZE",
    help=f"Keep at most SIZE (e.g. 500M). Default: the cap, ${MAX_BYTES_ENV} else 2G.",
)
def cache_prune(cache_dir: str | None, max_size: str | None) -> None:
    """Evict the least recently used entries until the cache is within its cap."""
    limit = size_option(max_size, "--max")
    disk = _managed(DiskCache(cache_dir, limit))
    removed = disk.evict(disk.max_bytes)
    left = disk.entries()
    click.echo(
        f"removed {_entries_text(removed)}; {_entries_text(left)} remain "
        f"(cap {format_size(disk.max_bytes)})"
    )


def _unsafe_folder(disk: DiskCache, consequence: str = "aotc compile does not use it") -> list[str]:
    """The warning for a folder ``aotc compile`` would not use, if it is one."""
    try:
        disk.check()
    except UnsafeCacheFolder as err:
        return [f"{err}; {consequence}"]
    return []


def _managed(disk: DiskCache) -> DiskCache:
    """``disk``, unless it is a folder aotc does not use: removing files there is refused."""
    for problem in _unsafe_folder(disk, "not removing anything there"):
        raise OutputError(problem)
    return disk


def _entries_text(entries: Sequence[EntryFile]) -> str:
    sizes = sum(e.size for e in entries)
    return f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'} ({format_size(sizes)})"
