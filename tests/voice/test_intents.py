"""Local intents: stop, volume, outfits and the clock without a round trip; the model's outfit tags."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from sidecar.config import ChatConfig, PersonaConfig
from sidecar.conversation import Conversation
from sidecar.frames import (
    EndFrame,
    InterruptionFrame,
    OutfitFrame,
    ReplyDoneFrame,
    SentenceFrame,
    UserTextFrame,
    UserTurnFrame,
    VolumeFrame,
)
from sidecar.intents import Intents, Stop, Tell, Volume, Wear
from sidecar.outfit_catalogue import load_catalogue
from sidecar.outfit_tags import OutfitTags, closest, strip_tags
from sidecar.reply import Reply
from sidecar.voice.sentences import Sentences
from sidecar.voice.turn_taking import TurnTaker

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
    "hanfu": ["Wear your hanfu.", "Put on the hanfu, please.", "Change into your hanfu.", "Switch to the hanfu.",
              "I'd love to see you in your hanfu.", "Dress up for the lantern festival."],
    "cyberpunk": ["Wear the cyberpunk outfit.", "Put on your cyberpunk jacket.", "Switch to cyberpunk.",
                  "Change into your cyberpunk clothes.", "Could you get into the cyberpunk outfit?",
                  "Get ready for a night out in the neon city."],
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


def reply_with(text: str, *again: str, link: ScriptedLink | None = None) -> list:
    """A reply streamed in 3-character tokens (tags split across them) through Reply, OutfitTags, Sentences;
    `again`: what the model answers when asked again."""
    tokens = [text[i:i + 3] for i in range(0, len(text), 3)]
    convo = Conversation(PersonaConfig(), ChatConfig(), outfits=CATALOGUE)
    link = link or ScriptedLink([])
    link.replies = [tokens, *again]
    frames = run([UserTurnFrame(turn=1, text="hi", source="text"), 0.5, EndFrame()],
                 [Reply(link, convo, ChatConfig()), OutfitTags(CATALOGUE), Sentences(4)])
    return frames, convo


def test_a_catalogue_outfit_tag_in_a_reply_changes_the_outfit_and_is_not_said():
    frames, convo = reply_with("Of course![outfit: red_dress]Here I am.")
    assert [(f.id, f.source) for f in frames if isinstance(f, OutfitFrame)] == [("red_dress", "assistant")]
    said = " ".join(f.text for f in frames if isinstance(f, SentenceFrame))
    assert said == "Of course! Here I am."
    assert "[" not in convo.history.recent(1)[0].assistant


def test_an_outfit_not_in_the_catalogue_is_asked_for_again_once_and_the_answer_worn_unsaid():
    link = ScriptedLink([])
    frames, convo = reply_with("Off to the moon![outfit: space_suit]", "[outfit: space]", link=link)
    assert [(f.id, f.source) for f in frames if isinstance(f, OutfitFrame)] == [("space", "assistant")]
    assert len(link.requests) == 2, "asked again once"
    again = link.requests[1]
    assert again[-2] == {"role": "assistant", "content": "Off to the moon![outfit: space_suit]"}
    assert '"space_suit"' in again[-1]["content"] and all(o.id in again[-1]["content"] for o in CATALOGUE)
    assert " ".join(f.text for f in frames if isinstance(f, SentenceFrame)) == "Off to the moon!"
    assert convo.history.recent(1)[0].assistant == "Off to the moon!"


def test_an_outfit_still_unknown_when_asked_again_falls_back_to_the_closest_and_she_says_so():
    frames, convo = reply_with("Sure![outfit: evening_gown]Ta-da!", "Hmm, [outfit: ballgown]")
    assert [f.id for f in frames if isinstance(f, OutfitFrame)] == ["formal"]
    said = " ".join(f.text for f in frames if isinstance(f, SentenceFrame))
    assert said.startswith("Sure! Ta-da!")
    assert "I don't have an evening gown, so I'm wearing my formal instead." in said, said
    assert "wearing my formal instead" in convo.history.recent(1)[0].assistant, "she remembers saying so"


@pytest.mark.parametrize("unknown, outfit", [("space_suit", "space"), ("astronaut_outfit", "space"),
                                             ("red-dress", "red_dress"), ("pajamas", "pyjamas"),
                                             ("sleepwear", "pyjamas"), ("tuxedo", "formal"), ("hoody", "hoodie")])
def test_the_closest_outfit_to_a_made_up_id(unknown, outfit):
    assert closest(unknown, CATALOGUE).id == outfit


@pytest.mark.parametrize("phrase, outfit", [
    ("Could you dress up for a trip to the moon?", "space"), ("It's bedtime, get ready for sleep.", "pyjamas"),
    ("Wear something comfy and casual.", "hoodie"), ("Get dressed for the wedding, Stella.", "formal"),
    ("Dress up for a party!", "red_dress"), ("Get ready for class.", "school")])
def test_a_request_for_an_occasion_wears_the_outfit_that_suits_it(phrase, outfit):
    assert INTENTS.parse(phrase) == Wear(outfit)


def test_the_system_line_offers_the_catalogue_ids():
    line = Conversation(PersonaConfig(), ChatConfig(), outfits=CATALOGUE).system_line()
    assert "[outfit: ID]" in line and all(o.id in line for o in CATALOGUE)
    assert strip_tags("Okay [outfit: hoodie] done") == "Okay done"


# --- the clock: questions the machine answers itself --------------------------------------

# 23:05 on Tuesday 1 December 2026 in UTC is already Wednesday morning in Tokyo: the answers
# must follow the user's time zone, not UTC.
TOKYO_NOW = datetime(2026, 12, 1, 23, 5, tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo("Asia/Tokyo"))
CLOCK = Intents(CATALOGUE, "Stella", now=lambda: TOKYO_NOW)


@pytest.mark.parametrize("phrase", [
    "What time is it?", "What's the time?", "what is the time now", "Stella, what time is it?",
    "Can you tell me the time, please?", "Do you know what time it is?", "Hey Stella, what's the time right now?",
    "Tell me the time.", "What's the current time?",
])
def test_time_questions_are_answered_with_the_users_local_time(phrase):
    assert CLOCK.parse(phrase) == Tell("It's 8:05 AM.")


@pytest.mark.parametrize("phrase", [
    "What's the date?", "Tell me the date.", "What is the date today?", "What's today's date?",
    "What date is it?", "Could you tell me the date, Stella?", "What's the date today, please?",
])
def test_date_questions_are_answered_with_the_users_local_date(phrase):
    assert CLOCK.parse(phrase) == Tell("Today is Wednesday, December 2, 2026.")


@pytest.mark.parametrize("phrase", [
    "What day is it today?", "What day is it?", "What day is today?", "Which day is it?",
    "What day of the week is it?", "Stella, do you know what day it is?", "Tell me what day it is today.",
])
def test_day_questions_are_answered_with_the_users_local_weekday(phrase):
    assert CLOCK.parse(phrase) == Tell("Today is Wednesday.")


@pytest.mark.parametrize("phrase", [
    "What time did you wake up?", "What day do you like best?", "What time is it in London?",
    "What's the date of the party?", "Is it time to go?", "Do you have time for a story?",
    "What time do you go to bed?", "What day is your birthday?", "I had a great day today.",
    "Tell me about time travel.", "What is the date of Christmas?", "Have a nice day.",
])
def test_questions_that_only_mention_time_or_days_go_to_the_model(phrase):
    assert CLOCK.parse(phrase) is None


def test_afternoon_and_midnight_read_as_twelve_hour_times():
    def at(hour, minute):
        return Intents((), now=lambda: datetime(2026, 3, 9, hour, minute, tzinfo=ZoneInfo("Europe/Lisbon")))
    assert at(15, 30).parse("What time is it?") == Tell("It's 3:30 PM.")
    assert at(0, 7).parse("What time is it?") == Tell("It's 12:07 AM.")
    assert at(12, 0).parse("What time is it?") == Tell("It's 12:00 PM.")
    assert at(9, 0).parse("What day is it?") == Tell("Today is Monday.")


def test_the_default_clock_is_the_computers_time_zone():
    """With no clock injected the answer is in the zone the user's session has (TZ honoured)."""
    code = ("from sidecar.intents import local_now; n = local_now(); "
            "print(n.utcoffset().total_seconds(), n.tzname())")
    for zone, offset in (("Asia/Kolkata", 19800.0), ("America/Caracas", -14400.0)):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "TZ": zone})
        assert float(done.stdout.split()[0]) == offset, (zone, done.stdout)


