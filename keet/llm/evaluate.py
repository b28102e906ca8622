"""Evaluation harness: multiple-choice questions about the zoo kernels, for any endpoint.

Questions come from profiles/zoo.toml (each kernel's intended bottleneck category) and
profiles/manifest.json (measured times), so their answers are known without any model. Each is
asked twice: without context, and with keet's explanation of the kernel's H100 profile as
context. Generation is seeded and deterministic; the explanations are stored with the
questions (profiles/llm_eval/questions.json), so an evaluation does not reload profiles.

    questions = zoo_questions()                        # or load_questions(path)

The zoo is the profiles/ folder given, else the one keet.project_data finds (the working
directory or a parent, then the source checkout): after `pip install .` it is not in the package.
    results = evaluate_endpoint(LLMSettings.resolve(model=..., base_url=...), questions)
"""

from __future__ import annotations

import json
import platform
import random
import re
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from keet.llm.settings import LLMError, LLMSettings, chat_model, llm_errors
from keet.project_data import profiles_dir

SEED = 9
LETTERS = "ABCD"
SLOWEST_QUESTIONS = 12
CONTEXT_FINDINGS = 3
SYSTEM = "You answer multiple-choice questions about GPU kernels. Reply with the letter of one option (A, B, C or D) only."


def _zoo(profiles: Path) -> list[dict[str, Any]]:
    return tomllib.loads((profiles / "zoo.toml").read_text())["kernel"]


def _measured(profiles: Path) -> dict[str, dict[str, Any]]:
    manifest = json.loads((profiles / "manifest.json").read_text())
    return {entry["program"]: entry["measured"] for entry in manifest["kernels"]}


def explanation_context(program: str, profiles: str | Path | None = None) -> str:
    """keet explain's text for the kernel's H100 profile (top findings), as a model reads it."""
    from keet.diagnosis import read_ahead
    from keet.explain import explain, to_text
    from keet.ingest import load_profile

    profiles = profiles_dir(profiles)
    profile = load_profile(profiles / "h100" / "ncu" / f"{program}.ncu-rep.xz", read_ahead=read_ahead())
    text = to_text(explain(profile, None, CONTEXT_FINDINGS))
    # the header line names the file: where the zoo lies is no part of the question
    return "\n".join(line for line in text.splitlines() if not line.startswith(str(profiles)))


def _options(correct: str, pool: list[str], rng: random.Random) -> tuple[list[str], str]:
    options = [correct, *rng.sample(sorted(set(pool) - {correct}), 3)]
    rng.shuffle(options)
    return options, LETTERS[options.index(correct)]


def zoo_questions(seed: int = SEED, profiles: str | Path | None = None) -> list[dict[str, Any]]:
    """Every zoo kernel's dominant bottleneck, and which of four kernels is slowest on H100
    (profiles: the zoo's folder; None: found by keet.project_data)."""
    from keet.rules.base import CATEGORIES

    profiles = profiles_dir(profiles)
    rng = random.Random(seed)
    zoo = _zoo(profiles)
    contexts = {entry["program"]: explanation_context(entry["program"], profiles) for entry in zoo}
    questions = []
    for entry in zoo:
        options, answer = _options(entry["category"], list(CATEGORIES), rng)
        questions.append({
            "id": f"bottleneck-{entry['program']}", "kind": "bottleneck",
            "question": f"Which bottleneck dominates the kernel {entry['kernel']} on an H100?",
            "options": options, "answer": answer, "context": contexts[entry["program"]],
            "source": f"profiles/zoo.toml category of {entry['program']} (realistic={entry['realistic']}, secondary={entry['secondary']})",
        })
    measured = _measured(profiles)
    programs = sorted(p for p in measured if "h100" in measured[p])
    for index in range(SLOWEST_QUESTIONS):
        chosen = rng.sample(programs, 4)
        times = {p: measured[p]["h100"]["median_ms"] for p in chosen}
        slowest = max(chosen, key=times.get)
        kernels = {entry["program"]: entry["kernel"] for entry in zoo}
        questions.append({
            "id": f"slowest-{index}", "kind": "slowest",
            "question": "Which of these kernels is slowest on H100?",
            "options": [kernels[p] for p in chosen], "answer": LETTERS[chosen.index(slowest)],
            "context": "\n".join(_kernel_lines(contexts[p]) for p in chosen),
            "source": "profiles/manifest.json median_ms on h100: " + ", ".join(f"{p} {times[p]:.4g} ms" for p in chosen),
        })
    return questions


