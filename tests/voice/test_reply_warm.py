"""The reply processor asks the gateway to warm the next turn's prefix: at start and after each exchange;
at a pause it asks for the likely turn's reply (or only warms it), and drops a wrong guess."""

from __future__ import annotations

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import (
    EndFrame,
    HeardFrame,
    LikelyTurnFrame,
    RequestSentFrame,
    SpeechResumedFrame,
    TokenFrame,
    UserTurnFrame,
)
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


def test_without_speculation_the_likely_turn_is_warmed_with_its_words_and_is_then_asked_exactly():
    """At the pause the turn the words so far make is warmed whole: the gateway then waits for that
    warm-up instead of cancelling it, since it is the turn's very prompt (remote_api.warmup)."""
    link = ScriptedLink(["Penguins live in the south."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    run([0.05, LikelyTurnFrame(text="Where do penguins live?"), 0.05,
         UserTurnFrame(turn=1, text="Where do penguins live?", source="voice"), 0.5, EndFrame()],
        [Reply(link, convo, ChatConfig(speculate=False))])
    assert link.warmed[1] == link.requests[0], "the request's own messages, words and all"
    assert link.warmed[1][-1] == {"role": "user", "content": "Where do penguins live?"}


def test_while_the_user_speaks_the_turn_s_start_is_warmed_and_at_the_pause_its_reply_is_asked_for():
    link = ScriptedLink(["Penguins live in the south."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    run([0.05, LikelyTurnFrame(text="Where do", at_pause=False), 0.05,
         LikelyTurnFrame(text="Where do penguins live?"), 0.05,
         LikelyTurnFrame(text="Where do penguins", at_pause=False), 0.05,  # a late interim run: the pause came
         UserTurnFrame(turn=1, text="Where do penguins live?", source="voice"), 0.3, EndFrame()],
        [Reply(link, convo, ChatConfig())])
    assert link.warmed[1][-1] == {"role": "user", "content": "Where do"}, "the words so far, only warmed"
    assert [w[-1]["content"] for w in link.warmed[2:]] == ["Penguins live in the south."], \
        "nothing warmed over the reply asked for at the pause; then the next turn's prefix"
    assert len(link.requests) == 1 and link.requests[0][:-1] == link.warmed[1][:-1]
    assert link.requests[0][-1] == {"role": "user", "content": "Where do penguins live?"}


def test_no_likely_turn_is_warmed_while_a_reply_has_not_been_heard():
    """Over her reply the history is not final yet: a warm-up then would evaluate the wrong prompt."""
    link = ScriptedLink(["One. Two. Three."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    out = run([UserTurnFrame(turn=1, text="Count!", source="voice"), 0.3, LikelyTurnFrame(text="Stop counting"),
               0.1, EndFrame()], [Reply(link, convo, ChatConfig(), spoken=True)])
    assert len(link.warmed) == 1, "only the session's start"
    assert len(link.requests) == 1, "no reply asked for at that pause either"
    assert not any(isinstance(f, LikelyTurnFrame) for f in out), "the reply processor keeps it"


def reply_tokens(out, turn: int) -> str:
    return "".join(f.text for f in out if isinstance(f, TokenFrame) and f.turn == turn)


def test_the_reply_asked_for_at_the_pause_is_the_turn_s_and_waits_for_the_turn():
    link = ScriptedLink(["Penguins live in the south."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    out = run([0.05, LikelyTurnFrame(text="Where do penguins live?"), 0.2,
               UserTurnFrame(turn=1, text="Where do penguins live?", source="voice"), 0.5, EndFrame()],
              [Reply(link, convo, ChatConfig())])
    assert len(link.requests) == 1, "asked once, at the pause"
    assert link.requests[0] not in link.warmed, "the pause asked for the reply itself, no warm-up of it"
    assert link.requests[0][-1] == {"role": "user", "content": "Where do penguins live?"}
    kinds = [type(f) for f in out]
    assert kinds.index(UserTurnFrame) < kinds.index(RequestSentFrame) < kinds.index(TokenFrame), \
        "nothing of the reply goes on before the turn is taken"
    assert reply_tokens(out, 1).split() == "Penguins live in the south.".split()


def test_a_guess_the_turn_outgrew_is_cancelled_and_the_turn_s_own_words_are_asked():
    link = ScriptedLink(["Wrong guess, never heard.", "Penguins live in the south."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    out = run([0.05, LikelyTurnFrame(text="Where do"), 0.05,
               UserTurnFrame(turn=1, text="Where do penguins live?", source="voice"), 0.5, EndFrame()],
              [Reply(link, convo, ChatConfig())])
    assert link.turns[0].cancelled and not link.turns[1].cancelled
    assert link.requests[1][-1] == {"role": "user", "content": "Where do penguins live?"}
    assert reply_tokens(out, 1).split() == "Penguins live in the south.".split()


def test_speaking_again_after_the_pause_cancels_the_guess_at_once():
    link = ScriptedLink(["Wrong guess, never heard."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    out = run([0.05, LikelyTurnFrame(text="Where do"), 0.05, SpeechResumedFrame(t=1.0), 0.2, EndFrame()],
              [Reply(link, convo, ChatConfig())])
    assert link.turns[0].cancelled
    assert not any(isinstance(f, TokenFrame | RequestSentFrame) for f in out)
