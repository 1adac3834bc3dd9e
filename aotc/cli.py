"""The ``aotc`` command line: parse options, call the library, print, set exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from aotc import __version__
from aotc.driver import TargetOverrides, compile_graph, output_paths, write_artifacts
from aotc.errors import AotcError

F = TypeVar("F", bound=Callable[..., Any])


def reports_errors(fn: F) -> F:
    """Turn an AotcError into one line on stderr and its exit code; never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AotcError as err:
            click.echo(f"aotc: error: {err}", err=True)
            sys.exit(err.exit_code)
        except KeyboardInterrupt:
            click.echo("aotc: interrupted; no output was written", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aotc")
def main() -> None:
    """aotc: compile TensorFlow graphs ahead of time into an object file and a C header."""


@main.command("compile")
@click.argument("graph", type=click.Path(dir_okay=False))
@click.option(
    "-c",
    "--config",
    type=click.Path(dir_okay=False),
    help="YAML config (feeds, fetches, target). Default: GRAPH's .yaml if present.",
)
@click.option(
    "-o",
    "--output",
    "output",
    metavar="PREFIX",
    help="Output path prefix: writes PREFIX.o and PREFIX.h. Default: the graph's stem.",
)
@click.option("--target-triple", help="LLVM target triple, e.g. aarch64-unknown-linux-gnu.")
@click.option("--target-cpu", help="LLVM CPU name, e.g. generic, skylake-avx512, neoverse-n1.")
@click.option("--target-features", help='LLVM feature string, e.g. "+avx2,+fma".')
@reports_errors
def compile_command(
    graph: str,
    config: str | None,
    output: str | None,
    target_triple: str | None,
    target_cpu: str | None,
    target_features: str | None,
) -> None:
    """Compile GRAPH (a frozen GraphDef, .pb or .pbtxt) to PREFIX.o and PREFIX.h.

    \b
    Examples:
      aotc compile mlp.pb -c mlp.yaml -o build/mlp
      aotc compile mlp.pb --target-triple aarch64-unknown-linux-gnu --target-cpu generic
    """
    targets = TargetOverrides(target_triple, target_cpu, target_features)
    model = compile_graph(graph, config, targets)
    object_path, header_path = output_paths(graph, output)
    write_artifacts(model, object_path, header_path)
    click.echo(f"wrote {object_path} and {header_path}")


@main.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown"]),
    default="text",
    help="One op per line, or a markdown table with notes.",
)
def ops(fmt: str) -> None:
    """List the TensorFlow ops aotc can translate."""
    from aotc.frontend.ops.registry import supported_ops

    table = supported_ops()
    if fmt == "text":
        click.echo("\n".join(table))
        return
    click.echo("| TF op | notes |\n|---|---|")
    for op, note in table.items():
        click.echo(f"| `{op}` | {note} |")