def _kernel_lines(context: str) -> str:
    """The kernel's name and time line of an explanation (its findings left out)."""
    return "\n".join([line for line in context.splitlines() if line.strip()][:2])


def load_questions(path: str | Path) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text())["questions"]


def prompt(question: dict[str, Any], with_context: bool) -> str:
    options = "\n".join(f"{letter}. {text}" for letter, text in zip(LETTERS, question["options"]))
    context = f"keet's explanation of the profile:\n{question['context']}\n\n" if with_context else ""
    return f"{context}Question: {question['question']}\n{options}\nAnswer with one letter."


def parse_answer(reply: str, options: list[str]) -> str | None:
    """The option a reply chose: "B", "(B)", "Answer: B", "The answer is B. ...", or the text of
    exactly one option; None when the reply commits to none (or to several)."""
    text = reply.strip()
    for pattern in (r"^\(?([A-D])\)?(?:[.):\s]|$)", r"\b(?:answer|option|choice)\s*(?:is|:)?\s*\(?([A-D])\b"):
        if match := re.search(pattern, text, re.IGNORECASE if pattern.startswith(r"\b") else 0):
            return match.group(1).upper()
    named = [LETTERS[i] for i, option in enumerate(options) if option.lower() in text.lower()]
    if len(named) == 1:
        return named[0]
    letters = set(re.findall(r"\b([A-D])\b", text))
    return letters.pop() if len(letters) == 1 else None


def ask(model, settings: LLMSettings, question: dict[str, Any], with_context: bool, watch=None) -> dict[str, Any]:
    """One question; with a RunWatch attached to the model's client, within its deadline, and a
    reply that is not a chat completion is one LLMError (as in keet explain --llm)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from keet.llm.agent import malformed_reply

    started = time.monotonic()
    messages = [SystemMessage(SYSTEM), HumanMessage(prompt(question, with_context))]
    with llm_errors(settings):
        try:
            response = watch.run(model.invoke, messages) if watch is not None else model.invoke(messages)
        except Exception:
            if watch is not None and watch.problem:
                raise malformed_reply(settings, watch.problem) from None
            if watch is not None and watch.stopped:
                raise LLMError(f"the LLM endpoint {settings.endpoint()} did not answer question {question['id']} "
                               f"within the deadline: {watch.stopped}") from None
            raise
        if watch is not None and watch.problem:
            raise malformed_reply(settings, watch.problem)
        reply = response.text
    chosen = parse_answer(reply, question["options"])
    return {"id": question["id"], "with_context": with_context, "reply": reply[:300], "chosen": chosen,
            "correct": chosen == question["answer"], "seconds": round(time.monotonic() - started, 2)}


def evaluate_endpoint(settings: LLMSettings, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Ask every question without and with context; accuracy per mode, beside chance (1 in 4).
    Each question runs under its own watch: the settings' deadline, the reply size cap."""
    import openai

    from keet.llm.watch import RunWatch

    client = openai.DefaultHttpxClient()
    model = chat_model(settings, client)
    answers = []
    try:
        for q in questions:
            for with_context in (False, True):
                watch = RunWatch(settings.deadline_s)
                detach = watch.attach(client)
                try:
                    answers.append(ask(model, settings, q, with_context, watch))
                finally:
                    detach()
    finally:
        client.close()
    accuracy = {}
    for mode, with_context in (("without_context", False), ("with_context", True)):
        asked = [a for a in answers if a["with_context"] == with_context]
        correct = sum(a["correct"] for a in asked)
        accuracy[mode] = {"asked": len(asked), "correct": correct, "accuracy": correct / len(asked) if asked else 0.0,
                          "chance": 1 / len(LETTERS), "unparsed": sum(a["chosen"] is None for a in asked)}
    return {"model": settings.model, "endpoint": settings.endpoint(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {platform.system()}, python {platform.python_version()}",
            "questions": len(questions), "accuracy": accuracy, "answers": answers}


def write_questions(path: str | Path, seed: int = SEED, profiles: str | Path | None = None) -> None:
    questions = zoo_questions(seed, profiles)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"seed": seed, "generated_by": "keet.llm.evaluate.zoo_questions", "questions": questions},
                                     indent=1) + "\n")
