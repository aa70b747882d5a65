"""What the character is doing, as the window shows it: idle, listening, thinking or speaking."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from sidecar.channel_messages import PresenceState
from sidecar.frames import (
    BotSpeakingFrame,
    Frame,
    InterruptionFrame,
    ListeningFrame,
    PushToTalkFrame,
    ReplyDoneFrame,
    TokenFrame,
    TurnEndedFrame,
    UserTurnFrame,
    WakeFrame,
)

# Interruptions the UI asks for; any other reason is the user speaking over Stella.
CANCELLED, NEW_MESSAGE = "cancel", "new message"


class Presence:
    """Follows the pipeline's frames and reports each change of state.

    `spoken` says whether replies are heard (voice loop) or only read (typed-turns pipeline):
    a read reply is "speaking" while its tokens stream, a heard one while its audio plays.
    """

    def __init__(self, emit: Callable[[PresenceState], None], listen_s: float) -> None:
        self.emit = emit
        self.listen_s = listen_s
        self.spoken = False
        self.state: PresenceState = "idle"
        self._expiry: asyncio.TimerHandle | None = None

    def replies_heard(self, spoken: bool) -> None:
        """Whether the pipeline that serves now speaks its replies (the voice loop) or only shows them."""
        self.spoken = spoken

    def observe(self, frame: Frame) -> None:
        if isinstance(frame, InterruptionFrame):
            self._set("idle" if frame.reason in (CANCELLED, NEW_MESSAGE) else "listening", expires=True)
        elif isinstance(frame, WakeFrame | ListeningFrame):
            self._set("listening", expires=True)
        elif isinstance(frame, PushToTalkFrame):
            self._set("listening", expires=not frame.pressed)
        elif isinstance(frame, UserTurnFrame):
            self._set("thinking")
        elif self.spoken:
            if isinstance(frame, BotSpeakingFrame) and frame.speaking:
                self._set("speaking")
            elif isinstance(frame, TurnEndedFrame):  # heard in full, or nothing to say
                self._set("idle")
        elif isinstance(frame, TokenFrame):
            self._set("speaking")
        elif isinstance(frame, ReplyDoneFrame):
            self._set("idle")

    def _set(self, state: PresenceState, expires: bool = False) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if expires and state == "listening":  # listening with nothing said returns to idle
            self._expiry = asyncio.get_running_loop().call_later(self.listen_s, self._set, "idle")
        if state != self.state:
            self.state = state
            self.emit(state)
