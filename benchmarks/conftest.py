"""Benchmarks (pytest-benchmark), kept apart from the test suite: run them with

    python -m pytest benchmarks --benchmark-only

They time real work on committed real data; docs/benchmarks.md records the figures.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
