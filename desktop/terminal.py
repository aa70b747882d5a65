"""The terminal chat of `stella run` on a machine with no display: the window's conversation, typed.

It runs the window's own engine (`python -m sidecar.engine`, under the same supervisor) and talks
to it over the same authenticated local channel, as the page does. So the persona and its
one-shot example, the history in the encrypted store, the local intents (stop, outfits, the
clock) and the model's outfit tags are the window's: one conversation, whichever front end.

`TerminalView` is the sans-I/O part: channel events in, what to print out (the reply as it
streams, an outfit change as a line, problems in plain words). `chat()` is the thin shell:
the engine, the WebSocket, stdin. Nothing but the conversation reaches stdout; notes go to
stderr and logs to the log file.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import logging
import secrets
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from desktop.supervisor import Supervisor, engine_command
from remote_api.chat_cli import stdin_lines
from remote_api.shared.processes import free_port
from sidecar.launch import AUTH_PREFIX, SUBPROTOCOL, Launch
from sidecar.outfit_tags import TagFilter

log = logging.getLogger(__name__)

ENGINE_START_S = 60.0
# An answer ends with its reply, or with what a local intent did; past this, the user is told.
ANSWER_TIMEOUT_S = 120.0


@dataclass
class Printed:
    """What one event makes the terminal show: `out` for stdout, `notes` for stderr."""

    out: str = ""
    notes: list[str] = field(default_factory=list)
    answered: bool = False  # the message sent last has had its whole answer
    unlock: dict[str, Any] | None = None  # the store asks for a passphrase: this prompt
    ready: bool = False  # the engine serves turns (its greeting's settings arrived)


class TerminalView:
    """Channel events -> terminal output, for one conversation (sans-I/O).

    Token events carry the model's words as written, outfit tags included (the window replaces
    them with the finished text); here they go through the engine's own tag filter.
    """

    def __init__(self, name: str, outfit_names: Mapping[str, str]) -> None:
        self.name = name
        self.outfit_names = dict(outfit_names)
        self._turn: int | None = None  # the turn whose reply is streaming
        self._shown = ""  # what of that reply is on screen already
        self._tags = TagFilter()
        self._after: list[str] = []  # outfit lines from the reply's tags, shown once it ends

    def feed(self, event: dict[str, Any]) -> Printed:
        kind = event.get("type")
        if kind == "user_turn":
            self._turn, self._shown, self._tags = event.get("turn"), "", TagFilter()
            return Printed(f"{self.name}: ")
        if kind == "token" and event.get("turn") == self._turn:
            text, _ = self._tags.feed(str(event.get("text", "")))
            if not self._shown or self._shown[-1].isspace():  # no leading or doubled space where a tag was
                text = text.lstrip()
            self._shown += text
            return Printed(text)
        if kind == "reply_done" and event.get("turn") == self._turn:
            return self._done(str(event.get("reason")))
        if kind == "outfit" and event.get("source") in ("user", "assistant"):
            line = f"[{self.name} is now wearing {self.outfit_phrase(str(event.get('id')))}]\n"
            if self._turn is not None:
                self._after.append(line)
                return Printed()
            return Printed(line, answered=True)
        if kind == "volume":
            return Printed(f"[{self.name} speaks {'louder' if event.get('step', 0) > 0 else 'softer'}]\n",
                           answered=True)
        if kind == "interruption" and event.get("reason") == "stop" and self._turn is None:
            return Printed(answered=True)  # "stop" with nothing to stop
        if kind == "error":
            return Printed(notes=[f"{self.name}: {event.get('message', 'something went wrong')}"],
                           answered=self._turn is None and event.get("code") != "store_unavailable")
        if kind == "store" and event.get("status") == "locked":
            return Printed(unlock=event)
        # only an engine whose store is open (or left shut) and whose pipeline runs greets with its settings
        return Printed(ready=kind == "settings")

    def _done(self, reason: str) -> Printed:
        rest = self._tags.flush() if reason != "cancelled" else ""
        shown = (self._shown + rest).strip()
        self._turn, self._shown = None, ""
        if reason == "cancelled":
            end = " [interrupted]\n"
        else:
            end = rest + "\n" if shown else "(no reply this time)\n"
        after, self._after = "".join(self._after), []
        return Printed(end + after, answered=True)

    def outfit_phrase(self, outfit: str) -> str:
        return "the " + self.outfit_names.get(outfit, outfit.replace("_", " ")).lower()


@dataclass(frozen=True)
class TerminalOptions:
    server: str
    engine_args: tuple[str, ...]  # --store, --voice, --config for the engine
    name: str = "Stella"
    outfit_names: Mapping[str, str] = field(default_factory=dict)


def chat(options: TerminalOptions, log_stream: IO[str] | None) -> int:
    """Run the engine beside this terminal and hold the conversation; returns the exit code."""
    secret = secrets.token_hex(32)
    supervisor = Supervisor(engine_command("--server", options.server, *options.engine_args),
                            Launch(secret, free_port()), stderr=log_stream)
    supervisor.start()
    try:
        status = supervisor.wait_running(ENGINE_START_S)
        if status.state != "running":
            print(f"{options.name}'s engine did not start ({status.detail or status.state}); see the log file.",
                  file=sys.stderr)
            return 1
        assert status.port is not None
        return asyncio.run(_converse(options, status.port, secret))
    except KeyboardInterrupt:
        return 130
    finally:
        supervisor.stop()


async def _converse(options: TerminalOptions, port: int, secret: str) -> int:
    view = TerminalView(options.name, options.outfit_names)
    async with connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL, f"{AUTH_PREFIX}{secret}"],
                       max_size=None) as ws:
        answered, ready = asyncio.Event(), asyncio.Event()
        interactive = sys.stdin.isatty()  # asked before the pipe reader takes stdin over
        reader = asyncio.create_task(_read(ws, view, answered, ready, interactive), name="channel-reader")
        # Messages wait for the engine's greeting: it takes commands one at a time, so a message sent
        # while the store waits for its passphrase would hold up the answer to that prompt; and stdin
        # is read only from then on, so the passphrase typed at the prompt is never taken for a message.
        await asyncio.wait([asyncio.ensure_future(ready.wait()), reader], return_when=asyncio.FIRST_COMPLETED)
        lines = await stdin_lines()
        waiting = False

        def on_sigint() -> None:
            if waiting:
                asyncio.ensure_future(ws.send(json.dumps({"cmd": "cancel"})))
            else:
                reader.cancel()

        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
        if interactive:
            print(f"Talk to {options.name}: type a message and press Enter; Ctrl-C stops a reply, Ctrl-D leaves.",
                  file=sys.stderr, flush=True)
        try:
            while not reader.done():
                if interactive:
                    print("you> ", end="", file=sys.stderr, flush=True)
                next_line = asyncio.ensure_future(lines.readline())
                await asyncio.wait([next_line, reader], return_when=asyncio.FIRST_COMPLETED)
                if not next_line.done():
                    next_line.cancel()
                    break
                raw = next_line.result()
                text = raw.decode(errors="replace").strip()
                if not raw or text == "/quit":
                    break
                if not text:
                    continue
                answered.clear()
                waiting = True
                await ws.send(json.dumps({"cmd": "text", "text": text}))
                answer = asyncio.ensure_future(answered.wait())
                await asyncio.wait([answer, reader], timeout=ANSWER_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
                if not answer.done() and not reader.done():
                    print(f"{options.name} did not answer within {ANSWER_TIMEOUT_S:.0f} s; see the log file.",
                          file=sys.stderr, flush=True)
                answer.cancel()
                waiting = False
        finally:
            lost = reader.done() and not reader.cancelled()  # the engine went away under us
            reader.cancel()
            try:
                await reader
            except (asyncio.CancelledError, ConnectionClosed):
                pass
            except Exception:  # an engine speaking another protocol: say so, in the log
                log.exception("the terminal could not follow the engine's events")
                print("The terminal could not follow Stella's engine; see the log file.", file=sys.stderr)
    return 1 if lost else 0


async def _read(ws: ClientConnection, view: TerminalView, answered: asyncio.Event, ready: asyncio.Event,
                interactive: bool) -> None:
    async for message in ws:
        if isinstance(message, bytes):
            continue  # frames of the character stream: not for a terminal
        printed = view.feed(json.loads(message))
        if printed.out:
            sys.stdout.write(printed.out)
            sys.stdout.flush()
        for note in printed.notes:
            print(note, file=sys.stderr, flush=True)
        if printed.unlock is not None:
            await ws.send(json.dumps(await asyncio.to_thread(_unlock_answer, printed.unlock, interactive)))
        if printed.answered:
            answered.set()
        if printed.ready:
            ready.set()
    print("The connection to Stella's engine closed.", file=sys.stderr, flush=True)


def _unlock_answer(prompt: dict[str, Any], interactive: bool) -> dict[str, Any]:
    """Ask for the store's passphrase at a terminal; with piped input, go on without saving."""
    print(prompt.get("error") or prompt.get("message", ""), file=sys.stderr, flush=True)
    if not interactive:
        print("(input is not a terminal: this conversation is not saved)", file=sys.stderr, flush=True)
        return {"cmd": "unlock", "how": "skip"}
    asked = "Choose a passphrase" if prompt.get("mode") == "create" else "Passphrase"
    passphrase = getpass.getpass(f"{asked} (Enter to go on without saving): ")
    if not passphrase:
        return {"cmd": "unlock", "how": "skip"}
    return {"cmd": "unlock", "how": "passphrase", "passphrase": passphrase}
