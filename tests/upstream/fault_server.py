"""A fake llama-server that misbehaves on demand, for the upstream client's fault tests.

The first path segment picks the behaviour: with base URL `http://127.0.0.1:PORT/stall` the
client's `POST /completion` arrives as `/stall/completion`. It speaks just enough HTTP/1.1 by
hand (asyncio streams, chunked bodies, `Connection: close`) to break the protocol in the places a
real server or network can: mid-event, mid-chunk, before the headers. It runs its own event loop
in a thread so tests can drive the client with `asyncio.run` and measure timings independently.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass

TOKENS = ["Hel", "lo", ", wör", "ld", "!"]


@dataclass
class Recorded:
    """One request as the server saw it, and when its client hung up (monotonic), if it did."""

    method: str
    path: str
    body: dict | None
    hung_up_at: float | None = None


def completion_event(content: str, *, stop: bool = False, n: int = 0) -> bytes:
    obj: dict = {"index": 0, "content": content, "tokens": [], "stop": stop, "id_slot": 0,
                 "tokens_predicted": n, "tokens_evaluated": 7}
    if stop:
        obj |= {"stop_type": "limit", "stopping_word": "", "timings": {"predicted_n": n}}
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def chat_event(content: str | None = None, finish: str | None = None, usage: int | None = None) -> bytes:
    choices = [] if usage is not None else [
        {"finish_reason": finish, "index": 0, "delta": {} if content is None else {"content": content}}
    ]
    obj: dict = {"choices": choices, "object": "chat.completion.chunk", "id": "chatcmpl-x"}
    if usage is not None:
        obj |= {"usage": {"completion_tokens": usage}, "timings": {"predicted_n": usage}}
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


def token_events(chat: bool, tokens: list[str]) -> list[bytes]:
    return [chat_event(t) if chat else completion_event(t, n=i + 1) for i, t in enumerate(tokens)]


def final_events(chat: bool, n: int) -> bytes:
    if chat:
        return chat_event(finish="length") + chat_event(usage=n) + b"data: [DONE]\n\n"
    return completion_event("", stop=True, n=n)


class FaultServer:
    """Serves scenarios on 127.0.0.1; `requests` records what arrived, in order."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-server", daemon=True)

    def url(self, scenario: str) -> str:
        return f"http://127.0.0.1:{self.port}/{scenario}"

    def start(self) -> FaultServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        ).result(5)
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

    def last(self, suffix: str) -> Recorded:
        return next(r for r in reversed(self.requests) if r.path.endswith(suffix))

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
            scenario, _, endpoint = path.lstrip("/").partition("/")
            watch = asyncio.create_task(self._watch_hangup(reader, rec))
            try:
                await self._serve(scenario, "/" + endpoint, rec, writer)
            finally:
                watch.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _watch_hangup(reader: asyncio.StreamReader, rec: Recorded) -> None:
        """The client sends nothing after its request, so EOF on the socket means it hung up."""
        await reader.read(1)
        rec.hung_up_at = time.monotonic()

    async def _serve(self, scenario: str, endpoint: str, rec: Recorded, w: asyncio.StreamWriter) -> None:
        chat = endpoint == "/v1/chat/completions"
        if scenario == "hang_up":
            w.transport.abort()
        elif scenario == "stall_headers":
            await asyncio.sleep(3600)
        elif scenario == "loading":  # what llama-server answers on every endpoint until the model is in
            await self._json(w, 503, {"error": {"code": 503, "message": "Loading model",
                                                "type": "unavailable_error"}})
        elif endpoint == "/health":
            if scenario == "impostor":
                await self._json(w, 200, {"hello": "world"})
            else:
                await self._json(w, 200, {"status": "ok"})
        elif endpoint == "/slots":
            if scenario == "noslots":
                await self._json(w, 501, {"error": {"code": 501, "message": "This server does not support "
                                                    "slots endpoint.", "type": "not_supported_error"}})
            else:
                busy = scenario == "busy"
                await self._json(w, 200, [{"id": i, "n_ctx": 1024, "is_processing": busy} for i in range(2)])
        elif endpoint == "/apply-template":
            if scenario == "template_404":
                await self._json(w, 404, {"error": {"code": 404, "message": "File Not Found",
                                                    "type": "not_found_error"}})
            elif scenario == "template_name_as_jinja":  # what `--jinja --chat-template gemma` does
                await self._json(w, 200, {"prompt": "gemma"})
            else:
                turns = "".join(f"<start_of_turn>{m['role']}\n{m['content']}<end_of_turn>\n"
                                for m in (rec.body or {}).get("messages", []))
                await self._json(w, 200, {"prompt": turns + "<start_of_turn>model\n"})
        elif endpoint in ("/completion", "/v1/chat/completions"):
            await self._stream(scenario, chat, w)
        else:
            await self._json(w, 404, {"error": {"code": 404, "message": "File Not Found",
                                                "type": "not_found_error"}})

    async def _stream(self, scenario: str, chat: bool, w: asyncio.StreamWriter) -> None:
        if scenario == "context":
            await self._json(w, 400, {"error": {
                "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 3012, "n_ctx": 1024,
                "message": "request (3012 tokens) exceeds the available context size (1024 tokens), "
                           "try increasing it"}})
            return
        if scenario == "http500":
            error = {"code": 500, "message": "Compute error.", "type": "server_error"}
            await self._json(w, 500, {"error": error})
            return
        if scenario == "wrong_type":
            await self._json(w, 200, {"content": "Hello!", "stop": True})
            return
        await self._start_sse(w, plain_text=scenario == "text_plain")
        events = token_events(chat, TOKENS)
        if scenario in ("ok", "text_plain"):
            # Two events in one chunk, one event split across chunks (mid-line and mid-UTF-8), the rest alone.
            blob = events[2]
            split = blob.index("ö".encode()) + 1
            for part in (events[0] + events[1], blob[:split], blob[split:] + events[3], events[4]):
                await self._chunk(w, part)
                await asyncio.sleep(0.01)
            await self._chunk(w, final_events(chat, len(TOKENS)))
            await self._end(w)
        elif scenario == "pings":
            for event in events:  # keep-alive comments, fields to ignore, CRLF line ends
                noise = b":\n\nevent: message\nid: 1\nretry: 100\n"
                await self._chunk(w, noise + event.replace(b"\n", b"\r\n"))
            await self._chunk(w, final_events(chat, len(TOKENS)))
            await self._end(w)
        elif scenario == "slow":
            for i in range(500):
                await self._chunk(w, token_events(chat, [f" {i}"])[0])
                await asyncio.sleep(0.02)
            await self._chunk(w, final_events(chat, 500))
            await self._end(w)
        else:
            await self._chunk(w, events[0] + events[1])
            await self._misbehave(scenario, chat, w)

    async def _misbehave(self, scenario: str, chat: bool, w: asyncio.StreamWriter) -> None:
        """After two good tokens: the fault named by `scenario`."""
        if scenario == "stall":
            await asyncio.sleep(3600)
        elif scenario == "break":
            await asyncio.sleep(0.01)
            w.write(b"40\r\ndata: {\"content\": ")  # a chunk that never completes, then the socket dies
            await w.drain()
            w.transport.abort()
        elif scenario == "eof":
            await self._end(w)
        elif scenario == "no_done":  # the final event, then the end, but no "[DONE]" terminator
            await self._chunk(w, final_events(chat, 2).removesuffix(b"data: [DONE]\n\n"))
            await self._end(w)
        elif scenario == "cut":
            await self._chunk(w, token_events(chat, ["more"])[0][:20])
            await self._end(w)
        elif scenario == "garbage":
            await self._chunk(w, b"HTTP/1.1 200 OK\nhello world\n\x00\xff\xfe binary\n")
            await self._end(w)
        elif scenario == "not_json":
            await self._chunk(w, b"data: {\"content\": \"unterminated\n\n")
            await self._end(w)
        elif scenario == "midstream_error":
            error = {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}
            await self._chunk(w, b"data: " + json.dumps({"error": error}).encode() + b"\n\n")
            await self._end(w)
        elif scenario == "long_line":
            await self._chunk(w, b"data: " + b"x" * (2 << 20))
            await self._end(w)
        else:
            raise AssertionError(f"unknown fault scenario {scenario!r}")

    @staticmethod
    async def _json(w: asyncio.StreamWriter, status: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        w.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await w.drain()

    @staticmethod
    async def _start_sse(w: asyncio.StreamWriter, *, plain_text: bool = False) -> None:
        ctype = "text/plain" if plain_text else "text/event-stream"
        w.write(f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nTransfer-Encoding: chunked\r\n"
                "Connection: close\r\n\r\n".encode())
        await w.drain()

    @staticmethod
    async def _chunk(w: asyncio.StreamWriter, data: bytes) -> None:
        w.write(b"%x\r\n%s\r\n" % (len(data), data))
        await w.drain()

    @staticmethod
    async def _end(w: asyncio.StreamWriter) -> None:
        w.write(b"0\r\n\r\n")
        await w.drain()
