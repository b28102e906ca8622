"""Start-up cost of a fresh interpreter: `import keet.errors` (what perfmodel, microbench's
runner and every rule import), `keet --help` and `perfmodel gpus`. Targets (issue 18):
`import keet.errors` under 50 ms more than the bare interpreter, the two commands under 0.5 s.
Each round is a new process, as a user's command is; docs/benchmarks.md records the figures.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = {
    "bare interpreter": ["-c", "pass"],
    "import keet.errors": ["-c", "import keet.errors"],
    "from keet import load_profile": ["-c", "from keet import load_profile"],
    "keet --help": ["-c", "from keet.cli import main; main()", "--help"],
    "perfmodel gpus": ["-c", "from perfmodel.cli import main; main()", "gpus"],
    "microbench --help": ["-c", "from microbench.cli import main; main()", "--help"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_start_up(benchmark, case: str) -> None:
    command = [sys.executable, *CASES[case]]
    result = benchmark.pedantic(subprocess.run, args=(command,), kwargs={"capture_output": True, "check": True},
                                rounds=10, iterations=1, warmup_rounds=1)
    assert result.returncode == 0
