"""Asking the gateway for a reply to each user turn and streaming it on as token frames.

When the reply is spoken (`spoken`), the history keeps what the user *heard*: playback
reports it (`HeardFrame`) when the turn ends or is cut short, and the exchange is recorded
then — all of it, or up to the interruption, marked. Without playback (typed turns read on
screen) the whole reply is recorded when it ends.

After each recorded exchange, and when the pipeline starts, the next turn's prefix (persona +
history) is sent to the gateway to warm (`LinkClient.warm`), so llama-server has it cached on
the session's slot before the user speaks again (remote_api.slots).

While the user speaks, the turn their words so far would start is warmed (whisper's interim
runs), so at the pause only the last words are left to evaluate. When the user pauses, the turn
their words so far would make (`LikelyTurnFrame`, from whisper's run at the pause) is asked for
at once (`chat.speculate`): the reply is generated while the
hang-over confirms the pause, and its tokens wait in the link's turn until the turn is taken.
If the turn is those very words the reply is already under way; if the user goes on
(`SpeechResumedFrame`) or the turn's words differ, the guess is cancelled and its end awaited,
so the slot and its cache are free for the real request. Without speculation the likely turn
is only warmed (its prompt evaluated, no tokens).

A turn that carries its own answer (a clock question, sidecar.intents) is not sent: its answer
streams on as the reply's one token, so it is shown, spoken and recorded like a model's. "Forget
that" is one of them: the last exchange and its facts are forgotten before she says so.

A reply whose outfit tags name only outfits the catalogue lacks is settled before its end: the
model is asked again once for a catalogue id (nothing of that answer is said), then the closest
outfit is worn and she says so (`sidecar.outfit_tags`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from remote_api.client import ChatEvent, Done, Token
from remote_api.client import Error as LinkErrorEvent
from sidecar.config import ChatConfig
from sidecar.conversation import Conversation
from sidecar.frames import (
    ErrorFrame,
    Frame,
    HeardFrame,
    InterruptionFrame,
    LikelyTurnFrame,
    OutfitFrame,
    ReplyDoneFrame,
    RequestSentFrame,
    SpeechResumedFrame,
    TokenFrame,
    UserTurnFrame,
)
from sidecar.intents import Forget, Intents
from sidecar.outfit_tags import ASK_AGAIN, settle, strip_tags
from sidecar.pipeline import Direction, Processor
from sidecar.voice.sentences import sentences_of

log = logging.getLogger(__name__)


class ChatTurn(Protocol):
    rid: str

    def cancel(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[ChatEvent]: ...


class ChatLink(Protocol):
    """What the reply processor needs of `remote_api.client.LinkClient`."""

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float,
             stop: list[str], repeat_penalty: float | None = None,
             dry_multiplier: float | None = None) -> ChatTurn: ...

    def warm(self, messages: list[dict[str, str]]) -> None: ...


@dataclass
class _Guess:
    """A reply asked for at a pause, before the pause is known to end the turn."""

    text: str
    turn: ChatTurn


class Reply(Processor):
    """One turn at a time: request, tokens, done. An interruption cancels the turn upstream
    (closing the server's stream, which frees its slot) and ends it as "cancelled"."""

    def __init__(self, link: ChatLink, conversation: Conversation, chat: ChatConfig, *, spoken: bool = False) -> None:
        super().__init__()
        self.link = link
        self.conversation = conversation
        self.chat = chat
        self.spoken = spoken
        self._unheard: dict[int, str] = {}  # turn -> the user's words, until playback says what was heard
        self._streaming: tuple[int, list[str]] | None = None  # the turn whose reply is coming in
        self._guess: _Guess | None = None
        self._intents = Intents(conversation.outfits, conversation.persona.name)

    async def start(self) -> None:
        self.link.warm(self.conversation.prefix())  # the session's first turn starts warm too

    async def stop(self) -> None:
        if self._guess is not None:
            self._guess.turn.cancel()
            self._guess = None

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, LikelyTurnFrame):
            await self._likely(frame.text, frame.at_pause)
            return
        await self.push(frame, direction)
        if isinstance(frame, UserTurnFrame) and direction is Direction.DOWN:
            await self._answer(frame)
        elif isinstance(frame, HeardFrame):
            self._heard(frame)
        elif isinstance(frame, SpeechResumedFrame):
            await self._drop_guess("the user went on")
        elif isinstance(frame, InterruptionFrame):
            await self._drop_guess("interrupted")
            if self._streaming is not None:
                turn, pieces = self._streaming  # its stream was cancelled with the work in hand
                self._streaming = None
                await self.push(ReplyDoneFrame(turn=turn, reason="cancelled", text=strip_tags("".join(pieces))))

    async def _likely(self, text: str, at_pause: bool) -> None:
        """Ask for (or only warm) the reply to the turn the user's words so far would start, while
        the pause is confirmed; while they are still speaking, warm the turn's start. Not while a
        reply is coming or unheard: the history it would be appended to is not final."""
        if self._streaming is not None or self._unheard:
            return
        if not (at_pause and self.chat.speculate):
            if self._guess is None:
                self.link.warm(self.conversation.messages(text))
            return
        if self._guess is not None and self._guess.text == text:
            return
        await self._drop_guess("a newer pause")
        self._guess = _Guess(text, self._request(text))
        log.debug("asked for the reply at the pause (%s)", self._guess.turn.rid)

    async def _drop_guess(self, why: str) -> None:
        """Cancel the reply asked for at the pause and wait for its end: until then its request
        holds the session's slot, and a request sent meanwhile would go to a cold one."""
        guess, self._guess = self._guess, None
        if guess is None:
            return
        log.info("the reply asked for at the pause is dropped: %s", why)
        guess.turn.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.chat.reply_timeout_s):
                async for _ in guess.turn:
                    pass

    def _request(self, text: str) -> ChatTurn:
        return self.link.chat(self.conversation.messages(text), **self.chat.sampling())

    def _heard(self, heard: HeardFrame) -> None:
        user = self._unheard.pop(heard.turn, None)
        for turn in [t for t in self._unheard if t < heard.turn]:  # cut off before a word was played
            del self._unheard[turn]
        if user is not None:
            self.conversation.record(user, heard.text, interrupted=heard.interrupted)
            self.link.warm(self.conversation.prefix())

    async def _answer(self, user: UserTurnFrame) -> None:
        if self._guess is not None and (self._guess.text != user.text or user.local_answer is not None):
            await self._drop_guess("the turn is not what was guessed")
        guess, self._guess = self._guess, None
        if user.local_answer is not None:
            await self._answer_locally(user, user.local_answer)
            return
        if guess is not None:
            log.info("turn %d: its reply was asked for at the pause", user.turn)
        turn = guess.turn if guess is not None else self._request(user.text)
        pieces: list[str] = []
        if self.spoken:
            self._unheard[user.turn] = user.text
        self._streaming = (user.turn, pieces)
        reason, timings = "error", {}
        try:
            await self.push(RequestSentFrame(turn=user.turn, rid=turn.rid))
            async with asyncio.timeout(self.chat.reply_timeout_s):
                async for event in turn:
                    if isinstance(event, Token):
                        pieces.append(event.text)
                        await self.push(TokenFrame(turn=user.turn, index=event.index, text=event.text))
                    elif isinstance(event, Done):
                        reason, timings = event.reason, event.timings
                    elif isinstance(event, LinkErrorEvent):
                        await self.push(ErrorFrame(code=event.code, message=f"{event.message} {event.action}"))
        except asyncio.CancelledError:  # an interruption: stop the generation on the server too
            turn.cancel()
            raise
        except TimeoutError:
            turn.cancel()
            await self.push(ErrorFrame(code="reply_timeout", message=(
                f"The server sent no complete reply within {self.chat.reply_timeout_s:g} s. "
                "Check that the Stella server and its llama-server are running.")))
        self._streaming = None
        if reason in ("stop", "length"):
            await self._settle_outfit(user, "".join(pieces), pieces)
        await self._done(user, strip_tags("".join(pieces)), reason, timings)

    async def _settle_outfit(self, user: UserTurnFrame, reply: str, pieces: list[str]) -> None:
        """The outfit the reply leaves her in (`outfit_tags.settle`), when its tag did not already say it."""
        settled = await settle(reply, user.text, self.conversation.messages(user.text), self._intents, self._ask)
        if settled.wear is None or settled.via == "tag":  # a catalogue tag was worn as it streamed (OutfitTags)
            return
        log.info("turn %d: wearing %s (%s)", user.turn, settled.wear, settled.via)
        await self.push(OutfitFrame(id=settled.wear, source="assistant"))
        if settled.note:
            pieces.append(settled.note)
            await self.push(TokenFrame(turn=user.turn, index=-1, text=settled.note))

    async def _ask(self, messages: list[dict[str, str]]) -> str:
        """One short request whose answer is read, not said (the outfit asked for again)."""
        answer: list[str] = []
        turn = self.link.chat(messages, **ASK_AGAIN)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.chat.reply_timeout_s):
                async for event in turn:
                    if isinstance(event, Token):
                        answer.append(event.text)
        return "".join(answer)

    async def _answer_locally(self, user: UserTurnFrame, answer: str) -> None:
        if isinstance(self._intents.parse(user.text), Forget):
            forgotten = await asyncio.to_thread(self.conversation.forget_last)
            log.info("turn %d: the last exchange was forgotten, with %d facts", user.turn, forgotten)
        if self.spoken:
            self._unheard[user.turn] = user.text
        await self.push(TokenFrame(turn=user.turn, index=0, text=answer))
        await self._done(user, answer, "stop")

    async def _done(self, user: UserTurnFrame, text: str, reason: str, timings: dict | None = None) -> None:
        if not self.spoken:
            # the history keeps what is said aloud, not a small model's stray tokens (which it
            # would imitate next turn)
            self.conversation.record(user.text, " ".join(sentences_of(text)))
            self.link.warm(self.conversation.prefix())
        counts = {k: v for k, v in (timings or {}).items() if isinstance(v, int)}
        await self.push(ReplyDoneFrame(turn=user.turn, reason=reason, text=text,
                                       prompt_tokens=counts.get("prompt_n"), cached_tokens=counts.get("cache_n")))
