"""Regenerate the Python modules in aotc/proto/ from the schemas in protos/.

Usage: python tools/gen_protos.py [OUT_DIR]   (default: aotc/proto)

The output is deterministic for a given grpcio-tools version; tests/test_protos.py regenerates
into a temporary directory and fails when the committed modules differ.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"
PACKAGE_DIR = ROOT / "aotc" / "proto"
PACKAGE = "aotc.proto"

# protoc writes `import foo_pb2 as foo__pb2` when one schema imports another; inside the
# package that has to be an absolute import.
_BARE_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def proto_sources() -> list[Path]:
    """The .proto files to compile, sorted so the output does not depend on listing order."""
    return sorted(PROTO_DIR.glob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Run protoc on every schema into ``out_dir``; returns the written files, sorted."""
    # Imported here: only regeneration needs grpc_tools, never aotc itself.
    from grpc_tools import protoc  # type: ignore[import-untyped]

    out_dir.mkdir(parents=True, exist_ok=True)
    # grpc_tools ships the well-known types (google/protobuf/any.proto, ...) the schema imports.
    well_known = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{well_known}", f"--python_out={out_dir}"]
    args.append(f"--pyi_out={out_dir}")
    status = protoc.main(args + [str(p) for p in proto_sources()])
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    written = sorted(out_dir.glob("*_pb2.py*"))
    for path in written:
        _fix_imports(path)
    return written


def _fix_imports(path: Path) -> None:
    text = path.read_text()
    fixed = _BARE_IMPORT.sub(rf"from {PACKAGE} import \1 as \2", text)
    if fixed != text:
        path.write_text(fixed)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[1]) if len(argv) > 1 else PACKAGE_DIR
    for path in generate(out_dir):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
