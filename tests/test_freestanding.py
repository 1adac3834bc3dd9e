"""Objects that need no C library: linked with ``-nostdlib -ffreestanding``, and run bare metal.

An f32 model object leaves no symbol undefined (``nm``), the portable x86-64 one with its cpu
dispatch too; the code and constant sizes its header states are binutils' (``size -A``).
Linked into a program with no C library and no start files (``c_harness.run_freestanding``)
it runs as a static x86-64 Linux program that talks to the kernel through raw system calls,
and as a bare-metal program on an emulated Cortex-M4 board with FPU (QEMU's ``mps2-an386``:
code at 0, RAM at 0x20000000), printing through semihosting; both outputs must match TensorFlow's.
"""

from __future__ import annotations

import platform
import subprocess
import tempfile
from pathlib import Path

import pytest
from c_harness import (
    CC,
    Freestanding,
    entry_points,
    exported_and_undefined_symbols,
    run_freestanding,
)
from cross_testing import require
from fixtures import Fixture, assert_close, load_example, load_fixture

from aotc.codegen import CompiledModel
from aotc.codegen.sizes import ObjectSizes
from aotc.driver import TargetOverrides, compile_graph

# GCC may turn loops into memset/memcpy/strlen calls even when freestanding: keep them loops.
_NO_LIBC = ("-O1", "-std=c99", "-Wall", "-Werror", "-ffreestanding", "-nostdlib")
_NO_LIBCALLS = ("-fno-tree-loop-distribute-patterns", "-fno-stack-protector")

LINUX_X86_64 = Freestanding(
    glue=r"""
static long syscall3(long number, long a, long b, long c) {
  long result;
  __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return result;
}

static void put(const char *text) {
  long n = 0;
  while (text[n]) ++n;
  syscall3(1, 1, (long)text, n);  /* write(1, text, n) */
}

void start(void) { syscall3(60, run_model(), 0, 0); }  /* exit(status) */

/* The kernel enters with the stack 16-byte aligned and no return address: realign, call. */
__asm__(".globl _start\n_start:\n  xor %ebp, %ebp\n  and $-16, %rsp\n  call start\n  hlt\n");
""",
    cc=(CC, *_NO_LIBC, *_NO_LIBCALLS, "-static", "-nostartfiles"),
)

CORTEX_M4 = Freestanding(
    glue=r"""
#include <stdint.h>

/* Arm semihosting: the debugger (here QEMU) serves the call at a bkpt 0xab. */
static int semihost(int operation, const void *argument) {
  register int r0 __asm__("r0") = operation;
  register const void *r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static void put(const char *text) { semihost(0x04, text); }  /* SYS_WRITE0 */

/* SYS_EXIT: ApplicationExit makes QEMU exit 0, any other reason exits 1. */
static void finish(int ok) {
  semihost(0x18, (const void *)(uintptr_t)(ok ? 0x20026 : 0x20023));
  for (;;) {}
}

static void fault(void) { put("fault\n"); finish(0); }

extern uint32_t __bss_start__[], __bss_end__[], __stack_top[];

void reset(void) {
  for (uint32_t *p = __bss_start__; p < __bss_end__; ++p) *p = 0;
  /* CPACR: full access to the FPU (coprocessors 10 and 11) before any float instruction. */
  *(volatile uint32_t *)0xE000ED88 |= 0xFu << 20;
  __asm__ volatile("dsb\n  isb");
  finish(run_model() == 0);
}

/* Initial stack pointer, then reset, NMI, HardFault, MemManage, BusFault, UsageFault. */
__attribute__((section(".vectors"), used)) static void *const vectors[7] = {
    __stack_top, reset, fault, fault, fault, fault, fault};
""",
    cc=(
        "arm-none-eabi-gcc",
        "-mcpu=cortex-m4",
        "-mthumb",
        "-mfloat-abi=hard",
        "-mfpu=fpv4-sp-d16",
        *_NO_LIBC,
        *_NO_LIBCALLS,
        "-T",
        "mps2.ld",
    ),
    run=(
        "qemu-system-arm",
        "-M",
        "mps2-an386",
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-kernel",
    ),
    files=(
        (
            "mps2.ld",
            """
MEMORY {
  CODE (rx) : ORIGIN = 0x00000000, LENGTH = 4M
  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 4M
}
ENTRY(reset)
SECTIONS {
  .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) *(.ARM.exidx*) } > CODE
  .data : { *(.data*) } > RAM
  .bss (NOLOAD) : { __bss_start__ = .; *(.bss*) *(COMMON) . = ALIGN(4); __bss_end__ = .; } > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}
""",
        ),
    ),
)


