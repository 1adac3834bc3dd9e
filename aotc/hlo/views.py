"""Strided views: where each element of an array made only by data movement lies in a buffer.

A chain of reshapes, transposes, slices and broadcasts over a row-major parameter moves no
arithmetic: element ``x[i0, i1, ...]`` is the buffer's float at ``offset + sum(i_k-part *
stride)``. A ``View`` keeps, per logical dimension, its *atoms* ``(size, stride)`` outer
first (a dimension merged from two non-adjacent ones has two atoms; a broadcast one has stride
0), so a reshape that regroups dimensions is exact whatever the strides. The attention kernel
(``aotc/hlo/attention_plan.py``) reads its operands through views instead of copies made by
separate transpose kernels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Atom = tuple[int, int]  # (size, stride in elements)


@dataclass(frozen=True)
class View:
    """``offset`` plus, per logical dimension, its atoms (size > 1 each; none for size 1)."""

    offset: int
    dims: tuple[tuple[Atom, ...], ...]

    @staticmethod
    def row_major(dims: Sequence[int]) -> View:
        """The view of a row-major array of ``dims`` at offset 0."""
        strides = [math.prod(dims[k + 1 :]) for k in range(len(dims))]
        return View(
            0, tuple(((n, s),) if n > 1 else () for n, s in zip(dims, strides, strict=True))
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(math.prod(n for n, _ in atoms) for atoms in self.dims)

    def transpose(self, permutation: Sequence[int]) -> View:
        """HLO's transpose: output dimension ``k`` is this view's ``permutation[k]``."""
        return View(self.offset, tuple(self.dims[p] for p in permutation))

    def broadcast(self, out_dims: Sequence[int], dimensions: Sequence[int]) -> View:
        """HLO's broadcast: this view's dimension ``k`` is output dimension ``dimensions[k]``."""
        dims: list[tuple[Atom, ...]] = [((n, 0),) if n > 1 else () for n in out_dims]
        for k, d in enumerate(dimensions):
            dims[d] = self.dims[k]
        return View(self.offset, tuple(dims))

    def slice(
        self, starts: Sequence[int], limits: Sequence[int], steps: Sequence[int]
    ) -> View | None:
        """HLO's slice, or None where a sliced dimension has more than one atom."""
        offset, dims = self.offset, []
        for atoms, start, limit, step in zip(self.dims, starts, limits, steps, strict=True):
            size = -(-(limit - start) // step)
            if size == math.prod(n for n, _ in atoms) and start == 0:
                dims.append(atoms)
                continue
            if len(atoms) != 1:
                return None
            stride = atoms[0][1]
            offset += start * stride
            dims.append(((size, stride * step),) if size > 1 else ())
        return View(offset, tuple(dims))

    def reshape(self, out_dims: Sequence[int]) -> View | None:
        """HLO's reshape (row-major regrouping), or None where an atom would have to be cut
        across a boundary it does not divide."""
        pending: list[Atom] = []
        for n, stride in (a for atoms in self.dims for a in atoms):
            if pending and pending[-1][1] == n * stride:  # contiguous with the outer one
                pending[-1] = (pending[-1][0] * n, stride)
            else:
                pending.append((n, stride))
        pending.reverse()  # popped outer first
        dims = []
        for size in out_dims:
            taken: list[Atom] = []
            left = size
            while left > 1:
                if not pending:
                    return None
                n, stride = pending.pop()
                if left % n == 0:
                    taken.append((n, stride))
                    left //= n
                elif n % left == 0:
                    taken.append((left, stride * (n // left)))
                    pending.append((n // left, stride))
                    left = 1
                else:
                    return None
            dims.append(tuple(taken))
        return View(self.offset, tuple(dims)) if not pending else None

    def simple(self, dim: int) -> int | None:
        """The stride of dimension ``dim`` when it has one atom (or is size 1: 0), else None."""
        atoms = self.dims[dim]
        if not atoms:
            return 0
        return atoms[0][1] if len(atoms) == 1 else None
