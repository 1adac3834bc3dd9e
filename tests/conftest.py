import sys
from pathlib import Path

# Test helpers (fixtures.py, c_harness.py) live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
