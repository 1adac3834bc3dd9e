"""The one exception hierarchy of aotc.

Every failure a user can cause is an ``AotcError`` whose message names *where* (file, node and
op, config key) and *what to do*. The CLI prints it as one line on stderr and exits with
``exit_code``; anything else escaping is a bug in aotc.
"""

from __future__ import annotations


class AotcError(Exception):
    """A user-facing error: one line, names the place, says what to do."""

    exit_code = 1


class InputFileError(AotcError):
    """A graph or config file is missing, unreadable or malformed."""


class GraphError(AotcError):
    """The GraphDef is structurally wrong: cycles, dangling inputs, bad tensors."""


class ConfigError(AotcError):
    """The YAML config is malformed, or disagrees with the graph."""


class UnsupportedError(AotcError):
    """An op, attribute value or dtype aotc cannot translate."""


class ShapeError(AotcError):
    """A shape cannot be inferred or does not fit an op."""


class HloError(AotcError):
    """HLO text that does not parse, or a module the verifier rejects."""


class CodegenError(AotcError):
    """Code generation or object emission failed (e.g. an unknown target)."""


class OutputError(AotcError):
    """An output file cannot be written."""


class ArgumentError(AotcError):
    """Arrays passed to a compiled model (``aotc run``, the JIT) that do not fit its signature."""


class UsageError(AotcError):
    """Options that do not fit together or do not apply to the input: exit code 2, as for
    the command line's own usage errors."""

    exit_code = 2