def _compile(name: str, target: TargetOverrides) -> tuple[Fixture, CompiledModel]:
    """The fixture and its model compiled for ``target``, which must leave nothing undefined."""
    fx = load_example() if name == "mlp" else load_fixture(name)
    model = compile_graph(fx.graph, fx.config, target).model
    defined, undefined = exported_and_undefined_symbols(model.object_bytes)
    assert defined == entry_points(fx.name)
    assert not undefined, f"{name} for {model.target.triple} needs {sorted(undefined)}"
    return fx, model


def _section_sizes(size_tool: str, model: CompiledModel) -> ObjectSizes:
    """Code and read-only data bytes of the model's object, as binutils' ``size -A`` lists
    its sections, for the header and report to agree with."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "model.o")
        path.write_bytes(model.object_bytes)
        listing = subprocess.run([size_tool, "-A", str(path)], capture_output=True, text=True)
    sections = [line.split() for line in listing.stdout.splitlines()[2:]]
    sizes = {fields[0]: int(fields[1]) for fields in sections if len(fields) == 3}
    text = sum(n for name, n in sizes.items() if name.startswith(".text"))
    return ObjectSizes(text, sum(n for name, n in sizes.items() if name.startswith(".rodata")))


@pytest.mark.parametrize("name", ["mlp", "model_lenet", "model_transformer"])
def test_f32_model_links_with_nostdlib_and_runs(name: str) -> None:
    if platform.machine() != "x86_64" or platform.system() != "Linux":
        pytest.skip("the freestanding start-up code is x86-64 Linux's")
    fx, model = _compile(name, TargetOverrides(triple="x86_64-unknown-linux-gnu"))
    assert len(model.levels) > 1, "the default x86-64 object dispatches among cpu levels"
    assert model.sizes == _section_sizes("size", model)
    results = run_freestanding(model, fx.args, LINUX_X86_64)
    for i, (got, want) in enumerate(zip(results, fx.results, strict=True)):
        assert_close(got, want, what=f"{name} result{i}")


@pytest.mark.parametrize("triple", ["i686-unknown-linux-gnu", "armv7-unknown-linux-gnueabihf"])
def test_32_bit_index_arithmetic_needs_no_libgcc(triple: str) -> None:
    # LeNet's reshapes divide element numbers: 64-bit divisions would call __udivdi3 there
    _compile("model_lenet", TargetOverrides(triple=triple))


def test_mlp_runs_bare_metal_on_a_cortex_m4() -> None:
    tools = ["arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm"]
    require(tools, ("gcc-arm-none-eabi", "binutils-arm-none-eabi", "qemu-system-arm"))
    fx, model = _compile("mlp", TargetOverrides(triple="thumbv7em-none-eabihf"))
    assert model.target.cpu == "cortex-m4"
    sizes = _section_sizes("arm-none-eabi-size", model)
    assert model.sizes == sizes
    assert f"Size: .text {sizes.text} bytes (code), .rodata {sizes.rodata} bytes" in model.header
    (got,) = run_freestanding(model, fx.args, CORTEX_M4)
    assert_close(got, fx.results[0], what="mlp on a Cortex-M4")
