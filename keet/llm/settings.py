"""Where the LLM is and how much of it one request may use.

    from keet.llm.settings import LLMSettings, chat_model
    settings = LLMSettings.resolve(model="qwen2.5-coder-7b", base_url="http://127.0.0.1:8080/v1")
    llm = chat_model(settings)          # a langchain BaseChatModel over any OpenAI-compatible endpoint

Settings come from arguments first, then the environment (KEET_MODEL, OPENAI_BASE_URL,
OPENAI_API_KEY). The API key is never part of a repr, an error message or a log line, and
neither is a password in the base URL (``http://user:password@host/v1``): every URL keet shows
goes through ``redact_url``, and the user and password travel in the Authorization header, not
in the URLs that httpx and openai log.
langchain is imported inside the functions that need it: the base install has no langchain.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from keet.errors import KeetError

if TYPE_CHECKING:
    import httpx
    from langchain_core.language_models import BaseChatModel

# Local servers (llama.cpp, vLLM, Ollama) accept any key, but the openai client refuses to
# start without one; this placeholder is sent when the user has none.
NO_KEY = "no-key-needed"
# the README's install command (keet/llm/cli.py's hints say the same)
INSTALL_LLM = "pip install -c constraints.txt -e '.[llm]'"
INSTALL_HINT = f"the LLM agent needs the llm extra: {INSTALL_LLM}"


class LLMError(KeetError):
    """The LLM endpoint is unreachable, failing, misconfigured, or over a limit: one line."""


class LLMNotInstalled(LLMError):
    def __init__(self) -> None:
        super().__init__(INSTALL_HINT)


class RunEnded(Exception):
    """A limit ended the agent run (its deadline, the reply size cap): not an error; the run
    keeps what it has. llm_errors lets it through unchanged."""


# Query parameters that carry a credential (Azure's api-key, signed URLs, tokens).
_SECRET_QUERY = re.compile(r"key|token|secret|sig|password|passwd|auth|credential", re.IGNORECASE)
REDACTED = "***"
_USERINFO = re.compile(r"(//)(?!\*\*\*@)[^/@\s]*@")


def redact_url(url: str | None) -> str | None:
    """The URL as keet may print or log it: user and password replaced by ``***``, and so are
    query values whose names say they are credentials (``?api-key=...``)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: hide anything that looks like userinfo
        return _USERINFO.sub(rf"\1{REDACTED}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_QUERY.search(name) for name, _value in pairs):
            query = urlencode([(name, REDACTED if _SECRET_QUERY.search(name) else value) for name, value in pairs], safe="*")
    # a URL without a scheme keeps "//user:password@" in its path: hidden too
    return _USERINFO.sub(rf"\1{REDACTED}@", urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


def split_userinfo(url: str) -> tuple[str, str | None]:
    """(the URL without user and password, the Basic Authorization header they stand for or None).
    httpx turns a URL's userinfo into that same header, so the server sees the same request;
    but httpx also logs each request's URL, password included."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), f"Basic {token}"


@dataclass(frozen=True)
class LLMSettings:
    """One OpenAI-compatible endpoint and the limits an agent run must stay within."""

    model: str
    base_url: str | None = None  # None: the openai client's default (api.openai.com)
    api_key: str = field(default=NO_KEY, repr=False)
    timeout_s: float = 60.0  # per HTTP request
    max_tokens: int = 1024  # per model reply
    max_tool_calls: int = 12  # per agent run, all tools together
    max_model_calls: int = 16  # per agent run, repair rounds included
    token_budget: int = 60_000  # prompt + completion tokens per agent run, as the endpoint reports them
    retries: int = 1  # retries of a failed request (connection error, 5xx, 429) by the openai client
    deadline_s: float = 300.0  # wall-clock limit of one agent run

    @classmethod
    def resolve(cls, model: str | None = None, base_url: str | None = None, api_key: str | None = None, **limits: Any) -> LLMSettings:
        """Settings from the arguments, else KEET_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY.
        Limits left as None keep their defaults."""
        known = {f.name for f in fields(cls)} - {"model", "base_url", "api_key"}
        unknown = sorted(set(limits) - known)
        if unknown:
            raise TypeError(f"unknown LLM limits: {', '.join(unknown)}")
        model = model or os.environ.get("KEET_MODEL")
        if not model:
            raise LLMError("no model named: give --model NAME or set KEET_MODEL (the name the endpoint serves)")
        settings = cls(
            model=model,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY,
        )
        chosen = {name: value for name, value in limits.items() if value is not None}
        settings = replace(settings, **chosen)
        settings.check()
        return settings

    def check(self) -> None:
        for name in ("timeout_s", "max_tokens", "max_tool_calls", "max_model_calls", "token_budget", "deadline_s"):
            if getattr(self, name) <= 0:
                raise LLMError(f"LLM limit {name} must be positive, not {getattr(self, name)}")
        if self.retries < 0:
            raise LLMError(f"LLM retries must be 0 or more, not {self.retries}")
        if self.base_url is not None:
            try:
                parts = urlsplit(self.base_url)
                valid = parts.scheme in ("http", "https") and bool(parts.hostname)
            except ValueError:  # e.g. an unclosed [IPv6 bracket
                valid = False
            if not valid:
                raise LLMError(f"the LLM base URL {redact_url(self.base_url)!r} is not an http:// or https:// URL with a host")

    def endpoint(self) -> str:
        """The endpoint as messages name it (never with the key or a password in the URL)."""
        return redact_url(self.base_url) or "the OpenAI API (api.openai.com)"

    def __repr__(self) -> str:
        # the dataclass repr would show base_url as given, password included
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        values["base_url"] = redact_url(self.base_url)
        return f"LLMSettings({', '.join(f'{name}={value!r}' for name, value in values.items())})"


def chat_model(settings: LLMSettings, http_client: httpx.Client | None = None) -> BaseChatModel:
    """A ChatOpenAI for the settings. max_tokens travels in the request body as ``max_tokens``
    (extra_body), which llama.cpp, vLLM, Ollama and OpenAI all honour; langchain's own field is
    sent as ``max_completion_tokens``, which llama.cpp's server ignores."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        raise LLMNotInstalled() from None
    base_url, basic = split_userinfo(settings.base_url) if settings.base_url else (None, None)
    return ChatOpenAI(
        model=settings.model,
        base_url=base_url,
        api_key=settings.api_key,
        timeout=settings.timeout_s,
        max_retries=settings.retries,
        temperature=0.0,
        extra_body={"max_tokens": settings.max_tokens},
        stream_usage=False,
        http_client=http_client,
        # overrides openai's Bearer header, as httpx's own handling of userinfo does
        default_headers={"Authorization": basic} if basic else None,
    )


def describe_failure(exc: BaseException, settings: LLMSettings) -> str | None:
    """One line for an error of the openai client (None for other errors). The key never
    appears: messages name the endpoint and the status, not the request."""
    try:
        import openai
    except ImportError:
        return None
    if isinstance(exc, RunEnded):
        return None
    where = settings.endpoint()
    if isinstance(exc, openai.APITimeoutError):
        return f"the LLM endpoint {where} did not answer within {settings.timeout_s:g} s"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot reach the LLM endpoint {where} (is the server running? `keet llm serve` starts a local one)"
    if isinstance(exc, openai.AuthenticationError):
        return f"the LLM endpoint {where} refused the API key (status 401): check OPENAI_API_KEY"
    if isinstance(exc, openai.NotFoundError):
        return f"the LLM endpoint {where} has no model {settings.model!r} or no chat API (status 404)"
    if isinstance(exc, openai.APIStatusError):
        return f"the LLM endpoint {where} failed with status {exc.status_code}"
    if isinstance(exc, openai.OpenAIError):
        return f"the LLM endpoint {where} failed: {type(exc).__name__}"
    return None


@contextmanager
def llm_errors(settings: LLMSettings) -> Iterator[None]:
    """Turn the openai client's errors into one-line LLMErrors (exit status 2 in the CLI)."""
    try:
        yield
    except (LLMError, RunEnded):
        raise
    except Exception as exc:
        line = describe_failure(exc, settings)
        if line is None:
            raise
        raise LLMError(line) from None
