"""The reply processor asks the gateway to warm the next turn's prefix: at start and after each exchange."""

from __future__ import annotations

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import EndFrame, HeardFrame, LikelyTurnFrame, UserTurnFrame
from sidecar.reply import Reply

from .harness import ScriptedLink, run


def test_the_prefix_is_warmed_when_the_session_starts_and_after_a_typed_reply():
    link = ScriptedLink(["Hello there."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    run([0.05, UserTurnFrame(turn=1, text="Hi!", source="text"), 0.5, EndFrame()],
        [Reply(link, convo, ChatConfig())])
    assert link.warmed[0] == link.requests[0][:-1], "the first turn's prefix is warmed before it is asked"
    assert link.warmed[-1] == convo.prefix()
    assert link.warmed[-1][-2:] == [{"role": "user", "content": "Hi!"},
                                    {"role": "assistant", "content": "Hello there."}]


def test_a_spoken_reply_is_warmed_as_heard_once_playback_reports_it():
    link = ScriptedLink(["One. Two. Three."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    run([UserTurnFrame(turn=1, text="Count!", source="voice"), 0.5,
         HeardFrame(turn=1, text="One. Two.", interrupted=True), 0.1, EndFrame()],
        [Reply(link, convo, ChatConfig(), spoken=True)])
    assert len(link.warmed) == 2, "at start, then once the exchange is recorded (not when the tokens ended)"
    assert link.warmed[-1][-1]["content"].startswith("One. Two.") and "Three" not in link.warmed[-1][-1]["content"]
    assert link.warmed[-1] == convo.prefix()


def test_the_likely_turn_is_warmed_with_its_words_and_is_then_asked_exactly():
    """At the pause the turn the words so far make is warmed whole: the gateway then waits for that
    warm-up instead of cancelling it, since it is the turn's very prompt (remote_api.warmup)."""
    link = ScriptedLink(["Penguins live in the south."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    run([0.05, LikelyTurnFrame(text="Where do penguins live?"), 0.05,
         UserTurnFrame(turn=1, text="Where do penguins live?", source="voice"), 0.5, EndFrame()],
        [Reply(link, convo, ChatConfig())])
    assert link.warmed[1] == link.requests[0], "the request's own messages, words and all"
    assert link.warmed[1][-1] == {"role": "user", "content": "Where do penguins live?"}


def test_no_likely_turn_is_warmed_while_a_reply_has_not_been_heard():
    """Over her reply the history is not final yet: a warm-up then would evaluate the wrong prompt."""
    link = ScriptedLink(["One. Two. Three."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    out = run([UserTurnFrame(turn=1, text="Count!", source="voice"), 0.3, LikelyTurnFrame(text="Stop counting"),
               0.1, EndFrame()], [Reply(link, convo, ChatConfig(), spoken=True)])
    assert len(link.warmed) == 1, "only the session's start"
    assert not any(isinstance(f, LikelyTurnFrame) for f in out), "the reply processor keeps it"