def test_a_clock_question_is_answered_without_the_model_and_spoken_like_a_reply():
    """Typed or spoken, the turn is shown, said (sentences go to TTS) and kept in the history."""
    link = ScriptedLink(["Sure."])
    convo = Conversation(PersonaConfig(), ChatConfig())
    frames = run([UserTextFrame(text="What time is it?"), 0.2, UserTextFrame(text="Tell me a story."), 0.3,
                  EndFrame()],
                 [TurnTaker("hey stella", 8.0, intents=CLOCK), Reply(link, convo, ChatConfig()), Sentences(4)])
    turns = [f for f in frames if isinstance(f, UserTurnFrame)]
    assert [(t.text, t.local_answer) for t in turns] == [("What time is it?", "It's 8:05 AM."),
                                                          ("Tell me a story.", None)]
    assert [f.text for f in frames if isinstance(f, SentenceFrame) and f.turn == turns[0].turn] == ["It's 8:05 AM."]
    assert [(f.turn, f.reason, f.text) for f in frames if isinstance(f, ReplyDoneFrame)][0] == (
        turns[0].turn, "stop", "It's 8:05 AM.")
    assert len(link.requests) == 1, "only the story goes to the model"
    assert {"role": "assistant", "content": "It's 8:05 AM."} in link.requests[0], "the answer is in the history"


