"""Scripted fake chat models for the LLM agent tests (tier 1): no network, no model.

A fake is a real langchain BaseChatModel whose replies come from a script: a function of the
conversation so far. Its bind_tools does nothing (create_agent binds the tools; the script
decides when to call them), and it reports token usage so the token budget can be tested.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

Script = Callable[[list[BaseMessage]], AIMessage]


class ScriptedFakeChatModel(BaseChatModel):
    """A fake chat model: each reply is ``script(messages)``; every call is recorded."""

    script: Script
    tokens_per_call: int = 100
    calls: list[list[BaseMessage]]  # every conversation it was called with
    tool_lists: list[int]  # how many tools each bind_tools gave it

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedFakeChatModel:
        self.tool_lists.append(len(tools))
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls.append(list(messages))
        reply = self.script(list(messages))
        reply.usage_metadata = {"input_tokens": self.tokens_per_call // 2, "output_tokens": self.tokens_per_call // 2,
                                "total_tokens": self.tokens_per_call}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def fake(script: Script, **kwargs: Any) -> ScriptedFakeChatModel:
    return ScriptedFakeChatModel(script=script, calls=[], tool_lists=[], **kwargs)


def tool_call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def tool_results(messages: list[BaseMessage]) -> dict[str, dict]:
    """The JSON results of the tools called so far, by tool name (the last of each)."""
    return {m.name: json.loads(m.content) for m in messages if isinstance(m, ToolMessage) and m.content.startswith("{")}


def repair_requests(messages: list[BaseMessage]) -> list[str]:
    return [m.content for m in messages if isinstance(m, HumanMessage) and m.content.startswith("keet's verifier")]


def analyst_script(invented: str = "It also wastes 123.4 us on launch overhead.") -> Script:
    """A diligent fake analyst: reads the findings, the hot lines and the model's prediction,
    then writes an answer from those numbers, plus one invented sentence; asked to repair, it
    drops the invented sentence."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        seen = tool_results(messages)
        for name in ("findings", "source_hotspots", "predict"):
            if name not in seen:
                return tool_call(name, f"call-{name}")
        return AIMessage(content=answer_from(seen, invented if not repair_requests(messages) else ""))

    return script


def answer_from(seen: dict[str, dict], invented: str) -> str:
    findings = seen["findings"]["findings"]
    lines = ["## Explanation"]
    for finding in findings[:3]:
        evidence = finding["evidence"][0]
        value = f"{evidence['value']:.1f}%" if evidence["unit"] == "%" else f"{evidence['value']:,.0f} {evidence['unit']}"
        lines.append(f"The kernel is limited by {finding['category']} (impact {finding['impact'] * 100:.0f}%): "
                     f"{evidence['metric']} = {value}.")
    if not findings:
        lines.append("The rules found no bottleneck.")
    if invented:
        lines.append(invented)
    lines.append("## Causes in the source")
    for hot in seen["source_hotspots"]["hotspots"][:2]:
        file = re.sub(r"⟦/?data⟧", "", hot["file"]).rsplit("/", 1)[-1]
        lines.append(f"{file}:{hot['line']} holds {hot['share'] * 100:.1f}% of the samples.")
    lines.append("## Plan")
    prediction = seen["predict"]
    for rank, effect in enumerate(prediction.get("expected_effects", [])[:2], 1):
        lines.append(f"{rank}. Reduce the {effect['component']} time: the model expects up to {effect['speedup_if_halved']:.2f}x "
                     f"from halving it.")
    if "predicted_ns" in prediction:
        lines.append(f"The model predicts {prediction['predicted_ns'] / 1000:.1f} us on {prediction['gpu'].upper()}.")
    return "\n".join(lines)


# ---------------------------------------------------------------- a real endpoint on 127.0.0.1


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    """A chat completion as the OpenAI API sends it."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "local-fake",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}


class LocalLLMServer:
    """An HTTP server on 127.0.0.1 (a thread of the test process) whose every POST is answered
    by ``behaviour(handler, number)``: a real socket, so that slow, dripping, huge and broken
    replies reach the client as a real server would send them. Each request is recorded
    (path, headers, JSON body). ``stopping`` is set when the server closes: a behaviour that
    drips must check it, so that no handler outlives its test."""

    def __init__(self, behaviour: Callable[[Any, int], None]) -> None:
        import http.server
        import threading

        owner = self
        self.behaviour = behaviour
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        self.handlers_done = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                owner.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": json.loads(body or b"{}")})
                self.stopping = owner.stopping
                try:
                    owner.behaviour(self, len(owner.requests))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should
                finally:
                    owner.handlers_done.set()

            def log_message(self, *args: Any) -> None:  # quiet: pytest shows stderr of failing tests
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False  # a dripping handler must not hold up the test's end
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LocalLLMServer:  # noqa: PYI034 - the class is final
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def send_json(handler: Any, payload: Any, status: int = 200) -> None:
    send_bytes(handler, json.dumps(payload).encode(), status)


def send_bytes(handler: Any, body: bytes, status: int = 200, content_type: str = "application/json") -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
