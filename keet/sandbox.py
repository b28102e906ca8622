"""Run untrusted programs (candidate builds and runs, a source file's host code) with limits,
isolated by bubblewrap.

Two modes, chosen by the caller:

- sandboxed (``isolation=Isolation(...)``): the command runs under bwrap with new user, PID,
  mount, network, IPC, UTS and cgroup namespaces; bwrap is PID 1 inside, so nothing outside
  the sandbox is visible in /proc (no parent's /proc/PID/environ), and killing it ends every
  process of the namespace, setsid() daemons included. The filesystem is the host's, read-only,
  with the places where secrets usually live (/home, /root, $HOME, /var/tmp, /run/user,
  /run/secrets and the working directory) hidden under empty read-only tmpfs; only the
  ``writable`` folders are writable, /tmp and /dev/shm are a folder inside the first of them,
  and ``readable`` folders (a toolkit, the Python environment) are mounted back read-only.
  /dev holds only null, zero, random, tty and the like (plus the GPU's nodes with ``gpu``).
  The environment is empty but for PATH, HOME, TMPDIR, LANG, the CUDA device and library
  selection variables and what the caller passes; bwrap itself starts with the same clean
  environment (a sandboxed process can read PID 1's /proc/1/environ). No network at all.
  Where bwrap is missing or cannot create namespaces, :func:`sandbox_problem` says why and
  run_limited raises SandboxUnavailable: never a silent fallback.
- trusted (``isolation=None``): the same limits without namespaces, for code a person wrote
  (``keet optimize --no-sandbox``) and tools run on trusted input; the environment is the
  caller's less anything that looks like a secret.

Standard library only (the foundation layer): keet optimize and perfmodel's launch discovery
both run untrusted code through it.

Limits (both modes). A small Python launcher sets the rlimits in the child and execs the
command (not preexec_fn, unsafe in a process with threads: the loop builds on a thread pool):
- per process: RLIMIT_DATA = the memory limit (not RLIMIT_AS: a CUDA process reserves hundreds
  of GiB of address space at start-up), RLIMIT_FSIZE = the output limit, RLIMIT_NPROC = the
  process limit (counted per user namespace, so per sandbox; the kernel exempts uid 0, so as
  root only the watcher below counts processes), no core dumps;
- for the whole tree, by a watcher in the parent every 50 ms: the private memory (RssAnon +
  RssShmem) summed over every process, the number of processes, and the bytes and files that
  appeared in the writable folders (the output limit is a total, not per file); any of them
  over its limit, or the wall time, kills the tree (in sandboxed mode PID 1, which takes the
  namespace with it). Between two polls the tree can overshoot by what it allocates or writes
  in 50 ms; no process can exceed the per-process caps at all.
- stdout and stderr go to files in the working folder, read back capped from keet's own
  handles (a program that replaces the files cannot feed keet a FIFO or a link).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from keet.errors import KeetError

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
POLL_SECONDS = 0.05
BWRAP_VARIABLE = "KEET_BWRAP"  # a bwrap to use instead of the one on PATH (e.g. unpacked from the .deb)
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"
# Variables a sandboxed program gets from keet's environment: device selection and where the
# driver's libraries are, nothing a secret could hide in.
PASSED_THROUGH = ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                  "ROCR_VISIBLE_DEVICES")
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Hidden in the sandbox: where keys, tokens and a user's files usually are.
HIDDEN = ("/home", "/root", "/var/tmp", "/run/user", "/run/secrets")
# Never hidden (the toolchains live there), even when they are the working directory.
SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix", "/gnu",
          "/proc", "/sys", "/dev", "/boot", "/snap", "/var/lib")
GPU_NODES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri", "/dev/kfd")
TMP_NAME = ".sandbox-tmp"  # the sandbox's /tmp and /dev/shm, inside its first writable folder
SANDBOX_OVERHEAD = 2  # processes of bwrap itself (the monitor outside, PID 1 inside)


class SandboxUnavailable(KeetError):
    """Untrusted code was to run isolated, and this machine cannot isolate it."""


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 120.0
    memory_bytes: int = 8 << 30  # private memory of the whole process tree (and of each process)
    output_bytes: int = 256 << 20  # bytes the whole tree may add to its writable folders
    log_bytes: int = 1 << 20  # how much of stdout/stderr is kept
    processes: int = 256  # processes in the tree (threads too, for RLIMIT_NPROC)
    files: int = 100_000  # files the tree may create in its writable folders


@dataclass(frozen=True)
class Isolation:
    """What a sandboxed command may touch: ``writable`` folders (the working folder must be
    one of them or inside one), ``readable`` folders mounted back where they are hidden
    (toolkits, inputs), and the GPU's device nodes when ``gpu``."""

    writable: tuple[Path, ...]
    readable: tuple[Path, ...] = ()
    gpu: bool = False


