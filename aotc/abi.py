"""Facts of the generated C ABI: alignment, the element types of arguments and results, and
what makes a valid C symbol. Shared by the config, the front end, codegen and the header; this
module depends on nothing else in aotc but ``aotc.bfloat16``."""

from __future__ import annotations

import re

import numpy as np

from aotc.bfloat16 import bfloat16

#: Alignment in bytes of the caller's temp buffer, of every offset in it, and of constants:
#: a cache line, and the width of the widest vector loads (AVX-512).
ALIGN = 64

# The element types an argument or result may have (feeds, fetches, config `dtype:`), by numpy
# name. A complex element is its (re, im) pair of floats, as C's `float _Complex`.
SUPPORTED_DTYPES: tuple[str, ...] = (
    "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "bfloat16",
)  # fmt: skip


def supported_dtype(name: str) -> np.dtype:
    """The numpy dtype of a name in ``SUPPORTED_DTYPES``."""
    return bfloat16() if name == "bfloat16" else np.dtype(name)


def is_supported_dtype(dtype: np.dtype) -> bool:
    """Whether arguments and results may have ``dtype`` (native byte order only)."""
    return dtype.name in SUPPORTED_DTYPES and dtype == supported_dtype(dtype.name)


# C11/C23 keywords, plus C++ keywords since the header is also compiled as C++.
# fmt: off
C_KEYWORDS = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "bool", "true", "false", "nullptr",
    "alignas", "alignof", "constexpr", "static_assert", "thread_local", "typeof", "typeof_unqual",
    "_Alignas", "_Alignof", "_Atomic", "_BitInt", "_Bool", "_Complex", "_Decimal128",
    "_Decimal32", "_Decimal64", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert",
    "_Thread_local", "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t",
    "char32_t", "class", "compl", "concept", "consteval", "constinit", "const_cast", "co_await",
    "co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export", "friend",
    "mutable", "namespace", "new", "noexcept", "not", "not_eq", "operator", "or", "or_eq",
    "private", "protected", "public", "reinterpret_cast", "requires", "static_cast", "template",
    "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
))
# fmt: on


def c_identifier(text: str) -> str:
    """A valid, non-reserved C identifier made from ``text`` ("my-model.v2" -> "my_model_v2")."""
    ident = re.sub(r"[^A-Za-z0-9_]", "_", text)
    if not ident:
        return "model"
    # Leading digits are invalid, and a leading underscore is reserved at file scope.
    if ident[0].isdigit() or ident[0] == "_":
        ident = "m" + ident
    if ident in C_KEYWORDS:
        ident += "_"
    return ident


_CPP_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def cpp_class_parts(text: str) -> list[str]:
    """``foo::bar::MyClass`` (or ``::foo::MyClass``) -> ``["foo", "bar", "MyClass"]``: the
    namespaces, then the class name, as tfcompile's ``--cpp_class`` takes them. Raises
    ``ValueError`` saying what is wrong with which part (the caller names the text and where
    it was given)."""
    parts = text[2:].split("::") if text.startswith("::") else text.split("::")
    for part in parts:
        if not _CPP_IDENTIFIER.match(part):
            raise ValueError(f"{part!r} is not a C++ identifier (expected ns::Class)")
        if part in C_KEYWORDS:
            raise ValueError(f"{part!r} is a C++ keyword")
        if "__" in part or (part[0] == "_" and part[1:2].isupper()):
            raise ValueError(f"{part!r} is reserved for the C++ implementation")
    return parts
