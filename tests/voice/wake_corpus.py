"""The wake-word bench's corpus: generated from text, deterministic, cached outside git.

Run on its own to (re)build it: ``.venv/bin/python tests/voice/wake_corpus.py``; the bench
(tests/bench/wake_rates.py) builds it on first use. Files go to
``~/.cache/stella/bench/wake/<folder>/`` (override the root with ``STELLA_WAKE_CORPUS``).

Ten sets, of disjoint voices: **tuning** and **seen** (folder v1: thresholds and matcher
rules were chosen on them — "seen" was the first held-out set, and once its misses had been
read it was no longer held out), **seen2** (folder v2, the second held-out set, seen in turn
once the n-best rules and the noisy model were chosen on it), **seen3** (folder v3, the third,
seen once its false accepts had been read), **seen4** (folder v4, the fourth: English accents
with new espeak-ng variants and English said by eight other languages' voices), **seen5** (folder
v5, the fifth: ten more languages and flite's five voices; seen once the first "hey stella" model's
false accepts had been read, then the decision rules were chosen on it), **seen6** (folder v6, the
sixth: nine more languages, Festival's voices and piper joe played faster or slower; its false
accepts chose the look-alikes the second model was trained against), **seen7** (folder v7, the
seventh: ten more languages, each checked to say the name by its own phonemes (`says_the_name`);
seen once its false accepts had been read), **seen8** (folder v8, the eighth: ten more languages, three
of them tonal; seen once its false accepts had been read, then rules were tried on it), **seen9** (folder v9,
the ninth: ten more languages; seen once its misses had been read) and **heldout** (folder v10:
voices, languages, texts and noise seeds never used for tuning or for training the "hey stella" model,
tests/voice/wake_train.py — English said by espeak-ng voices of ten more languages and piper joe at
new speeds and played faster or slower by new factors; reported, never tuned on; an hour
of ordinary speech besides its look-alike scenes). From v3 on, half the look-alike scenes are said over
noise beds. Each set has

* wake utterances ("Hey Stella, ..." for every engine now; "Hey Jarvis, ..." for the published
  hey_jarvis model the acoustic engines used before ours), each voice saying several forms at random
  speeds and pitches, in one stream with gaps — clean, and with pink noise at 10 dB SNR;
* ordinary speech that is not a wake word, in scenes: conversations (two voices taking turns
  with short gaps), TV-like chatter (a newsreader's run of sentences over a music, babble or
  noise bed at 5–15 dB SNR), lines of everyday requests, and look-alikes of both names
  ("Please tell us", "Hey Bella", "Still here", "Hey Travis", "jars of jam").

Which near-names count as the wake word (so are *not* in the other speech): the name said
first or after a greeting, however accented or spelt — "Hey Stellar" (non-rhotic speakers say
it exactly like "Hey Stella"), "A Stella" (whisper's spelling of a quick "hey"), "Stella,
...". A name later in a sentence ("I told Stella") is not a wake word and is in the corpus.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import re
import subprocess
import sys
import wave
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import platformdirs  # noqa: E402

from sidecar.voice.audio import RATE  # noqa: E402
from tests.voice.speech import Piper, espeak, festival, flite, noise, save, shifted  # noqa: E402

ROOT = Path(os.environ.get("STELLA_WAKE_CORPUS") or Path(platformdirs.user_cache_dir("stella")) / "bench" / "wake")
SNR_DB = 10
WAKE_GAP_S = 2.5  # between wake utterances: longer than the hang-over and the trigger's refractory time
FILE_S = 300.0  # the other speech is cut into streams of about this length

SETS = ("tuning", "seen", "seen2", "seen3", "seen4", "seen5", "seen6", "seen7", "seen8", "seen9", "heldout")
# Where each set lives: its folder under ROOT, and its name in that folder's index and files
# (the "seen" set was generated as v1's "heldout"; regenerated, it is the same audio).
# (and "seen2" as v2's "heldout", "seen3" as v3's, ... "seen9" as v9's).
FOLDER = {"tuning": "v1", "seen": "v1", "seen2": "v2", "seen3": "v3", "seen4": "v4", "seen5": "v5", "seen6": "v6",
          "seen7": "v7", "seen8": "v8", "seen9": "v9", "heldout": "v10"}
KEY = {"tuning": "tuning", **{s: "heldout" for s in SETS[1:]}}
# speech (not gaps) in the other speech; v7's to v10's have an hour without their look-alike scenes (a sixth of it)
TARGET_S = {"tuning": 15 * 60, **{s: 62 * 60 for s in SETS[1:]},
            **{s: 74 * 60 for s in ("seen7", "seen8", "seen9", "heldout")}}
# espeak-ng voices: (accent, variant) pairs. v2's variants were used in no earlier set.
_V1_BASES = {"tuning": ("en-us", "en-gb", "en-gb-x-rp", "en-gb-x-gbclan"),
             "seen": ("en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-gbcwmd")}
_V1_VARIANTS = {"tuning": ("", "+f1", "+f2", "+m1", "+m2", "+m3"),
                "seen": ("", "+f3", "+f4", "+f5", "+m4", "+m5", "+m6", "+m7")}
_V2_VARIANTS = {"en-us": ("+Annie", "+Andy", "+linda", "+john"),
                "en-gb": ("+edward", "+steph", "+aunty", "+david"),
                "en-gb-x-rp": ("+belinda", "+robert", "+grandma", "+adam"),
                "en-gb-x-gbclan": ("+paul", "+shelby", "+max", "+m8"),
                "en-gb-scotland": ("+Alicia", "+michel", "+quincy", "+benjamin"),
                "en-029": ("+Andrea", "+norbert", "+victor", "+steph2"),
                "en-us-nyc": ("+anika", "+zac", "+caleb", "+grandpa"),
                "en-gb-x-gbcwmd": ("+iven", "+Jacky", "+rob", "+steph3")}
_V3_VARIANTS = {"en-us": ("+Mike", "+Gene", "+Lee", "+Alex"),
                "en-gb": ("+Michael", "+edward2", "+Hugo", "+Denis"),
                "en-gb-x-rp": ("+ed", "+Gene2", "+marcelo", "+boris"),
                "en-gb-x-gbclan": ("+iven2", "+Marco", "+miguel", "+kaukovalta"),
                "en-gb-scotland": ("+iven3", "+pablo", "+Mario", "+croak"),
                "en-029": ("+antonio", "+Diogo", "+Nguyen", "+Tweaky"),
                "en-us-nyc": ("+travis", "+sandro", "+pedro", "+AnxiousAndy"),
                "en-gb-x-gbcwmd": ("+iven4", "+gustave", "+Henrique", "+klatt")}
# v4: the English accents with espeak-ng's last human variants, and English said by espeak-ng's
# German, French, Spanish, Italian, Hindi, Dutch and Polish voices (foreign accents: "Hey Stella"
# in Spanish rules is "Hey Estela") with the classic variants, an accent none of them was tuned on.
_V4_VARIANTS = {"en-us": ("+klatt2", "+Storm", "+RicishayMax"),
                "en-gb": ("+klatt3", "+announcer", "+RicishayMax2"),
                "en-gb-scotland": ("+klatt4", "+Mr", "+RicishayMax3"),
                "en-029": ("+klatt5", "+klatt6", "+whisperf"),
                "de": ("+f2", "+m3", "+m6"), "fr": ("+f1", "+m2", "+m5"), "es": ("+f4", "+m1", "+m7"),
                "it": ("+f3", "+m4", "+m8"), "hi": ("+f5", "+m2", "+m6"), "nl": ("+f1", "+m3"),
                "pl": ("+f2", "+m5"), "pt": ("+f3", "+m1")}
# v5: English said by espeak-ng voices of ten languages no earlier set and no training voice had
# (tests/voice/wake_train.py), and — a synthesiser nothing was trained or tuned on — flite's five.
_V5_VARIANTS = {"sv": ("+f2", "+m1", "+m6"), "fi": ("+f4", "+m3", "+m8"), "cs": ("+f1", "+m2", "+m7"),
                "hu": ("+f5", "+m4", "+m1"), "ro": ("+f3", "+m5", "+m2"), "da": ("+f2", "+m6", "+m3"),
                "nb": ("+f1", "+m7", "+m4"), "sk": ("+f4", "+m8", "+m5"), "tr": ("+f5", "+m1", "+m6"),
                "sl": ("+f3", "+m2", "+m7")}
# v6: English said by espeak-ng voices of nine languages no earlier set and no training voice had;
# Festival's diphone voice ked (a speaker no other synthesiser here has) and its HTS voice of slt
# (flite's slt is a concatenative voice of the same speaker), and piper joe played faster or slower
# (pitch and formants moved together: another vocal tract), none of which anything was trained or tuned on.
_V6_VARIANTS = {"mt": ("+f1", "+m3", "+m8"), "lb": ("+f4", "+m2", "+m6"), "ia": ("+f3", "+m1", "+m5"),
                "ht": ("+f2", "+m4", "+m7"), "mi": ("+f5", "+m6", "+m2"), "gd": ("+f1", "+m5", "+m8"),
                "bs": ("+f3", "+m7", "+m1"), "az": ("+f4", "+m3", "+m6"), "an": ("+f2", "+m8", "+m4")}
# v7: English said by espeak-ng voices of ten languages no earlier set and no training voice had, each
# kept only if espeak-ng's own phonemes for "Hey Stella." say the name (`says_the_name`): v6's Maori voice
# spelt the words letter by letter and its Luxembourgish and Gaelic ones said "Shayla" and "Shtyella",
# which no listener would call her name, so they measured the set, not the engine.
_V7_VARIANTS = {"sr": ("+f2", "+m3", "+m7"), "pt-br": ("+f5", "+m2", "+m8"), "fa-latn": ("+f1", "+m4", "+m6"),
                "ug": ("+f3", "+m5", "+m1"), "nci": ("+f4", "+m6", "+m3"), "grc": ("+f2", "+m1", "+m5"),
                "jbo": ("+f5", "+m7", "+m4"), "qya": ("+f1", "+m8", "+m2"), "sjn": ("+f3", "+m3", "+m6"),
                "piqd": ("+f4", "+m2", "+m7")}
# v8: English said by espeak-ng voices of ten languages no earlier set and no training voice had: three
# tonal ones (Mandarin, Cantonese and Hakka rules put their tones on the English words) and seven of other
# scripts, whose voices switch to English rules for these words (`says_the_name` checks each).
_V8_VARIANTS = {"cmn": ("+f3", "+m4", "+m8"), "yue": ("+f1", "+m2", "+m6"), "hak": ("+f5", "+m3", "+m7"),
                "ru": ("+f4", "+m1", "+m5"), "el": ("+f2", "+m6", "+m8"), "ka": ("+f3", "+m2", "+m4"),
                "ar": ("+f1", "+m7", "+m3"), "ko": ("+f5", "+m5", "+m1"), "ta": ("+f2", "+m4", "+m6"),
                "bg": ("+f4", "+m8", "+m2")}
# v9: English said by espeak-ng voices of ten languages no earlier set and no training voice had (two
# Indic scripts, Thai, Armenian, Cyrillic and Perso-Arabic ones, and Belgian French), each checked by `says_the_name`.
_V9_VARIANTS = {"uk": ("+f1", "+m6", "+m2"), "mk": ("+f5", "+m4", "+m8"), "hy": ("+f2", "+m3", "+m7"),
                "th": ("+f4", "+m1", "+m6"), "bn": ("+f3", "+m5", "+m8"), "ur": ("+f2", "+m7", "+m1"),
                "kk": ("+f1", "+m4", "+m3"), "tt": ("+f5", "+m2", "+m5"), "fr-be": ("+f3", "+m6", "+m4"),
                "te": ("+f4", "+m8", "+m2")}
# v10: English said by espeak-ng voices of ten languages no earlier set and no training voice had (six
# Indic ones, Sinhala, Amharic, Sindhi and Swiss French), each checked by `says_the_name`.
_V10_VARIANTS = {"mr": ("+f2", "+m5", "+m3"), "ne": ("+f4", "+m7", "+m1"), "gu": ("+f1", "+m8", "+m6"),
                 "pa": ("+f5", "+m1", "+m4"), "kn": ("+f3", "+m2", "+m8"), "ml": ("+f2", "+m6", "+m4"),
                 "si": ("+f5", "+m3", "+m7"), "am": ("+f1", "+m5", "+m2"), "sd": ("+f4", "+m6", "+m3"),
                 "fr-ch": ("+f3", "+m7", "+m1")}
FLITE_VOICES = {"seen5": ("awb", "rms", "slt", "kal16", "kal")}
# (voice, shift): Festival voices, some played faster or slower (`speech.shifted`)
FESTIVAL_VOICES = {"seen6": (("ked_diphone", 1.0), ("ked_diphone", 1.12), ("cmu_us_slt_arctic_hts", 1.0),
                             ("cmu_us_slt_arctic_hts", 0.9))}
# piper joe at length scale 1, played this much faster
PIPER_SHIFTS = {"seen6": (0.88, 1.14), "seen7": (0.93, 1.2), "seen8": (0.92, 1.17), "seen9": (0.91, 1.22),
                "heldout": (0.89, 1.16)}
ESPEAK_VOICES = {
    **{s: tuple(b + v for b in _V1_BASES[s] for v in _V1_VARIANTS[s]) for s in _V1_BASES},
    "seen2": tuple(b + v for b, vs in _V2_VARIANTS.items() for v in vs),
    "seen3": tuple(b + v for b, vs in _V3_VARIANTS.items() for v in vs),
    "seen4": tuple(b + v for b, vs in _V4_VARIANTS.items() for v in vs),
    "seen5": tuple(b + v for b, vs in _V5_VARIANTS.items() for v in vs),
    "seen6": tuple(b + v for b, vs in _V6_VARIANTS.items() for v in vs),
    "seen7": tuple(b + v for b, vs in _V7_VARIANTS.items() for v in vs),
    "seen8": tuple(b + v for b, vs in _V8_VARIANTS.items() for v in vs),
    "seen9": tuple(b + v for b, vs in _V9_VARIANTS.items() for v in vs),
    "heldout": tuple(b + v for b, vs in _V10_VARIANTS.items() for v in vs),
}
# piper joe is the one piper speaker: every set has it, at speeds of its own
PIPER_SCALES = {"tuning": (0.85, 1.0, 1.2), "seen": (0.92, 1.1, 1.3), "seen2": (0.8, 1.05, 1.4),
                "seen3": (0.88, 1.15, 1.35), "seen4": (0.9, 1.12, 1.25), "seen5": (0.83, 0.97, 1.45),
                "seen6": (0.94, 1.18, 1.6), "seen7": (0.87, 1.08, 1.5), "seen8": (0.86, 1.03, 1.55),
                "seen9": (0.82, 1.06, 1.38), "heldout": (0.84, 1.02, 1.33)}
WAKES_PER_VOICE = {"tuning": 4, **{s: 6 for s in SETS[1:]}}
# Seeds are strings: v2's to v10's carry a prefix, so none of their noise or choices repeats another's.
SALT = {"v1": "", **{f"v{i}": f"v{i}-" for i in range(2, 11)}}
# folders whose look-alike scenes are said over a noise bed half the time
NOISY_LOOKALIKES = {"v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"}

NAMES = {"phrase": "Stella", "acoustic": "Jarvis"}
WAKE_FORMS = ["Hey {n}.", "Hey {n}", "Hey {n}, what time is it?", "Hey {n}, turn on the lights.",
              "Hey {n}, tell me a joke.", "Hey {n}, what's the weather like today?", "Hey {n}, play some music.",
              "Hey {n}, set a timer for five minutes.", "Hey {n}, how are you?", "Hey {n}, I need some help."]

CHATTER = [
    "The bus was late again this morning.", "I think we should paint the kitchen yellow.",
    "My sister is visiting next weekend.", "The garden needs watering before the sun goes down.",
    "Did you see the football match last night?", "This coffee is a little too strong for me.",
    "We are out of milk and bread.", "The meeting moved to three o'clock.", "I left my keys on the table.",
    "It has been raining all week.", "The cat is sleeping on the sofa again.", "Let's go for a walk after lunch.",
    "I need to finish this report by Friday.", "The new library opens on Monday.", "Can you pass me the salt?",
    "I am reading a book about old ships.", "The train to the city leaves at noon.", "Our neighbours got a puppy.",
    "The soup needs more pepper.", "I forgot to water the plants.", "Where did you put the scissors?",
    "That film was much longer than I expected.", "Shall we order pizza tonight?", "My phone battery is almost flat.",
    "The heating is making that noise again.", "I told Stella about the party.", "Ask Jarvis's brother, he knows.",
    "Do you remember where we parked?", "The shop on the corner closes early on Sundays.",
    "I can't find my other sock.", "He said he would call back after dinner.", "The kids are playing in the garden.",
]
REQUESTS = [
    "what time is it", "turn on the lights", "play some music", "what is the weather like today",
    "set a timer for ten minutes", "remind me to call my mother", "how far away is the moon",
    "tell me a funny story", "what should I cook for dinner", "turn the volume down a little",
    "when does the shop close", "how do you spell necessary", "what is the capital of Spain",
]
OPENERS = ["Could you tell me", "I wonder", "Do you know", "Please explain", "My friend asked",
           "Yesterday I learned", "I really want to know", "Let me think about", "Nobody knows", "Guess"]
LOOKALIKES = [
    # for "hey stella"
    "Please tell us what happened.", "Please tell us a story.", "Tell us about your day.",
    "Hey Bella, nice to see you.",
    "Hey Stanley, over here.", "Hey Steve, what is up?", "Still waiting for the bus.", "Steal the show tonight.",
    "The cellar is full of old wine.", "Hey, tell her I said hello.", "Stay till the end of the film.",
    "Hey, tell a friend about it.", "Hey Sheila, how was your trip?", "Hey Stan, look at this.",
    "Hey, stealing is wrong.", "Hello, Ella, come inside.", "Hey Kayla, wait for me.", "Hey Bela, good morning.",
    # for "hey jarvis"
    "Hey Travis, are you coming tonight?", "I bought two jars of jam.", "Hey Jasmine, how was your trip?",
    "Harvest season starts soon.", "Hey Marvin, wait for me.", "The service was excellent.",
    "Hey Charlie, look at this.", "Hey Davis, are you ready?", "Hey Garvey, nice shirt.", "Hey Jarrod, catch the ball.",
    "Hey Mavis, the tea is ready.",
    "The jar of biscuits is empty.", "Hey Jack, is this yours?", "Hey Chris, pass it over.",
]
SUBJECTS = ["The government", "Local police", "Scientists", "The city council", "A spokesperson", "Farmers",
            "The national team", "Shoppers", "Researchers at the university", "The weather service", "Officials",
            "The company", "Fans", "Doctors", "The museum", "Residents"]
VERBS = ["announced", "warned about", "celebrated", "reported", "discussed", "criticised", "welcomed",
         "are preparing for", "have confirmed", "expect", "questioned", "delayed"]
OBJECTS = ["a new plan for the railway", "heavy rain in the north", "record sales this winter",
           "the opening of a bridge", "higher prices for energy", "a rise in visitors", "the final match of the season",
           "changes to the school timetable", "a festival of music and food", "repairs on the main road",
           "a discovery of ancient coins", "the results of the election", "strong winds along the coast"]
TIMES = ["this morning", "on Tuesday", "after a long debate", "late last night", "for the coming weekend",
         "earlier today", "despite the protests", "in a short statement"]

# The v2 (held-out) set's texts: none of them said in v1.
V2_WAKE_FORMS = ["Hey {n}!", "Hey {n}?", "Hey {n}, are you there?", "Hey {n}, what's in my diary?",
                 "Hey {n}, open the curtains.", "Hey {n}, how long until sunset?", "Hey {n}, read me the news.",
                 "Hey {n}, add eggs to the shopping list.", "Hey {n}, call my brother.", "Hey {n}, good morning.",
                 "Hey {n}, what's the score?", "Hey {n}, make it warmer in here."]
V2_CHATTER = [
    "The printer is out of paper again.", "We should book the holiday before prices go up.",
    "Grandma sent a postcard from the seaside.", "The dog chewed the edge of the rug.",
    "I'll pick up the children at four.", "The lettuce in the fridge has gone soft.",
    "Somebody parked across our driveway.", "There's a strange smell coming from the oven.",
    "The bank closes at half past three.", "My knees hurt after that long hike.",
    "Put the umbrella by the door, just in case.", "The neighbours are having a barbecue.",
    "I think the clock in the hall is slow.", "She wants a blue bicycle for her birthday.",
    "Did anybody feed the fish today?", "The tap in the bathroom keeps dripping.",
    "We met Stella at the station.", "That was Jarvis on the phone, from the garage.",
    "I'm going to bed early tonight.", "The crossword was really hard this week.",
    "Turn left after the second roundabout.", "There are too many wasps in the garden.",
    "The plumber can come on Thursday morning.", "Your jacket is hanging behind the door.",
    "Let's watch something funny tonight.", "I dropped my glasses behind the sofa.",
    "The apples from the market were delicious.", "I asked my uncle Jarvis for a lift.",
    "Tell your cousin Stella we said hi.", "The washing machine is making a racket.",
]
V2_REQUESTS = [
    "how many ounces are in a pound", "who wrote the first dictionary", "what day is it tomorrow",
    "find a recipe for pancakes", "how deep is the ocean", "switch off the radio", "what rhymes with orange",
    "where is the nearest chemist", "how old is the universe", "translate good night into French",
    "when is the next full moon", "count to twenty slowly",
]
V2_OPENERS = ["Can somebody check", "I'd love to find out", "Does anyone remember", "Let's look up",
              "My teacher asked", "I always forget", "We should figure out", "Honestly, who knows"]
V2_LOOKALIKES = [
    # for "hey stella"
    "Hey Ella, your coat is here.", "Hey Della, pass the bread.", "Hey Stacy, how was work?",
    "Hey Sarah, did you call?", "Hey Shelly, over here.", "Stay there, I'm coming.", "Tell Ella to hurry up.",
    "Hey, sell it online.", "Hey Stephen, nice hat.", "Hey Stuart, want some tea?", "Sell the old table.",
    "Hey, still raining out there?", "Hey Teller, your change.", "Hey, tell me later.", "Excel is open.",
    "Hey Stelios, good game.", "Stay a little longer, Ella.",
    # for "hey jarvis"
    "Hey Harvey, grab a chair.", "Hey Marcus, what's new?", "Hey Mavis, the kettle's on.",
    "Hey Carlos, good to see you.", "Hey Jamie, your shoe is untied.", "Jars and boxes go in the loft.",
    "Hey, Jar Jar was in that film.", "Hey Dennis, catch.", "Hey Janice, your phone is ringing.",
    "Nervous about the exam?", "Hey Travers, wait up.", "Hey Jeeves, bring the car round.",
    "Hey Chavez, nice goal.", "Hey Jasper, sit down.",
]
V2_SUBJECTS = ["The transport minister", "Firefighters", "A local charity", "The health service", "Economists",
               "The orchestra", "Engineers", "Supporters of the club", "The airport", "Environmental groups",
               "Teachers", "Astronomers", "The regional council", "Coastguards"]
V2_VERBS = ["are investigating", "have postponed", "praised", "rejected", "are campaigning for", "unveiled",
            "have promised", "predicted", "voted against", "confirmed the cost of"]
V2_OBJECTS = ["a new hospital wing", "flooding in the valley", "a shortage of teachers", "a comet visible at dawn",
              "plans for a tram line", "the price of bread", "a record harvest", "delays at the border",
              "the winter concert season", "a new recycling scheme", "fog across the motorway",
              "a rare bird sighting", "changes to pensions"]
V2_TIMES = ["yesterday afternoon", "on Friday", "after months of talks", "in the early hours",
            "ahead of the holidays", "at a press conference", "for the second time this year"]

# The v3 (held-out) set's texts: none of them said in v1 or v2.
V3_WAKE_FORMS = ["Hey {n}, are you awake?", "Hey {n}, set an alarm for seven.", "Hey {n}, what's the weather like?",
                 "Hey {n}, play some jazz.", "Hey {n}, is it going to rain?", "Hey {n}, dim the lights.",
                 "Hey {n}, what's for dinner?", "Hey {n}, remind me to water the plants.",
                 "Hey {n}, tell me something funny.", "Hey {n}, I'm home.", "Hey {n}, how far is the moon?",
                 "Hey {n}, pause the music."]
V3_CHATTER = [
    "The train was twenty minutes late again.", "Could you pass me the salt, please?",
    "I left my keys in the car.", "The cat knocked over the plant pot.", "We're out of milk and bread.",
    "My aunt is visiting in March.", "The heating has been off all day.", "That film was far too long.",
    "I need to renew my passport.", "The garden needs weeding before the party.",
    "He finally fixed the squeaky gate.", "Let's try the new café on the corner.",
    "The baby slept right through the night.", "I can't find the remote anywhere.",
    "It's cold enough for a scarf today.", "The football starts at eight.", "Have you seen my reading glasses?",
    "I'm making soup for lunch.", "The windows need cleaning.", "Our flight leaves at six in the morning.",
    "I bumped into Stella at the library.", "Our neighbour Jarvis borrowed the ladder.",
    "The lift in our building is broken.", "We should paint the kitchen yellow.", "I burnt the toast again.",
    "Mum called while you were out.", "The shop had no more oranges.", "The parcel arrived damaged.",
    "My phone battery is nearly dead.", "Go and ask Stella if she wants tea.",
]
V3_REQUESTS = [
    "how tall is the tallest tree", "why do cats purr", "what is the capital of Peru", "how do you boil an egg",
    "who painted the sunflowers", "how long do tortoises live", "what time does the sun rise", "spell necessary",
    "how many legs does a spider have", "when was the telephone invented", "what is a group of crows called",
    "how far away is Mars",
]
V3_OPENERS = ["I was wondering", "Quick question:", "Can anyone tell me", "I'd like to know", "Remind me",
              "Somebody told me to check", "I never understood", "Out of interest,"]
V3_LOOKALIKES = [
    # for "hey stella"
    "Hey Bella, dinner's ready.", "Hey Stanley, look at this.", "Hey Sheila, are you coming?",
    "Hey Estelle, nice dress.", "Hey, stay for dinner.", "Hey Kelly, over there.", "Hey Stefan, catch the ball.",
    "Hey Celia, good to see you.", "Say hello to Ella.", "Hey, settle down, everyone.", "Hey, stay out of the mud.",
    "Hey Dell, is the printer on?", "Hey Stacey, your turn.", "Hey Tessa, wait for me.", "Hey Steve, hello.",
    "Hey Fella, how are you?", "Hey, tell her I said hi.",
    # for "hey jarvis"
    "Hey Jared, what's up?", "Hey Davis, nice shot.", "Hey Garvey, over here.", "Hey Charlie, grab the door.",
    "Hey Travis, long time no see.", "Hey Harvest festival is on.", "Hey Jarrod, come here.",
    "Hey Mavis, tea's ready.", "Hey Jervis, are you in?", "Hey Elvis fans.", "Hey, jars go on the top shelf.",
    "Hey Marvin, hurry up.", "Hey Jarvie, what a game.", "Hey Darcy, your bag.",
]
V3_SUBJECTS = ["The mayor", "Nurses", "A university study", "The met office", "Local residents", "The police chief",
               "The science museum", "Fishermen", "The railway company", "Shop owners", "Scientists at the lab",
               "The football association", "Volunteers", "The national library"]
V3_VERBS = ["have announced", "are worried about", "celebrated", "warned of", "opened", "have delayed",
            "are calling for", "revealed", "welcomed news of", "questioned"]
V3_OBJECTS = ["a new bridge over the river", "higher energy bills", "a drought in the south", "longer opening hours",
              "a rise in bicycle thefts", "a ban on plastic bags", "a storm heading for the coast",
              "the discovery of an old shipwreck", "cheaper bus fares", "a shortage of nurses",
              "a new park in the city centre", "the return of the swallows", "roadworks on the main street"]
V3_TIMES = ["this afternoon", "on Monday morning", "after a long wait", "earlier today", "before the election",
            "at the weekend", "for the first time in years"]

# The v4 (held-out) set's texts: none of them said in v1, v2 or v3.
V4_WAKE_FORMS = ["Hey {n}, what's on the agenda?", "Hey {n}, turn it up.", "Hey {n}, who won the game?",
                 "Hey {n}, start the kettle.", "Hey {n}, lock the front door.", "Hey {n}, where are my keys?",
                 "Hey {n}, sing me a song.", "Hey {n}, what day is it?", "Hey {n}, good night.",
                 "Hey {n}, are you listening?", "Hey {n}, louder please.", "Hey {n}, what's new today?"]
V4_CHATTER = [
    "The postman left a card for a parcel.", "I think it might snow tonight.", "Her brother plays the trumpet.",
    "We need new batteries for the torch.", "The soup is still too hot.", "Who moved my chair?",
    "I'm taking the dog to the vet tomorrow.", "The car wash was closed.", "Their wedding is in June.",
    "Can you hold the door for a second?", "I've lost my train ticket.", "The toaster smells of burning.",
    "Let's sit by the window.", "The queue at the post office was enormous.", "My cousin moved to Canada.",
    "There's a spider in the bath.", "We should call the plumber again.", "I prefer tea without sugar.",
    "The lights flickered during the storm.", "Mind the step on the way out.", "My friend Stella from work says hello.",
    "Our old friend Jarvis fixed the fence.", "I'll meet you outside the cinema.", "The bread is a bit stale.",
    "He forgot his umbrella again.", "We ran out of petrol on the motorway.", "My watch stopped at midnight.",
    "The children built a snowman.", "I can hear the neighbours' radio.", "Go and ask Stella whether she's coming.",
]
V4_REQUESTS = [
    "why is the sky blue", "how many days until Christmas", "what is the biggest desert", "who invented the bicycle",
    "how do you make bread", "what language do they speak in Brazil", "how hot is the sun", "why do leaves fall",
    "what is the longest river", "how many bones are in the body", "when do the clocks change", "what do bees eat",
]
V4_OPENERS = ["Just curious,", "I keep wondering", "Could somebody find out", "Tell me honestly", "I read somewhere",
              "My grandad always asks", "Before I forget,", "Does anybody know"]
V4_LOOKALIKES = [
    # for "hey stella"
    "Hey Nella, the door's open.", "Hey Selma, how's the job?", "Hey Zelda, want a lift?", "Hey Stellan, good match.",
    "Hey Stephanie, call me later.", "Hey Ellie, it's your turn.", "Hey Helen, see you soon.",
    "Hey Isabella, nice shoes.", "Hey Gabriella, come and look.", "Hey Sally, over here.", "Hey Delia, thank you.",
    "Hey, spell it out.", "Hey, sell the car.", "Hey, steady now.", "Hey Bettina, lunch is ready.",
    "Hey Stelmach, your coffee.", "Hey Esther, what's new?",
    # for "hey jarvis"
    "Hey Marvel fans.", "Hey Gervais, nice joke.", "Hey Purvis, wait a minute.", "Hey Jarrett, sit here.",
    "Hey Mario, let's go.", "Hey Curtis, your keys.", "Hey Archie, dinner.", "Hey Parvez, good morning.",
    "Hey Davies, you're late.", "Hey Janis, the bus is here.", "Hey Carver, over here.", "Hey Jervais, hello.",
    "Hey, jars of honey are on sale.", "Hey Harris, what's up?",
]
V4_SUBJECTS = ["The prime minister", "Surgeons", "A new report", "Forecasters", "Commuters",
               "The fire brigade", "The zoo", "Bus drivers", "The water company", "Historians",
               "The hospital trust", "Rescue teams", "Students", "The county council"]
V4_VERBS = ["are preparing for", "have criticised", "reported on", "are debating", "have welcomed",
            "said no to", "announced details of", "are concerned about", "praised the work on", "confirmed"]
V4_OBJECTS = ["a new tunnel under the hills", "rising rents", "a heatwave next week", "a strike by rail workers",
              "the closure of a factory", "a new vaccine trial", "gales along the coast", "cuts to library hours",
              "a festival in the old town", "a spike in hay fever", "the reopening of the pier",
              "a herd of deer on the golf course", "the price of petrol"]
V4_TIMES = ["last night", "on Wednesday", "after weeks of delays", "this evening", "during the summit",
            "over the holiday weekend", "for the third year running"]

# The v5 (held-out) set's texts: none of them said in v1 to v4 or in training.
V5_WAKE_FORMS = ["Hey {n}, what's the time in Tokyo?", "Hey {n}, shuffle my playlist.", "Hey {n}, is the shop open?",
                 "Hey {n}, switch on the fan.", "Hey {n}, how's the traffic?", "Hey {n}, give me a recipe.",
                 "Hey {n}, find my phone.", "Hey {n}, cancel the alarm.", "Hey {n}, what's the date?",
                 "Hey {n}, are you busy?", "Hey {n}, quieter please.", "Hey {n}, any messages?"]
V5_CHATTER = [
    "The kettle takes ages to boil.", "We painted the fence on Saturday.", "My shoes are still wet from the rain.",
    "The library fine was only a pound.", "Our kitten climbed the curtains.", "I think the milk has gone off.",
    "The new bakery sells amazing croissants.", "He parked on the wrong side of the road.",
    "The radiator in the bedroom is cold.", "Let's plant tomatoes this spring.", "I haven't seen that cousin in years.",
    "The traffic lights were broken all morning.", "She's learning to play the violin.",
    "Don't forget to lock the back door.", "The wind blew the bins over.", "There's a leak under the sink.",
    "My laptop keeps freezing.", "We had fish and chips by the sea.", "The exam results come out in August.",
    "I'll bring a cake to the picnic.", "Someone left the gate open.", "The hotel room had a lovely view.",
    "I saw Stella's bike outside the shop.", "The man called Jarvis sold us the car.",
    "Our train was cancelled because of snow.", "This jumper is far too itchy.", "The microwave just beeped.",
    "He sings in the shower every morning.", "We're going camping next month.", "Could you pass Stella the ketchup?",
]
V5_REQUESTS = [
    "how many miles is a marathon", "what colour is a ruby", "who discovered penicillin",
    "how long should I boil rice", "what is the smallest country", "why do onions make you cry",
    "how many players are in a rugby team", "what year did the war end", "where do kangaroos live",
    "how do magnets work", "what is the speed of light", "which planet has rings",
]
V5_OPENERS = ["I've always wanted to know", "Settle an argument:", "Could you look up", "My daughter asked me",
              "I was reading about", "Help me remember", "Can we check", "It's bugging me,"]
V5_LOOKALIKES = [
    # for "hey stella"
    "Hey Stacia, the kettle is on.", "Hey Pamela, how was the trip?", "Hey Camilla, hold this.",
    "Hey Drusilla, come in.", "Hey Ursula, nice to meet you.", "Hey Marcella, it's late.", "Hey Estefan, good luck.",
    "Hey Sheldon, take a seat.", "Hey, settle the bill.", "Hey, stem the flow.", "Hey Tilly, where's your hat?",
    "Hey Nelly, lovely day.", "Hey Kellan, your bus.", "Hey Sterling, call me.", "Hey Stefano, nice goal.",
    "Hey Priscilla, over here.", "Hey Carmella, want some cake?",
    # for "hey jarvis"
    "Hey Parvati, good morning.", "Hey Travolta, nice moves.", "Hey Davina, it's raining.", "Hey Jarman, your turn.",
    "Hey Garvin, any news?", "Hey Sylvester, over here.", "Hey Javier, what's up?", "Hey Barbara, the phone.",
    "Hey Jarrah, come back.", "Hey Harvard grads.", "Hey Mavericks fans.", "Hey Calvin, shoes off.",
    "Hey Gareth, time to go.", "Hey Marcia, see you later.",
]
V5_SUBJECTS = ["The home secretary", "Paramedics", "A new survey", "Meteorologists", "Cyclists", "The coastguard",
               "The aquarium", "Taxi drivers", "The energy regulator", "Archaeologists", "The ambulance service",
               "Mountain rescuers", "Pensioners", "The borough council"]
V5_VERBS = ["are looking into", "have objected to", "gave an update on", "are split over", "cheered",
            "turned down", "released figures on", "are alarmed by", "applauded", "signed off"]
V5_OBJECTS = ["a new ferry route", "falling house prices", "frost expected overnight", "a walkout by teachers",
              "the sale of a stadium", "a trial of electric buses", "flooding near the estuary",
              "longer waits at clinics", "a food market by the canal", "a rise in pollen",
              "the rebuilding of the station", "a flock of geese on the runway", "the cost of tickets"]
V5_TIMES = ["overnight", "on Thursday", "after a lengthy review", "this lunchtime", "during the storm",
            "over the bank holiday", "for the fourth time"]


# The v6 (held-out) set's texts: none of them said in v1 to v5 or in training.
V6_WAKE_FORMS = ["Hey {n}, how far is Mars?", "Hey {n}, dim the lamp.", "Hey {n}, read me the headlines.",
                 "Hey {n}, start a timer for ten minutes.", "Hey {n}, what's on tonight?", "Hey {n}, skip this song.",
                 "Hey {n}, is it windy outside?", "Hey {n}, call my sister.", "Hey {n}, how do you spell rhythm?",
                 "Hey {n}, remind me at six.", "Hey {n}, louder.", "Hey {n}, sleep well."]
V6_CHATTER = [
    "The postman came early today.", "Our neighbours are building an extension.", "I burnt the porridge again.",
    "The swimming pool is closed for repairs.", "My phone battery dies by lunchtime.", "We ran out of sugar.",
    "The roof tiles blew off in the storm.", "Grandma knitted me a scarf.", "The queue at the bank was enormous.",
    "I need new glasses.", "The dog chewed my slipper.", "Their wedding is on a boat.",
    "The washing machine is making a funny noise.", "We missed the last bus home.", "The soup needs more salt.",
    "I found a spider in the bath.", "The car park was full.", "He dropped his keys down the drain.",
    "The carpet still smells of paint.", "We should visit the museum.", "The printer is out of ink.",
    "I met Stella's brother at the gym.", "The old Jarvis house is for sale.", "The hedge needs trimming.",
    "My tea has gone cold.", "The concert sold out in minutes.", "There's a fox in the garden.",
    "I left my umbrella on the train.", "We played cards until midnight.", "The baby finally fell asleep.",
]
V6_REQUESTS = [
    "how deep is the deepest lake", "who painted the ceiling of the chapel", "how many hearts does an octopus have",
    "what is the tallest mountain", "how do you say thank you in Japanese", "why is the sea salty",
    "when was the bicycle invented", "what is the capital of Canada", "how long do parrots live",
    "what do owls eat", "how far away is the sun", "which country has the most islands",
]
V6_OPENERS = ["I've been meaning to ask", "A quick one:", "Would you mind finding out", "My son wants to know",
              "I heard on the radio", "Refresh my memory:", "Do you happen to know", "Purely out of curiosity,"]
V6_LOOKALIKES = [
    # for "hey stella"
    "Hey Donatella, the table's ready.", "Hey Graciela, long time no see.", "Hey Antonella, pass the salt.",
    "Hey Cinderella, midnight soon.", "Hey Mirella, great haircut.", "Hey Petra, your parcel came.",
    "Hey Shelby, grab a chair.", "Hey Stanislav, welcome back.", "Hey, stay calm.", "Hey, spell that again.",
    "Hey Fabiola, happy birthday.", "Hey Estrid, the meeting moved.", "Hey Kendra, nice jacket.",
    "Hey Sybella, the taxi's here.", "Hey Mabel, come and eat.", "Hey Stellmacher, your order.",
    "Hey Nicola, we're off now.",
    # for "hey jarvis"
    "Hey Darvish, good game.", "Hey Jarvik, your coat.", "Hey Marvin, the lift is broken.", "Hey Mavis, hold on.",
    "Hey Carlos, see you there.", "Hey Jervis Bay tourists.", "Hey Harvey, where's the map?",
    "Hey Travis, dinner's ready.", "Hey Jasmine, pick up.", "Hey Marvel villains.", "Hey Francis, one moment.",
    "Hey Jarrod, lovely goal.", "Hey Parvin, how's work?", "Hey Davis, thanks again.",
]
V6_SUBJECTS = ["The transport secretary", "Lifeguards", "A fresh study", "Weather experts", "Beekeepers",
               "The lifeboat crew", "The botanical garden", "Lorry drivers", "The rail operator", "Stargazers",
               "The police federation", "Charity workers", "Midwives", "The city mayor"]
V6_VERBS = ["are investigating", "complained about", "shared plans for", "are divided on", "celebrated",
            "rejected", "published a study of", "are worried about", "welcomed news of", "approved"]
V6_OBJECTS = ["a new cycle lane", "soaring energy bills", "thunderstorms across the north", "a pay deal for porters",
              "the takeover of a brewery", "a trial of driverless trams", "landslides on the coast road",
              "a shortage of dentists", "a night market by the harbour", "a drop in bee numbers",
              "the repair of the bridge", "a pod of dolphins in the bay", "the price of butter"]
V6_TIMES = ["at dawn", "on Friday", "after months of talks", "this afternoon", "during the blackout",
            "over the half term", "for the fifth time"]

V7_WAKE_FORMS = ["Hey {n}, what's today's date?", "Hey {n}, switch off the radio.", "Hey {n}, any news?",
                 "Hey {n}, alarm at half seven.", "Hey {n}, who won the match?", "Hey {n}, pause the film.",
                 "Hey {n}, will it snow?", "Hey {n}, text my brother.", "Hey {n}, what's two plus two?",
                 "Hey {n}, wake me at eight.", "Hey {n}, turn it down a notch.", "Hey {n}, morning to you."]
V7_CHATTER = [
    "The plumber is coming on Thursday.", "Our kettle has started to leak.", "I signed up for a pottery class.",
    "The library fines have gone up.", "My brother moved to the coast.", "We need a bigger fridge.",
    "The lift in our building is broken again.", "She painted the fence green.", "The market was busy this morning.",
    "I can never remember that password.", "The cat knocked over a vase.", "Their garden has a pond with frogs.",
    "The toaster burns one side only.", "We stayed up watching the eclipse.", "The pharmacy shuts at six.",
    "I dropped a glass in the sink.", "The hospital car park is free now.", "He lost his wallet at the fair.",
    "The curtains are too short for the window.", "We ought to ring the landlord.", "The boiler needs a service.",
    "We watched a film with Stella Morris in it.", "We saw Jarvis Cocker at the festival.",
    "The gate squeaks at night.",
    "My coffee is far too sweet.", "The tickets were cheaper online.", "There's a hedgehog under the shed.",
    "I left my gloves in the cinema.", "We baked bread on Sunday.", "The puppy chewed the remote control.",
]
V7_REQUESTS = [
    "how old is the oldest tree", "who built the first lighthouse", "how many bones are in a hand",
    "what is the widest waterfall", "how do you say goodbye in Welsh", "why do bees dance",
    "when was the zip invented", "what is the capital of Chile", "how long do swans live",
    "what do pandas eat", "how far away is Jupiter", "which planet has the most moons",
]
V7_OPENERS = ["I keep forgetting", "Help me win a bet:", "Could you dig up", "My nephew asked me",
              "I saw it written somewhere", "Remind me again:", "Any idea", "Just wondering,"]
V7_LOOKALIKES = [
    # for "hey stella"
    "Hey Rafaella, the soup's hot.", "Hey Ornella, your bag.", "Hey Prunella, mind the step.",
    "Hey Mozzarella fans.", "Hey Lucinda, well done.", "Hey Sheryl, the bus is here.",
    "Hey Stefania, ciao.", "Hey Henrietta, over here.", "Hey Consuela, the door's open.",
    "Hey, settle the tab.", "Hey, stop the music.", "Hey Stilton lovers.", "Hi, I'm Gabriela.",
    "Hey Adela, nice hat.", "Hey Tabitha, hurry up.", "Hey Ophelia, sit down.", "Hey, sell me that lamp.",
    # for "hey jarvis"
    "Hey Marvis, the kettle's on.", "Hey Jarlath, good to see you.", "Hey Harkness, your turn.",
    "Hey Carvel, well played.", "Hey Barnes, the office called.", "Hey Chavis, take a seat.",
    "Hey Jarmo, nice bike.", "Hey Marquis, one sec.", "Hey Garvan, the taxi's waiting.",
    "Hey Jaffa cakes.", "Hey Travers family.", "Hey Carys, come here.", "Hey Darwin, lunch is ready.",
]
V7_SUBJECTS = ["The health minister", "Lighthouse keepers", "A new poll", "Climate scientists", "Dairy farmers",
               "The ferry company", "The national museum", "Ferry pilots", "The gas board", "Birdwatchers",
               "The teachers' union", "Allotment holders", "Orchard growers", "The parish council"]
V7_VERBS = ["are looking into", "protested about", "unveiled plans for", "are split over", "applauded",
            "turned down", "released a report on", "are concerned about", "were delighted by", "signed off"]
V7_OBJECTS = ["a new tram line", "rising parking fees", "floods in the valley", "a pay rise for cleaners",
              "the sale of a football club", "a trial of electric ferries", "rockfalls on the cliff path",
              "a shortage of bakers", "a food festival on the pier", "a rise in otter numbers",
              "the reopening of the lido", "a colony of seals on the sandbank", "the cost of bread"]
V7_TIMES = ["at midnight", "on Monday", "after weeks of delay", "this evening", "during the storm",
            "over the bank holiday", "for the third year running"]

V8_WAKE_FORMS = ["Hey {n}, how busy are the roads?", "Hey {n}, lights off please.", "Hey {n}, is the oven on?",
                 "Hey {n}, start a ten minute timer.", "Hey {n}, what's on telly tonight?",
                 "Hey {n}, play something calm.", "Hey {n}, is it windy out?", "Hey {n}, ring my mum.",
                 "Hey {n}, how do you spell necessary?",
                 "Hey {n}, remind me at noon.", "Hey {n}, next track.", "Hey {n}, are my glasses upstairs?"]
V8_CHATTER = [
    "The bin men come on Wednesdays.", "Our shower head is full of limescale.", "I joined a choir last winter.",
    "The bakery sold out of rolls.", "My aunt moved into a flat by the canal.", "We need new tyres for the van.",
    "The escalator at the station is closed.", "He mowed the lawn in stripes.", "The car boot sale was rained off.",
    "I keep losing the spare key.", "The dog dug up the tulips.", "Their attic is full of old records.",
    "The microwave beeps far too loudly.", "We counted shooting stars on the roof.", "The post office opens late.",
    "I spilt tea on the sofa.", "The leisure centre lost power on Sunday.", "She found a coin on the beach.",
    "The blinds won't go all the way down.", "We should phone the electrician.", "The radiator in the hall is cold.",
    "My colleague Stella Price is on holiday.", "We drove down Jarvis Street for the parade.",
    "The doorbell needs a battery.",
    "This soup needs more salt.", "The train was packed this morning.", "A robin nests in the ivy.",
    "I forgot my umbrella at the dentist.", "We made pancakes for breakfast.", "The kitten climbed the curtains.",
]
V8_REQUESTS = [
    "how deep is the Dead Sea", "who painted the first cave pictures", "how many teeth does a shark have",
    "what is the tallest mountain in Africa", "how do you say thank you in Greek", "why do dogs wag their tails",
    "when was the telescope invented", "what is the capital of Kenya", "how long can a hummingbird hover",
    "what do koalas eat", "how far away is Saturn", "which ocean is the saltiest",
]
V8_OPENERS = ["I never found out", "Settle this for me:", "Could you check", "My niece wants to know",
              "Someone on the radio said", "Tell me again:", "Any clue", "I was arguing with my flatmate about"]
V8_LOOKALIKES = [
    # for "hey stella"
    "Hey Isabella, the taxi's here.", "Hey Marcella, your coat.", "Hey Estelle, over there.",
    "Hey Salsa dancers.", "Hey Belinda, nice shot.", "Hey Cheryl, the kettle's boiled.",
    "Hey Stanislav, hello.", "Hey Gabriella, quick question.", "Hey Donatella, the lights.",
    "Hey, settle down.", "Hey, stay there.", "Hey Nutella lovers.", "Hi, I'm Pamela.",
    "Hey Angela, lovely dress.", "Hey Tamsin, hang on.", "Hey Amelia, take a seat.", "Hey, spell it for me.",
    # for "hey jarvis"
    "Hey Mavis, the post came.", "Hey Jarrod, good game.", "Hey Harvey, your round.",
    "Hey Marvin, well done.", "Hey Barbara, your phone's ringing.", "Hey Travis, sit down.",
    "Hey Janis, nice shoes.", "Hey Marcus, hold on.", "Hey Carlos, the bus is late.",
    "Hey Java developers.", "Hey Davies family.", "Hey Karis, come in.", "Hey Darcy, tea's ready.",
]
V8_SUBJECTS = ["The education secretary", "Cave rescuers", "A recent survey", "Lollipop ladies", "Sheep farmers",
               "The bus company", "The city library", "Canal boat owners", "The water board", "Bat watchers",
               "The nurses' union", "Community gardeners", "Cider makers", "The town council"]
V8_VERBS = ["are reviewing", "complained bitterly about", "revealed plans for", "are divided over", "cheered",
            "rejected", "published a study of", "are worried by", "were thrilled with", "approved"]
V8_OBJECTS = ["a new cycle bridge", "higher bus fares", "snow on the high roads", "a bonus for porters",
              "the sale of a rugby club", "a trial of driverless shuttles", "landslips on the coast road",
              "a shortage of plumbers", "a craft fair in the square", "a rise in puffin numbers",
              "the reopening of the bandstand", "a pod of orcas off the headland", "the price of milk"]
V8_TIMES = ["at dawn", "on Saturday", "after a year of planning", "this morning", "during the heatwave",
            "over the half term", "for the fifth year in a row"]

V9_WAKE_FORMS = ["Hey {n}, what's the forecast for Sunday?", "Hey {n}, go back a song.",
                 "Hey {n}, is the door locked?",
                 "Hey {n}, set a timer for the eggs.", "Hey {n}, how long till sunset?",
                 "Hey {n}, put on the news.", "Hey {n}, is it going to snow?", "Hey {n}, text my sister.",
                 "Hey {n}, how many ounces in a pound?",
                 "Hey {n}, wake me at six.", "Hey {n}, a bit quieter.", "Hey {n}, where did I park?"]
V9_CHATTER = [
    "The gutter over the porch is leaking.", "I bought a second-hand bike on Saturday.", "The fridge hums all night.",
    "My cousin is learning the cello.", "The queue at the chemist went round the corner.", "We ran out of milk again.",
    "The ferry was cancelled because of fog.", "She painted the shed blue.", "The neighbours built a treehouse.",
    "I left the charger at work.", "The cat sleeps on the warm laptop.", "Their garage is full of paint tins.",
    "The smoke alarm chirps when the battery is low.", "We walked the dog along the river.",
    "The butcher closes early on Mondays.", "I dropped my keys down the drain.", "The library fines went up.",
    "He fixed the wobbly table with a folded card.", "The hedge needs trimming before the party.",
    "We should book the plumber for Friday.", "The lift at the car park is broken.",
    "My friend Stella Grant sent a postcard from Lisbon.", "The band played on Jarvis Road last night.",
    "The shed roof blew off in the gale.", "This bread has gone stale.", "The bus driver waved at us.",
    "A fox ran across the garden at midnight.", "I forgot my scarf on the train.", "We had curry for supper.",
    "The puppy chewed a slipper.",
]
V9_REQUESTS = [
    "how hot is the surface of the sun", "who built the first steam engine", "how many bones are in a giraffe's neck",
    "what is the longest river in Asia", "how do you say good night in Polish", "why do owls hoot at night",
    "when were matches invented", "what is the capital of Mongolia", "how fast can a cheetah run",
    "what do sloths eat", "how far away is Neptune", "which desert is the largest",
]
V9_OPENERS = ["I can never remember", "Help me out:", "Could you find out", "My grandson wants to know",
              "Somebody at work said", "Remind me:", "Have you any idea", "We were debating at dinner"]
V9_LOOKALIKES = [
    # for "hey stella"
    "Hey Arabella, the door's open.", "Hey Priscilla, lunch is ready.", "Hey Stacey, hello.",
    "Hey Stanley, your turn.", "Hey Sheila, nice hat.", "Hey Stephanie, wait up.",
    "Hey Estelle, good morning.", "Hey Fenella, the car's here.", "Hey, sell it to me.",
    "Hey, steady on.", "Hey, stealth mode.", "Hey Cinderella fans.", "Hi, I'm Daniela.",
    "Hey Ella, catch.", "Hey Stan, hold this.", "Hey Umbrella girl.", "Hey, spill the beans.",
    # for "hey jarvis"
    "Hey Purvis, nice catch.", "Hey Jervis, come along.", "Hey Gervase, your bag.",
    "Hey Marvis, good luck.", "Hey Jarman, the phone.", "Hey Travers, hurry up.",
    "Hey Janice, the kettle.", "Hey Mavis, thank you.", "Hey Charles, over here.",
    "Hey Jazz fans.", "Hey Harvest festival.", "Hey Carvis, hello.", "Hey Davis, slow down.",
]
V9_SUBJECTS = ["The culture secretary", "Fell runners", "A new study", "School crossing patrols", "Pig farmers",
               "The tram operator", "The county museum", "Orchard owners", "The sewage works", "Moth counters",
               "The drivers' union", "Park volunteers", "Cheese makers", "The harbour board"]
V9_VERBS = ["are examining", "complained loudly about", "set out plans for", "are arguing over", "celebrated",
            "turned down", "released a report on", "are alarmed by", "were delighted with", "signed off"]
V9_OBJECTS = ["a new footbridge", "dearer train tickets", "ice on the hill roads", "a pay rise for dockers",
              "the sale of the football ground", "a trial of hydrogen lorries", "erosion on the cliff path",
              "a shortage of electricians", "a food market in the square", "a rise in beaver numbers",
              "the restoration of the pier", "a whale off the point", "the cost of school dinners"]
V9_TIMES = ["at sunrise", "on Sunday", "after two years of planning", "this evening", "during the cold snap",
            "over the holidays", "for the third year running"]

V10_WAKE_FORMS = ["Hey {n}, what's on the radio tonight?", "Hey {n}, skip this track.",
                  "Hey {n}, are the windows shut?",
                  "Hey {n}, time the pasta.", "Hey {n}, when does it get dark?", "Hey {n}, give me the headlines.",
                  "Hey {n}, will it be windy?", "Hey {n}, message my brother.", "Hey {n}, how many grams in an ounce?",
                  "Hey {n}, get me up at seven.", "Hey {n}, a little louder.", "Hey {n}, where's my phone?"]
V10_CHATTER = [
    "The drainpipe by the back door is cracked.", "I found an old camera at the car boot sale.",
    "The boiler clanks every morning.", "My niece has started trumpet lessons.", "The post office queue was enormous.",
    "We're out of teabags again.", "The train was held up by a broken signal.", "He varnished the garden bench.",
    "The kids next door built a den.", "I left my umbrella on the bus.", "The dog naps in the patch of sun.",
    "Their loft is full of old suitcases.", "The doorbell battery is nearly flat.", "We cycled along the canal.",
    "The baker sells out of rolls by ten.", "I lost a glove in the park.", "Parking charges went up again.",
    "She mended the chair leg with glue and string.", "The lawn needs mowing before the barbecue.",
    "We should ring the electrician on Monday.", "The escalator at the station is out of order.",
    "Nobody knows why Stella left the choir.", "Our neighbour Stella Hughes grows enormous marrows.",
    "A jar of Jarvis honey fell off the shelf.", "The fence blew down in the storm.", "This milk smells off.",
    "The postman whistled at the gate.", "An owl sat on the chimney all night.", "I missed my stop on the tram.",
    "We had fish pie for tea.", "The kitten fell asleep in the laundry basket.",
]
V10_REQUESTS = [
    "how deep is the Pacific Ocean", "who invented the telephone", "how many legs does a lobster have",
    "what is the tallest mountain in Europe", "how do you say thank you in Welsh", "why do dogs pant",
    "when was the safety pin invented", "what is the capital of Estonia", "how high can a kangaroo jump",
    "what do hedgehogs eat in winter", "how far away is Saturn's biggest moon", "which ocean is the coldest",
]
V10_OPENERS = ["I never can recall", "Tiny question:", "Would you happen to know", "My flatmate's boy asked me",
               "A man on the bus said", "Sort this out for me:", "Any notion", "We were wondering at lunch"]
V10_LOOKALIKES = [
    # for "hey stella"
    "Hey Isabel, the taxi's waiting.", "Hey Drusilla, your scarf.", "Hey Celestine, hi.",
    "Hey Stuart, your round.", "Hey Shelley, nice jumper.", "Hey Stefan, hang on.",
    "Hey Cordelia, hello.", "Hey Petronella, the bus.", "Hey, tell us a story.",
    "Hey, stay cool.", "Hey Stilton fans.", "Hey Mozzarella lovers.", "Hi, I'm Ornella.",
    "Hey Della, look.", "Hey Stu, come here.", "Hey Tarantella dancers.", "Hey, still awake?",
    # for "hey jarvis"
    "Hey Jarvie, good shot.", "Hey Mervyn, come in.", "Hey Garvey, your coat.",
    "Hey Harvest moon.", "Hey Jasper, the door.", "Hey Travolta fans.",
    "Hey Janet, the kettle's on.", "Hey Elvish speakers.", "Hey Charlie, over here.",
    "Hey Jarrow, hello.", "Hey Carver, slow down.", "Hey Purvis family.", "Hey Darcey, tea's up.",
]
V10_SUBJECTS = ["The health secretary", "Cave divers", "A fresh poll", "Traffic wardens", "Goat farmers",
                "The ferry operator", "The county archive", "Mushroom pickers", "The electricity board", "Bird ringers",
                "The firefighters' union", "Beach cleaners", "Jam makers", "The port authority"]
V10_VERBS = ["are studying", "grumbled about", "drew up plans for", "are split over", "applauded",
             "threw out", "issued a report on", "are concerned about", "were pleased with", "rubber-stamped"]
V10_OBJECTS = ["a new underpass", "pricier ferry tickets", "fog on the moor roads", "a bonus for cleaners",
               "the sale of the cricket ground", "a trial of solar streetlights", "subsidence on the sea wall",
               "a shortage of bricklayers", "a flea market on the green", "a rise in hedgehog numbers",
               "the repainting of the lighthouse", "dolphins off the harbour", "the price of bus passes"]
V10_TIMES = ["at first light", "on Tuesday", "after three years of planning", "this afternoon", "during the drought",
             "over the bank holiday", "for the fourth year running"]


@dataclass(frozen=True)
class Texts:
    """What a set's voices say."""

    wake_forms: list[str]
    chatter: list[str]
    requests: list[str]
    openers: list[str]
    lookalikes: list[str]
    subjects: list[str]
    verbs: list[str]
    objects: list[str]
    times: list[str]


