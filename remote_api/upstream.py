"""The gateway's client for llama.cpp's `llama-server`.

One reply streams as `TokenDelta`s and a final `Finished`, relayed as soon as each SSE event
arrives, from either `POST /completion` (the prompt comes from the server's own chat template
via `POST /apply-template`, so it is right for whatever model is loaded) or the OpenAI-compatible
`POST /v1/chat/completions`. Everything the server sends is checked before use (status,
Content-Type, SSE framing, JSON shape) and every failure becomes an `UpstreamError` whose `code`
the gateway turns into an error envelope and whose `message` tells a person what went wrong and
what to do. llama-server has no cancel endpoint: closing the stream (``aclose()`` on the
generator, or cancelling the task consuming it) closes the HTTP connection, which is what makes
it stop generating and free the slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import httpx

log = logging.getLogger(__name__)

ErrorCode = Literal[
    "context_exceeded", "loading", "unreachable", "broken_stream", "stalled", "bad_response",
    "no_healthy_upstream", "unauthorized",
]

_CONNECT_TIMEOUT = 10.0  # a LAN/loopback server answers a SYN in milliseconds
_HEALTH_TIMEOUT = 3.0  # health checks must not hold up picking an upstream
_ERROR_BODY_LIMIT = 64 * 1024  # error bodies are tiny JSON; never buffer a hostile one
_NEXT_TURN = "\u2063next-turn\u2063"  # a user turn no one types: where a warm-up's prefix ends
_SNIPPET = 120  # how much of a bad answer to quote in a message
_KEY_ACTION = ("set the gateway's gateway.upstream_key (STELLA_GATEWAY__UPSTREAM_KEY) to that server's "
               "--api-key")


@dataclass(frozen=True)
class ChatRequest:
    """One turn to generate: the full chat (the sidecar owns the conversation) and sampling."""

    messages: list[dict[str, str]]
    max_tokens: int = 128
    temperature: float = 0.7
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    slot: int | None = None  # llama-server's id_slot (remote_api.slots); None lets it choose
    warm: bool = False  # evaluate the prompt into the slot's cache, generate nothing (remote_api.slots)

    def __post_init__(self) -> None:
        if not self.messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in self.messages
        ):
            raise ValueError("a chat request needs messages, each with 'role' and 'content' strings")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.slot is not None and self.slot < 0:
            raise ValueError(f"slot must be a slot id (0 or more) or None, got {self.slot}")
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"temperature must be between 0 and 5, got {self.temperature}")
        if not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError("stop strings must be non-empty strings")


@dataclass(frozen=True)
class TokenDelta:
    """A piece of the reply, relayed the moment llama-server sends it."""

    text: str


@dataclass(frozen=True)
class Finished:
    """The reply is complete.

    `reason` is "stop" (end of text or a stop string) or "length" (max_tokens reached), whichever
    API produced it; `tokens` counts generated tokens; `timings` is llama-server's own dict
    (prompt_n, prompt_ms, predicted_n, predicted_ms, ...), empty if it sent none.
    """

    reason: str
    tokens: int
    timings: dict


class UpstreamError(Exception):
    """A reply could not be produced; `code` is machine-readable, `message` is for people."""

    def __init__(self, code: ErrorCode, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Health:
    """What `GET /health` and `GET /slots` said; `idle_slots` is None when /slots is disabled."""

    ok: bool
    loading: bool
    idle_slots: int | None
    detail: str
    slots: int | None = None  # how many slots it has (None when /slots is disabled)


class SSEError(ValueError):
    """The byte stream cannot be server-sent events (a line too long to be one)."""


class SSEParser:
    """Sans-I/O parser for `text/event-stream`: feed bytes as they arrive, get event data back.

    Follows the WHATWG rules that matter here: lines end in LF, CRLF or CR (a CRLF split across
    two chunks counts once); `data:` lines accumulate and a blank line dispatches the event
    (several lines join with LF); `:` comments (llama-server's keep-alive pings) and the
    `event`/`id`/`retry` fields are ignored; an event cut off by the end of the stream is never
    dispatched. Lines that are not SSE at all are counted in `junk_lines` (the first one kept in
    `first_junk`) so the caller can say "this is not an SSE stream" instead of "it broke".
    Nothing is buffered beyond the current line, so each event comes out of the `feed` call that
    completes it.
    """

    _EOL = re.compile(rb"\r\n|\r|\n")
    _KNOWN_FIELDS = frozenset({"event", "id", "retry"})

    def __init__(self, max_line: int = 1 << 20) -> None:
        self.max_line = max_line
        self.junk_lines = 0
        self.first_junk: str | None = None
        self._buf = bytearray()
        self._data: list[str] | None = None
        self._skip_lf = False  # the last chunk ended in CR: a leading LF belongs to it
        self._first_line = True

    @property
    def pending(self) -> bool:
        """True while part of an event has arrived but not the blank line that completes it."""
        return bool(self._buf) or self._data is not None

    def feed(self, chunk: bytes) -> list[str]:
        """Consume `chunk`; return the data of every event it completed, in order."""
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        scan_from = len(self._buf)  # what is already buffered holds no line end
        self._buf += chunk
        events: list[str] = []
        start = 0
        for match in self._EOL.finditer(self._buf, scan_from):
            self._line(bytes(self._buf[start:match.start()]), events)
            start = match.end()
        if start:
            self._skip_lf = self._buf[start - 1:start] == b"\r"
            del self._buf[:start]
        if len(self._buf) > self.max_line:
            raise SSEError(f"a line longer than {self.max_line} bytes")
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        line = raw.decode("utf-8", errors="replace")
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            if self._data is not None:
                events.append("\n".join(self._data))
                self._data = None
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            if self._data is None:
                self._data = []
            self._data.append(value.removeprefix(" "))
        elif name not in self._KNOWN_FIELDS:
            self.junk_lines += 1
            if self.first_junk is None:
                self.first_junk = line[:_SNIPPET]


def _snippet(raw: bytes | str) -> str:
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    text = " ".join(text.split())
    return repr(text[:_SNIPPET] + ("…" if len(text) > _SNIPPET else ""))


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class Upstream:
    """One llama-server, reached at `base_url` with one of its two streaming APIs."""

    def __init__(
        self,
        base_url: str,
        api: Literal["chat", "completion"] = "chat",
        *,
        stall_timeout: float = 30.0,
        client: httpx.AsyncClient | None = None,
        api_key: str = "",
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"upstream URL {base_url!r} must start with http:// or https://")
        if api not in ("chat", "completion"):
            raise ValueError(f"upstream api must be 'chat' or 'completion', got {api!r}")
        if stall_timeout <= 0:
            raise ValueError(f"stall_timeout must be positive, got {stall_timeout}")
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.stall_timeout = stall_timeout
        # llama-server's --api-key (the local one gets a new one at every launch): sent on every
        # request but /health, which it leaves open.
        self._auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # `read` is the stall detector: httpx raises ReadTimeout when no byte arrives for that long.
        self._timeout = httpx.Timeout(
            stall_timeout, connect=min(_CONNECT_TIMEOUT, stall_timeout), read=stall_timeout
        )
        self._owns_client = client is None
        # Every streaming reply holds a connection; llama-server queues what its slots cannot take,
        # so the gateway must not cap concurrent replies at httpx's default of 100 connections.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=32)
        self._client = client or httpx.AsyncClient(timeout=self._timeout, limits=limits)

    def __repr__(self) -> str:
        return f"Upstream({self.base_url!r}, api={self.api!r})"

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_client:
            await self._client.aclose()

    async def stream(self, req: ChatRequest) -> AsyncIterator[TokenDelta | Finished]:
        """Generate one reply: TokenDeltas as they arrive, then exactly one Finished.

        Raises UpstreamError for anything else. Use it under `contextlib.aclosing` (or cancel
        the consuming task) so that stopping early closes the connection at once, which is what
        stops llama-server generating.
        """
        started = time.monotonic()
        if self.api == "completion":
            path = "/completion"
            body: dict[str, Any] = {
                "prompt": await self._apply_template(req.messages, req.warm),
                "n_predict": 0 if req.warm else req.max_tokens,
                "cache_prompt": True,  # the next turn shares the history prefix
            }
            events: _CompletionEvents | _ChatEvents = _CompletionEvents(self)
        else:
            path = "/v1/chat/completions"
            body = {
                "messages": req.messages,
                "max_tokens": 0 if req.warm else req.max_tokens,
                "stream_options": {"include_usage": True},  # the exact generated-token count
            }
            events = _ChatEvents(self)
        body.update(temperature=req.temperature, stop=req.stop, stream=True)
        if req.seed is not None:
            body["seed"] = req.seed
        if req.slot is not None:
            body["id_slot"] = req.slot
        parser = SSEParser()
        answered = False
        deltas = 0
        first_token_s = math.nan
        try:
            async with self._client.stream(
                "POST", self.base_url + path, json=body, timeout=self._timeout, headers=self._auth
            ) as resp:
                await self._check(resp, "text/event-stream")
                answered = True
                async for chunk in resp.aiter_bytes():
                    for data in parser.feed(chunk):
                        for item in events.feed(data):
                            if isinstance(item, Finished):
                                log.info("%r: %d tokens (%s), first token after %.0f ms; prompt %s tokens, "
                                         "%s from cache (slot %s)", self, item.tokens, item.reason,
                                         first_token_s * 1000, item.timings.get("prompt_n"),
                                         item.timings.get("cache_n"), req.slot)
                                yield item
                                return
                            deltas += 1
                            if deltas == 1:
                                first_token_s = time.monotonic() - started
                            yield item
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, answered, deltas) from exc
        except SSEError as exc:
            raise self._bad(f"a stream with {exc}, which is not server-sent events") from exc
        finished = events.at_end()
        if finished is not None:
            yield finished
            return
        if parser.junk_lines:
            raise self._bad(f"{parser.junk_lines} line(s) that are not server-sent events "
                            f"(first: {_snippet(parser.first_junk or '')})")
        cut = " in the middle of an event" if parser.pending else ""
        raise UpstreamError(
            "broken_stream",
            f"llama-server at {self.base_url} ended the reply{cut} after {deltas} token(s) without its "
            "final event, so the reply is incomplete. Try again; if it keeps happening, check the "
            "server's log (it may have crashed or been restarted).",
        )

    async def health(self) -> Health:
        """Ask `GET /health` (and `GET /slots` when healthy); never raises."""
        try:
            resp = await self._client.get(self.base_url + "/health", timeout=_HEALTH_TIMEOUT)
        except httpx.HTTPError as exc:
            return Health(False, False, None, f"unreachable ({_describe(exc)})")
        if resp.status_code == 503:
            return Health(False, True, None, "loading its model")
        try:
            healthy = resp.status_code == 200 and resp.json().get("status") == "ok"
        except (ValueError, AttributeError):
            healthy = False
        if not healthy:
            said = f"HTTP {resp.status_code} {_snippet(resp.content)}"
            return Health(False, False, None, f"/health answered {said}, not llama-server's status ok")
        try:
            idle, slots = await self._idle_slots()
        except UpstreamError as exc:
            return Health(False, False, None, exc.message)
        return Health(True, False, idle, "ok" if idle is None else f"ok, {idle} idle slot(s)", slots)

    async def _idle_slots(self) -> tuple[int | None, int | None]:
        """Idle and all slots per `GET /slots`, or None if the server does not expose them (--no-slots).
        UpstreamError if it refuses our API key (its /health does not check keys)."""
        try:
            resp = await self._client.get(self.base_url + "/slots", timeout=_HEALTH_TIMEOUT, headers=self._auth)
            if resp.status_code == 401:
                raise self._status_error(401, resp.content)
            slots = resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            log.debug("%r: /slots unavailable: %s", self, _describe(exc))
            return None, None
        if not isinstance(slots, list) or not all(isinstance(s, dict) for s in slots):
            return None, None
        return sum(1 for s in slots if not s.get("is_processing")), len(slots)

    async def _apply_template(self, messages: list[dict[str, str]], prefix: bool = False) -> str:
        """The model's own prompt for `messages`, formatted by the server's chat template; with
        `prefix`, the prompt's start that the next user turn after `messages` will share, byte for byte."""
        if prefix:
            messages = [*messages, {"role": "user", "content": _NEXT_TURN}]
        try:
            resp = await self._client.post(
                self.base_url + "/apply-template", json={"messages": messages}, timeout=self._timeout,
                headers=self._auth)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, False, 0) from exc
        await self._check(resp, "application/json")
        try:
            prompt = resp.json()["prompt"]
        except (ValueError, KeyError, TypeError):
            prompt = None
        if not isinstance(prompt, str):
            raise self._bad(f"/apply-template with {_snippet(resp.content)} instead of a JSON "
                            "object with a 'prompt' string")
        last = messages[-1]["content"].strip()
        if last not in prompt:
            # Seen for real: with Jinja on (the default), `--chat-template gemma` is taken as a
            # template whose whole text is "gemma", so every prompt silently becomes "gemma".
            raise UpstreamError(
                "bad_response",
                f"llama-server at {self.base_url} has a broken chat template: it turned the "
                f"conversation into {len(prompt)} characters without the last message (the prompt is "
                "not quoted here: it holds the user's words). Start it with "
                "--no-jinja before --chat-template NAME, or give a real template with "
                "--chat-template-file.",
            )
        return prompt[:prompt.index(_NEXT_TURN)] if prefix else prompt

    async def _check(self, resp: httpx.Response, content_type: str) -> None:
        """Raise unless `resp` is a 200 of `content_type`, before anything parses it."""
        if resp.status_code != 200:
            raise self._status_error(resp.status_code, await self._read_some(resp))
        got = resp.headers.get("content-type", "")
        if got.split(";")[0].strip().lower() != content_type:
            raise self._bad(f"HTTP 200 with Content-Type {got or 'none'!r} instead of {content_type} "
                            f"({_snippet(await self._read_some(resp))})", resp.status_code)

    @staticmethod
    async def _read_some(resp: httpx.Response) -> bytes:
        if resp.is_stream_consumed:
            return resp.content
        body = bytearray()
        async for chunk in resp.aiter_bytes():
            body += chunk
            if len(body) >= _ERROR_BODY_LIMIT:
                break
        return bytes(body[:_ERROR_BODY_LIMIT])

    def _status_error(self, status: int, body: bytes) -> UpstreamError:
        """Map llama-server's `{"error": {"code", "message", "type", ...}}` answers."""
        try:
            err = json.loads(body).get("error")
        except (ValueError, AttributeError):
            err = None
        if not isinstance(err, dict):
            err = {}
        said = str(err.get("message") or "") or _snippet(body)
        if err.get("type") == "exceed_context_size_error":
            return self._context_error(err, status)
        if status == 401:
            given = "refused the gateway's API key" if self._auth else "wants an API key and the gateway has none"
            return UpstreamError("unauthorized", f"llama-server at {self.base_url} {given} (HTTP 401: {said}); "
                                 f"{_KEY_ACTION}.", status)
        if status == 503:
            return UpstreamError(
                "loading",
                f"llama-server at {self.base_url} is not ready yet ({said}); it is probably still "
                "loading its model. Try again in a few seconds.",
                status,
            )
        return self._bad(f"HTTP {status}: {said}", status)

    def _context_error(self, err: dict, status: int | None) -> UpstreamError:
        n_prompt, n_ctx = err.get("n_prompt_tokens"), err.get("n_ctx")
        sizes = f" ({n_prompt} tokens for a context of {n_ctx})" if n_prompt and n_ctx else ""
        return UpstreamError(
            "context_exceeded",
            f"The conversation is too long for the model's context{sizes}. Shorten the history "
            "(or the persona), or restart llama-server with a larger -c (each of its -np slots "
            "gets -c divided by -np).",
            status,
        )

    def _transport_error(self, exc: httpx.HTTPError, answered: bool, deltas: int) -> UpstreamError:
        where = ("before it answered" if not answered
                 else f"after {deltas} token(s)" if deltas else "before the first token")
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return UpstreamError(
                "unreachable",
                f"Cannot connect to llama-server at {self.base_url} ({_describe(exc)}). Check that it "
                "is running and that the address and port are right.",
            )
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamError(
                "stalled",
                f"llama-server at {self.base_url} sent nothing for {self.stall_timeout:g} s {where}. "
                "It may be overloaded or hung: try again, and restart it if this keeps happening.",
            )
        if isinstance(exc, httpx.TransportError):
            return UpstreamError(
                "broken_stream",
                f"The connection to llama-server at {self.base_url} broke {where} ({_describe(exc)}). "
                "Try again; if it keeps happening, check the server's log (it may have crashed).",
            )
        return self._bad(f"something httpx could not read ({_describe(exc)})")

    def _bad(self, what: str, status: int | None = None) -> UpstreamError:
        return UpstreamError(
            "bad_response",
            f"llama-server at {self.base_url} answered {what}. Check that the upstream URL points to "
            "llama.cpp's llama-server and that it is a recent version.",
            status,
        )

    def _event_json(self, data: str) -> dict[str, Any]:
        """Decode one event; an in-stream `{"error": ...}` becomes the matching UpstreamError."""
        try:
            obj = json.loads(data)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise self._bad(f"an event that is not a JSON object: {_snippet(data)}")
        err = obj.get("error")
        if err is not None:
            err = err if isinstance(err, dict) else {"message": str(err)}
            if err.get("type") == "exceed_context_size_error":
                raise self._context_error(err, None)
            raise UpstreamError(
                "broken_stream",
                f"llama-server at {self.base_url} stopped the reply with an error: "
                f"{err.get('message') or _snippet(data)}. Try again; check the server's log if it persists.",
            )
        return obj


