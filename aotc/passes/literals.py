"""Facts about a literal's bytes, computed without copying big weights.

``tobytes()`` of a 400 MB constant makes 400 MB more (twice for a comparison with a full
array of its first element): these read the literal in place, and splat tests stop at the
first chunk that differs, which for real weights is the first.
"""

from __future__ import annotations

import numpy as np

#: Elements compared at a time by ``all_equal`` (a few MB of temporaries at most).
CHUNK = 1 << 20
#: Elements compared first.
PEEK = 64


def raw_bytes(array: np.ndarray) -> memoryview:
    """The literal's bytes in C order: a view, a copy only of a non-contiguous array."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return flat.view(np.uint8).data


def all_equal(array: np.ndarray) -> bool:
    """Whether every element has the bytes of the first (so -0.0 differs from 0.0, and a NaN
    equals a NaN with the same bits)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.size <= 1:
        return True
    rows = flat.view(np.uint8).reshape(flat.size, flat.itemsize)
    first = rows[0]
    # a short look first: real weights differ within a few elements, and comparing a whole
    # chunk of them was most of constant folding's time on MobileNetV2
    starts = [0, *range(PEEK, len(rows), CHUNK)]
    stops = [*starts[1:], len(rows)]
    return all(
        bool((rows[start:stop] == first).all()) for start, stop in zip(starts, stops, strict=True)
    )
