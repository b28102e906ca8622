"""The loop with the llm strategy, end to end on this machine without a GPU: a scripted fake
chat model (named as a fake: it stands in for an endpoint) answers in the ways real models
fail, and each failure must be caught at its stage and recorded in the run folder. The
baseline is explained from the recorded H100 profile; real nvcc (the test extra's) builds, in
keet's bubblewrap sandbox (model-written code never builds outside it)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

if os.environ.get("KEET_REQUIRE_LLM") != "1":
    pytest.importorskip("langchain_core")

from keet.optimize.loop import Loop
from keet.optimize.problem import load_problem

pytestmark = pytest.mark.toolchain  # every test builds candidates with nvcc

ROOT = Path(__file__).resolve().parents[1]
TRANSPOSE = ROOT / "profiles" / "optimize" / "transpose"
BASELINE_PROFILE = ROOT / "profiles" / "optimize" / "h100" / "transpose" / "candidates" / "c000" / "profile.ncu-rep.xz"
GOOD = (TRANSPOSE / "kernel.cu").read_text().replace("#define TILE_PAD 0", "#define TILE_PAD 1")
REPLIES = [
    "Pad the tile to remove the bank conflicts.",  # prose, no code
    "Time it myself:\n```cuda\n" + GOOD.replace("extern \"C\" void launch", "cudaEvent_t e;\nextern \"C\" void launch") + "```",
    "Use a wider tile:\n```cuda\n" + GOOD.replace("constexpr int kTile = 32;", "constexpr int kTile = 32\n") + "```",
    "Pad the shared tile by one column:\n```cuda\n" + GOOD + "```",
]


class ScriptedFakeChat:
    """A fake chat model: returns the scripted replies in order and keeps the prompts."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def invoke(self, messages: list[Any]) -> SimpleNamespace:
        self.prompts.append(messages[-1].content)
        return SimpleNamespace(content=self.replies.pop(0))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, nvcc: str, sandbox_required: None) -> tuple[dict, Path, ScriptedFakeChat]:
    out = tmp_path_factory.mktemp("llm-run")
    chat = ScriptedFakeChat(REPLIES)
    loop = Loop(load_problem(TRANSPOSE / "problem.toml"), TRANSPOSE / "kernel.cu", TRANSPOSE / "reference.cu", out, strategy="llm",
                rounds=len(REPLIES), gpu=False, profile=False, chat=chat, nvcc=nvcc, baseline_profile=BASELINE_PROFILE, log=lambda _: None)
    return loop.run(), out, chat


def test_each_failure_is_caught_at_its_stage(run: tuple[dict, Path, ScriptedFakeChat]) -> None:
    summary, _, _ = run
    decided = [(c["status"], c["failed_stage"]) for c in summary["candidates"][1:]]
    assert decided == [("rejected", "proposal"), ("rejected", "static_scan"), ("rejected", "build"), ("unverified", "run")]
    assert summary["best"]["id"] == "c000"  # nothing unverified is ever kept


def test_the_prompt_carries_the_explanation_and_the_history(run: tuple[dict, Path, ScriptedFakeChat]) -> None:
    _, _, chat = run
    assert "shared_bank_conflicts" in chat.prompts[0]  # from the H100 profile's explanation
    assert "static_scan" in chat.prompts[2] and "cudaEvent" in chat.prompts[2]  # what round 2 was rejected for


def test_the_run_folder_records_every_exchange(run: tuple[dict, Path, ScriptedFakeChat]) -> None:
    summary, out, _ = run
    for record in summary["candidates"][1:]:
        folder = out / "candidates" / record["id"]
        assert (folder / "prompt.md").is_file() and (folder / "reply.md").is_file()
        assert json.loads((folder / "result.json").read_text())["status"] == record["status"]
    assert "error" in (out / "candidates" / "c003" / "build.log").read_text()
    assert (out / "report.html").is_file()
