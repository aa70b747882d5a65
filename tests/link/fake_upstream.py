"""A fault-injecting stand-in for llama-server, speaking its exact SSE formats (see FACTS).

It serves /health, /slots, /apply-template, /completion and /v1/chat/completions from raw
asyncio streams (so it can stall without closing, or cut a reply mid-event), on its own thread
and event loop so the gateway under test cannot slow it down. Replies are deterministic:
token i of every reply is " w{i}", so a test can tell a lost or repeated token at a glance.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from dataclasses import dataclass, field


def token_text(i: int) -> str:
    return f" w{i}"


@dataclass
class FakeUpstream:
    tokens: int = 40  # tokens per reply
    delay: float = 0.005  # seconds between tokens
    fault: str | None = None  # the next reply only: "stall" | "break" | "context" | "loading"
    fault_after: int = 5  # tokens sent before a stall or break
    accent: str = ""  # put before every token: a model that would not write the same reply twice
    requests: int = 0  # generation requests received
    active: int = 0  # replies streaming now
    disconnects: int = 0  # replies the client closed before the end
    last_request: dict = field(default_factory=dict)  # the body of the last generation request
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _server: asyncio.Server | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeUpstream:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._server.wait_closed())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="fake-upstream", daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
            self._loop.call_soon_threadsafe(self._loop.stop)
            assert self._thread is not None
            self._thread.join(5)

    def reset(self, **settings: object) -> None:
        self.tokens, self.delay, self.fault, self.fault_after, self.accent = 40, 0.005, None, 5, ""
        self.requests = self.disconnects = 0
        for name, value in settings.items():
            setattr(self, name, value)

    # --- HTTP -----------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            fields = (ln.partition(":") for ln in lines[1:] if ln)
            headers = {k.strip().lower(): v.strip() for k, _, v in fields}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            await self._route(method, path, body, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _route(self, method: str, path: str, body: bytes, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        if path == "/health":
            return _json(writer, 200, {"status": "ok"})
        if path == "/slots":
            return _json(writer, 200, [{"id": i, "is_processing": i < self.active} for i in range(2)])
        if path == "/apply-template":
            msgs = json.loads(body)["messages"]
            prompt = "".join(f"<start_of_turn>{m['role']}\n{m['content']}<end_of_turn>\n" for m in msgs)
            return _json(writer, 200, {"prompt": prompt + "<start_of_turn>model\n"})
        if method == "POST" and path in ("/completion", "/v1/chat/completions"):
            return await self._generate(path == "/completion", json.loads(body), reader, writer)
        return _json(writer, 404, {"error": {"code": 404, "message": "File Not Found",
                                             "type": "not_found_error"}})

    async def _generate(self, completion: bool, req: dict, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
        self.requests += 1
        self.last_request = req
        fault, self.fault = self.fault, None
        if fault == "context":
            return _json(writer, 400, {"error": {
                "code": 400, "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error", "n_prompt_tokens": 4000, "n_ctx": 1024}})
        if fault == "loading":
            return _json(writer, 503, {"error": {"code": 503, "message": "Loading model",
                                                 "type": "unavailable_error"}})
        limit = min(self.tokens, int(req.get("n_predict", req.get("max_tokens", 10**6))))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
                     b"Server: llama.cpp\r\nConnection: close\r\n\r\n")
        gone = asyncio.ensure_future(reader.read(1))  # EOF: the client closed the stream
        self.active += 1
        started = time.monotonic()
        try:
            if not completion:
                await _event(writer, _chunk([{"finish_reason": None, "index": 0,
                                              "delta": {"role": "assistant", "content": None}}]))
            for i in range(limit):
                if fault in ("stall", "break") and i == self.fault_after:
                    if fault == "break":
                        writer.write(b"10\r\ndata: {\"conte")  # cut inside an event, then close
                        return
                    await asyncio.wait([gone], timeout=3600)  # stall: keep the socket, send nothing
                    return
                await asyncio.wait([gone], timeout=self.delay)
                if gone.done():
                    self.disconnects += 1
                    return
                if completion:
                    event = {"index": 0, "content": self.accent + token_text(i), "tokens": [i], "stop": False,
                             "id_slot": 0, "tokens_predicted": i + 1, "tokens_evaluated": 12}
                else:
                    event = _chunk([{"finish_reason": None, "index": 0,
                                     "delta": {"content": self.accent + token_text(i)}}])
                await _event(writer, event)
            ms = (time.monotonic() - started) * 1000
            timings = {"prompt_n": 12, "prompt_ms": 5.0, "predicted_n": limit, "predicted_ms": ms,
                       "predicted_per_second": limit / max(ms, 1e-3) * 1000}
            if completion:
                await _event(writer, {"index": 0, "content": "", "stop": True, "stop_type": "limit",
                                      "tokens_predicted": limit, "tokens_evaluated": 12, "timings": timings})
            else:
                await _event(writer, {**_chunk([{"finish_reason": "length", "index": 0, "delta": {}}]),
                                      "timings": timings})
                await _event(writer, {**_chunk([]), "usage": {"completion_tokens": limit, "prompt_tokens": 12,
                                                               "total_tokens": 12 + limit}})
                await _raw_event(writer, "[DONE]")
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            self.disconnects += 1
        finally:
            self.active -= 1
            gone.cancel()


def _chunk(choices: list) -> dict:
    return {"choices": choices, "created": int(time.time()), "id": "chatcmpl-fake", "model": "fake",
            "system_fingerprint": "b0-fake", "object": "chat.completion.chunk"}


async def _event(writer: asyncio.StreamWriter, obj: object) -> None:
    await _raw_event(writer, json.dumps(obj, separators=(",", ":")))


async def _raw_event(writer: asyncio.StreamWriter, data: str) -> None:
    payload = f"data: {data}\n\n".encode()
    writer.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
    await writer.drain()


def _json(writer: asyncio.StreamWriter, status: int, obj: object) -> None:
    body = json.dumps(obj).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}[status]
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