@dataclass
class SandboxResult:
    command: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    killed: str | None = None  # "time", "memory", "output", "processes" or None
    signal_name: str | None = None
    sandboxed: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and self.killed is None

    def summary(self) -> str:
        if self.killed == "time":
            return f"killed after {self.seconds:.1f} s (wall-time limit)"
        if self.killed == "memory":
            return "killed: memory limit (whole process tree)"
        if self.killed == "output":
            return "killed: output-size limit (total written)"
        if self.killed == "processes":
            return "killed: process-count limit"
        if self.signal_name:
            return f"died of {self.signal_name}"
        return f"exit status {self.returncode}"

    def as_dict(self) -> dict:
        return asdict(self)


def scrubbed_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without secrets (API keys, tokens, passwords): trusted mode."""
    env = {name: value for name, value in os.environ.items() if not SECRET_NAME.search(name)}
    env.update(extra or {})
    return env


# argv: DATA_BYTES FSIZE_BYTES NPROC COMMAND...; exit status 127 when the command cannot start
_LAUNCHER = """
import os, resource, signal, sys
# Python ignores SIGXFSZ and SIGPIPE, and exec keeps ignored signals: restore the defaults
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
data, fsize, nproc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if data > 0:
    resource.setrlimit(resource.RLIMIT_DATA, (data, data))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
if nproc > 0:
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
try:
    os.execvp(sys.argv[4], sys.argv[4:])
except OSError as exc:
    sys.stderr.write(f"cannot start {sys.argv[4]}: {exc}\\n")
    sys.exit(127)
"""


def _python() -> str:
    return os.path.realpath(sys.executable)


def _launcher(command: list[str], limits: Limits) -> list[str]:
    return [_python(), "-I", "-c", _LAUNCHER, str(limits.memory_bytes), str(limits.output_bytes), str(limits.processes), *command]


# ------------------------------------------------------------------ bubblewrap
def _bwrap() -> str | None:
    return os.environ.get(BWRAP_VARIABLE) or shutil.which("bwrap")


def _bwrap_environment() -> dict[str, str]:
    """bwrap's own environment: PID 1 inside is bwrap, and /proc/1/environ is readable there."""
    env = {"PATH": SANDBOX_PATH}
    if os.environ.get("LD_LIBRARY_PATH"):  # an unpacked bwrap finds its libcap through it
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    return env


