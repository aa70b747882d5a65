"""Local intents: stop, volume and outfits without a round trip; the model's outfit tags."""

from __future__ import annotations

import pytest

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import (
    EndFrame,
    InterruptionFrame,
    OutfitFrame,
    SentenceFrame,
    UserTextFrame,
    UserTurnFrame,
    VolumeFrame,
)
from sidecar.intents import Intents, OutfitTags, Stop, Volume, Wear, load_catalogue, strip_tags
from sidecar.reply import Reply
from sidecar.voice.addressing import TurnTaker
from sidecar.voice.sentences import Sentences

from .harness import ScriptedLink, run

CATALOGUE = load_catalogue()
INTENTS = Intents(CATALOGUE, "Stella")

PHRASINGS = {
    "red_dress": ["Wear the red dress.", "Put on your red dress, please.", "Change into the red dress.",
                  "Stella, switch to the red dress.", "I'd love to see you in the red dress.",
                  "Could you put your red dress on?", "Get into your dress."],
    "hoodie": ["Change into your hoodie.", "Wear the hoodie.", "Put on your hoodie please.",
               "Switch to the hoodie, Stella.", "Can you slip into your hoodie?", "Go with the hoodie today."],
    "school": ["Wear your school uniform.", "Put on the uniform.", "Change into your school uniform please.",
               "Switch to the school uniform.", "I want to see you in your school uniform.",
               "Could you get into the uniform?"],
    "space": ["Wear the space suit.", "Put on your spacesuit.", "Change into the space suit.",
              "Switch to your space suit.", "Get into the space suit, Stella.", "Can you try on the space suit?"],
    "pyjamas": ["Wear your pyjamas.", "Put on your pajamas.", "Change into your pyjamas.", "Switch to the pyjamas.",
                "Get into your pajamas, it's late.", "Could you slip into your pyjamas?"],
    "formal": ["Wear something formal.", "Put on your formal outfit.", "Change into the formal outfit.",
               "Switch to formal.", "I'd like to see you in the formal outfit.", "Dress up in your formal clothes."],
}


def test_the_catalogue_is_the_atlas_manifest():
    assert {o.id for o in CATALOGUE} == set(PHRASINGS)


@pytest.mark.parametrize("outfit, phrase", [(o, p) for o, phrases in PHRASINGS.items() for p in phrases])
def test_six_phrasings_per_outfit_resolve(outfit, phrase):
    assert INTENTS.parse(phrase) == Wear(outfit)


@pytest.mark.parametrize("phrase", [
    "Wear something nice.", "Wear the bikini.", "Put on your wedding gown.", "Don't wear the red dress.",
    "Should I wear my hoodie tomorrow?", "What should I wear to the party?", "I love your red dress.",
    "Tell me about space suits.", "Wear the dress or the hoodie.",
])
def test_ambiguous_unknown_or_not_for_her_requests_change_nothing(phrase):
    assert INTENTS.parse(phrase) is None


@pytest.mark.parametrize("phrase, intent", [
    ("Stop.", Stop()), ("Be quiet.", Stop()), ("Okay Stella, stop talking.", Stop()), ("That's enough.", Stop()),
    ("Shut up please", Stop()), ("Louder.", Volume(+1)), ("Turn it up a bit.", Volume(+1)),
    ("Volume up", Volume(+1)), ("Can you speak up?", Volume(+1)), ("A little quieter, please.", Volume(-1)),
    ("Turn the volume down.", Volume(-1)), ("Not so loud!", Volume(-1)),
    ("Don't stop the music.", None), ("Why is the sky quiet at night?", None), ("What is the volume of a cube?", None),
])
def test_stop_and_volume(phrase, intent):
    assert INTENTS.parse(phrase) == intent


def test_intents_are_handled_without_a_turn_and_other_words_start_one():
    link = ScriptedLink(["Sure."])
    seen = run([UserTextFrame(text="Change into your hoodie."), UserTextFrame(text="Louder!"),
                UserTextFrame(text="Be quiet."), UserTextFrame(text="Wear the bikini."), 0.3, EndFrame()],
               [TurnTaker("hey stella", 8.0, intents=INTENTS),
                Reply(link, Conversation(PersonaConfig(), ChatConfig()), ChatConfig())])
    assert [(f.id, f.source) for f in seen if isinstance(f, OutfitFrame)] == [("hoodie", "user")]
    assert [f.step for f in seen if isinstance(f, VolumeFrame)] == [1]
    assert [f.reason for f in seen if isinstance(f, InterruptionFrame)] == ["stop"]
    assert [f.text for f in seen if isinstance(f, UserTurnFrame)] == ["Wear the bikini."]
    assert len(link.requests) == 1, "only the unknown outfit request goes to the model"


def reply_with(text: str) -> list:
    """A reply streamed in 3-character tokens (tags split across them) through Reply, OutfitTags, Sentences."""
    tokens = [text[i:i + 3] for i in range(0, len(text), 3)]
    convo = Conversation(PersonaConfig(), ChatConfig(), outfits=CATALOGUE)
    frames = run([UserTurnFrame(turn=1, text="hi", source="text"), 0.5, EndFrame()],
                 [Reply(ScriptedLink([tokens]), convo, ChatConfig()), OutfitTags(CATALOGUE), Sentences(4)])
    return frames, convo


def test_a_catalogue_outfit_tag_in_a_reply_changes_the_outfit_and_is_not_said():
    frames, convo = reply_with("Of course![outfit: red_dress]Here I am.")
    assert [(f.id, f.source) for f in frames if isinstance(f, OutfitFrame)] == [("red_dress", "assistant")]
    said = " ".join(f.text for f in frames if isinstance(f, SentenceFrame))
    assert said == "Of course! Here I am."
    assert "[" not in convo.history.recent(1)[0].assistant


def test_a_reply_naming_an_outfit_not_in_the_catalogue_changes_nothing(caplog):
    frames, _ = reply_with("Sure![outfit: bikini]Ta-da!")
    assert not [f for f in frames if isinstance(f, OutfitFrame)]
    assert "bikini" in caplog.text and "not in the catalogue" in caplog.text
    assert "bikini" not in " ".join(f.text for f in frames if isinstance(f, SentenceFrame))


def test_the_system_line_offers_the_catalogue_ids():
    line = Conversation(PersonaConfig(), ChatConfig(), outfits=CATALOGUE).system_line()
    assert "[outfit: ID]" in line and all(o.id in line for o in CATALOGUE)
    assert strip_tags("Okay [outfit: hoodie] done") == "Okay done"
