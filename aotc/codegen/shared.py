"""Share identical internal functions within one LLVM module.

Code generators that emit one helper function per call site (the GEMM engine's driver and
micro-kernels, ``kernels/gemm.py``) often emit the very same body many times: convolutions of
one shape, dots with one plan, the same bias + relu epilogue. ``share(module, fn)`` keeps the
first of each identical body and drops the later copies, so LLVM optimizes and compiles each
body once. Identity is the function's printed IR with its own name left out (its signature,
attributes and body, callees by name): exact, and it needs no key listing everything a body
depends on (plan, vector shape, options, epilogue). Callers share callees before callers, so
a caller's text names the surviving callees. The survivor keeps the first emitter's name, so
naming stays deterministic.
"""

from __future__ import annotations

import hashlib
import weakref

from llvmlite import ir

from aotc.codegen.ir_print import function_text
from aotc.codegen.replay import note_share

# module -> body key -> name of the function kept (names only: no reference back to the module)
_SEEN: weakref.WeakKeyDictionary[ir.Module, dict[bytes, str]] = weakref.WeakKeyDictionary()


def share(module: ir.Module, fn: ir.Function) -> ir.Function:
    """``fn``, or the identical function emitted before it (``fn`` is then removed)."""
    text = function_text(fn)
    kept = share_text(module, fn.name, text)
    note_share(fn.name, kept, text)
    if kept == fn.name:
        return fn
    del module.globals[fn.name]
    existing = module.globals[kept]
    assert isinstance(existing, ir.Function)
    return existing


def share_text(module: ir.Module, name: str, text: str) -> str:
    """The name of the function identical to the function ``name`` printed as ``text`` (``name``
    itself, now known, if it is the first)."""
    header, _, body = text.partition("\n")
    header = header.replace(f'@"{name}"', "@", 1)
    key = hashlib.blake2b(f"{header}\n{body}".encode(), digest_size=20).digest()
    return _SEEN.setdefault(module, {}).setdefault(key, name)