@functools.lru_cache(maxsize=4)
def _bwrap_options(bwrap: str) -> frozenset[str]:
    """The optional flags this bwrap knows (--disable-userns came with 0.8)."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, env=_bwrap_environment(), check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(flag for flag in ("--disable-userns",) if flag in text)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _hidden_paths() -> list[str]:
    """Folders to hide: HIDDEN, $HOME and the working directory, where they exist, unless a
    system folder is (or is inside) one of them."""
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed: nothing to hide there
        cwd = ""
    wanted = [*HIDDEN, os.environ.get("HOME") or "", cwd]
    hidden = []
    for path in wanted:
        if not path or not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        if real == "/" or any(_under(real, top) or _under(top, real) for top in SYSTEM):
            continue
        if real not in hidden:
            hidden.append(real)
    return hidden


def _depth(path: str) -> int:
    return len(Path(path).parts)


def bwrap_command(command: list[str], cwd: Path, limits: Limits, isolation: Isolation, env: dict[str, str] | None,
                  bwrap: str) -> list[str]:
    """The bwrap command line that runs ``command`` (through the limits launcher) isolated."""
    writable = [os.path.realpath(p) for p in isolation.writable]
    tmp = os.path.join(writable[0], TMP_NAME)
    readable = [os.path.realpath(p) for p in (*isolation.readable, sys.prefix, sys.base_prefix) if os.path.exists(p)]
    argv = [bwrap, "--unshare-all", "--unshare-user", *sorted(_bwrap_options(bwrap)), "--die-with-parent", "--new-session",
            "--clearenv", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    if isolation.gpu:
        import glob

        for node in sorted({n for pattern in GPU_NODES for n in glob.glob(pattern)}):
            argv += ["--dev-bind", node, node]
    hidden = _hidden_paths()
    # parents before children: a folder mounted back inside a hidden one, or a read-only
    # folder inside a writable one, must be mounted after it
    mounts = [(p, 0, ["--tmpfs", p]) for p in hidden]
    mounts += [("/tmp", 1, ["--bind", tmp, "/tmp"])]
    mounts += [(p, 2, ["--ro-bind", p, p]) for p in readable]
    mounts += [(p, 3, ["--bind", p, p]) for p in writable]
    for _, _, args in sorted(mounts, key=lambda m: (_depth(m[0]), m[1])):
        argv += args
    argv += ["--bind", tmp, "/dev/shm", "--remount-ro", "/dev"]
    for path in hidden:  # empty and read-only once the folders inside are mounted
        argv += ["--remount-ro", path]
    inner = {"PATH": SANDBOX_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
    inner.update({name: os.environ[name] for name in PASSED_THROUGH if os.environ.get(name)})
    inner.update(env or {})
    for name, value in inner.items():
        argv += ["--setenv", name, value]
    return [*argv, "--chdir", str(cwd), "--", *_launcher(command, limits)]


@functools.lru_cache(maxsize=1)
def sandbox_problem() -> str | None:
    """None when untrusted code can run isolated on this machine, else why not (one line, with
    what to install). Found once per process (sandbox_problem.cache_clear() forgets it): bwrap
    runs the launcher in a scratch folder with the options every sandboxed run uses."""
    bwrap = _bwrap()
    if not bwrap:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    if not os.access(bwrap, os.X_OK):
        return f"{bwrap} (from {BWRAP_VARIABLE}) is not an executable; {INSTALL_HINT}"
    with tempfile.TemporaryDirectory(prefix="keet-sandbox-probe-") as folder:
        work = Path(folder)
        (work / TMP_NAME).mkdir()
        argv = bwrap_command(["/bin/true"], work, Limits(), Isolation((work,)), None, bwrap)
        try:
            probe = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=_bwrap_environment(),
                                   stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{bwrap} does not run: {exc}"
    if probe.returncode != 0:
        said = " ".join((probe.stderr or probe.stdout).split())[:200] or f"exit status {probe.returncode}"
        return f"{bwrap} cannot create a sandbox here ({said}); it needs user namespaces (sysctl user.max_user_namespaces > 0)"
    return None


def require_sandbox(what: str) -> None:
    """Raise SandboxUnavailable (one line) when ``what`` cannot run isolated."""
    problem = sandbox_problem()
    if problem:
        raise SandboxUnavailable(f"cannot sandbox {what}: {problem}")


# ------------------------------------------------------------------ the watcher
def _process_table() -> dict[int, int]:
    """pid -> parent pid of every process (one pass over /proc)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(name)] = int(fields[1])
    return table


