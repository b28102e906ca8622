"""One watchdog per agent run: the run's deadline bounds everything, and replies have a size cap.

    watch = RunWatch(deadline_s=300)
    watch.attach(http_client)                 # every request of the run goes through its hooks
    state = watch.run(agent.invoke, inputs)   # returns by the deadline, whatever the endpoint does

Per-request timeouts alone do not bound a run: httpx's read timeout restarts with every byte,
so a server that drips one byte every 2 s never trips a 5 s timeout. Three things do:

* every request's timeouts are cut to the time left, and a request after the deadline is refused;
* a reply's body is read through a guard that stops at the deadline and at MAX_REPLY_BYTES, and
  records what is wrong with a reply that is not a chat completion (see ``problem``);
* the agent runs in a worker thread; at the deadline the caller stops waiting, and the sockets
  the run opened are shut down so that a read blocked on one returns at once.

The errors raised inside the openai client subclass ``openai.OpenAIError``: the client then
propagates them as they are, without a retry and without wrapping them in APIConnectionError.
The hooks work on an ``httpx`` client and on an ``httpx2`` one (what openai 3 creates by
default): the two have the same hooks, extensions and stream classes, in different packages.
This module needs the llm extra (openai); agent.py imports it inside explain_with_llm.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import openai

from keet.llm.settings import RunEnded

# A chat completion of max_tokens=1024 is a few kB of JSON; 1 MiB leaves room for large
# max_tokens and long tool-call arguments, and stops a hostile or broken server early.
MAX_REPLY_BYTES = 1 << 20
# How much of a malformed reply an error line may quote (it is the endpoint's text, not ours).
QUOTE_CHARS = 60

T = TypeVar("T")


class RunStopped(openai.OpenAIError, RunEnded):
    """The run must end now (deadline reached, reply over the size cap); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def reply_problem(body: bytes) -> str | None:
    """What makes a 2xx body of /chat/completions not a chat completion (None: it is one).
    Only the shape the client needs is checked: a JSON object with a non-empty ``choices``
    list whose first entry has a ``message`` object."""
    if not body.strip():
        return "an empty body"
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
        text = body[:QUOTE_CHARS].decode("utf-8", "replace")
        return f"not JSON (it begins {json.dumps(' '.join(text.split()))})"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if "error" in data and "choices" not in data:
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return f"an error object with status 200 ({json.dumps(str(message)[:QUOTE_CHARS])})"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "no choices" if not choices else f"'choices' that is a JSON {type(choices).__name__}, not a list"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        return "a choice without a message"
    return None


