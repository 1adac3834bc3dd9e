"""A progress line on stderr for slow compiles; silent unless the CLI turns it on.

Library code marks its stages and knows nothing about terminals::

    with progress.stage("translate"):
        module = translate_graph(graph, signature)

A long stage may say how far it is with ``progress.detail("kernels 12/53")``; the detail
lasts until the next one or the end of the stage. Codegen reports through a plain callback
(``compile_module_assigned(on_progress=...)``), which the driver points at ``detail``.

The CLI wraps a command in ``with progress.display():``. The line appears only when stderr is
a terminal and the compile has run for ``delay`` seconds (quick compiles print nothing), shows
the current stage, its detail and the elapsed time, and is erased when the command ends.
Without an active display ``stage`` and ``detail`` do nothing, so tests, the Python API and
piped output are unaffected.
The active display lives in a ``ContextVar``: no global state shared across threads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

DELAY_S = 2.0
_TICK_S = 0.2


class _Display:
    """Redraws ``aotc: <stage>[: <detail>] (3.4 s)`` on a background thread once ``delay`` has
    passed."""

    def __init__(self, stream: TextIO, delay: float) -> None:
        self.stream = stream
        self.delay = delay
        self.start = time.monotonic()
        self.current = "starting"
        self.detail = ""
        self.drawn = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aotc-progress", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(_TICK_S):
            elapsed = time.monotonic() - self.start
            if elapsed >= self.delay:
                what = f"{self.current}: {self.detail}" if self.detail else self.current
                self._draw(f"aotc: {what} ({elapsed:.1f} s)")

    def _draw(self, text: str) -> None:
        # \r + erase-to-end-of-line rewrites the line in place.
        self.stream.write(f"\r\x1b[K{text}")
        self.stream.flush()
        self.drawn = True

    def __enter__(self) -> _Display:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


_ACTIVE: ContextVar[_Display | None] = ContextVar("aotc_progress", default=None)


@contextmanager
def display(
    enabled: bool = True, stream: TextIO | None = None, delay: float = DELAY_S
) -> Iterator[None]:
    """Show progress for the enclosed work if ``enabled`` and ``stream`` (stderr) is a TTY."""
    out = stream if stream is not None else sys.stderr
    if not enabled or not _is_terminal(out):
        yield
        return
    with _Display(out, delay) as shown:
        token = _ACTIVE.set(shown)
        try:
            yield
        finally:
            _ACTIVE.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Mark the enclosed work as stage ``name`` ("load", "pass simplify", "codegen", ...)."""
    shown = _ACTIVE.get()
    if shown is None:
        yield
        return
    previous = shown.current, shown.detail
    shown.current, shown.detail = name, ""
    try:
        yield
    finally:
        shown.current, shown.detail = previous


def detail(text: str) -> None:
    """Say how far the current stage is ("kernels 12/53"); nothing without a display."""
    shown = _ACTIVE.get()
    if shown is not None:
        shown.detail = text


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-less stream
        return False
