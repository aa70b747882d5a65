"""Finding sound devices by name or index, with messages a user can act on."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any, Literal

from sidecar.pipeline import VoiceError

Kind = Literal["input", "output"]

_first_use = threading.Lock()
_listed = False


def portaudio() -> Any:
    """The sounddevice module, imported on first use (a headless run needs no PortAudio)."""
    global _listed
    with _first_use:
        try:
            import sounddevice
        except OSError as exc:  # PortAudio itself is missing
            raise VoiceError(f"cannot use sound devices: {exc}. Install PortAudio (Debian: apt install "
                             "libportaudio2), or run headless with --audio-in/--audio-out files") from None
        if not _listed:
            _listed = True
            _unload_alsa_plugins()
    return sounddevice


def _unload_alsa_plugins() -> None:
    """Let ALSA unload the plugins PortAudio's device list loaded.

    PortAudio lists ALSA's devices (at import) by opening every PCM the ALSA configuration names: on a
    desktop with alsa-plugins that is a52 (libavcodec and its codecs), jack, oss, upmix, usb_stream..., and
    ALSA keeps each plugin's libraries loaded for good. Freeing ALSA's global configuration once the list is
    made unloads them: measured -10 MiB PSS in a process that then records and plays on the default device.
    Nothing of ALSA is open at that moment (every use of PortAudio waits for this, under `_first_use`); a
    stream opened later reads the configuration again and loads only the plugin it uses.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        alsa = ctypes.CDLL("libasound.so.2", mode=os.RTLD_NOLOAD)  # only if PortAudio loaded it
    except OSError:
        return
    alsa.snd_config_update_free_global()


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
