"""Issue 19: keet's sandbox (keet/sandbox.py) against a hostile program, on this machine, no GPU.

The program is C, compiled here with the system's cc, and does what a malicious candidate
would: read the parent's and PID 1's /proc/PID/environ and a planted secret, write outside its
folder, leave a setsid() daemon behind, hold more memory than the limit in 4 children, fork
too many processes, write more in total than the output limit, reach the network. Every
attempt must fail. Tests that need bwrap skip with the reason where it is unavailable, and
fail instead where KEET_REQUIRE_SANDBOX=1 (the sandbox_required fixture); the refusal when
the sandbox cannot be had is tested everywhere with a bwrap that cannot create namespaces.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keet import sandbox
from keet.sandbox import Isolation, Limits, SandboxUnavailable, run_limited

ROOT = Path(__file__).resolve().parents[1]
HOSTILE_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
extern char** environ;

static void dump(const char* path) {  /* a file's bytes, NULs as newlines */
  int fd = open(path, O_RDONLY);
  if (fd < 0) { printf("cannot read %s: %s\n", path, strerror(errno)); return; }
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++) if (!buf[i]) buf[i] = '\n';
    fwrite(buf, 1, (size_t)n, stdout);
  }
  close(fd);
}

int main(int argc, char** argv) {
  const char* mode = argv[1];
  char path[4096];
  if (!strcmp(mode, "secrets")) {  /* argv[2]: a variable name, argv[3]: keet's pid outside */
    snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid()); dump(path);
    dump("/proc/1/environ");
    snprintf(path, sizeof path, "/proc/%s/environ", argv[3]); dump(path);
    DIR* d = opendir("/proc");
    struct dirent* e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      snprintf(path, sizeof path, "/proc/%s/environ", e->d_name); dump(path);
      snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name); dump(path);
    }
    for (char** v = environ; *v; v++) puts(*v);
    const char* value = getenv(argv[2]);
    printf("getenv: %s\n", value ? value : "(none)");
    return 0;
  }
  if (!strcmp(mode, "write")) {  /* argv[2...]: files to create or overwrite */
    for (int i = 2; i < argc; i++) {
      int fd = open(argv[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0 && write(fd, "pwned\n", 6) == 6) printf("wrote %s\n", argv[i]);
      else printf("blocked %s: %s\n", argv[i], strerror(errno));
      if (fd >= 0) close(fd);
    }
    return 0;
  }
  if (!strcmp(mode, "read")) {  /* argv[2...]: files to read */
    for (int i = 2; i < argc; i++) dump(argv[i]);
    return 0;
  }
  if (!strcmp(mode, "daemon")) {  /* argv[2]: a token for the daemon's command line, argv[3]: seconds to stay */
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        snprintf(path, sizeof path, "sleep 2; echo survived > survived.txt; exec sleep %s", argv[2]);
        execl("/bin/sh", "sh", "-c", path, (char*)0);
        _exit(1);
      }
      _exit(0);
    }
    sleep((unsigned)atoi(argv[3]));
    return 0;
  }
  if (!strcmp(mode, "memory")) {  /* argv[2] children each hold argv[3] MiB for argv[4] seconds */
    int n = atoi(argv[2]);
    size_t bytes = (size_t)atol(argv[3]) << 20;
    for (int i = 0; i < n; i++) {
      if (fork() == 0) {
        char* p = malloc(bytes);
        if (!p) { printf("child %d: malloc failed\n", i); fflush(stdout); _exit(1); }
        memset(p, 1, bytes);
        printf("child %d holds %zu MiB\n", i, bytes >> 20); fflush(stdout);
        sleep((unsigned)atoi(argv[4]));
        _exit(0);
      }
    }
    while (wait(NULL) > 0) {}
    puts("all children done");
    return 0;
  }
  if (!strcmp(mode, "fork")) {  /* argv[2] children that sleep */
    int n = atoi(argv[2]), made = 0;
    for (int i = 0; i < n; i++) {
      pid_t p = fork();
      if (p == 0) { sleep(5); _exit(0); }
      if (p > 0) made++;
    }
    printf("forked %d\n", made); fflush(stdout);
    while (wait(NULL) > 0) {}
    return 0;
  }
  if (!strcmp(mode, "spill")) {  /* argv[2] files of argv[3] MiB, each below the limit */
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < atoi(argv[2]); i++) {
      snprintf(path, sizeof path, "spill%d.bin", i);
      FILE* f = fopen(path, "wb");
      for (int j = 0; f && j < atoi(argv[3]); j++) fwrite(block, 1, sizeof block, f);
      if (f) fclose(f);
    }
    puts("spilled");
    return 0;
  }
  if (!strcmp(mode, "connect")) {  /* argv[2]: a port on 127.0.0.1 */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)atoi(argv[2]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) puts("connected");
    else printf("no connection: %s\n", strerror(errno));
    return 0;
  }
  return 2;
}
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc or gcc) to build the hostile program")
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile.c").write_text(HOSTILE_C)
    subprocess.run([compiler, "-O1", "-o", str(folder / "hostile"), str(folder / "hostile.c")], check=True)
    return folder / "hostile"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


JAIL_LIMITS = Limits(wall_seconds=30)


def jailed(hostile: Path, scratch: Path, *args: str, limits: Limits = JAIL_LIMITS, readable: tuple[Path, ...] = ()):
    return run_limited([str(hostile), *args], scratch, limits, isolation=Isolation((scratch,), (hostile.parent, *readable)))


def alive(token: str) -> list[int]:
    """Processes on this machine whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                continue
    return found