TEXTS = {"v1": Texts(WAKE_FORMS, CHATTER, REQUESTS, OPENERS, LOOKALIKES, SUBJECTS, VERBS, OBJECTS, TIMES),
         "v2": Texts(V2_WAKE_FORMS, V2_CHATTER, V2_REQUESTS, V2_OPENERS, V2_LOOKALIKES, V2_SUBJECTS, V2_VERBS,
                     V2_OBJECTS, V2_TIMES),
         "v3": Texts(V3_WAKE_FORMS, V3_CHATTER, V3_REQUESTS, V3_OPENERS, V3_LOOKALIKES, V3_SUBJECTS, V3_VERBS,
                     V3_OBJECTS, V3_TIMES),
         "v4": Texts(V4_WAKE_FORMS, V4_CHATTER, V4_REQUESTS, V4_OPENERS, V4_LOOKALIKES, V4_SUBJECTS, V4_VERBS,
                     V4_OBJECTS, V4_TIMES),
         "v5": Texts(V5_WAKE_FORMS, V5_CHATTER, V5_REQUESTS, V5_OPENERS, V5_LOOKALIKES, V5_SUBJECTS, V5_VERBS,
                     V5_OBJECTS, V5_TIMES),
         "v6": Texts(V6_WAKE_FORMS, V6_CHATTER, V6_REQUESTS, V6_OPENERS, V6_LOOKALIKES, V6_SUBJECTS, V6_VERBS,
                     V6_OBJECTS, V6_TIMES),
         "v7": Texts(V7_WAKE_FORMS, V7_CHATTER, V7_REQUESTS, V7_OPENERS, V7_LOOKALIKES, V7_SUBJECTS, V7_VERBS,
                     V7_OBJECTS, V7_TIMES),
         "v8": Texts(V8_WAKE_FORMS, V8_CHATTER, V8_REQUESTS, V8_OPENERS, V8_LOOKALIKES, V8_SUBJECTS, V8_VERBS,
                     V8_OBJECTS, V8_TIMES),
         "v9": Texts(V9_WAKE_FORMS, V9_CHATTER, V9_REQUESTS, V9_OPENERS, V9_LOOKALIKES, V9_SUBJECTS, V9_VERBS,
                     V9_OBJECTS, V9_TIMES),
         "v10": Texts(V10_WAKE_FORMS, V10_CHATTER, V10_REQUESTS, V10_OPENERS, V10_LOOKALIKES, V10_SUBJECTS,
                      V10_VERBS, V10_OBJECTS, V10_TIMES)}

