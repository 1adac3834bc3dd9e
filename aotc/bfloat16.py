"""bfloat16 as a numpy dtype, ml_dtypes', imported on first use.

Importing ml_dtypes takes about half a second (its extension registers casts between all of
its types and numpy's), longer than compiling a small model, and only bf16 models need it.
This module depends on nothing else in aotc.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.cache
def bfloat16() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dtype: np.dtype) -> bool:
    """Without importing ml_dtypes: a bfloat16 array exists only once it is imported."""
    return dtype.name == "bfloat16" and dtype == bfloat16()
