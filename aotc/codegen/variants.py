"""Kernels that differ only in the constants they read become one function.

Models repeat blocks of one shape with other weights (EfficientNetB0's MBConv blocks,
MobileNetV2's inverted residuals), and each block's kernels read their pre-packed weights as
private globals of their own, so their bodies differ in nothing but those globals' names: 41 %
of MobileNetV2's machine code and 44 % of EfficientNetB0's was such copies, compiled by LLVM
once each. ``share_constant_variants`` works on the functions' text (``irtypes.module_bytes``
hands it over before it goes into the module's bytes): each group of internal functions with
the same text once their own name and the private constants they read are set aside keeps its
first member, which takes those constants as trailing ``ptr`` arguments (``noalias readonly``,
with the globals' alignment and size, so LLVM knows what it knew of the globals); every call
of a member calls the survivor with the member's constants. Callers of merged functions may
become alike in turn, so it repeats until nothing merges. A function whose address is taken
(a thread-pool task) is left alone, and so are functions the object exports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.irtypes import I8

_NAME = r'@"((?:[^"\\]|\\.)*)"'
_REFERENCE = re.compile(_NAME)
_DEFINE = re.compile(r"^define internal void " + _NAME + r"\(")
#: A merge pass repeats while it merges; callers alike only once their callees merged.
_MAX_ROUNDS = 8


@dataclass(frozen=True)
class Constant:
    """A read-only byte array a kernel may read: its size and alignment."""

    size: int
    align: int


def read_only_arrays(module: ir.Module) -> dict[str, Constant]:
    """The constant ``i8`` arrays of ``module`` (constants, packed weights: with their bytes,
    or declared where ``elf_constants`` lifted them), by name."""
    found = {}
    for gv in module.global_values:
        ty = getattr(gv, "value_type", None)
        if not isinstance(ty, ir.ArrayType) or ty.element != I8:
            continue
        if getattr(gv, "global_constant", False):
            found[gv.name] = Constant(ty.count, gv.align or 1)
    return found


def share_constant_variants(functions: list[str], constants: dict[str, Constant]) -> list[str]:
    """The texts of a module's defined ``functions``, those that differ only in the
    ``constants`` they read merged (see the module's docstring), as one text."""
    lines = "\n".join(functions).split("\n")
    for round_ in range(_MAX_ROUNDS):
        merged = _merge_round(lines, constants, round_)
        if merged is None:
            break
        lines = merged
    return ["\n".join(lines)]


def _functions(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, line after the closing brace, name) of each internal void function."""
    spans, start, name = [], -1, ""
    for k, line in enumerate(lines):
        if line.startswith("define "):
            match = _DEFINE.match(line)
            start, name = (k, match.group(1)) if match else (-1, "")
        elif line == "}" and start >= 0:
            spans.append((start, k + 1, name))
            start = -1
    return spans


def _merge_round(lines: list[str], constants: dict[str, Constant], round_: int) -> list[str] | None:
    """One round: the text with each group of alike functions merged, or None if none is."""
    spans = _functions(lines)
    called = _only_called(lines, {name for _, _, name in spans})
    groups: dict[str, list[tuple[int, int, str, list[str]]]] = {}
    for start, end, name in spans:
        if name not in called:
            continue
        key, read = _key(lines[start:end], name, constants)
        groups.setdefault(key, []).append((start, end, name, read))
    redirect: dict[str, tuple[str, list[str]]] = {}
    survivors: dict[int, list[str]] = {}
    dropped: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        start, end, kept, read = members[0]
        survivors[start] = _parametrized(lines[start:end], read, constants, round_)
        for m_start, m_end, name, m_read in members:
            redirect[name] = (kept, m_read)
            if name != kept:
                dropped.update(range(m_start, m_end))
    if not redirect:
        return None
    return _rewrite(lines, survivors, dropped, redirect)


def _only_called(lines: list[str], names: set[str]) -> set[str]:
    """The ``names`` that appear only as the callee of ``call void`` (and in their own
    ``define``): no address taken."""
    refs: dict[str, int] = {}
    calls: dict[str, int] = {}
    for line in lines:
        if '@"' not in line:
            continue
        for match in _REFERENCE.finditer(line):
            name = match.group(1)
            if name in names:
                refs[name] = refs.get(name, 0) + 1
                head = line[: match.start()]
                if head.endswith("call void ") and line[match.end() : match.end() + 1] == "(":
                    calls[name] = calls.get(name, 0) + 1
    return {n for n in names if refs.get(n, 0) == calls.get(n, 0) + 1}


def _key(body: list[str], name: str, constants: dict[str, Constant]) -> tuple[str, list[str]]:
    """The function's text with its name and the constants it reads set aside (numbered in the
    order read, with their sizes), and those constants."""
    read: list[str] = []

    def placeholder(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref == name:
            return "@\x02"
        if ref not in constants:
            return match.group(0)
        if ref not in read:
            read.append(ref)
        c = constants[ref]
        return f"@\x03{read.index(ref)}:{c.size}:{c.align}"

    text = "\n".join(_REFERENCE.sub(placeholder, line) for line in body)
    return text, read


def _parametrized(
    body: list[str], read: list[str], constants: dict[str, Constant], round_: int
) -> list[str]:
    """The survivor's text: ``read``'s constants as trailing arguments (named by round: a
    survivor may merge again once its callees did)."""
    if not read:
        return body
    args = {ref: f'%"aotc.constant.{round_}.{k}"' for k, ref in enumerate(read)}
    params = "".join(
        f", ptr noalias nonnull readonly align {constants[ref].align} "
        f"dereferenceable({constants[ref].size}) {args[ref]}"
        for ref in read
    )
    head = body[0]
    close = _closing_paren(head, head.index("("))
    lines = [head[:close] + params + head[close:]]

    def argument(match: re.Match[str]) -> str:
        return args.get(match.group(1), match.group(0))

    lines += [_REFERENCE.sub(argument, line) if '@"' in line else line for line in body[1:]]
    return lines


def _rewrite(
    lines: list[str],
    survivors: dict[int, list[str]],
    dropped: set[int],
    redirect: dict[str, tuple[str, list[str]]],
) -> list[str]:
    out: list[str] = []
    k = 0
    while k < len(lines):
        if k in survivors:
            body = survivors[k]
            out.append(body[0])
            out.extend(_redirected(line, redirect) for line in body[1:])
            k = _end_of(lines, k)
            continue
        if k not in dropped:
            out.append(_redirected(lines[k], redirect))
        k += 1
    return out


def _end_of(lines: list[str], start: int) -> int:
    k = start
    while lines[k] != "}":
        k += 1
    return k + 1


def _redirected(line: str, redirect: dict[str, tuple[str, list[str]]]) -> str:
    """``line`` with a call of a merged function made a call of its survivor."""
    at = line.find('call void @"')
    if at < 0:
        return line
    match = _REFERENCE.match(line, at + len("call void "))
    if match is None or match.group(1) not in redirect:
        return line
    kept, read = redirect[match.group(1)]
    close = _closing_paren(line, match.end())
    extra = "".join(f', ptr @"{ref}"' for ref in read)
    return f'{line[:at]}call void @"{kept}"{line[match.end() : close]}{extra}{line[close:]}'


def _closing_paren(text: str, open_at: int) -> int:
    """The index of the parenthesis closing the one at ``open_at``."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    raise AssertionError(f"unbalanced parentheses in {text[:80]!r}")