@dataclass(frozen=True)
class Voice:
    id: str  # "espeak en-gb-scotland+f3", "piper x1.1", "flite awb" or "festival ked_diphone x1.12"
    engine: str
    name: str  # espeak, flite or Festival voice, or piper's length scale as text
    shift: float = 1.0  # played this much faster (`speech.shifted`)

    def say(self, text: str, rng: random.Random, piper: Piper) -> np.ndarray:
        if self.shift != 1.0:
            return shifted(dataclasses.replace(self, shift=1.0).say(text, rng, piper), self.shift)
        if self.engine == "piper":
            return piper(text, length_scale=float(self.name) * rng.uniform(0.95, 1.05),
                         noise_scale=rng.uniform(0.5, 0.8), level=rng.uniform(0.3, 0.6))
        if self.engine == "festival":
            return festival(text, voice=self.name, stretch=160 / rng.randint(130, 200), level=rng.uniform(0.3, 0.6))
        if self.engine == "flite":
            return flite(text, voice=self.name, stretch=160 / rng.randint(130, 200), pitch=rng.uniform(0.8, 1.25),
                         level=rng.uniform(0.3, 0.6))
        return espeak(text, voice=self.name, speed=rng.randint(130, 200), pitch=rng.randint(25, 80),
                      level=rng.uniform(0.3, 0.6))


