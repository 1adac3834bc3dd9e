"""``aotc inspect`` of HLO text: the arguments and results aotc would compile (named as in the
header), the instructions by opcode, and the bytes held in constants."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from aotc.errors import UsageError
from aotc.frontend.hlo_input import load_hlo
from aotc.hlo.ir import Opcode
from aotc.hlo.shape import Shape
from aotc.inspection.common import Placeholder, histogram, human_bytes, ops_line


@dataclass
class HloSummary:
    """What ``aotc inspect`` reports on an HLO module; ``asdict`` of it is the ``--json``."""

    path: str
    module: str
    instruction_count: int
    ops: dict[str, int]
    parameters: list[Placeholder]
    results: list[Placeholder]
    constant_bytes: int
    format: str = "hlo"

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def format_text(self, max_names: int | None = None) -> str:
        """One fact per line, as for a GraphDef."""
        return "\n".join(
            [
                f"{self.path}: HLO module {self.module}, {self.instruction_count} instructions, "
                f"{human_bytes(self.constant_bytes)} in constants",
                ops_line(self.ops),
                "arguments:" + ("" if self.parameters else " none"),
                *[f"  {p.text()}" for p in self.parameters],
                "results:",
                *[f"  {r.text()}" for r in self.results],
            ]
        )

    def config_bytes(self, config_path: str) -> bytes:
        raise UsageError(
            f"--emit-config {config_path}: HLO text needs no config (its names and shapes are "
            "fixed); write one only to rename arguments and results"
        )


def inspect_hlo(path: str | Path) -> HloSummary:
    """Parse and verify the HLO text in ``path`` and summarize what aotc would compile."""
    loaded = load_hlo(path)
    entry, signature = loaded.module.entry, loaded.signature
    instructions = [i for c in loaded.module.computations for i in c.instructions]
    results = [r.array_shape for r in entry.root.operands]
    return HloSummary(
        path=str(path),
        module=loaded.module.name,
        instruction_count=len(instructions),
        ops=histogram(i.opcode.value for i in instructions),
        parameters=[
            _tensor(f.name, p.array_shape)
            for f, p in zip(signature.feeds, entry.parameters, strict=True)
        ],
        results=[_tensor(f.name, r) for f, r in zip(signature.fetches, results, strict=True)],
        constant_bytes=sum(
            i.array_shape.byte_size for i in instructions if i.opcode is Opcode.CONSTANT
        ),
    )


def _tensor(name: str, shape: Shape) -> Placeholder:
    return Placeholder(name, str(np.dtype(shape.dtype.numpy)), list(shape.dims))
