"""A module's LLVM work split over worker processes, the objects joined into one
(``codegen/split.py``, ``workers.py``, ``elf_join.py``).

The chunk size is lowered so that a small module (a raw constant added, a dot with packed
weights, a small table multiplied) splits into many chunks, the entry in chunk 0 calling
kernels in the others: the joined object exports the entry points only (the kernels called
across chunks are local again), is the same bytes for any number of workers, links with the
C compiler and computes what the evaluator does, natively and under qemu (aarch64, armv7 with
REL relocations, riscv64, x86-64 cpu levels), bit for bit as the object compiled whole.
"""

from __future__ import annotations

import os
import re
import select
import signal
from collections.abc import Iterator

import numpy as np
import pytest
from c_harness import entry_points, exported_and_undefined_symbols, run_compiled_level
from codegen_testing import compile_entry
from cross_testing import CROSS_TARGETS, require_toolchains
from hlo_programs import build
from test_elf_constants import _module, _spec

from aotc.codegen import emitter, split, stream, workers
from aotc.codegen.elf_join import join_objects
from aotc.codegen.irtypes import ModuleParts
from aotc.codegen.target import PORTABLE, TargetSpec, create_target_machine
from aotc.errors import CodegenError
from aotc.hlo.builder import ComputationBuilder, ModuleBuilder
from aotc.hlo.evaluate import evaluate
from aotc.hlo.ir import Instruction, Module, Opcode
from aotc.hlo.shape import PrimitiveType, Shape

RNG = np.random.default_rng(15)


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[split.Chunks]]:
    """Chunks of any size; the chunks of each compile that split, as it made them."""
    made: list[split.Chunks] = []
    original = stream.ObjectCode.finish

    def recording(code: stream.ObjectCode, parts: object) -> tuple[bytes, object]:
        done = original(code, parts)  # type: ignore[arg-type]
        if code.splitter.chunks:
            made.append(split.Chunks(list(code.pool.store.texts()), code.splitter.shared))
        return done  # type: ignore[return-value]

    monkeypatch.setattr(split, "CHUNK_BYTES", 1)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 1)
    monkeypatch.setattr(stream.ObjectCode, "finish", recording)
    yield made
    workers.set_codegen_workers(None)


def _compiled(spec: TargetSpec, jobs: int) -> bytes:
    workers.set_codegen_workers(jobs)
    return compile_entry(_module(), "m", spec).object_bytes


def test_the_object_is_the_same_bytes_for_any_number_of_workers(
    tiny_chunks: list[split.Chunks],
) -> None:
    spec = TargetSpec("x86_64-unknown-linux-gnu", PORTABLE)
    one, two, three = (_compiled(spec, jobs) for jobs in (1, 2, 3))
    assert one == two == three
    chunks = tiny_chunks[0]
    assert len(chunks.texts) >= 4 and chunks.shared, "the entry calls kernels in other chunks"
    defined, undefined = exported_and_undefined_symbols(one)
    assert defined == entry_points("m")  # the kernels called across chunks are local again
    assert not {s for s in undefined if "kernel" in s}, undefined


