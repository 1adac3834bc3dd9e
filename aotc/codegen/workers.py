"""The chunks of one compile (``split.py``) optimized and compiled in parallel processes.

A ``Pool`` takes chunks as they are made (``add``: a cpu level's, while the next is being
emitted, ``stream.py``). Workers are forked at the first ``add``, more at later ones up to
one fewer than the processes asked for: they share the parent's pages (the emitted model, its
constants) copy-on-write and build their LLVM modules after the fork, from the target machine
the parent made (LLVM holds no threads in it: forking is safe, as the target probe in
``target.py`` does it). A chunk's text goes into a file in memory all processes share
(``ChunkStore``: no process's heap holds it) and its place into a queue (a pipe), each
``add``'s biggest chunk first; a worker takes the next one as soon as it is done with its
last, so a worker sees the text made after its fork through that file. Once the parent has
made every chunk (``finish``) it forks the last worker, in its own place (no core idle; the
parent's heap, which the join needs next, never holds an LLVM module's memory). Each worker
sends its objects back through a pipe of its own when the queue is empty and closed, and
exits. The objects do not depend on which worker compiled them. With one process (one
usable cpu) the chunks are compiled one after the other in this process at ``finish``, once
the Python IR is freed: the same bytes.

How many processes: ``set_codegen_workers`` (the command line's ``-j``, divided among the
models it compiles at once), else the ``AOTC_CODEGEN_JOBS`` environment variable, else the
cpus this process may use.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import struct
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

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
    with Pool(tm, min(workers, len(texts))) as pool:
        pool.add(texts)
        return pool.finish()


#: A queue record: the chunk's number, where its text starts in the shared file, its length.
_RECORD = struct.Struct("<IQQ")


class ChunkStore:
    """The chunks' texts, in a file in memory (where the system has such files) that forked
    workers share: neither this process's heap nor theirs holds them meanwhile."""

    def __init__(self) -> None:
        self.file: BinaryIO | None = None  # made with the first chunk
        self.places: list[tuple[int, int]] = []  # each chunk's offset and length

    def put(self, text: bytearray) -> tuple[int, int, int]:
        """Store the next chunk: its number, offset and length."""
        if self.file is None:
            self.file = (
                os.fdopen(os.memfd_create("aotc-chunks"), "w+b")
                if hasattr(os, "memfd_create")
                else tempfile.TemporaryFile()  # noqa: SIM115 - open while the store lives
            )
        offset = sum(self.places[-1]) if self.places else 0
        os.pwrite(self.file.fileno(), text, offset)
        self.places.append((offset, len(text)))
        return len(self.places) - 1, offset, len(text)

    def text(self, offset: int, length: int) -> bytearray:
        """The text stored at ``offset``."""
        assert self.file is not None
        text = bytearray()
        while len(text) < length:
            piece = os.pread(self.file.fileno(), length - len(text), offset + len(text))
            assert piece, "a chunk's text is in the file before its record is in the queue"
            text += piece
        return text

    def texts(self) -> Iterator[bytearray]:
        """Every chunk's text, in order."""
        return (self.text(offset, length) for offset, length in self.places)


class Pool:
    """Compiles the chunks ``add`` is given in up to ``processes`` processes (see the module
    docstring); a context manager: leaving it ends the workers not collected (a failed
    compile). The texts stay in ``store``."""

    def __init__(self, tm: llvm.TargetMachine, processes: int) -> None:
        self.tm = tm
        self.processes = processes if hasattr(os, "fork") else 1
        self.store = ChunkStore()
        self.children: dict[int, int] = {}  # pid -> the read end of its answer pipe
        self.queue: list[int] = []  # the queue's read end, and its write end until finish

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *_: object) -> None:
        for pid, reader in self.children.items():
            _end(pid, reader)
        self.children.clear()
        self._close()

    def add(self, texts: list[bytearray]) -> None:
        """Compile ``texts``, the next chunks (numbered on from the last ``add``)."""
        places = [self.store.put(text) for text in texts]
        if self.processes <= 1:
            return
        if not self.queue:
            self.queue = list(os.pipe())
        for k, offset, length in sorted(places, key=lambda p: (-p[2], p[0])):
            os.write(self.queue[1], _RECORD.pack(k, offset, length))  # atomic: < PIPE_BUF
        self._fork(min(self.processes - 1, len(self.store.places)))

    def finish(self) -> list[bytes]:
        """The objects of every chunk added, in order."""
        if self.processes <= 1:
            return [_compile(text, self.tm) for text in self.store.texts()]
        objects: dict[int, bytes] = {}
        if self.queue:
            os.close(self.queue.pop())
            self._fork(min(self.processes, len(self.store.places)))
        while self.children:
            pid, reader = next(iter(self.children.items()))
            del self.children[pid]
            objects.update(_collect(pid, reader))
        self._close()
        return [objects[k] for k in range(len(self.store.places))]

    def _fork(self, count: int) -> None:
        """Fork workers until there are ``count``."""
        while len(self.children) < count:
            pid, reader = _fork(self.queue, self.store, self.tm)
            self.children[pid] = reader

    def _close(self) -> None:
        while self.queue:
            os.close(self.queue.pop())


def _compile(text: bytearray, tm: llvm.TargetMachine) -> bytes:
    return emit_object(optimize_parsed(parse_ir(text), tm), tm)


def _fork(queue: list[int], store: ChunkStore, tm: llvm.TargetMachine) -> tuple[int, int]:
    """A worker compiling the chunks it takes from ``queue``: its pid and the read end of
    the pipe it answers through."""
    reader, writer = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child never returns into the caller's code
        status = 1
        try:
            gc.disable()  # a collection would touch, and so copy, every page it shares
            os.close(reader)
            if len(queue) == 2:  # the queue ends when the parent closes its write end
                os.close(queue[1])
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            try:
                result: object = _taken_objects(queue[0], store, tm, parent)
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


def _taken_objects(
    queue: int, store: ChunkStore, tm: llvm.TargetMachine, parent: int
) -> list[tuple[int, bytes]]:
    """The objects of the chunks this process takes from the queue, one at a time, until it
    is empty and closed, or the ``parent`` that would collect them is gone."""
    objects = []
    while os.getppid() == parent and (record := os.read(queue, _RECORD.size)):
        assert len(record) == _RECORD.size, "the queue's records are written whole"
        k, offset, length = _RECORD.unpack(record)
        objects.append((k, _compile(store.text(offset, length), tm)))
    return objects


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
