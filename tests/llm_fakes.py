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
