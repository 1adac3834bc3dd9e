"""The chunks of one compile (``split.py``) optimized and compiled in parallel processes.

Workers are forked once the chunks' texts exist: they share the parent's pages (the emitted
model, its constants) copy-on-write and build their LLVM modules after the fork, from the
target machine the parent made (LLVM holds no threads in it: forking is safe, as the target
probe in ``target.py`` does it). Workers take chunks from a queue (a pipe), biggest first,
each as soon as it is done with its last; each sends its objects back through a pipe of its
own and exits. The objects do not depend on which worker compiled them. With one worker (one
usable cpu) the chunks are compiled one after the other in this process: the same bytes.

How many workers: ``set_codegen_workers`` (the command line's ``-j``, divided among the
models it compiles at once), else the ``AOTC_CODEGEN_JOBS`` environment variable, else the
cpus this process may use.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
from collections.abc import Iterator

import llvmlite.binding as llvm

from aotc.codegen.target import emit_object, optimize_parsed, parse_ir
from aotc.errors import CodegenError

_WORKERS: list[int] = []  # set_codegen_workers' number, if set


def set_codegen_workers(count: int | None) -> None:
    """Compile one model's chunks in up to ``count`` processes (None: the default)."""
    _WORKERS[:] = [] if count is None else [max(1, count)]


def codegen_workers() -> int:
    """The processes a model's chunks are compiled in (see the module docstring)."""
    if _WORKERS:
        return _WORKERS[0]
    env = os.environ.get("AOTC_CODEGEN_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def compile_chunks(texts: list[bytearray], tm: llvm.TargetMachine, workers: int) -> list[bytes]:
    """Each chunk's relocatable object, in order, from up to ``workers`` processes."""
    if workers <= 1 or not hasattr(os, "fork"):
        return [_compile(text, tm) for text in texts]
    queue = _queue(texts)
    try:
        children = [_fork(texts, queue, tm) for _ in range(min(workers, len(texts)))]
    finally:
        os.close(queue)
    objects: dict[int, bytes] = {}
    waiting = dict(children)
    try:
        for pid, reader in children:
            del waiting[pid]
            objects.update(_collect(pid, reader))
    finally:
        for pid, reader in waiting.items():
            _end(pid, reader)
    return [objects[k] for k in range(len(texts))]


def _compile(text: bytearray, tm: llvm.TargetMachine) -> bytes:
    return emit_object(optimize_parsed(parse_ir(text), tm), tm)


def _queue(texts: list[bytearray]) -> int:
    """The read end of a pipe holding the chunk numbers, biggest chunk first: each worker takes
    the next one when it is done with its last (a 4-byte read of 4-byte records is atomic), so
    chunks whose LLVM time is not in proportion to their size still balance."""
    reader, writer = os.pipe()
    order = sorted(range(len(texts)), key=lambda k: (-len(texts[k]), k))
    with os.fdopen(writer, "wb") as stream:  # 4 bytes a chunk: far below the pipe's buffer
        stream.write(b"".join(struct.pack("<I", k) for k in order))
    return reader


def _fork(texts: list[bytearray], queue: int, tm: llvm.TargetMachine) -> tuple[int, int]:
    """A worker compiling the chunks it takes from ``queue``: its pid and the read end of
    the pipe it answers through."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller's code
        status = 1
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:
                result: object = [(k, _compile(texts[k], tm)) for k in _taken(queue)]
            except CodegenError as err:
                result = str(err)
            except Exception as err:  # noqa: BLE001 - a bug: the parent reports it as one
                result = ("bug", f"{type(err).__name__}: {err}")
            with os.fdopen(writer, "wb") as stream:
                pickle.dump(result, stream)
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    return pid, reader


def _taken(queue: int) -> Iterator[int]:
    """The chunk numbers this worker takes from the queue, one at a time, until it is empty."""
    while record := os.read(queue, 4):
        yield struct.unpack("<I", record)[0]


def _collect(pid: int, reader: int) -> list[tuple[int, bytes]]:
    """What a worker sent; its error is raised here."""
    with os.fdopen(reader, "rb") as stream:
        data = stream.read()
    status = os.waitpid(pid, 0)[1]
    if status != 0 or not data:
        how = (
            f"was killed by signal {os.WTERMSIG(status)} (out of memory?)"
            if os.WIFSIGNALED(status)
            else f"exited with status {os.waitstatus_to_exitcode(status)} (LLVM aborted: its "
            "message is above)"
        )
        raise CodegenError(f"a code generation worker process {how}; -j 1 compiles in this process")
    result = pickle.loads(data)
    if isinstance(result, str):
        raise CodegenError(result)
    if isinstance(result, tuple):
        raise RuntimeError(f"in a code generation worker: {result[1]}")
    return result  # type: ignore[no-any-return]


def _end(pid: int, reader: int) -> None:
    """End a worker not collected yet (the compile failed in another) and wait for it."""
    os.close(reader)
    os.kill(pid, signal.SIGKILL)  # not waited for yet: the pid is still this worker's
    os.waitpid(pid, 0)
