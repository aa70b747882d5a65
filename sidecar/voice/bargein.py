"""Barge-in: the user speaking over Stella stops her.

`BargeIn` (after the endpointer `vad.py` and its `echo_guard.EchoGuard`) knows when Stella is
speaking (`BotSpeakingFrame`, upstream). Speech starting then interrupts her: an
`InterruptionFrame(reason="barge_in")` goes downstream (playback stops, the reply is cancelled
upstream), and the utterance is marked `barge_in` — speech that cut Stella off is addressed to
her, no wake word needed.
"""

from __future__ import annotations

import logging

from sidecar.frames import BotSpeakingFrame, Frame, InterruptionFrame, SpeechStartedFrame, UtteranceFrame
from sidecar.pipeline import Direction, Processor

log = logging.getLogger(__name__)


class BargeIn(Processor):
    def __init__(self) -> None:
        super().__init__()
        self._speaking_since: float | None = None
        self._onset: float | None = None  # the speech that interrupted, until its utterance is final

    async def process(self, frame: Frame, direction: Direction) -> None:
        if isinstance(frame, BotSpeakingFrame):
            self._speaking_since = frame.t if frame.speaking else None
        elif isinstance(frame, SpeechStartedFrame) and self._speaking_since is not None \
                and frame.t >= self._speaking_since:
            await self.push(frame, direction)
            self._onset = frame.t
            self._speaking_since = None
            log.info("barge-in: the user spoke at %.2f s", frame.t)
            await self.push(InterruptionFrame(reason="barge_in"))
            return
        elif isinstance(frame, UtteranceFrame) and self._onset is not None and frame.start <= self._onset:
            frame.barge_in = True
            if frame.final:
                self._onset = None
        await self.push(frame, direction)
