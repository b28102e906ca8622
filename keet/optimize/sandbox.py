"""Run untrusted candidate programs (and their builds) in a subprocess with limits.

Limits, all applied in the child before exec, by a small Python launcher that sets them and
execs the command (not preexec_fn, which is unsafe in a process with threads: the loop builds
candidates on a thread pool):
- wall time: the parent kills the whole process group (the child starts its own session)
  when the time is up;
- memory: RLIMIT_DATA (heap and private writable mappings), not RLIMIT_AS: a CUDA process
  reserves a virtual address space of hundreds of GiB for unified addressing at start-up, so
  any useful RLIMIT_AS makes cuInit fail. RLIMIT_DATA leaves those reservations (PROT_NONE)
  alone; the parent also polls the child's resident set (VmRSS) and kills it above the limit,
  which catches memory that RLIMIT_DATA does not count;
- output: stdout and stderr go to files in the scratch folder and RLIMIT_FSIZE caps every file
  the child writes (a larger write gets SIGXFSZ); the parent reads back at most the cap;
- no core dumps; the environment is scrubbed of anything that looks like a secret.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 120.0
    memory_bytes: int = 8 << 30
    output_bytes: int = 256 << 20  # per file the child writes (outputs of large shapes included)
    log_bytes: int = 1 << 20  # how much of stdout/stderr is kept


@dataclass
class SandboxResult:
    command: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    killed: str | None = None  # "time", "memory", "output" or None
    signal_name: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed is None

    def summary(self) -> str:
        if self.killed == "time":
            return f"killed after {self.seconds:.1f} s (wall-time limit)"
        if self.killed == "memory":
            return "killed: memory limit"
        if self.killed == "output":
            return "killed: output-size limit"
        if self.signal_name:
            return f"died of {self.signal_name}"
        return f"exit status {self.returncode}"

    def as_dict(self) -> dict:
        return asdict(self)


def scrubbed_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without secrets (API keys, tokens, passwords)."""
    env = {name: value for name, value in os.environ.items() if not SECRET_NAME.search(name)}
    env.update(extra or {})
    return env


# argv: DATA_BYTES FSIZE_BYTES COMMAND...; exit status 127 when the command cannot start
_LAUNCHER = """
import os, resource, signal, sys
# Python ignores SIGXFSZ and SIGPIPE, and exec keeps ignored signals: restore the defaults
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
data, fsize = int(sys.argv[1]), int(sys.argv[2])
if data > 0:
    resource.setrlimit(resource.RLIMIT_DATA, (data, data))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
try:
    os.execvp(sys.argv[3], sys.argv[3:])
except OSError as exc:
    sys.stderr.write(f"cannot start {sys.argv[3]}: {exc}\\n")
    sys.exit(127)
"""


def _limited(command: list[str], limits: Limits) -> list[str]:
    return [sys.executable, "-I", "-c", _LAUNCHER, str(limits.memory_bytes), str(limits.output_bytes), *command]


def _resident_bytes(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _read_capped(path: Path, cap: int) -> str:
    with open(path, "rb") as handle:
        data = handle.read(cap + 1)
    text = data[:cap].decode(errors="replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


def run_limited(command: list[str], cwd: Path, limits: Limits = Limits(), env: dict[str, str] | None = None) -> SandboxResult:
    """Run ``command`` in ``cwd`` under ``limits``; never raises for what the child does."""
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / "sandbox.stdout", cwd / "sandbox.stderr"
    started = time.monotonic()
    killed = None
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            process = subprocess.Popen(
                _limited(command, limits), cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                env=env if env is not None else scrubbed_environment(), start_new_session=True,
            )
        except OSError as exc:
            return SandboxResult(command, None, "", f"cannot start: {exc}", 0.0)
        while process.poll() is None:
            if time.monotonic() - started > limits.wall_seconds:
                killed = "time"
            elif limits.memory_bytes > 0 and _resident_bytes(process.pid) > limits.memory_bytes:
                killed = "memory"
            if killed:
                _kill_group(process)
                break
            time.sleep(POLL_SECONDS)
    seconds = time.monotonic() - started
    code = process.returncode
    signal_name = signal.Signals(-code).name if code is not None and code < 0 else None
    if killed is None and signal_name == "SIGXFSZ":
        killed = "output"
    return SandboxResult(
        command, code, _read_capped(out_path, limits.log_bytes), _read_capped(err_path, limits.log_bytes),
        round(seconds, 3), killed, signal_name,
    )
