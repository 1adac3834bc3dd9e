"""The import contract: which parts of aotc may import which, written down once.

Stages are called in one direction (docs/architecture.md): the CLI calls the driver and API,
which call the front end, the passes and codegen; all three work on the HLO; everything may use
the base modules. An import against these arrows fails this test, naming the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "aotc"

# layer -> the layers it may import (besides itself). Modules not listed in LAYER_OF are the
# driver layer (driver, api, cache, jit, runner, inspection, report, progress, ...).
ALLOWED = {
    "base": set(),
    "hlo": {"base"},
    "frontend": {"hlo", "base"},
    "passes": {"hlo", "base"},
    "codegen": {"hlo", "base"},
    "driver": {"frontend", "passes", "codegen", "hlo", "base"},
    "cli": {"driver", "frontend", "passes", "codegen", "hlo", "base"},
}
BASE = {
    "errors",
    "abi",
    "bfloat16",
    "registry",
    "atomic",
    "proto",
    "config",
    "tensor_ref",
    "progress",
    "toposort",
}
FRONTEND = {"tf2xla_config"}  # tfcompile's config format, read with the front end's dtype tables


def layer_of(module: str) -> str:
    """``aotc.hlo.ir`` -> "hlo"; ``aotc.errors`` -> "base"; ``aotc.cli`` -> "cli"."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top in ("hlo", "frontend", "passes", "codegen"):
        return top
    if top in FRONTEND:
        return "frontend"
    if top in BASE:
        return "base"
    return "cli" if top in ("cli", "__main__") else "driver"


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every aotc module ``path`` imports, relative and ``from aotc import x`` forms included."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            package = _absolute(path, node.module, node.level)
            found.append((node.lineno, package))
            # `from aotc.pkg import mod` imports the submodule aotc.pkg.mod where one exists
            found += [
                (node.lineno, f"{package}.{alias.name}")
                for alias in node.names
                if _is_module(f"{package}.{alias.name}")
            ]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name == "aotc" or name.startswith("aotc.")]


def _absolute(path: Path, module: str | None, level: int) -> str:
    """The absolute module of ``from <dots><module> import ...`` written in ``path``."""
    if level == 0:
        return module or ""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_imports_follow_the_layers() -> None:
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        importer = _module_name(path)
        mine = layer_of(importer)
        for line, imported in _imports(path):
            theirs = layer_of(imported)
            if imported != "aotc" and theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{path.relative_to(ROOT.parent)}:{line}: {mine} imports {imported}")
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_the_contract_itself() -> None:
    assert layer_of("aotc.hlo.ir") == "hlo" and layer_of("aotc.errors") == "base"
    assert layer_of("aotc.driver") == "driver" and layer_of("aotc.cli") == "cli"
    here = ROOT / "passes" / "fusion.py"
    assert _absolute(here, None, 1) == "aotc.passes" and _absolute(here, "hlo", 2) == "aotc.hlo"
    assert _is_module("aotc.progress") and not _is_module("aotc.__version__")
    for layer, allowed in ALLOWED.items():
        assert layer not in allowed and allowed <= set(ALLOWED)