class _CompletionEvents:
    """Turns `/completion` events (`content`, then a last one with `stop: true`) into items."""

    _REASONS = {"eos": "stop", "word": "stop", "limit": "length"}

    def __init__(self, upstream: Upstream) -> None:
        self._up = upstream

    def feed(self, data: str) -> Iterator[TokenDelta | Finished]:
        obj = self._up._event_json(data)
        content = obj.get("content", "")
        if not isinstance(content, str):
            raise self._up._bad(f"an event whose 'content' is not text: {_snippet(data)}")
        if content:
            yield TokenDelta(content)
        if obj.get("stop") is True:
            stop_type = str(obj.get("stop_type") or "eos")
            tokens = obj.get("tokens_predicted")
            timings = obj.get("timings")
            yield Finished(
                self._REASONS.get(stop_type, stop_type),
                tokens if isinstance(tokens, int) else 0,
                timings if isinstance(timings, dict) else {},
            )

    def at_end(self) -> Finished | None:
        """/completion has no terminator besides its final event: ending without it is a break."""
        return None


class _ChatEvents:
    """Turns `chat.completion.chunk` events, the usage event and `[DONE]` into items."""

    def __init__(self, upstream: Upstream) -> None:
        self._up = upstream
        self._reason: str | None = None
        self._deltas = 0
        self._tokens: int | None = None
        self._timings: dict = {}

    def feed(self, data: str) -> Iterator[TokenDelta | Finished]:
        if data == "[DONE]":
            finished = self.at_end()
            if finished is None:
                raise UpstreamError(
                    "broken_stream",
                    f"llama-server at {self._up.base_url} ended the reply ([DONE]) without saying why "
                    "it stopped, so it may be incomplete. Try again.",
                )
            yield finished
            return
        obj = self._up._event_json(data)
        choices = obj.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            raise self._up._bad(f"an event without a 'choices' list: {_snippet(data)}")
        for choice in choices:
            delta = choice.get("delta") or {}
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                self._deltas += 1
                yield TokenDelta(content)
            if choice.get("finish_reason"):
                self._reason = str(choice["finish_reason"])
        usage = obj.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self._tokens = usage["completion_tokens"]
        if isinstance(obj.get("timings"), dict):
            self._timings = obj["timings"]

    def at_end(self) -> Finished | None:
        """Finished once a finish_reason has been seen (tolerating a missing `[DONE]`)."""
        if self._reason is None:
            return None
        tokens = self._tokens
        if tokens is None:
            predicted = self._timings.get("predicted_n")
            tokens = predicted if isinstance(predicted, int) else self._deltas
        return Finished(self._reason, tokens, self._timings)


