"""`stella-chat`: one question to a Stella gateway over the link, the answer printed as it streams.

An operator's tool for the raw link: it sends exactly the messages given (no persona, no
history beyond the process, no local intents). To talk to Stella herself, run `stella run`
(the window, or the terminal chat with no display).

    stella-chat --server http://host:8765 "Tell me a joke"
    stella-chat --server URL --jsonl "Hi" | jq .      # one JSON event per line, with timings
    stella-chat --server URL --interactive             # a conversation, one message per line
    stella-chat --server URL --pair CODE --credentials me.json "Hi"   # pair once (code from
    stella-chat --credentials me.json "Hi"                             # `stella-server device add`)

A local gateway (loopback) needs no pairing: its own credentials are found by themselves.
Several --server URLs (replicas sharing state) are tried in turn; https is verified (--ca-file
for a private CA).

Exit codes: 0 the reply arrived; 1 the server answered with an error (printed with what to
do); 2 bad usage; 3 the gateway could not be reached; 4 the reply did not finish in --timeout;
5 the gateway refused this device (code used, device revoked, untrusted certificate);
130 interrupted by Ctrl-C (which cancels the reply on the server first).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from remote_api.client import Done, Error, LinkClient, LinkError, LinkRefused, LinkStatus, Token
from remote_api.credentials import Credentials, CredentialsRejected, pair
from remote_api.link_config import LinkConfig
from remote_api.tls import client_context
from remote_api.transport import TransportClosed

EXIT_OK, EXIT_REPLY_ERROR, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_TIMEOUT = 0, 1, 2, 3, 4
EXIT_REFUSED, EXIT_INTERRUPTED = 5, 130


class _Printer:
    def __init__(self, jsonl: bool, started: float) -> None:
        self.jsonl = jsonl
        self.started = started

    def ms(self) -> float:
        return round((time.monotonic() - self.started) * 1000, 1)

    def event(self, kind: str, **fields: Any) -> None:
        if self.jsonl:
            print(json.dumps({"event": kind, "ms": self.ms(), **fields}, ensure_ascii=False), flush=True)

    def status(self, status: LinkStatus) -> None:
        self.event("status", transport=status.transport, connected=status.connected, retry_in=status.retry_in,
                   detail=status.detail)

    def error(self, text: str) -> None:
        print(f"stella-chat: {text}", file=sys.stderr, flush=True)


class _Session:
    """One stella-chat run: the client, what Ctrl-C should do, the conversation (interactive)."""

    def __init__(self, args: argparse.Namespace, out: _Printer, client: LinkClient) -> None:
        self.args, self.out, self.client = args, out, client
        self.turn_rid: str | None = None
        self.interrupted = asyncio.Event()

    def on_sigint(self) -> None:
        """Ctrl-C stops the reply being generated (on the server too); at the prompt it quits."""
        self.interrupted.set()
        if self.turn_rid is not None:
            self.client.cancel(self.turn_rid)

    async def ask(self, messages: list[dict[str, str]]) -> tuple[int, str]:
        """One turn: stream the reply to the terminal; returns (exit code, reply text)."""
        args, out = self.args, self.out
        sent = time.monotonic()
        turn = self.client.chat(messages, max_tokens=args.max_tokens, temperature=args.temperature,
                                seed=args.seed, stop=args.stop)
        self.turn_rid = turn.rid
        out.event("request", rid=turn.rid)
        first_token_ms: float | None = None
        text: list[str] = []
        code = EXIT_OK
        try:
            async with asyncio.timeout(args.timeout):
                async for event in turn:
                    if isinstance(event, Token):
                        if first_token_ms is None:
                            first_token_ms = round((time.monotonic() - sent) * 1000, 1)
                        text.append(event.text)
                        if args.jsonl:
                            out.event("token", i=event.index, text=event.text)
                        else:
                            sys.stdout.write(event.text)
                            sys.stdout.flush()
                    elif isinstance(event, Done):
                        total_ms = round((time.monotonic() - sent) * 1000, 1)
                        out.event("done", reason=event.reason, tokens=event.tokens,
                                  first_token_ms=first_token_ms, total_ms=total_ms, timings=event.timings)
                        if event.reason == "cancelled":
                            code = EXIT_INTERRUPTED
                    elif isinstance(event, Error):
                        out.event("error", code=event.code, message=event.message, action=event.action)
                        out.error(f"{event.code}: {event.message} {event.action}")
                        code = EXIT_REPLY_ERROR
        except TimeoutError:
            self.client.cancel(turn.rid)
            out.event("error", code="timeout", message=f"no complete reply within {args.timeout:g} s")
            out.error(f"the reply did not finish within {args.timeout:g} s (the server may be overloaded); "
                      "try again or raise --timeout")
            code = EXIT_TIMEOUT
        finally:
            self.turn_rid = None
        if not args.jsonl:
            print(" [interrupted]" if code == EXIT_INTERRUPTED else "", flush=True)
        return code, "".join(text)

    async def interactive(self) -> int:
        """A conversation in the terminal; the history lives here, in this process, only."""
        history = [{"role": "system", "content": self.args.system}] if self.args.system else []
        lines = await stdin_lines()
        print("Type a message; Ctrl-C stops a reply, Ctrl-D or /quit leaves.", file=sys.stderr, flush=True)
        while True:
            print("you> ", end="", file=sys.stderr, flush=True)
            self.interrupted.clear()
            next_line = asyncio.ensure_future(lines.readline())
            quit_ = asyncio.ensure_future(self.interrupted.wait())
            await asyncio.wait([next_line, quit_], return_when=asyncio.FIRST_COMPLETED)
            quit_.cancel()
            if not next_line.done():
                next_line.cancel()
                print(file=sys.stderr)
                return EXIT_INTERRUPTED
            raw = next_line.result()
            line = raw.decode(errors="replace").strip()
            if not raw or line == "/quit":
                return EXIT_OK
            if not line:
                continue
            history.append({"role": "user", "content": line})
            if not self.args.jsonl:
                sys.stdout.write("stella> ")
            code, reply = await self.ask(history)
            if code in (EXIT_OK, EXIT_INTERRUPTED) and reply:
                history.append({"role": "assistant", "content": reply})  # what was actually shown
            else:
                history.pop()


async def stdin_lines() -> asyncio.StreamReader:
    """stdin as an asyncio stream (a terminal or a pipe; a redirected file is read up front)."""
    reader = asyncio.StreamReader()
    try:
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                           sys.stdin)
    except ValueError:
        reader.feed_data(sys.stdin.buffer.read())
        reader.feed_eof()
    return reader


async def credentials(args: argparse.Namespace, out: _Printer) -> Credentials | int | None:
    """The device's credentials: paired now (--pair, saved to --credentials), read from
    --credentials, or None (a local gateway's own are found by the client). An int: exit code."""
    if not args.pair:
        return Credentials.load(args.credentials) if args.credentials else None
    try:
        creds = await pair(args.server[0], args.pair, verify=client_context(args.ca_file),
                           timeout=args.connect_timeout)
    except CredentialsRejected as exc:
        out.event("error", code=exc.code, message=exc.message)
        out.error(f"pairing failed: {exc}")
        return EXIT_REFUSED
    except TransportClosed as exc:
        out.event("error", code="unreachable", message=str(exc))
        out.error(f"pairing failed: {exc}. Check the --server URL.")
        return EXIT_UNREACHABLE
    if args.credentials:
        creds.save(args.credentials)
    out.event("paired", device_id=creds.device_id, saved=str(args.credentials or ""))
    return creds


async def run(args: argparse.Namespace) -> int:
    out = _Printer(args.jsonl, time.monotonic())
    creds = await credentials(args, out)
    if isinstance(creds, int):
        return creds
    config = LinkConfig(connect_timeout=args.connect_timeout)
    client = LinkClient(args.server or [creds.gateway_url], config, transport=args.transport,
                        on_status=out.status, agent="stella-chat", credentials=creds, ca_file=args.ca_file)
    session = _Session(args, out, client)
    with contextlib.suppress(NotImplementedError):  # no loop signal handlers on Windows
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, session.on_sigint)
    try:
        await client.connect(args.connect_timeout)
    except LinkRefused as exc:
        out.event("error", code=exc.code, message=str(exc), action=exc.action)
        out.error(f"{exc}. {exc.action}")
        await client.close()
        return EXIT_REFUSED
    except LinkError as exc:
        out.event("error", code="unreachable", message=str(exc))
        out.error(f"{exc}. Check the --server URL and that `stella-server serve` is running there.")
        await client.close()
        return EXIT_UNREACHABLE
    try:
        if args.interactive:
            return await session.interactive()
        messages = [{"role": "system", "content": args.system}] if args.system else []
        code, _ = await session.ask([*messages, {"role": "user", "content": args.prompt}])
        return code
    finally:
        await client.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stella-chat",
        description="The raw link tool for operators: send messages to a Stella gateway and print the reply as it "
                    "streams. It speaks the link only (no persona, no saved history, no local intents); to talk "
                    "to Stella herself, run `stella run` (the window, or the terminal chat without a display).")
    parser.add_argument("prompt", nargs="?", help="the question (default: read from stdin)")
    parser.add_argument("--server", action="append", default=[],
                        help="gateway URL, e.g. http://127.0.0.1:8765; repeat for replicas (tried in turn)")
    parser.add_argument("--pair", metavar="CODE", help="pair this device first, with a code from "
                        "`stella-server device add NAME` (saved to --credentials)")
    parser.add_argument("--credentials", type=Path, metavar="FILE",
                        help="the device's credentials (written by --pair, read otherwise)")
    parser.add_argument("--ca-file", type=Path, help="CA certificate to verify an https gateway with")
    parser.add_argument("-i", "--interactive", action="store_true",
                        help="a conversation: one message per line (history kept in this process)")
    parser.add_argument("--system", help="a system message to send first")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, help="fix the sampling seed (with --temperature 0: same reply)")
    parser.add_argument("--stop", action="append", default=[], help="a stop string (repeatable)")
    parser.add_argument("--jsonl", action="store_true", help="print JSON events (tokens, timings) per line")
    parser.add_argument("--transport", choices=["auto", "websocket", "longpoll"], default="auto")
    parser.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to reach the gateway")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole reply")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.prompt is None and not args.interactive:
        args.prompt = sys.stdin.read().strip()
        if not args.prompt:
            parser.error("give a prompt (as an argument or on stdin), or use --interactive")
    if not 1 <= args.max_tokens <= 8192 or not 0 <= args.temperature <= 5:
        parser.error("--max-tokens must be 1-8192 and --temperature 0-5")
    if not args.server and not (args.credentials and not args.pair):
        parser.error("give --server URL (or --credentials FILE of a paired device)")
    for url in args.server:
        if not url.startswith(("http://", "https://")):
            parser.error(f"--server {url!r} must look like http://host:port")
    try:
        client_context(args.ca_file)
        if args.credentials and not args.pair:
            Credentials.load(args.credentials)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        return asyncio.run(run(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
