"""A fake llama-server speaking its exact HTTP and SSE formats and misbehaving on demand, for
the upstream client's tests and the gateways of the link and security tests.

A behaviour is picked in one of two ways:

- *settings*, for a gateway that keeps one upstream URL: `tokens` per reply, `delay` between
  them, an `accent` before each, and a `fault` that applies to the next reply only (after
  `fault_after` tokens). Token i of a reply is " w{i}" (`token_text`), so a test can tell a
  lost or repeated token at a glance.
- a *scenario* named by the first path segment (`scenario_url("stall")`: the client's
  `POST /completion` arrives as `/stall/completion`), for the upstream client's fault tests:
  a reply of `TOKENS` broken after the second one, or a refusal, or a bad health answer.

It speaks HTTP/1.1 by hand (asyncio streams, chunked bodies, `Connection: close`), so it can
break the protocol where a real server or network can: before the headers, mid-chunk,
mid-event. It runs its own event loop on a thread, so the code under test cannot slow it down.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus

TOKENS = ["Hel", "lo", ", wör", "ld", "!"]  # a scenario's reply: one token splits inside a UTF-8 character
SCENARIO_FAULT_AFTER = 2
GENERATE = ("/completion", "/v1/chat/completions")
ENDPOINTS = ("/health", "/slots", "/apply-template", *GENERATE)
# Refusals llama-server answers instead of a stream, by fault name.
REFUSALS: dict[str, tuple[int, dict]] = {
    "context": (400, {"error": {
        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 3012, "n_ctx": 1024,
        "message": "request (3012 tokens) exceeds the available context size (1024 tokens), try increasing it"}}),
    "loading": (503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
    "http500": (500, {"error": {"code": 500, "message": "Compute error.", "type": "server_error"}}),
    "wrong_type": (200, {"content": "Hello!", "stop": True}),  # JSON where a stream was asked for
}


def token_text(i: int) -> str:
    return f" w{i}"


@dataclass
class Recorded:
    """One request as the server saw it, and when its client hung up (monotonic), if it did."""

    method: str
    path: str
    body: dict | None
    hung_up_at: float | None = None


# --- the wire format ---------------------------------------------------------------------


def sse(data: str | dict) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)).encode() + b"\n\n"


def chat_event(choices: list, **extra: object) -> bytes:
    """A `chat.completion.chunk` event."""
    return sse({"choices": choices, "created": int(time.time()), "id": "chatcmpl-fake", "model": "fake",
                "system_fingerprint": "b0-fake", "object": "chat.completion.chunk", **extra})


def completion_event(content: str, n: int, *, stop: bool = False, timings: dict | None = None) -> bytes:
    """A `/completion` event; `n` counts the tokens predicted so far."""
    obj: dict = {"index": 0, "content": content, "tokens": [], "stop": stop, "id_slot": 0, "tokens_predicted": n,
                 "tokens_evaluated": 12}
    if stop:
        obj |= {"stop_type": "limit", "stopping_word": "", "timings": timings or {}}
    return sse(obj)


def token_event(chat: bool, text: str, n: int) -> bytes:
    if chat:
        return chat_event([{"finish_reason": None, "index": 0, "delta": {"content": text}}])
    return completion_event(text, n)


def final_events(chat: bool, n: int, seconds: float = 0.1, *, done: bool = True) -> bytes:
    """The end of a reply of `n` tokens: finish reason and timings, then (chat) usage and `[DONE]`."""
    timings = {"prompt_n": 12, "prompt_ms": 5.0, "predicted_n": n, "predicted_ms": seconds * 1000,
               "predicted_per_second": n / max(seconds, 1e-6)}
    if not chat:
        return completion_event("", n, stop=True, timings=timings)
    return (chat_event([{"finish_reason": "length", "index": 0, "delta": {}}], timings=timings)
            + chat_event([], usage={"completion_tokens": n, "prompt_tokens": 12, "total_tokens": 12 + n})
            + (sse("[DONE]") if done else b""))


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"


def json_response(status: int, obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def stream_head(content_type: str = "text/event-stream") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n"
            "Server: llama.cpp\r\nConnection: close\r\n\r\n").encode()


# --- the server ----------------------------------------------------------------------------


class FakeLlamaServer:
    """Serves on 127.0.0.1 from its own thread; `requests` records what arrived, in order."""

    def __init__(self) -> None:
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-llama-server", daemon=True)
        self.reset()

    def reset(self, **settings: object) -> None:
        """Back to the defaults (40 tokens 5 ms apart, no fault), counters zeroed; then `settings`."""
        self.tokens, self.delay, self.accent = 40, 0.005, ""
        self.fault: str | None = None  # the next reply only: "stall" | "break" | a `REFUSALS` name | ...
        self.fault_after = 5  # tokens sent before a mid-reply fault
        self.requests: list[Recorded] = []
        self.generations = 0  # generation requests received
        self.active = 0  # replies streaming now
        self.disconnects = 0  # replies the client closed before the end
        self.last_request: dict = {}  # the body of the last generation request
        for name, value in settings.items():
            setattr(self, name, value)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def scenario_url(self, scenario: str) -> str:
        return f"{self.url}/{scenario}"

    def last(self, suffix: str) -> Recorded:
        return next(r for r in reversed(self.requests) if r.path.endswith(suffix))

    def start(self) -> FakeLlamaServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(5)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # --- HTTP -----------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            length = next((int(h.partition(":")[2]) for h in header_lines
                           if h.lower().startswith("content-length:")), 0)
            raw = await reader.readexactly(length)
            rec = Recorded(method, path, json.loads(raw) if raw else None)
            self.requests.append(rec)
            gone = asyncio.create_task(self._hang_up(reader, rec))
            try:
                await self._route(rec, writer, gone)
                await writer.drain()
            finally:
                gone.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _hang_up(reader: asyncio.StreamReader, rec: Recorded) -> None:
        """The client sends nothing after its request, so EOF on the socket means it hung up."""
        await reader.read(1)
        rec.hung_up_at = time.monotonic()

    async def _route(self, rec: Recorded, w: asyncio.StreamWriter, gone: asyncio.Task) -> None:
        scenario, endpoint = "", rec.path
        if endpoint not in ENDPOINTS:
            scenario, _, rest = endpoint.lstrip("/").partition("/")
            endpoint = "/" + rest
        if scenario == "hang_up":
            w.transport.abort()
        elif scenario == "stall_headers":
            await asyncio.wait([gone], timeout=3600)
        elif scenario == "loading":  # what llama-server answers on every endpoint until the model is in
            w.write(json_response(*REFUSALS["loading"]))
        elif endpoint == "/health":
            w.write(json_response(200, {"hello": "world"} if scenario == "impostor" else {"status": "ok"}))
        elif endpoint == "/slots":
            if scenario == "noslots":
                w.write(json_response(501, {"error": {"code": 501, "message": "This server does not support slots "
                                                      "endpoint.", "type": "not_supported_error"}}))
            else:
                busy = [scenario == "busy" if scenario else i < self.active for i in range(2)]
                w.write(json_response(200, [{"id": i, "n_ctx": 1024, "is_processing": b} for i, b in enumerate(busy)]))
        elif endpoint == "/apply-template":
            if scenario == "template_404":
                w.write(json_response(404, {"error": {"code": 404, "message": "File Not Found",
                                                      "type": "not_found_error"}}))
            elif scenario == "template_name_as_jinja":  # what `--jinja --chat-template gemma` does
                w.write(json_response(200, {"prompt": "gemma"}))
            else:
                turns = "".join(f"<start_of_turn>{m['role']}\n{m['content']}<end_of_turn>\n"
                                for m in (rec.body or {}).get("messages", []))
                w.write(json_response(200, {"prompt": turns + "<start_of_turn>model\n"}))
        elif rec.method == "POST" and endpoint in GENERATE:
            await self._generate(scenario, endpoint == "/v1/chat/completions", rec.body or {}, w, gone)
        else:
            w.write(json_response(404, {"error": {"code": 404, "message": "File Not Found",
                                                  "type": "not_found_error"}}))

    # --- replies ----------------------------------------------------------------------------

    async def _generate(self, scenario: str, chat: bool, req: dict, w: asyncio.StreamWriter,
                        gone: asyncio.Task) -> None:
        self.generations += 1
        self.last_request = req
        if scenario:
            fault: str | None = scenario
        else:
            fault, self.fault = self.fault, None
        if fault in REFUSALS:
            w.write(json_response(*REFUSALS[fault]))
            return
        w.write(stream_head("text/plain" if fault == "text_plain" else "text/event-stream"))
        if chat:
            w.write(chunk(chat_event([{"finish_reason": None, "index": 0,
                                       "delta": {"role": "assistant", "content": None}}])))
        self.active += 1
        try:
            if scenario in ("ok", "text_plain"):
                await self._layered(chat, w)
            elif scenario:
                texts = [f" {i}" for i in range(500)] if scenario == "slow" else TOKENS
                await self._reply(chat, texts, 0.02 if scenario == "slow" else 0.0, scenario, SCENARIO_FAULT_AFTER,
                                  w, gone)
            else:
                limit = min(self.tokens, int(req.get("n_predict", req.get("max_tokens", 10**6))))
                texts = [self.accent + token_text(i) for i in range(limit)]
                await self._reply(chat, texts, self.delay, fault, self.fault_after, w, gone)
        except ConnectionError:
            self.disconnects += 1
        finally:
            self.active -= 1

    async def _reply(self, chat: bool, texts: list[str], delay: float, fault: str | None, fault_after: int,
                     w: asyncio.StreamWriter, gone: asyncio.Task) -> None:
        """`texts` as events `delay` apart, each in its own chunk; `fault` strikes after `fault_after`."""
        started = time.monotonic()
        for i, text in enumerate(texts):
            if fault not in (None, "pings", "slow") and i == fault_after:
                return await self._misbehave(fault, chat, i, w, gone)
            await asyncio.wait([gone], timeout=delay)
            if gone.done():
                self.disconnects += 1
                return
            event = token_event(chat, text, i + 1)
            if fault == "pings":  # keep-alive comments, fields to ignore, CRLF line ends
                event = b":\n\nevent: message\nid: 1\nretry: 100\n" + event.replace(b"\n", b"\r\n")
            w.write(chunk(event))
            await w.drain()
        w.write(chunk(final_events(chat, len(texts), time.monotonic() - started)) + LAST_CHUNK)

    async def _layered(self, chat: bool, w: asyncio.StreamWriter) -> None:
        """`TOKENS` with two events in one chunk and one event split across chunks (mid-line and
        mid-UTF-8), the rest alone."""
        events = [token_event(chat, t, i + 1) for i, t in enumerate(TOKENS)]
        split = events[2].index("ö".encode()) + 1
        for part in (events[0] + events[1], events[2][:split], events[2][split:] + events[3], events[4]):
            w.write(chunk(part))
            await w.drain()
            await asyncio.sleep(0.01)
        w.write(chunk(final_events(chat, len(TOKENS))) + LAST_CHUNK)

    async def _misbehave(self, fault: str, chat: bool, sent: int, w: asyncio.StreamWriter,
                         gone: asyncio.Task) -> None:
        """After `sent` good tokens: the fault named `fault`."""
        if fault == "stall":  # keep the socket, send nothing
            await asyncio.wait([gone], timeout=3600)
            return
        if fault == "break":  # a chunk that never completes, then the socket dies
            await asyncio.sleep(0.01)
            w.write(b"40\r\ndata: {\"content\": ")
            await w.drain()
            w.transport.abort()
            return
        body = {
            "eof": b"",
            "no_done": chunk(final_events(chat, sent, done=False)),  # the final event, but no "[DONE]"
            "cut": chunk(token_event(chat, "more", sent + 1)[:20]),
            "garbage": chunk(b"HTTP/1.1 200 OK\nhello world\n\x00\xff\xfe binary\n"),
            "not_json": chunk(b"data: {\"content\": \"unterminated\n\n"),
            "midstream_error": chunk(sse({"error": {"code": 500, "message": "Context size has been exceeded.",
                                                    "type": "server_error"}})),
            "long_line": chunk(b"data: " + b"x" * (2 << 20)),
        }
        if fault not in body:
            raise AssertionError(f"unknown fault {fault!r}")
        w.write(body[fault] + LAST_CHUNK)
        await w.drain()
