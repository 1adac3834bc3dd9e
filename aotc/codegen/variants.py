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

Kernels of other shapes merge the same way where they differ only in literals an argument
may stand for (``literals.py``: their comparisons', such as a GEMM tile's reduction length)
and in the sizes of the constants they read: the survivor takes those literals as trailing
integer arguments too (one per distinct column of the members' values), and its constant
parameters are dereferenceable by the least of the members' sizes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir

from aotc.codegen.irtypes import I8
from aotc.codegen.literals import MARK, LiteralReader

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


def share_constant_variants(
    functions: list[str], constants: dict[str, Constant], keep: frozenset[str] = frozenset()
) -> list[str]:
    """The texts of a module's defined ``functions``, those that differ only in the
    ``constants`` they read and in literals that may be arguments merged (see the module's
    docstring), as one text.

    Only functions all of whose callers are among ``functions`` merge: those called at least
    once there and named nowhere else. ``keep`` names those that something outside calls
    (part of a module compiled while the rest is emitted: ``stream.py``); they stay as they
    are, since a call there would keep the old name and arguments."""
    lines = "\n".join(functions).split("\n")
    merging = _Merging(constants, LiteralReader(), keep)
    for round_ in range(_MAX_ROUNDS):
        merged = _merge_round(lines, merging, round_)
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


@dataclass(frozen=True)
class _Merging:
    """What every round looks at: the module's read-only arrays, and the reader of literals
    (which remembers the lines it read)."""

    constants: dict[str, Constant]
    reader: LiteralReader
    keep: frozenset[str]  # called from outside the text: never merged


@dataclass
class _Member:
    """A function of a group of alike ones: where its text is, and what sets it apart."""

    start: int
    end: int
    name: str
    read: list[str]  # the constants it reads, in the order first read
    literals: list[tuple[str, str]]  # (type, text) of its literals that may be arguments


def _merge_round(lines: list[str], merging: _Merging, round_: int) -> list[str] | None:
    """One round: the text with each group of alike functions merged, or None if none is."""
    redirect: dict[str, tuple[str, list[str]]] = {}
    survivors: dict[int, list[str]] = {}
    dropped: set[int] = set()
    for members in _alike(lines, merging):
        first = members[0]
        body, extra = _parametrized(lines[first.start : first.end], members, merging, round_)
        survivors[first.start] = body
        for member, arguments in zip(members, extra, strict=True):
            redirect[member.name] = (first.name, arguments)
            if member is not first:
                dropped.update(range(member.start, member.end))
    if not redirect:
        return None
    return _rewrite(lines, survivors, dropped, redirect)


def _alike(lines: list[str], merging: _Merging) -> list[list[_Member]]:
    """The groups of two or more functions that differ only in their names, the constants
    they read and their literals that may be arguments, in the order of the text.

    Alike functions have as many lines and the same ``define`` line but for their names: that
    sorts out the functions that could be alike, so that only those are read line by line."""
    spans = _functions(lines)
    called = _only_called(lines, {name for _, _, name in spans}) - merging.keep
    coarse: dict[tuple[int, str], list[tuple[int, int, str]]] = {}
    for start, end, name in spans:
        if name in called:
            head = (end - start, _REFERENCE.sub("@", lines[start]))
            coarse.setdefault(head, []).append((start, end, name))
    groups: dict[str, list[_Member]] = {}
    for candidates in coarse.values():
        if len(candidates) < 2:
            continue
        for start, end, name in candidates:
            key, read, taken = _key(lines[start:end], name, merging)
            groups.setdefault(key, []).append(_Member(start, end, name, read, taken))
    return [members for members in groups.values() if len(members) > 1]


def _only_called(lines: list[str], names: set[str]) -> set[str]:
    """The ``names`` that appear only as the callee of ``call void`` (and in their own
    ``define``), at least once: no address taken, every caller in ``lines``."""
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
    return {n for n in names if calls.get(n, 0) >= 1 and refs[n] == calls[n] + 1}


def _key(
    body: list[str], name: str, merging: _Merging
) -> tuple[str, list[str], list[tuple[str, str]]]:
    """The function's text with its name, the constants it reads (numbered in the order read,
    with their alignment: their sizes may differ) and its literals that may be arguments set
    aside; those constants and literals."""
    read: list[str] = []
    constants = merging.constants

    def placeholder(match: re.Match[str]) -> str:
        ref = match.group(1)
        if ref == name:
            return "@\x02"
        if ref not in constants:
            return match.group(0)
        if ref not in read:
            read.append(ref)
        return f"@\x03{read.index(ref)}:{constants[ref].align}"

    masked, taken = merging.reader.take(body[1:])
    return _REFERENCE.sub(placeholder, body[0] + "\n" + "\n".join(masked)), read, taken


def _parametrized(
    body: list[str], members: list[_Member], merging: _Merging, round_: int
) -> tuple[list[str], list[list[str]]]:
    """The survivor's text, the constants and the literals its ``members`` differ in as
    trailing arguments (named by round: a survivor may merge again once its callees did),
    and each member's values of those arguments."""
    params, extra = _constant_arguments(members, merging.constants, round_)
    literal_params, fill = _literal_arguments(members, round_, extra)
    head = body[0]
    close = _closing_paren(head, head.index("("))
    lines = [head[:close] + "".join(params + literal_params) + head[close:]]
    args = {ref: f'%"aotc.constant.{round_}.{k}"' for k, ref in enumerate(members[0].read)}

    def argument(match: re.Match[str]) -> str:
        return args.get(match.group(1), match.group(0))

    pieces = "\n".join(merging.reader.take(body[1:])[0]).split(MARK)
    text = pieces[0] + "".join(v + piece for v, piece in zip(fill, pieces[1:], strict=True))
    lines += _REFERENCE.sub(argument, text).split("\n")
    return lines, extra


def _constant_arguments(
    members: list[_Member], constants: dict[str, Constant], round_: int
) -> tuple[list[str], list[list[str]]]:
    """The parameters taking the constants the members read (``noalias readonly``, with the
    alignment they share and the least of their sizes: what LLVM knew of every member's
    globals), and each member's arguments for them."""
    params = []
    for k, ref in enumerate(members[0].read):
        size = min(constants[m.read[k]].size for m in members)
        params.append(
            f", ptr noalias nonnull readonly align {constants[ref].align} "
            f'dereferenceable({size}) %"aotc.constant.{round_}.{k}"'
        )
    return params, [[f'ptr @"{ref}"' for ref in m.read] for m in members]


def _literal_arguments(
    members: list[_Member], round_: int, extra: list[list[str]]
) -> tuple[list[str], list[str]]:
    """The parameters taking the literals the members differ in (one per distinct column of
    values), each member's values appended to its ``extra`` arguments; and what each literal
    of the survivor's text becomes, in order: its value where all members agree, else its
    parameter."""
    params: list[str] = []
    fill: list[str] = []
    columns: dict[tuple[str, ...], str] = {}
    for slot, (ty, value) in enumerate(members[0].literals):
        column = (ty, *(m.literals[slot][1] for m in members))
        if all(v == value for v in column[1:]):
            fill.append(value)
            continue
        if column not in columns:
            columns[column] = f'%"aotc.literal.{round_}.{len(columns)}"'
            params.append(f", {ty} {columns[column]}")
            for arguments, v in zip(extra, column[1:], strict=True):
                arguments.append(f"{ty} {v}")
        fill.append(columns[column])
    return params, fill


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
    """``line`` with a call of a merged function made a call of its survivor, with the
    member's trailing arguments."""
    at = line.find('call void @"')
    if at < 0:
        return line
    match = _REFERENCE.match(line, at + len("call void "))
    if match is None or match.group(1) not in redirect:
        return line
    kept, arguments = redirect[match.group(1)]
    close = _closing_paren(line, match.end())
    extra = "".join(f", {argument}" for argument in arguments)
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