def voices(which: str) -> list[Voice]:
    out = [Voice(f"espeak {v}", "espeak", v) for v in ESPEAK_VOICES[which]]
    out += [Voice(f"flite {v}", "flite", v) for v in FLITE_VOICES.get(which, ())]
    out += [Voice(f"festival {v}" + (f" x{f}" if f != 1.0 else ""), "festival", v, f)
            for v, f in FESTIVAL_VOICES.get(which, ())]
    out += [Voice(f"piper x{s}", "piper", str(s)) for s in PIPER_SCALES[which]]
    return out + [Voice(f"piper x1.0 played x{f}", "piper", "1.0", f) for f in PIPER_SHIFTS.get(which, ())]


def says_the_name(voice: str) -> bool:
    """Whether espeak-ng's own phonemes for "Hey Stella." in `voice` say the name: two words (a voice
    without the alphabet's words spells them letter by letter), read by its own rules or by English
    ones (a voice of another script switches to them: "(en)h'eI st'El@(ru)"), the second starting
    "st" and a vowel and holding the "l" — not "Shayla" (Luxembourgish rules) or a palatal "sht-yella"
    (Scottish Gaelic's)."""
    language = voice.split("+")[0]
    out = subprocess.run(["espeak-ng", "-q", "-x", "-v", language, "Hey Stella."],
                         capture_output=True, text=True, check=True).stdout
    rules = set(re.findall(r"\(([a-z-]+)\)", out))  # the rules it switched to and back from
    said = re.sub(r"\([a-z-]+\)", "", out).split()
    return rules <= {"en", language} and len(said) == 2 and bool(re.match(r"s'?t'?[aeiouEIAOUV@&3][^ ;]*l", said[1]))