@pytest.mark.parametrize("target_name", sorted(CROSS_TARGETS))
def test_the_joined_object_computes_what_the_whole_one_does(
    target_name: str, tiny_chunks: list[split.Chunks], monkeypatch: pytest.MonkeyPatch
) -> None:
    cross = CROSS_TARGETS[target_name]
    require_toolchains(cross)
    module = _module()
    inputs = [RNG.standard_normal((64, 96)).astype(np.float32), np.ones(16, np.float32)]
    workers.set_codegen_workers(2)
    joined = compile_entry(module, "m", _spec(target_name))
    assert tiny_chunks and len(tiny_chunks[0].texts) > 1
    monkeypatch.setattr(split, "CHUNK_BYTES", 1 << 40)
    monkeypatch.setattr(stream, "CHUNK_BYTES", 1 << 40)
    whole = compile_entry(module, "m", _spec(target_name))
    assert len(tiny_chunks) == 1, "the whole module is not split"
    expected = evaluate(module, inputs)
    for runner, toolchain in cross.toolchains.items():
        got, _, _ = run_compiled_level(joined, inputs, toolchain=toolchain)
        want, _, _ = run_compiled_level(whole, inputs, toolchain=toolchain)
        for j, (a, b, e) in enumerate(zip(got, want, expected, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"{runner} result {j}")
            scale = float(np.max(np.abs(e)))
            np.testing.assert_allclose(a, e, atol=2e-5 * scale, err_msg=f"{runner} {j}")


def test_objects_the_join_refuses_are_compiled_whole(
    tiny_chunks: list[split.Chunks], monkeypatch: pytest.MonkeyPatch
) -> None:
    module = _module()
    inputs = [RNG.standard_normal((64, 96)).astype(np.float32), np.ones(16, np.float32)]
    monkeypatch.setattr(stream, "join_objects", lambda *_: None)
    workers.set_codegen_workers(2)
    whole = compile_entry(module, "m", TargetSpec("x86_64-unknown-linux-gnu", PORTABLE))
    assert len(tiny_chunks[0].texts) > 4, "the levels were dealt"
    got, _, _ = run_compiled_level(whole, inputs)
    for a, e in zip(got, evaluate(module, inputs), strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_a_small_module_is_compiled_whole_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("a small module must not be split")

    monkeypatch.setattr(workers.Pool, "add", refuse)
    compile_entry(_module(), "m", TargetSpec())


def test_each_level_is_compiled_while_the_next_is_emitted(
    tiny_chunks: list[split.Chunks], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first chunks go to the pool at level 1's end, holding only level 1's functions
    (its bodies wait for the dispatching entry, in the last part's chunk 0), and the object
    is the same bytes for any number of workers."""
    added: list[tuple[list[bytearray], int]] = []
    emitted = [0]
    original_add, original_kernel = workers.Pool.add, emitter._emit_program

    def add(pool: workers.Pool, texts: list[bytearray]) -> None:
        added.append((texts, emitted[0]))
        original_add(pool, texts)

    def program(*args: object) -> None:
        original_kernel(*args)  # type: ignore[arg-type]
        emitted[0] += 1

    monkeypatch.setattr(workers.Pool, "add", add)
    monkeypatch.setattr(emitter, "_emit_program", program)
    spec = TargetSpec("x86_64-unknown-linux-gnu", PORTABLE)
    two = _compiled(spec, 2)
    programs = emitted[0]  # two a level: single-threaded and multi-core
    assert programs == 6 and [at for _, at in added] == [2, 4, 6, 6]
    first, last = (_defined(texts) for texts in (added[0][0], added[-1][0]))
    assert first and all(n.startswith("x86-64.") for n in first)
    assert {"m_run_buffers.x86-64", "m_run_buffers"} <= last
    assert two == _compiled(spec, 1) == _compiled(spec, 3)


def test_an_error_in_a_worker_is_a_codegen_error() -> None:
    tm, _ = create_target_machine(TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    texts = [bytearray(b"define void @f() {\n  ret void\n}\n\0"), bytearray(b"not IR\0")]
    with pytest.raises(CodegenError, match="invalid LLVM IR"):
        workers.compile_chunks(texts, tm, 2)


def test_objects_of_different_machines_are_not_joined() -> None:
    x86 = compile_entry(_module(), "m", TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    arm = compile_entry(_module(), "m", _spec("aarch64"))
    assert join_objects([x86.object_bytes, arm.object_bytes], set()) is None


def _defined(texts: list[bytearray]) -> set[str]:
    """The functions defined in ``texts``."""
    found = re.findall(rb'^define [^@]*@"?([^"(]+)', b"".join(texts), re.M)
    return {name.decode() for name in found}


def test_a_worker_compiles_chunks_made_after_its_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text of a chunk added once the workers are forked reaches them whole."""

    def compiled(text: bytearray, tm: object) -> bytes:
        return b"%d:%s" % (os.getpid(), bytes(text))

    monkeypatch.setattr(workers, "_compile", compiled)
    tm, _ = create_target_machine(TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    later = bytearray(RNG.integers(1, 256, 300_000, np.uint8).tobytes() + b"\0")
    with workers.Pool(tm, 2) as pool:
        pool.add([bytearray(b"first\0")])
        (forked,) = pool.children
        pool.add([later.copy()])
        for _ in range(6000):  # until the worker has taken it (a minute at most, loaded)
            if not select.select([pool.queue[0]], [], [], 0.01)[0]:
                break
        first, second = pool.finish()
    assert first == b"%d:first\0" % forked and second == b"%d:%s" % (forked, bytes(later))


def test_a_worker_killed_is_a_codegen_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(text: bytearray, tm: object) -> bytes:
        os.kill(os.getpid(), signal.SIGKILL)  # in the forked worker: as the OOM killer would
        raise AssertionError("not reached")

    monkeypatch.setattr(workers, "_compile", killed)
    tm, _ = create_target_machine(TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    with pytest.raises(CodegenError, match="killed by signal 9"):
        workers.compile_chunks([bytearray(b"\0"), bytearray(b"\0")], tm, 2)


def test_a_bug_in_a_worker_is_an_internal_error_with_its_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(text: bytearray, tm: object) -> bytes:
        raise AssertionError("a broken invariant")

    monkeypatch.setattr(workers, "_compile", broken)
    tm, _ = create_target_machine(TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    with pytest.raises(RuntimeError, match="worker: AssertionError: a broken invariant"):
        workers.compile_chunks([bytearray(b"\0"), bytearray(b"\0")], tm, 2)


def _fn(name: str, calls: list[str], internal: bool = True, noinline: bool = True) -> str:
    body = "".join(f'  call void @"{callee}"()\n' for callee in calls)
    head = f'define {"internal " if internal else ""}void @"{name}"(){" noinline" * noinline}'
    return f"{head} {{\n{body}  ret void\n}}"


def _part(*functions: str) -> ModuleParts:
    return ModuleParts(bytearray(b"; prelude"), list(functions), b"\n\0")


def test_a_part_calls_functions_of_parts_dealt_before_and_after() -> None:
    """A level's kernels are hidden where its body, held for the last part, calls them; a
    shared kernel (in no part yet) that a level's kernel calls is declared, and hidden once
    dealt; a function a kernel in no part yet calls is never inlined into its chunk."""
    splitter = split.Splitter()
    level = _part(
        _fn("body", ["k1", "k2"], noinline=False), _fn("k1", ["shared", "tile"]), _fn("k2", [])
    )
    context = [_fn("shared", []), _fn("once", ["tile"])]
    level.functions.append(_fn("tile", [], noinline=False))
    texts, held = splitter.deal(level, 2, context, final=False)
    assert [t.partition("\n")[0] for t in held] == ['define internal void @"body"() {']
    dealt = _defined([bytearray(t) for t in texts])
    assert dealt == {"k1", "k2", "tile"} and len(texts) == 2
    assert {"k1", "k2", "tile"} <= splitter.shared and splitter.exposed == {"shared"}
    assert all(b'declare hidden void @"shared"()' in t for t in texts if b'@"k1"' in t)
    last = _part(_fn("entry", ["body"], internal=False), *held, *context)
    final, _ = splitter.deal(last, 1)
    assert _defined(final) == {"entry", "body", "shared", "once"}
    assert b'define hidden void @"shared"()' in final[0] and not splitter.exposed
    assert splitter.symbols() == {b"k1", b"k2", b"tile", b"shared"}


def _twin_tables() -> Module:
    """Two kernels small enough to be emitted once for every level, alike but for the
    tables they read (``variants`` makes them one: every level's bodies call it)."""
    shapes = [Shape(PrimitiveType.F32, (16,))] * 2
    tables = RNG.standard_normal((2, 16)).astype(np.float32)

    def body(mb: ModuleBuilder, b: ComputationBuilder, ps: list[Instruction]) -> list[Instruction]:
        return [
            b.binary(Opcode.MULTIPLY, p, b.constant(t.copy()))
            for p, t in zip(ps, tables, strict=True)
        ]

    return build(shapes, body)


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 40], ids=["streamed", "whole"])
def test_kernels_emitted_once_merge_whether_levels_stream_or_not(
    chunk_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(stream, "CHUNK_BYTES", chunk_bytes)
    module = _twin_tables()
    workers.set_codegen_workers(2)
    try:
        model = compile_entry(module, "m", TargetSpec("x86_64-unknown-linux-gnu", PORTABLE))
    finally:
        workers.set_codegen_workers(None)
    assert len(re.findall(r'^define [^@]*@"?kernel\.multiply', model.llvm_ir, re.M)) == 1
    inputs = [RNG.standard_normal(16).astype(np.float32) for _ in range(2)]
    got, _, _ = run_compiled_level(model, inputs)
    for a, e in zip(got, evaluate(module, inputs), strict=True):
        np.testing.assert_array_equal(a, e)