def _tree(root: int) -> list[int]:
    """``root`` and its descendants. In a sandbox an orphan is adopted by PID 1 (bwrap, a
    descendant of root), so a setsid() daemon stays in the tree."""
    children: dict[int, list[int]] = {}
    for pid, parent in _process_table().items():
        children.setdefault(parent, []).append(pid)
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _private_bytes(pid: int) -> int:
    """Memory the process holds privately: anonymous pages and shared memory it touched."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return sum(int(m) * 1024 for m in re.findall(r"^(?:RssAnon|RssShmem):\s+(\d+) kB", text, re.MULTILINE))


def _written(folders: list[Path], file_cap: int) -> tuple[int, int]:
    """(bytes allocated, files) under ``folders``, links not followed; stops counting past the cap."""
    total = files = 0
    stack = [str(f) for f in folders]
    while stack and files <= file_cap:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            files += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
            except OSError:
                continue
    return total, files


def _kill(pids: list[int], process: subprocess.Popen) -> None:
    """SIGKILL the tree: in a sandbox its PID 1 first, which ends the namespace."""
    for pid in pids[1:] + pids[:1]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.wait()


def _read_back(handle, cap: int) -> str:
    handle.seek(0)
    data = handle.read(cap + 1)
    text = data[:cap].decode(errors="replace")
    return text + ("\n[output truncated]" if len(data) > cap else "")


def _signal_of(code: int | None, sandboxed: bool) -> str | None:
    """A signal that ended the command: negative for a direct child; bwrap reports 128 + N."""
    number = -code if code is not None and code < 0 else code - 128 if sandboxed and code is not None and 128 < code < 128 + 65 else None
    try:
        return signal.Signals(number).name if number else None
    except ValueError:
        return None


@dataclass
class _Watch:
    limits: Limits
    folders: list[Path]
    overhead: int
    started: float = field(default_factory=time.monotonic)
    written_before: int = 0
    files_before: int = 0

    def __post_init__(self) -> None:
        self.written_before, self.files_before = _written(self.folders, self.limits.files * 2)

    def verdict(self, tree: list[int]) -> str | None:
        limits = self.limits
        if time.monotonic() - self.started > limits.wall_seconds:
            return "time"
        if limits.processes > 0 and len(tree) - self.overhead > limits.processes:
            return "processes"
        if limits.memory_bytes > 0 and sum(_private_bytes(pid) for pid in tree) > limits.memory_bytes:
            return "memory"
        return "output" if self.over_output() else None

    def over_output(self) -> bool:
        written, files = _written(self.folders, self.files_before + self.limits.files)
        return written - self.written_before > self.limits.output_bytes or files - self.files_before > self.limits.files


def run_limited(command: list[str], cwd: Path, limits: Limits = Limits(), env: dict[str, str] | None = None,
                isolation: Isolation | None = None) -> SandboxResult:
    """Run ``command`` in ``cwd`` under ``limits``, isolated when ``isolation`` is given (see
    the module docstring); never raises for what the child does. Raises SandboxUnavailable
    when isolation is asked for and cannot be had."""
    cwd = Path(os.path.abspath(cwd))
    cwd.mkdir(parents=True, exist_ok=True)
    if isolation is not None:
        require_sandbox("this command")
        writable = [Path(os.path.abspath(p)) for p in isolation.writable]
        if not any(cwd == w or w in cwd.parents for w in writable):
            raise ValueError(f"{cwd}: the working folder must be one of the writable folders or inside one")
        _fresh_folder(writable[0] / TMP_NAME)
        argv = bwrap_command(command, cwd, limits, Isolation(tuple(writable), isolation.readable, isolation.gpu), env, _bwrap())
        popen_env, watched, overhead = _bwrap_environment(), writable, SANDBOX_OVERHEAD
    else:
        argv, popen_env, watched, overhead = _launcher(command, limits), env if env is not None else scrubbed_environment(), [cwd], 0
    killed = None
    try:
        with _fresh(cwd / "sandbox.stdout") as out, _fresh(cwd / "sandbox.stderr") as err:
            watch = _Watch(limits, watched, overhead)
            try:
                process = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=popen_env,
                                           start_new_session=True)
            except OSError as exc:
                return SandboxResult(command, None, "", f"cannot start: {exc}", 0.0, sandboxed=isolation is not None)
            while process.poll() is None:
                tree = _tree(process.pid)
                killed = watch.verdict(tree)
                if killed:
                    _kill(tree, process)
                    break
                time.sleep(POLL_SECONDS)
            if killed is None:  # a burst between two polls still counts: the total is the limit
                killed = "output" if watch.over_output() else None
            if isolation is None:  # what the command left running in its session goes with it
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:
                    pass
            seconds = time.monotonic() - watch.started
            stdout, stderr = _read_back(out, limits.log_bytes), _read_back(err, limits.log_bytes)
    finally:
        if isolation is not None:
            shutil.rmtree(Path(os.path.abspath(isolation.writable[0])) / TMP_NAME, ignore_errors=True)
    code = process.returncode
    signal_name = _signal_of(code, isolation is not None)
    if killed is None and signal_name == "SIGXFSZ":
        killed = "output"
    return SandboxResult(command, code, stdout, stderr, round(seconds, 3), killed, signal_name, isolation is not None)


def _fresh(path: Path):
    """A new, empty file at ``path`` opened for writing and reading, whatever was there: an
    earlier run in the same folder may have left a link there to make keet write through it."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "w+b")


def _fresh_folder(path: Path) -> None:
    """An empty real folder at ``path`` (a link left there would be mounted writable)."""
    if path.is_symlink() or path.exists() and not path.is_dir():
        path.unlink()
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()


def write_fresh(path: Path, data: bytes) -> None:
    """Write a file into a folder that an untrusted program can write, without following what
    it may have left at that name."""
    with _fresh(path) as handle:
        handle.write(data)


def read_left_file(path: Path, cap: int) -> bytes | None:
    """The bytes of a file an untrusted program left (at most ``cap``), or None when it is
    missing, is not a regular file, or is a link: keet never follows what a candidate planted
    (a FIFO would block, a link could point at a secret, /dev/zero never ends)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > cap:
            return None
        chunks, left = [], info.st_size
        while left > 0:
            chunk = os.read(handle, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(handle)
