"""keet.sandbox's limits in trusted mode (no namespaces: `keet optimize --no-sandbox`):
wall-time, memory and output limits, process-group kill, scrubbed environment, and a command
that cannot start. The isolated mode is tested against a hostile program in
test_hostile_sandbox.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from keet.sandbox import Limits, run_limited

PY = sys.executable


def test_wall_time_limit_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = ("import subprocess, time; p = subprocess.Popen(['sleep', '60']); open('child.pid', 'w').write(str(p.pid)); "
              "time.sleep(60); open('finished', 'w')")
    result = run_limited([PY, "-c", script], tmp_path, Limits(wall_seconds=1.0))
    assert result.killed == "time" and not result.ok
    assert not (tmp_path / "finished").exists()  # cut short at the limit, not left to run its minute
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not alive(child)  # the grandchild died with the group


def alive(pid: int) -> bool:
    """Running (a killed process that nobody reaped yet is a zombie: dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_memory_limit_stops_a_program_that_allocates_too_much(tmp_path: Path) -> None:
    script = "x = bytearray(1 << 30); print('allocated', len(x))"
    result = run_limited([PY, "-c", script], tmp_path, Limits(memory_bytes=256 << 20))
    assert not result.ok
    assert "allocated" not in result.stdout
    assert result.killed == "memory" or "MemoryError" in result.stderr


def test_a_program_within_the_limits_runs_normally(tmp_path: Path) -> None:
    result = run_limited([PY, "-c", "x = bytearray(16 << 20); print('ok', len(x))"], tmp_path, Limits(memory_bytes=1 << 30))
    assert result.ok and result.stdout.strip() == f"ok {16 << 20}"


def test_output_size_limit_kills_a_program_that_writes_too_much(tmp_path: Path) -> None:
    # a C program (Python itself ignores SIGXFSZ and would see EFBIG instead)
    result = run_limited(["dd", "if=/dev/zero", "of=big.bin", "bs=1M", "count=64"], tmp_path, Limits(output_bytes=4 << 20))
    assert result.killed == "output" and result.signal_name == "SIGXFSZ"
    assert (tmp_path / "big.bin").stat().st_size <= 4 << 20


def test_logs_are_read_back_capped(tmp_path: Path) -> None:
    result = run_limited([PY, "-c", "print('x' * 100000)"], tmp_path, Limits(log_bytes=1000))
    assert result.ok and result.stdout.endswith("[output truncated]") and len(result.stdout) < 1100


def test_secrets_do_not_reach_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("KEET_HARMLESS", "visible")
    script = "import os; print(os.environ.get('OPENAI_API_KEY', 'absent'), os.environ.get('KEET_HARMLESS'))"
    result = run_limited([PY, "-c", script], tmp_path)
    assert result.stdout.split() == ["absent", "visible"]


def test_a_command_that_cannot_start_is_a_result_not_an_exception(tmp_path: Path) -> None:
    result = run_limited([str(tmp_path / "no-such-program")], tmp_path)
    assert result.returncode == 127 and "cannot start" in result.stderr and not result.ok