@dataclass
class Span:
    text: str
    voice: str
    start: float
    end: float
    scene: str


@dataclass
class Stream:
    """One generated stream: `clean`/`noisy` wav files and where each utterance is."""

    name: str
    spans: list[Span]
    seconds: float
    folder: str = "v1"

    def wav(self, condition: str) -> Path:
        return ROOT / self.folder / f"{self.name}-{condition}.wav"

    def pcm(self, condition: str) -> np.ndarray:
        """The stream's `condition` file as int16 samples, as it was generated."""
        with wave.open(str(self.wav(condition))) as w:
            return np.frombuffer(w.readframes(w.getnframes()), np.int16)

    @property
    def speech_s(self) -> float:
        return sum(s.end - s.start for s in self.spans)


class Track:
    """Audio laid down piece by piece, with the spans of speech in it."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.spans: list[Span] = []
        self.t = 0.0

    def gap(self, seconds: float) -> None:
        self.parts.append(np.zeros(int(seconds * RATE), np.float32))
        self.t += seconds

    def speak(self, audio: np.ndarray, text: str, voice: str, scene: str) -> None:
        self.parts.append(audio)
        self.spans.append(Span(text, voice, round(self.t, 3), round(self.t + len(audio) / RATE, 3), scene))
        self.t += len(audio) / RATE

    def audio(self) -> np.ndarray:
        return np.concatenate(self.parts).astype(np.float32) if self.parts else np.zeros(0, np.float32)


def music(seconds: float, rng: random.Random) -> np.ndarray:
    """A music bed: chords of decaying harmonic tones, one every half to one second."""
    n = int(seconds * RATE)
    out = np.zeros(n, np.float32)
    t = 0
    while t < n:
        length = int(rng.uniform(0.5, 1.0) * RATE)
        root = rng.choice([110.0, 130.8, 146.8, 164.8, 196.0, 220.0])
        k = np.arange(min(length, n - t)) / RATE
        chord = sum(np.sin(2 * np.pi * root * ratio * h * k) / h for ratio in (1.0, 1.26, 1.5) for h in (1, 2, 3))
        out[t:t + len(k)] += (chord * np.exp(-3 * k)).astype(np.float32)
        t += length
    return out


def bed(kind: str, seconds: float, rng: random.Random, babble: Callable[[], np.ndarray]) -> np.ndarray:
    """A TV scene's background: music, babble (other voices) or noise, unit RMS."""
    if kind == "music":
        audio = music(seconds, rng)
    elif kind == "babble":
        n, audio = int(seconds * RATE), np.zeros(int(seconds * RATE), np.float32)
        for _ in range(2):  # two other voices talking at once
            pieces: list[np.ndarray] = []
            while sum(map(len, pieces)) < n:
                pieces.append(babble())
            audio += np.concatenate(pieces)[:n]
    else:
        audio = noise(seconds, 1.0, seed=rng.randrange(1 << 30))
    return audio / (float(np.sqrt(np.mean(audio ** 2))) + 1e-9)


