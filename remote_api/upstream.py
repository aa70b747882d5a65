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

import json
import logging
import math
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import httpx

from remote_api.sse import SSEError, SSEParser
from remote_api.upstream_events import ChatEvents, CompletionEvents
from remote_api.upstream_types import (
    ChatRequest,
    Finished,
    Health,
    TokenDelta,
    UpstreamError,
    describe_exception,
    snippet,
)

log = logging.getLogger(__name__)

_CONNECT_TIMEOUT = 10.0  # a LAN/loopback server answers a SYN in milliseconds
_HEALTH_TIMEOUT = 3.0  # health checks must not hold up picking an upstream
_ERROR_BODY_LIMIT = 64 * 1024  # error bodies are tiny JSON; never buffer a hostile one
_NEXT_TURN = "\u2063next-turn\u2063"  # a user turn no one types: where a warm-up's prefix ends
_KEY_ACTION = ("set the gateway's gateway.upstream_key (STELLA_GATEWAY__UPSTREAM_KEY) to that server's "
               "--api-key")


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
            events: CompletionEvents | ChatEvents = CompletionEvents(self)
        else:
            path = "/v1/chat/completions"
            body = {
                "messages": req.messages,
                "max_tokens": 0 if req.warm else req.max_tokens,
                "stream_options": {"include_usage": True},  # the exact generated-token count
            }
            events = ChatEvents(self)
        body.update(temperature=req.temperature, stop=req.stop, stream=True)
        if req.seed is not None:
            body["seed"] = req.seed
        for sampler in ("repeat_penalty", "dry_multiplier"):
            if getattr(req, sampler) is not None:
                body[sampler] = getattr(req, sampler)
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
            raise self.bad_answer(f"a stream with {exc}, which is not server-sent events") from exc
        finished = events.at_end()
        if finished is not None:
            yield finished
            return
        if parser.junk_lines:
            raise self.bad_answer(f"{parser.junk_lines} line(s) that are not server-sent events "
                            f"(first: {snippet(parser.first_junk or '')})")
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
            return Health(False, False, None, f"unreachable ({describe_exception(exc)})")
        if resp.status_code == 503:
            return Health(False, True, None, "loading its model")
        try:
            healthy = resp.status_code == 200 and resp.json().get("status") == "ok"
        except (ValueError, AttributeError):
            healthy = False
        if not healthy:
            said = f"HTTP {resp.status_code} {snippet(resp.content)}"
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
            log.debug("%r: /slots unavailable: %s", self, describe_exception(exc))
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
            raise self.bad_answer(f"/apply-template with {snippet(resp.content)} instead of a JSON "
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
            raise self.bad_answer(f"HTTP 200 with Content-Type {got or 'none'!r} instead of {content_type} "
                            f"({snippet(await self._read_some(resp))})", resp.status_code)

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
        said = str(err.get("message") or "") or snippet(body)
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
        return self.bad_answer(f"HTTP {status}: {said}", status)

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
                f"Cannot connect to llama-server at {self.base_url} ({describe_exception(exc)}). Check that it "
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
                f"The connection to llama-server at {self.base_url} broke {where} ({describe_exception(exc)}). "
                "Try again; if it keeps happening, check the server's log (it may have crashed).",
            )
        return self.bad_answer(f"something httpx could not read ({describe_exception(exc)})")

    def bad_answer(self, what: str, status: int | None = None) -> UpstreamError:
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
            raise self.bad_answer(f"an event that is not a JSON object: {snippet(data)}")
        err = obj.get("error")
        if err is not None:
            err = err if isinstance(err, dict) else {"message": str(err)}
            if err.get("type") == "exceed_context_size_error":
                raise self._context_error(err, None)
            raise UpstreamError(
                "broken_stream",
                f"llama-server at {self.base_url} stopped the reply with an error: "
                f"{err.get('message') or snippet(data)}. Try again; check the server's log if it persists.",
            )
        return obj
