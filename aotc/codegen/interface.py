"""The compiled model's interface: its arguments and results as the user named them."""

from __future__ import annotations

from dataclasses import dataclass

from aotc.hlo.shape import Shape


@dataclass(frozen=True)
class TensorInfo:
    """An argument or result: the feed/fetch name as the user wrote it (``"split:1"``).

    A ``variable`` argument is a graph variable; an ``updated`` one is written in place: the
    entry root tuple holds its new value after the results (in argument order)."""

    name: str
    shape: Shape
    variable: bool = False
    updated: bool = False
