import sys
from pathlib import Path

import pytest

# Test helpers (fixtures.py, c_harness.py) live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _private_compile_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # `aotc compile` caches by default; each test gets an empty cache of its own, so no test
    # sees another's entries and nothing is written under the user's home.
    monkeypatch.setenv("AOTC_CACHE_DIR", str(tmp_path_factory.mktemp("aotc-cache")))
