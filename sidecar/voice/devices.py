"""Finding sound devices by name or index, with messages a user can act on."""

from __future__ import annotations

from typing import Any, Literal

from sidecar.pipeline import VoiceError

Kind = Literal["input", "output"]


def portaudio() -> Any:
    """The sounddevice module, imported on first use (a headless run needs no PortAudio)."""
    try:
        import sounddevice
    except OSError as exc:  # PortAudio itself is missing
        raise VoiceError(f"cannot use sound devices: {exc}. Install PortAudio (Debian: apt install "
                         "libportaudio2), or run headless with --audio-in/--audio-out files") from None
    return sounddevice


def find_device(spec: str, kind: Kind) -> tuple[int | None, str, int]:
    """(index or None for the default, display name, default sample rate) of the device.

    `spec` is "" (the system default), an index, or part of a device name (case-insensitive).
    """
    sd = portaudio()
    channels = f"max_{kind}_channels"
    devices = [d for d in sd.query_devices() if d[channels] > 0]
    role = "microphone" if kind == "input" else "speaker"
    if not devices:
        raise VoiceError(f"no {role} found: the sound system lists no {kind} devices. Connect one, or run "
                         f"headless with --audio-{'in' if kind == 'input' else 'out'} FILE")
    if spec == "":
        try:
            info = sd.query_devices(kind=kind)
        except sd.PortAudioError:
            info = devices[0]
        return None, info["name"], int(info["default_samplerate"])
    if spec.isdigit():
        matches = [d for d in devices if d["index"] == int(spec)]
    else:
        matches = [d for d in devices if spec.lower() in d["name"].lower()]
    if not matches:
        names = "; ".join(f"{d['index']}: {d['name']}" for d in devices)
        raise VoiceError(f"no {role} matches {spec!r}. Available {kind} devices: {names}")
    info = matches[0]
    return info["index"], info["name"], int(info["default_samplerate"])