@dataclass
class _Status:
    health: Health | None = None
    failed_at: float = -math.inf  # time.monotonic() of the last report_failure


class UpstreamPool:
    """Several llama-servers; `pick` answers at once from a health sweep kept fresh in the background.

    A sweep (`/health` + `/slots` on every upstream, concurrently) runs every `check_interval`
    seconds once the first `pick` starts it. `report_failure` takes an upstream out of rotation
    until a later sweep finds it healthy again.
    """

    def __init__(self, upstreams: list[Upstream], *, check_interval: float = 5.0) -> None:
        if not upstreams:
            raise ValueError("an upstream pool needs at least one llama-server URL")
        self.check_interval = check_interval
        self._status = {u: _Status() for u in upstreams}
        self._order = {u: i for i, u in enumerate(upstreams)}
        self._monitor: asyncio.Task[None] | None = None
        self._swept = asyncio.Event()

    async def pick(self) -> Upstream:
        """A healthy upstream, preferring one with idle slots, then the least recently failed."""
        if self._monitor is None:
            self._monitor = asyncio.create_task(self._watch(), name="upstream-health")
        await self._swept.wait()
        healthy = [u for u, s in self._status.items() if s.health and s.health.ok]
        if not healthy:  # one may have come up since the last sweep: look again before refusing
            await self._sweep()
            healthy = [u for u, s in self._status.items() if s.health and s.health.ok]
        if not healthy:
            states = "; ".join(f"{u.base_url}: {s.health.detail if s.health else 'not checked'}"
                               for u, s in self._status.items())
            raise UpstreamError(
                "no_healthy_upstream",
                f"No llama-server is ready ({states}). Start one, wait for it to finish loading, or "
                "fix the upstream URLs in the gateway's configuration.",
            )
        best = min(healthy, key=self._preference)
        status = self._status[best]
        if status.health and status.health.idle_slots:  # until the next sweep, count the slot it takes
            status.health = replace(status.health, idle_slots=status.health.idle_slots - 1)
        return best

    def healthy(self, upstream: Upstream) -> bool:
        """Whether the last sweep found `upstream` healthy (and no request failed on it since)."""
        health = self._status[upstream].health
        return bool(health and health.ok)

    def slot_count(self, upstream: Upstream) -> int | None:
        """How many slots the last sweep saw on `upstream` (None if it does not say)."""
        health = self._status[upstream].health
        return health.slots if health else None

    def _preference(self, upstream: Upstream) -> tuple:
        status = self._status[upstream]
        idle = status.health.idle_slots if status.health else None
        return (idle == 0, status.failed_at, -(idle or 0), self._order[upstream])

    def report_failure(self, upstream: Upstream) -> None:
        """Avoid `upstream` until a sweep finds it healthy (not for context_exceeded: that is the request)."""
        status = self._status[upstream]
        status.failed_at = time.monotonic()
        status.health = Health(False, False, None, "failed a request; waiting for a health check")
        log.warning("%r reported failing; out of rotation until healthy", upstream)

    async def _watch(self) -> None:
        while True:
            await self._sweep()
            self._swept.set()
            await asyncio.sleep(self.check_interval)

    async def _sweep(self) -> None:
        upstreams = list(self._status)
        results = await asyncio.gather(*(u.health() for u in upstreams), return_exceptions=True)
        for upstream, health in zip(upstreams, results, strict=True):
            if isinstance(health, BaseException):
                log.error("%r: health check crashed: %s", upstream, _describe(health))
                health = Health(False, False, None, f"health check failed ({_describe(health)})")
            previous = self._status[upstream].health
            if previous is not None and previous.ok != health.ok:
                log.info("%r is now %s", upstream, health.detail)
            self._status[upstream].health = health

    async def aclose(self) -> None:
        """Stop the health sweeps and close the upstreams' HTTP clients."""
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
            self._monitor = None
        for upstream in self._status:
            await upstream.aclose()
