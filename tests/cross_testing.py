"""Cross targets the tests run models on, and the tools (Debian packages) each needs.

Each ``CrossTarget`` is a target aotc compiles for plus the ``c_harness`` toolchains that link
and run programs for it on this machine: a cross gcc (static links, so qemu-user needs no
sysroot) and qemu-user. ``require`` skips a test whose tools are missing, with the package to
install as the reason; under CI (``CI`` set) it fails instead, since ``.ci/run`` installs
them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import pytest
from c_harness import HOST, Toolchain

from aotc.driver import TargetOverrides


@dataclass(frozen=True)
class CrossTarget:
    """A target, and the toolchains (by name) that build and run its programs here."""

    target: TargetOverrides
    toolchains: dict[str, Toolchain]
    packages: tuple[str, ...]  # the Debian packages that provide the tools
    levels: dict[str, int] = field(default_factory=dict)  # <name>_cpu_level() by toolchain


def _linux(triple: str, gcc: str, qemu: str, package: str) -> CrossTarget:
    return CrossTarget(
        TargetOverrides(triple=triple), {qemu: Toolchain((gcc, "-static"), (qemu,))}, (package,)
    )


def host_cpu_level() -> int:
    """The x86-64 level a portable object picks on this machine (LLVM reads the same cpuid and
    XCR0 bits), or 0 elsewhere."""
    if llvm.get_triple_parts(llvm.get_process_triple()).Arch != "x86_64":
        return 0
    features = set(llvm.get_host_cpu_features().flatten().split(","))
    v3 = {f"+{f}" for f in ("avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe")}
    v4 = {f"+avx512{f}" for f in ("f", "bw", "cd", "dq", "vl")}
    return 4 if v3 | v4 <= features else 3 if v3 <= features else 1


# x86-64 by default (no cpu: portable, dispatching among cpu levels) runs natively and as two
# older cpus, one without AVX (Nehalem: level 1) and one with AVX2 but no AVX-512 (Haswell:
# level 3): qemu faults on any newer instruction, as a real cpu would.
CROSS_TARGETS: dict[str, CrossTarget] = {
    "aarch64": _linux(
        "aarch64-unknown-linux-gnu",
        "aarch64-linux-gnu-gcc",
        "qemu-aarch64",
        "gcc-aarch64-linux-gnu",
    ),
    "armv7": _linux(
        "armv7-unknown-linux-gnueabihf",
        "arm-linux-gnueabihf-gcc",
        "qemu-arm",
        "gcc-arm-linux-gnueabihf",
    ),
    "riscv64": _linux(
        "riscv64-unknown-linux-gnu",
        "riscv64-linux-gnu-gcc",
        "qemu-riscv64",
        "gcc-riscv64-linux-gnu",
    ),
    "x86-64": CrossTarget(
        TargetOverrides(triple="x86_64-unknown-linux-gnu"),
        {
            "native": HOST,
            "qemu Nehalem": Toolchain(HOST.cc, ("qemu-x86_64", "-cpu", "Nehalem")),
            "qemu Haswell": Toolchain(HOST.cc, ("qemu-x86_64", "-cpu", "Haswell")),
        },
        (),
        {"native": host_cpu_level(), "qemu Nehalem": 1, "qemu Haswell": 3},
    ),
}


def require(tools: list[str], packages: tuple[str, ...]) -> None:
    """Skip (under CI: fail) unless every program in ``tools`` is on PATH."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not missing:
        return
    reason = f"{', '.join(missing)} not found (Debian packages: {' '.join(packages)})"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; .ci/run installs them, so CI must have them")
    pytest.skip(reason)


def require_toolchains(cross: CrossTarget) -> None:
    tools = {t for chain in cross.toolchains.values() for t in (chain.cc[0], *chain.run[:1])}
    require(sorted(tools), (*cross.packages, "qemu-user"))