def rms(audio: np.ndarray) -> float:
    return float(np.sqrt(np.mean(audio ** 2))) if len(audio) else 0.0


class Builder:
    """One set's streams, written under its folder with its key's names and seeds."""

    def __init__(self, which: str) -> None:
        self.which, self.folder, self.key = which, FOLDER[which], KEY[which]
        self.seed = SALT[self.folder] + self.key
        self.texts = TEXTS[self.folder]
        self.voices = voices(which)
        self.piper = Piper()

    def say(self, text: str, voice: Voice, rng: random.Random) -> np.ndarray:
        return voice.say(text, rng, self.piper)

    def wake_stream(self, engine: str) -> Stream:
        """Every voice says `WAKES_PER_VOICE` wake forms, gaps between; noisy copy at SNR_DB."""
        rng = random.Random(f"wake-{self.seed}-{engine}")
        track = Track()
        track.gap(1.0)
        for voice in self.voices:
            for form in rng.sample(self.texts.wake_forms, WAKES_PER_VOICE[self.which]):
                text = form.format(n=NAMES[engine])
                track.speak(self.say(text, voice, rng), text, voice.id, "wake")
                track.gap(WAKE_GAP_S)
        return self.write(f"{self.key}-wake-{engine}", track, noisy=True, seed=rng.randrange(1 << 30))

    def news(self, rng: random.Random) -> str:
        t = self.texts
        return f"{rng.choice(t.subjects)} {rng.choice(t.verbs)} {rng.choice(t.objects)} {rng.choice(t.times)}."

    def scene(self, track: Track, rng: random.Random) -> None:
        t = self.texts
        kind = rng.choices(["conversation", "tv", "requests", "lookalikes"], weights=[4, 4, 2, 2])[0]
        if kind == "conversation":
            a, b = rng.sample(self.voices, 2)
            for i in range(rng.randint(4, 8)):
                asked = f"{rng.choice(t.openers)} {rng.choice(t.requests)}."
                text = rng.choice(t.chatter) if rng.random() < 0.7 else asked
                track.speak(self.say(text, (a, b)[i % 2], rng), text, (a, b)[i % 2].id, kind)
                track.gap(rng.uniform(0.3, 1.2))
        elif kind == "tv":
            voice = rng.choice(self.voices)
            sub = Track()
            for _ in range(rng.randint(5, 10)):
                text = self.news(rng)
                sub.speak(self.say(text, voice, rng), text, voice.id, kind)
                sub.gap(rng.uniform(0.2, 0.6))
            self.over_bed(track, sub, rng)
        else:
            asked = [f"{o} {r}." for o, r in itertools.product(t.openers, t.requests)]
            pool = t.lookalikes if kind == "lookalikes" else asked
            noisy = kind == "lookalikes" and self.folder in NOISY_LOOKALIKES and rng.random() < 0.5
            sub = Track() if noisy else track
            for _ in range(rng.randint(3, 6)):
                voice, text = rng.choice(self.voices), rng.choice(pool)
                sub.speak(self.say(text, voice, rng), text, voice.id, kind)
                sub.gap(rng.uniform(1.0, 2.0))
            if noisy:
                self.over_bed(track, sub, rng)
        track.gap(rng.uniform(1.5, 3.0))

    def over_bed(self, track: Track, sub: Track, rng: random.Random) -> None:
        """`sub`'s speech over a music, babble or noise bed at 5-15 dB SNR, appended to `track`."""
        speech = sub.audio()
        level = rms(np.concatenate([p for p in sub.parts if rms(p) > 0])) / 10 ** (rng.uniform(5, 15) / 20)
        background = bed(rng.choice(["music", "babble", "noise"]), len(speech) / RATE, rng,
                         lambda: self.say(self.news(rng), rng.choice(self.voices), rng) * 0.5)
        background = np.pad(background, (0, max(0, len(speech) - len(background))))  # seconds * RATE rounded down
        offset = track.t
        track.parts.append(speech + background[:len(speech)] * level)
        track.spans += [Span(s.text, s.voice, round(s.start + offset, 3), round(s.end + offset, 3), s.scene)
                        for s in sub.spans]
        track.t += len(speech) / RATE

    def other_streams(self) -> list[Stream]:
        """Scenes of other speech, `TARGET_S` of speech in all, cut into ~FILE_S streams."""
        rng = random.Random(f"other-{self.seed}")
        out: list[Stream] = []
        total = 0.0
        while total < TARGET_S[self.which]:
            track = Track()
            track.gap(1.0)
            while track.t < FILE_S:
                self.scene(track, rng)
            stream = self.write(f"{self.key}-other-{len(out):02d}", track, noisy=False, seed=0)
            out.append(stream)
            total += stream.speech_s
            print(f"  {stream.name}: {stream.seconds:.0f} s, {stream.speech_s:.0f} s of speech "
                  f"({total / 60:.1f} min so far)", flush=True)
        return out

    def write(self, name: str, track: Track, *, noisy: bool, seed: int) -> Stream:
        audio = track.audio()
        stream = Stream(name, track.spans, round(len(audio) / RATE, 3), self.folder)
        stream.wav("clean").parent.mkdir(parents=True, exist_ok=True)
        save(stream.wav("clean"), audio)
        if noisy:
            speech = np.concatenate([p for p in track.parts if rms(p) > 0])
            level = rms(speech) / 10 ** (SNR_DB / 20)
            save(stream.wav("noisy"), audio + noise(len(audio) / RATE, level, seed=seed))
        return stream


