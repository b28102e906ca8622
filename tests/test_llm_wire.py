"""Tier 2: the real ChatOpenAI and openai client speaking the OpenAI wire format to canned
responses through httpx.MockTransport: tool calls, max_tokens in the body, the key in the
header only, and failing endpoints as one-line errors after one request (no retry, no backoff)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

if os.environ.get("KEET_REQUIRE_LLM") == "1":
    import langchain_openai  # noqa: F401  CI installs the llm extra: a missing one must fail, not skip
else:
    pytest.importorskip("langchain_openai")

import httpx

from keet.ingest import load_profile
from keet.llm.agent import explain_with_llm
from keet.llm.settings import LLMError, LLMSettings

SGEMM = Path(__file__).resolve().parents[1] / "profiles" / "h100" / "ncu" / "sgemm_tiled.ncu-rep.xz"
KEY = "sk-test-do-not-print-0123456789"
SETTINGS = LLMSettings(model="wire-model", base_url="http://llm.invalid/v1", api_key=KEY, max_tokens=321, retries=0, timeout_s=5)


def completion(message: dict, finish: str = "stop") -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "wire-model",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}


def test_tool_call_round_trip_over_the_openai_wire_format() -> None:
    bodies: list[dict] = []
    headers: list[httpx.Headers] = []

    def endpoint(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        headers.append(request.headers)
        if len(bodies) == 1:
            call = {"id": "call_1", "type": "function", "function": {"name": "findings", "arguments": json.dumps({"kernel": "0"})}}
            return httpx.Response(200, json=completion({"content": None, "tool_calls": [call]}, "tool_calls"))
        return httpx.Response(200, json=completion({"content": "## Explanation\nThe FMA pipe is busy: pipe.fma_pct = 68.2%. "
                                                               "It runs 1000 us."}))

    client = httpx.Client(transport=httpx.MockTransport(endpoint))
    section = explain_with_llm(load_profile(SGEMM), settings=SETTINGS, http_client=client)["llm"]
    first, second = bodies[0], bodies[1]
    assert request_path_ok(first) and first["model"] == "wire-model" and first["max_tokens"] == 321
    assert {t["function"]["name"] for t in first["tools"]} >= {"findings", "metrics", "predict", "source_hotspots"}
    tool_reply = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_reply["tool_call_id"] == "call_1" and "fp32_compute" in tool_reply["content"]
    assert headers[0]["authorization"] == f"Bearer {KEY}"
    assert section["usage"] == section["usage"] | {"model_calls": 3, "tool_calls": 1, "tokens": 180}  # answer, tool, repair
    assert "68.2%" in section["answer"] and "1000 us" not in section["answer"]
    assert [c["text"] for c in section["rejected"]] == ["1000 us"]
    assert KEY not in json.dumps(section)


def request_path_ok(body: dict) -> bool:
    return body["messages"][0]["role"] == "system" and body["messages"][1]["role"] == "user"


@pytest.mark.parametrize(("respond", "message"), [
    (lambda request: httpx.Response(500, json={"error": {"message": "boom"}}), "failed with status 500"),
    (lambda request: httpx.Response(401, json={"error": {"message": "bad key"}}), "refused the API key"),
    (lambda request: httpx.Response(404, json={"error": {"message": "no such model"}}), "has no model 'wire-model'"),
])
def test_failing_endpoint_is_one_line_error(respond, message: str) -> None:
    requests: list[httpx.Request] = []

    def endpoint(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return respond(request)

    client = httpx.Client(transport=httpx.MockTransport(endpoint))
    with pytest.raises(LLMError) as error:
        explain_with_llm(load_profile(SGEMM), settings=SETTINGS, http_client=client)
    assert message in str(error.value) and "\n" not in str(error.value) and KEY not in str(error.value)
    assert len(requests) == 1  # retries=0: the error comes at once, not after retries with backoff


def test_timeout_is_one_line_error() -> None:
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client = httpx.Client(transport=httpx.MockTransport(hang))
    with pytest.raises(LLMError, match="did not answer within 5 s"):
        explain_with_llm(load_profile(SGEMM), settings=SETTINGS, http_client=client)


@pytest.mark.slow  # a fresh interpreter loads langchain: about 6 s on 2 cores
def test_cli_against_an_unreachable_endpoint_exits_2_with_one_line() -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", "from keet.cli import main; main()", "explain", str(SGEMM), "--llm", "--model", "m",
                             "--base-url", "http://127.0.0.1:9/v1", "--timeout", "3"],
                            capture_output=True, text=True, check=False, env={**os.environ, "OPENAI_API_KEY": KEY, "KEET_DEBUG": ""}, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("keet: error: cannot reach the LLM endpoint http://127.0.0.1:9/v1")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr and KEY not in result.stderr
