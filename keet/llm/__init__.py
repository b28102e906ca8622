"""The LLM agent: explanations grounded in the profile and the model, every number verified.

    from keet.llm import explain_with_llm
    document = explain_with_llm(profile, settings=LLMSettings.resolve(model=..., base_url=...))

Nothing here imports langchain until it is used (the ``llm`` extra installs it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LLMSettings", "chat_model", "explain_with_llm"]


def __getattr__(name: str) -> Any:
    # lazy: `import keet.llm` must work on the base install
    if name in ("LLMSettings", "chat_model"):
        from keet.llm import settings

        return getattr(settings, name)
    if name == "explain_with_llm":
        from keet.llm.agent import explain_with_llm

        return explain_with_llm
    raise AttributeError(name)
