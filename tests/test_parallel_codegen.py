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
import signal
from collections.abc import Iterator

import numpy as np
import pytest
from c_harness import entry_points, exported_and_undefined_symbols, run_compiled_level
from codegen_testing import compile_entry
from cross_testing import CROSS_TARGETS, require_toolchains
from test_elf_constants import _module, _spec

from aotc.codegen import split, workers
from aotc.codegen.elf_join import join_objects
from aotc.codegen.target import PORTABLE, TargetSpec, create_target_machine
from aotc.errors import CodegenError
from aotc.hlo.evaluate import evaluate

RNG = np.random.default_rng(15)


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[split.Chunks]]:
    """Chunks of any size; the chunks each compile split into, as it made them."""
    made: list[split.Chunks] = []
    original = split.split_module

    def recording(parts: object, count: int) -> split.Chunks:
        chunks = original(parts, count)  # type: ignore[arg-type]
        made.append(chunks)
        return chunks

    monkeypatch.setattr(split, "CHUNK_BYTES", 1)
    monkeypatch.setattr("aotc.codegen.compile.split_module", recording)
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


def test_a_small_module_is_compiled_whole_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("a small module must not be split")

    monkeypatch.setattr("aotc.codegen.compile.compile_chunks", refuse)
    compile_entry(_module(), "m", TargetSpec())


def test_an_error_in_a_worker_is_a_codegen_error() -> None:
    tm, _ = create_target_machine(TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    texts = [bytearray(b"define void @f() {\n  ret void\n}\n\0"), bytearray(b"not IR\0")]
    with pytest.raises(CodegenError, match="invalid LLVM IR"):
        workers.compile_chunks(texts, tm, 2)


def test_objects_of_different_machines_are_not_joined() -> None:
    x86 = compile_entry(_module(), "m", TargetSpec("x86_64-unknown-linux-gnu", "x86-64"))
    arm = compile_entry(_module(), "m", _spec("aarch64"))
    assert join_objects([x86.object_bytes, arm.object_bytes], set()) is None


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