class RunWatch:
    """The deadline of one agent run and the guards that enforce it (thread-safe)."""

    def __init__(self, deadline_s: float, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        self.deadline_s = deadline_s
        self.deadline_at = time.monotonic() + deadline_s
        self.max_reply_bytes = max_reply_bytes
        self.stopped: str | None = None  # why the run was stopped by the watch
        self.problem: str | None = None  # what is wrong with the last reply (None: nothing)
        self.replies = 0  # chat completions read whole
        self.oversized: str | None = None  # why a reply was refused for its size
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------ time

    def remaining(self) -> float:
        return self.deadline_at - time.monotonic()

    def expired(self) -> bool:
        return self.stopped is not None or self.remaining() <= 0

    def deadline_reason(self) -> str:
        return f"deadline reached ({self.deadline_s:g} s)"

    def stop(self, reason: str) -> RunStopped:
        """Record why the run ends (the first reason wins) and shut every socket of the run, so
        that a thread blocked reading one returns now instead of after its read timeout."""
        with self._lock:
            if self.stopped is None:
                self.stopped = reason
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv (close() would not)
            except OSError:
                pass  # already closed: the socket object no longer owns a descriptor
        return RunStopped(self.stopped)

    def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in a worker thread; RunStopped if it is still running
        at the deadline. The worker is a daemon: it is abandoned, its sockets shut, and it
        cannot start another request (the request hook refuses), so it ends soon after."""
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["value"] = function(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, which re-raises it
                outcome["error"] = exc

        # langchain keeps run configuration in context variables: the worker sees the caller's
        worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="keet-llm-run", daemon=True)
        worker.start()
        try:
            worker.join(max(self.remaining(), 0.0))
        finally:
            if worker.is_alive():  # the deadline, or Ctrl-C in the caller's thread
                self.stop(self.deadline_reason())
        if worker.is_alive():
            raise RunStopped(self.stopped or self.deadline_reason())
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    # ------------------------------------------------------------ HTTP hooks

    def attach(self, client: Any) -> Callable[[], None]:
        """Put the run's hooks on an httpx client; returns the function that takes them off."""
        hooks = client.event_hooks
        hooks["request"].append(self._on_request)
        hooks["response"].append(self._on_response)
        client.event_hooks = hooks

        def detach() -> None:
            current = client.event_hooks
            current["request"] = [h for h in current["request"] if h != self._on_request]
            current["response"] = [h for h in current["response"] if h != self._on_response]
            client.event_hooks = current

        return detach

    def _on_request(self, request: Any) -> None:
        if self.expired():
            raise self.stop(self.deadline_reason())
        self.problem = None
        left = self.remaining()
        timeouts = dict(request.extensions.get("timeout") or {})
        request.extensions["timeout"] = {name: left if timeouts.get(name) is None else min(timeouts[name], left)
                                         for name in ("connect", "read", "write", "pool")}
        previous = request.extensions.get("trace")

        def trace(name: str, info: dict[str, Any]) -> None:
            # httpcore reports each new connection; its socket is what stop() shuts down
            if name.endswith(("connect_tcp.complete", "start_tls.complete")):
                stream = info.get("return_value")
                sock = stream.get_extra_info("socket") if stream is not None else None
                if isinstance(sock, socket.socket):
                    self._keep(sock)
            if previous is not None:
                previous(name, info)

        request.extensions["trace"] = trace
        if self.expired():  # the watchdog fired between the first check and now
            raise self.stop(self.deadline_reason())

    def _keep(self, sock: socket.socket) -> None:
        """Remember a socket of the run; one that connects after stop() is shut at once."""
        with self._lock:
            if self.stopped is None:
                self._sockets.append(sock)
                return
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _on_response(self, response: Any) -> None:
        network = response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if isinstance(sock, socket.socket):  # a kept-alive connection opened by an earlier run
            self._keep(sock)
        check_shape = response.is_success and response.request.url.path.endswith("/chat/completions")
        response.stream = _guarded_stream_class(type(response).__module__.partition(".")[0])(response.stream, self, check_shape)


@functools.cache
def _guarded_stream_class(package: str) -> type:
    """_Guard as a SyncByteStream of the response's package (httpx or httpx2): the client
    checks that a response's stream is one of its own."""
    return type("GuardedStream", (_Guard, importlib.import_module(package).SyncByteStream), {})


class _Guard:
    """A reply body read chunk by chunk: stopped at the deadline and at the size cap; when
    whole, checked for the shape of a chat completion (the verdict goes to ``watch.problem``)."""

    def __init__(self, inner: Any, watch: RunWatch, check_shape: bool) -> None:
        self.inner = inner
        self.watch = watch
        self.check_shape = check_shape

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        kept: list[bytes] = []
        for chunk in self.inner:
            received += len(chunk)
            if received > self.watch.max_reply_bytes:
                self.watch.oversized = (f"the endpoint's reply was longer than {self.watch.max_reply_bytes:,} bytes (the reply size "
                                        "cap): rejected, not read further")
                raise self.watch.stop(f"reply rejected: over the {self.watch.max_reply_bytes:,}-byte size cap")
            if self.watch.expired():
                raise self.watch.stop(self.watch.deadline_reason())
            if self.check_shape:
                kept.append(chunk)
            yield chunk
        if self.check_shape:
            self.watch.problem = reply_problem(b"".join(kept))
            self.watch.replies += 1

    def close(self) -> None:
        self.inner.close()