def test_no_secret_reaches_the_program(hostile: Path, scratch: Path, sandbox_required: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-planted-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("INNOCENT_LOOKING_NAME", secret)  # no secret-like name: only an allowlist stops it
    result = jailed(hostile, scratch, "secrets", "OPENAI_API_KEY", str(os.getpid()))
    assert result.ok and result.sandboxed, result.summary()
    assert "getenv: (none)" in result.stdout
    assert secret not in result.stdout + result.stderr
    for left in scratch.rglob("*"):
        assert not left.is_file() or secret.encode() not in left.read_bytes()


def test_the_same_program_outside_the_sandbox_does_see_it(hostile: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: the program finds the secret when nothing isolates it."""
    secret = "sk-planted-" + secrets.token_hex(8)
    monkeypatch.setenv("INNOCENT_LOOKING_NAME", secret)
    result = run_limited([str(hostile), "secrets", "INNOCENT_LOOKING_NAME", str(os.getpid())], scratch, Limits(wall_seconds=30))
    assert secret in result.stdout


def test_nothing_outside_the_scratch_folder_is_writable(hostile: Path, scratch: Path, tmp_path: Path,
                                                        sandbox_required: None) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "x.bin").write_bytes(b"original")
    token = secrets.token_hex(6)
    targets = [tmp_path / "outside.txt", inputs / "x.bin", Path(f"/tmp/keet-hostile-{token}"), Path(f"/var/tmp/keet-hostile-{token}"),
               ROOT / f"keet-hostile-{token}", Path.home() / f"keet-hostile-{token}", Path(f"/etc/keet-hostile-{token}")]
    result = jailed(hostile, scratch, "write", str(scratch / "inside.txt"), *map(str, targets), readable=(inputs,))
    assert result.ok, result.summary()
    assert f"wrote {scratch / 'inside.txt'}" in result.stdout  # its own folder is writable
    for target in targets:
        if not str(target).startswith("/tmp/"):  # the sandbox's /tmp is a folder of its own, inside the scratch folder
            assert f"blocked {target}: Read-only file system" in result.stdout
        if target.parent != inputs:
            assert not target.exists(), target
    assert (inputs / "x.bin").read_bytes() == b"original"


def test_the_users_folders_are_hidden(hostile: Path, scratch: Path, tmp_path: Path, sandbox_required: None,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    result = jailed(hostile, scratch, "read", str(home / ".netrc"), str(ROOT / "pyproject.toml"), "/root/.bashrc")
    assert result.ok, result.summary()
    assert "hunter2" not in result.stdout and "[project]" not in result.stdout
    assert f"cannot read {home / '.netrc'}" in result.stdout and f"cannot read {ROOT / 'pyproject.toml'}" in result.stdout


@pytest.mark.parametrize("stay", [pytest.param(30, marks=pytest.mark.slow), 0], ids=["killed-at-the-wall-time", "exits-at-once"])
def test_a_setsid_daemon_does_not_outlive_the_run(hostile: Path, scratch: Path, stay: int, sandbox_required: None) -> None:
    token = f"{secrets.randbelow(10**6) + 10**6}.5"  # `sleep TOKEN`: a number only this test uses
    started = time.monotonic()
    result = jailed(hostile, scratch, "daemon", token, str(stay), limits=Limits(wall_seconds=1.5))
    assert (result.killed == "time") == (stay > 0), result.summary()
    assert time.monotonic() - started < 10
    time.sleep(3)  # the daemon writes survived.txt after 2 s, if it lives
    assert not alive(token)
    assert not (scratch / "survived.txt").exists()


def test_memory_is_limited_for_the_whole_tree(hostile: Path, scratch: Path, sandbox_required: None) -> None:
    # 4 children of 200 MiB each: every one is under the 300 MiB limit, together they are not
    result = jailed(hostile, scratch, "memory", "4", "200", "10", limits=Limits(wall_seconds=30, memory_bytes=300 << 20))
    assert result.killed == "memory", result.summary()
    assert "all children done" not in result.stdout
    assert result.seconds < 10


def test_one_child_within_the_limit_runs(hostile: Path, scratch: Path, sandbox_required: None) -> None:
    result = jailed(hostile, scratch, "memory", "1", "100", "1", limits=Limits(wall_seconds=30, memory_bytes=300 << 20))
    assert result.ok and "child 0 holds 100 MiB" in result.stdout and "all children done" in result.stdout


def test_process_count_is_limited(hostile: Path, scratch: Path, sandbox_required: None) -> None:
    result = jailed(hostile, scratch, "fork", "64", limits=Limits(wall_seconds=30, processes=16))
    if result.killed is None:  # not root: RLIMIT_NPROC refused the forks beyond the limit
        assert int(result.stdout.split("forked ")[1].split()[0]) <= 16
    else:
        assert result.killed == "processes", result.summary()


def test_output_is_limited_in_total_not_per_file(hostile: Path, scratch: Path, sandbox_required: None) -> None:
    # 8 files of 2 MiB: each under the 4 MiB limit, 16 MiB together
    result = jailed(hostile, scratch, "spill", "8", "2", limits=Limits(wall_seconds=30, output_bytes=4 << 20))
    assert result.killed == "output" and not result.ok, result.summary()


def test_a_file_over_the_limit_dies_of_sigxfsz_in_the_sandbox(scratch: Path, sandbox_required: None) -> None:
    result = run_limited(["dd", "if=/dev/zero", "of=big.bin", "bs=1M", "count=64"], scratch, Limits(output_bytes=4 << 20),
                         isolation=Isolation((scratch,)))
    assert result.killed == "output" and result.signal_name == "SIGXFSZ"
    assert (scratch / "big.bin").stat().st_size <= 4 << 20


def test_there_is_no_network(hostile: Path, scratch: Path, sandbox_required: None) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        result = jailed(hostile, scratch, "connect", str(server.getsockname()[1]))
        assert "no connection" in result.stdout, result.stdout
        with pytest.raises(TimeoutError):
            server.accept()


# ------------------------------------------------------------------ no sandbox: refuse, never fall back
@pytest.fixture
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bwrap that fails the way bwrap does where user namespaces are disabled."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(sandbox.BWRAP_VARIABLE, str(fake))
    sandbox.sandbox_problem.cache_clear()
    yield fake
    sandbox.sandbox_problem.cache_clear()


def test_no_sandbox_means_the_untrusted_command_does_not_run(scratch: Path, broken_bwrap: Path) -> None:
    assert "cannot create a sandbox here (bwrap: No permissions" in sandbox.sandbox_problem()
    with pytest.raises(SandboxUnavailable, match="cannot sandbox this command: .* cannot create a sandbox here"):
        run_limited(["touch", "ran"], scratch, isolation=Isolation((scratch,)))
    assert not (scratch / "ran").exists()


def keet(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keet.optimize", *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300, check=False)


def test_keet_optimize_refuses_without_a_sandbox(tmp_path: Path, broken_bwrap: Path) -> None:
    problem = ROOT / "profiles" / "optimize" / "transpose"
    done = keet(str(problem / "kernel.cu"), "--kernel", "transpose_kernel", "--reference", str(problem / "reference.cu"),
                "--rounds", "0", "--no-gpu", "--no-profile", "--out", str(tmp_path / "run"), cwd=tmp_path,
                env={sandbox.BWRAP_VARIABLE: str(broken_bwrap)})
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot sandbox the candidates' code" in lines[0] and "--no-sandbox" in lines[0]
    assert not (tmp_path / "run").exists()


def test_no_sandbox_flag_is_not_for_model_written_code(tmp_path: Path) -> None:
    problem = ROOT / "profiles" / "optimize" / "transpose"
    done = keet(str(problem / "kernel.cu"), "--kernel", "transpose_kernel", "--reference", str(problem / "reference.cu"),
                "--strategy", "llm", "--model", "fake", "--base-url", "http://127.0.0.1:9", "--no-sandbox", "--rounds", "1",
                "--no-gpu", "--no-profile", "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2 and "--no-sandbox is for trusted, human-written kernels" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


# ------------------------------------------------------------------ perfmodel predict SOURCE.cu runs the file's host code
HOSTILE_CU = r"""
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>
__global__ void k(float* x) { x[threadIdx.x] = 1.f; }
int main(int argc, char** argv) {
  char path[64], buf[65536];
  std::snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : 0;
  for (ssize_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
  buf[n > 0 ? n : 0] = 0;
  std::printf("parent environ: %s\n", buf);
  const char* key = std::getenv("OPENAI_API_KEY");
  std::printf("key: %s\n", key ? key : "none");
  FILE* f = std::fopen(argv[1], "w");
  std::printf("%s %s\n", f ? "wrote" : "blocked", argv[1]);
  float* x;
  cudaMalloc(&x, 256);
  k<<<1, 32>>>(x);
  return 0;
}
"""


@pytest.mark.toolchain
def test_launch_discovery_runs_the_host_code_in_the_sandbox(tmp_path: Path, nvcc: str, sandbox_required: None,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from perfmodel.static.launches import discover_launches

    secret = "sk-planted-" + secrets.token_hex(8)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    source = tmp_path / "hostile.cu"
    source.write_text(HOSTILE_CU)
    outside = tmp_path / "outside.txt"
    launches = discover_launches(source, "h100", argv=[str(outside)], host_sandbox="require")
    assert [launch.grid for launch in launches] == [(1, 1, 1)]  # the program itself works
    assert "key: none" in launches.output and secret not in launches.output
    assert f"blocked {outside}" in launches.output and not outside.exists()


@pytest.mark.toolchain
def test_launch_discovery_without_a_sandbox_warns_or_refuses(tmp_path: Path, nvcc: str, broken_bwrap: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    from perfmodel.static.launches import discover_launches

    source = tmp_path / "hostile.cu"
    source.write_text(HOSTILE_CU)
    with pytest.raises(SandboxUnavailable, match="launch discovery runs the file's host code, and it cannot be sandboxed"):
        discover_launches(source, "h100", argv=[str(tmp_path / "refused.txt")], host_sandbox="require")
    assert not (tmp_path / "refused.txt").exists()
    capsys.readouterr()
    launches = discover_launches(source, "h100", argv=[str(tmp_path / "ran.txt")])
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and "running the file's host code without a sandbox" in warning[0] and "--require-sandbox" in warning[0]
    assert len(launches) == 1 and (tmp_path / "ran.txt").exists()


@pytest.mark.toolchain
def test_perfmodel_predict_require_sandbox_is_one_line_and_exit_2(tmp_path: Path, nvcc: str, broken_bwrap: Path) -> None:
    source = tmp_path / "hostile.cu"
    source.write_text(HOSTILE_CU)
    done = subprocess.run([sys.executable, "-c", "from perfmodel.cli import main; main()", "predict", str(source), "--gpu", "h100",
                           "--program-arg", str(tmp_path / "refused.txt"), "--require-sandbox"],
                          capture_output=True, text=True, env={**os.environ, sandbox.BWRAP_VARIABLE: str(broken_bwrap)}, timeout=300, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be sandboxed" in lines[0] and not (tmp_path / "refused.txt").exists()
