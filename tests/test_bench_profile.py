"""Smoke test of the per-kernel profiler (``bench/profile.py``) on a small fixture."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _profile_module():
    spec = importlib.util.spec_from_file_location("aotc_bench_profile", ROOT / "bench/profile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_profile_table_lists_every_kernel() -> None:
    profile = _profile_module()
    times, total = profile.profile_model(ROOT / "tests/data/tf/model_unet.pb", None, runs=1)
    # One timing run is noisy: check what was measured, not how long it took.
    assert total >= 0 and times and all(t.seconds >= 0 for t in times)
    assert times == sorted(times, key=lambda t: -t.seconds)
    assert any("convolution" in t.what for t in times)
    table = profile.format_table(times, total, top=3)
    assert "GFLOP/s" in table and f"sum of {len(times)} kernels" in table
    assert "n/a GFLOP/s" in profile.format_table(times, 0.0, top=3)  # no division by zero
