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

# module -> body key -> name of the function kept (names only: no reference back to the module)
_SEEN: weakref.WeakKeyDictionary[ir.Module, dict[bytes, str]] = weakref.WeakKeyDictionary()


def share(module: ir.Module, fn: ir.Function) -> ir.Function:
    """``fn``, or the identical function emitted before it (``fn`` is then removed)."""
    text = str(fn)
    header, _, body = text.partition("\n")
    header = header.replace(fn.get_reference(), "@", 1)
    key = hashlib.blake2b(f"{header}\n{body}".encode(), digest_size=20).digest()
    seen = _SEEN.setdefault(module, {})
    existing = seen.get(key)
    if existing is None:
        seen[key] = fn.name
        return fn
    del module.globals[fn.name]
    kept = module.globals[existing]
    assert isinstance(kept, ir.Function)
    return kept
