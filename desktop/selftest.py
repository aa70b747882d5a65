"""`stella --selftest`: is this machine (and this install) ready to run Stella?

One line per check — ``ok`` with what was found, or ``FAILED`` with what is wrong and what to do —
and a non-zero exit status when anything failed:

- gl        one frame of the character rendered offscreen (moderngl, the window's shaders and atlas)
- webview   the window's web view loads: on Linux the system's WebKitGTK (the bundle brings no web view of its
            own), elsewhere the platform's
- audio     a microphone and a speaker the sound system offers as defaults
- speech    the speech engines load: espeak-ng data (piper), the TFLite runtime and built-in
            wake-word models, whisper.cpp, CTranslate2, onnxruntime, silero VAD
- models    each model the app runs on (ASR, TTS, wake word, the embedded default's LLM) is installed
            with the right checksum
- keyring   the pinned OS keyring backend stores, returns and deletes a test secret
- database  a throw-away SQLCipher store in a temp dir: write, reopen, read back, refuse a wrong key
- link      GET <server>/health, only with --server URL

Nothing here touches the user's data: the secret and the database are made for the test and removed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO


class CheckFailed(Exception):
    """`what` went wrong; `fix` is what the user can do about it."""

    def __init__(self, what: str, fix: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    detail: str
    seconds: float

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAILED':7} {self.name:9} {self.detail}"


def _brief(exc: BaseException) -> str:
    """An exception as one short line: long multi-line messages (numpy's ImportError…) end with the cause."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[-1] if len(lines) > 2 else " ".join(lines)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _linux() -> bool:
    return sys.platform.startswith("linux")


# --- the checks: each returns a one-line description of what it found, or raises CheckFailed ---

def check_gl(args: argparse.Namespace) -> str:
    from shaders import CharacterRenderer, GLThread

    try:
        gl = GLThread(name="stella-selftest-gl")
    except Exception as exc:  # noqa: BLE001 - no driver, no EGL, too old a GL: all mean "cannot draw"
        fix = ("install Mesa's OpenGL/EGL drivers (Debian/Ubuntu: apt install libegl1 libegl-mesa0 libgl1-mesa-dri)"
               if _linux() else "update your graphics driver (Stella needs OpenGL 3.3)")
        raise CheckFailed(f"no OpenGL 3.3 context ({_brief(exc)})", fix) from exc
    try:
        name = gl.call(lambda: gl.ctx.info["GL_RENDERER"])
        try:
            renderer = CharacterRenderer(idle_blink=False, gl=gl)
        except OSError as exc:
            raise CheckFailed(f"the character's files are missing ({_brief(exc)})", "reinstall Stella") from exc
        began = time.perf_counter()
        frame = renderer.frame((256, 256))
        ms = (time.perf_counter() - began) * 1000
        renderer.close()
    finally:
        gl.close()
    covered = float((frame[..., 3] > 0).mean())
    if not 0.05 < covered < 0.95:
        raise CheckFailed(f"the frame drawn on {name} is wrong ({covered:.0%} of it covered; the character "
                          "covers about 20%)", "update your graphics driver, or report this with the line above")
    return f"{name}: one 256x256 character frame in {ms:.0f} ms"


def check_webview(args: argparse.Namespace) -> str:
    from desktop import webview_backend

    try:
        choice = webview_backend.decide("auto", webview_backend.gtk_problem, webview_backend.qt_problem)
    except webview_backend.NoWebView as exc:
        raise CheckFailed(str(exc)) from exc  # it says what to install
    if choice.gui != "gtk":
        return f"{choice.label}: {choice.reason}"
    from gi.repository import WebKit2

    version = f"{WebKit2.get_major_version()}.{WebKit2.get_minor_version()}.{WebKit2.get_micro_version()}"
    return f"the system's WebKitGTK {version}"


def check_audio(args: argparse.Namespace) -> str:
    from sidecar.pipeline import VoiceError
    from sidecar.voice.devices import portaudio

    try:
        sd = portaudio()
        devices = sd.query_devices()
    except VoiceError as exc:
        fix = "install it (Debian/Ubuntu: apt install libportaudio2)" if _linux() else "reinstall Stella"
        raise CheckFailed("PortAudio, the sound library, is missing", fix) from exc
    except Exception as exc:  # noqa: BLE001 - PortAudio's own errors
        raise CheckFailed(f"the sound system cannot be queried ({_brief(exc)})",
                          "check that the sound system (PulseAudio / PipeWire) runs") from exc
    found = []
    for kind, role in (("input", "microphone"), ("output", "speaker")):
        if not any(d[f"max_{kind}_channels"] > 0 for d in devices):
            raise CheckFailed(f"no {role}: the sound system lists no {kind} device",
                              f"connect a {role} or enable it in the sound settings; meanwhile Stella works with "
                              "typed turns (`stella run --voice off`, or --skip audio here)")
        try:
            info = sd.query_devices(kind=kind)
        except Exception as exc:  # noqa: BLE001 - PortAudioError: devices exist but none is the default
            raise CheckFailed(f"no default {role} is set ({_brief(exc)})",
                              f"choose a default {kind} device in the system's sound settings") from exc
        found.append(f"{role} {info['name']!r} ({int(info['default_samplerate'])} Hz)")
    return ", ".join(found)


def _espeak() -> None:
    from piper.phonemize_espeak import EspeakPhonemizer

    if not any(EspeakPhonemizer().phonemize("en-us", "hello")):
        raise RuntimeError("espeak-ng returned no phonemes")


def _wakeword() -> None:
    import numpy as np
    from pyopen_wakeword import Model, OpenWakeWord, OpenWakeWordFeatures

    from sidecar.voice.wake_net import FEATURES, WINDOW, WakeNet

    OpenWakeWordFeatures.from_builtin().close()
    OpenWakeWord.from_builtin(Model.HEY_JARVIS).close()
    if not 0 <= WakeNet.builtin("hey_stella").score(np.zeros((1, WINDOW * FEATURES), np.float32))[0] <= 1:
        raise RuntimeError("the hey_stella wake model gives no score")


def _whisper() -> None:
    import pywhispercpp.model  # noqa: F401 - loading the native library is the check


def _ctranslate2() -> None:
    import ctranslate2

    if "int8" not in ctranslate2.get_supported_compute_types("cpu"):
        raise RuntimeError("CTranslate2 has no int8 on this CPU")


def _onnxruntime() -> None:
    import onnxruntime

    if "CPUExecutionProvider" not in onnxruntime.get_available_providers():
        raise RuntimeError("onnxruntime has no CPU execution provider")


def _silero() -> None:
    import numpy as np

    from sidecar.voice.vad import WINDOW, SileroVad

    SileroVad()(np.zeros(WINDOW, np.float32))


SPEECH_ENGINES: dict[str, Callable[[], None]] = {
    "espeak-ng (piper)": _espeak, "openWakeWord TFLite": _wakeword, "whisper.cpp": _whisper,
    "CTranslate2": _ctranslate2, "onnxruntime": _onnxruntime, "silero VAD": _silero,
}


def check_speech(args: argparse.Namespace) -> str:
    for name, load in SPEECH_ENGINES.items():
        try:
            load()
        except Exception as exc:  # noqa: BLE001 - a missing library or data file, whatever its error type
            raise CheckFailed(f"{name} does not load ({_brief(exc)})",
                              "this install is incomplete: reinstall Stella") from exc
    return "loaded " + ", ".join(SPEECH_ENGINES)


def check_models(args: argparse.Namespace) -> str:
    from remote_api.shared.models.provision import Models, default_specs

    models = Models()
    bad, good = [], []
    for spec in default_specs():
        if spec.kind == "sample":  # test clips, not something the app runs on
            continue
        problems = sorted({s.problem for s in models.check(spec, quick=True) if s.problem})
        if problems:
            bad.append((spec.name, "; ".join(problems)))
        else:
            good.append(spec.name)
    if bad:
        raise CheckFailed(f"in {models.root}: " + ", ".join(f"{name} ({why})" for name, why in bad),
                          f"run `stella models install {' '.join(name for name, _ in bad)}` (add --force to replace "
                          "damaged files)")
    return f"{', '.join(good)} in {models.root}"


def check_keyring(args: argparse.Namespace) -> str:
    from sidecar.store.os_keyring import platform_keyring

    service, account, value = "stella-selftest", f"selftest-{secrets.token_hex(4)}", secrets.token_hex(16)
    fix = ("start your desktop's keyring (on Linux a Secret Service such as gnome-keyring or KeePassXC on the "
           "D-Bus session bus, unlocked), or use passphrase mode: the window asks for a passphrase when it starts")
    try:
        backend = platform_keyring()
        backend.set_password(service, account, value)
        try:
            got = backend.get_password(service, account)
        finally:
            backend.delete_password(service, account)
    except Exception as exc:  # noqa: BLE001 - D-Bus, OS and keyring errors alike mean "no keyring"
        raise CheckFailed(f"the OS keyring cannot hold Stella's database key ({_brief(exc)})",
                          fix) from exc
    if got != value:
        raise CheckFailed("the OS keyring returned a different secret than the one stored", fix)
    return f"{backend.name} stored, returned and deleted a test secret"


def check_database(args: argparse.Namespace) -> str:
    from sidecar.store import RawKey, Store, StoreError

    key = RawKey(secrets.token_bytes(32))
    with tempfile.TemporaryDirectory(prefix="stella-selftest-") as tmp:
        path = Path(tmp, "selftest.db")
        try:
            with Store.open(path, key) as store:
                store.append_turn("user", "self-test")
            with Store.open(path, key) as store:
                texts = [t.text for t in store.history()]
        except StoreError as exc:
            raise CheckFailed(f"the encrypted database does not work ({_brief(exc)})", "reinstall Stella") from exc
        if texts != ["self-test"]:
            raise CheckFailed(f"the encrypted database returned {texts!r} instead of what was written",
                              "reinstall Stella")
        if path.read_bytes()[:16] == b"SQLite format 3\x00":
            raise CheckFailed("the database file was written unencrypted (plain SQLite instead of SQLCipher)",
                              "reinstall Stella")
        try:
            Store.open(path, RawKey(secrets.token_bytes(32))).close()
        except StoreError:
            pass
        else:
            raise CheckFailed("the encrypted database opened with a wrong key", "reinstall Stella")
    return "SQLCipher: wrote, reopened and read back an encrypted test database; a wrong key was refused"


def check_link(args: argparse.Namespace) -> str:
    import httpx

    url = args.server.rstrip("/") + "/health"
    fix = (f"check the address ({args.server}), that `stella-server serve` runs there, and that no firewall or "
           "proxy blocks it")
    try:
        began = time.perf_counter()
        reply = httpx.get(url, timeout=args.timeout)
        ms = (time.perf_counter() - began) * 1000
    except httpx.HTTPError as exc:
        raise CheckFailed(f"cannot reach {url} ({_brief(exc)})", fix) from exc
    if reply.status_code != 200:
        raise CheckFailed(f"{url} answered {reply.status_code} {reply.text[:120]!r}",
                          "the server is up but not ready (e.g. its model is still loading): try again in a "
                          "minute, or see the server's log")
    return f"{url} answered 200 in {ms:.0f} ms"


CHECKS: dict[str, Callable[[argparse.Namespace], str]] = {
    "gl": check_gl, "webview": check_webview, "audio": check_audio, "speech": check_speech, "models": check_models,
    "keyring": check_keyring, "database": check_database, "link": check_link,
}


def run_check(name: str, args: argparse.Namespace) -> Result:
    began = time.perf_counter()
    try:
        detail, ok = CHECKS[name](args), True
    except CheckFailed as exc:
        detail, ok = exc.what + (f" — fix: {exc.fix}" if exc.fix else ""), False
    except Exception as exc:  # noqa: BLE001 - an unexpected error is a failed check, never a crash
        detail, ok = f"unexpected {_brief(exc)} — please report this line", False
    return Result(name, ok, " ".join(detail.split()), time.perf_counter() - began)


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Native libraries (TFLite, whisper.cpp, Mesa) print banners on fd 2; keep the report readable."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, fd)
        os.close(saved)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stella --selftest", description="check that this machine can run Stella")
    p.add_argument("--server", help="also check that this gateway URL answers /health")
    p.add_argument("--skip", action="append", default=[], choices=[c for c in CHECKS if c != "link"],
                   help="leave a check out (e.g. --skip audio on a machine used with typed turns only)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the server (default 5)")
    p.add_argument("--verbose", action="store_true", help="let native libraries print their own messages")
    return p


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the checks `args` asks for, print the report to `out`; 0 when all passed, 1 otherwise."""
    out = out or sys.stdout
    names = [n for n in CHECKS if n not in args.skip and (n != "link" or args.server)]
    frozen = getattr(sys, "frozen", False)
    where = f"bundle {Path(sys.executable).parent}" if frozen else f"source tree {Path(__file__).parents[1]}"
    print(f"Stella self-test ({where})", file=out, flush=True)
    results = []
    for name in names:
        with contextlib.nullcontext() if args.verbose else _quiet_native_stderr():
            result = run_check(name, args)
        results.append(result)
        print(result.line(), file=out, flush=True)
    failed = [r.name for r in results if not r.ok]
    summary = f"{len(failed)} FAILED ({', '.join(failed)})" if failed else "all ok"
    skipped = f"; skipped: {', '.join(args.skip)}" if args.skip else ""
    print(f"{len(results)} checks: {summary}{skipped}", file=out, flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