@pytest.mark.parametrize("phrase, outfit", [
    ("请换上宇航服。", "space"), ("小星，穿上你的睡衣吧", "pyjamas"), ("换成校服", "school"),
    ("换上红裙子！", "red_dress"), ("穿上礼服", "formal"), ("换卫衣", "hoodie"), ("别穿红裙子", None),
    ("我穿上睡衣了", None), ("你喜欢宇航服吗？", None), ("换上礼服或者睡衣", None),
    ("换上汉服", "hanfu"), ("小星，穿上你的古风汉服吧", "hanfu"), ("换成赛博朋克", "cyberpunk"),
    ("换上赛博朋克！", "cyberpunk"), ("别穿汉服", None)])
def test_a_mandarin_outfit_request_names_the_outfit_by_its_chinese_name(phrase, outfit):
    assert INTENTS.parse(phrase) == (Wear(outfit) if outfit else None)


@pytest.mark.parametrize("phrase, outfit", [
    ("Show me your party look!", "red_dress"), ("Time for school, get changed.", "school"),
    ("Get your gear on, we are going to the moon.", "space"), ("Can you change for bed?", "pyjamas"),
    ("You look tired today.", None), ("Change the subject, please.", None), ("Look at the stars tonight.", None),
    ("My outfit for the party is ready.", None), ("I changed my clothes for the party.", None),
    ("What clothes do you like?", None)])
def test_other_ways_to_ask_her_to_dress_find_the_outfit_in_the_whole_request(phrase, outfit):
    assert INTENTS.parse(phrase) == (Wear(outfit) if outfit else None)


@pytest.mark.parametrize("asked, reply, outfit", [
    ("It's a lazy Sunday, dress down a bit.", "I'll put on my pyjamas!", "pyjamas"),
    ("我们去参加晚宴，你穿得正式一点。", "好的，我换上礼服。", "formal"),
    ("Tell me about the moon.", "Astronauts walk there in a space suit.", None),  # not a dressing request
    ("Wear something for me.", "A hoodie or pyjamas, which one?", None)])  # two outfits: no choice made
def test_a_reply_to_a_dressing_request_that_names_an_outfit_without_its_tag_wears_it(asked, reply, outfit):
    convo = Conversation(PersonaConfig(), ChatConfig(), outfits=CATALOGUE)
    frames = run([UserTurnFrame(turn=1, text=asked, source="text"), 0.5, EndFrame()],
                 [Reply(ScriptedLink([reply]), convo, ChatConfig()), OutfitTags(CATALOGUE)])
    assert [f.id for f in frames if isinstance(f, OutfitFrame)] == ([outfit] if outfit else [])