@dataclass
class Corpus:
    wake: dict[str, dict[str, Stream]]  # set -> engine -> stream
    other: dict[str, list[Stream]]  # set -> streams


def load(sets: tuple[str, ...] = SETS) -> Corpus:
    """The corpus, each folder generated on first use (minutes) and then read from the cache."""
    corpus = Corpus({}, {})
    for folder in dict.fromkeys(FOLDER[s] for s in sets):
        index = ROOT / folder / "index.json"
        mine = [s for s in SETS if FOLDER[s] == folder]
        if not index.exists():
            raw: dict = {"wake": {}, "other": {}}
            for which in mine:
                print(f"generating the {which} set in {ROOT / folder} ...", flush=True)
                builder = Builder(which)
                raw["wake"][KEY[which]] = {e: asdict(builder.wake_stream(e)) for e in NAMES}
                raw["other"][KEY[which]] = [asdict(x) for x in builder.other_streams()]
            index.write_text(json.dumps(raw))
        raw = json.loads(index.read_text())
        for which in (s for s in mine if s in sets):
            corpus.wake[which] = {e: _stream(x, folder) for e, x in raw["wake"][KEY[which]].items()}
            corpus.other[which] = [_stream(x, folder) for x in raw["other"][KEY[which]]]
    return corpus


def _stream(raw: dict, folder: str) -> Stream:
    return Stream(raw["name"], [Span(**s) for s in raw["spans"]], raw["seconds"], folder)


if __name__ == "__main__":
    corpus = load()
    for which in SETS:
        wakes = {e: len(s.spans) for e, s in corpus.wake[which].items()}
        speech = sum(s.speech_s for s in corpus.other[which])
        print(f"{which}: wake utterances {wakes}, voices {len(voices(which))}, other speech {speech / 60:.1f} min")
