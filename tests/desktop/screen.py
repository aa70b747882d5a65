"""The real window under Xvfb, seen and driven as a user would: the screen, the mouse, the close
button (the window manager's WM_DELETE_WINDOW), and the page inside through the shell's page automation
socket (its web view's `evaluate_js`).
"""

from __future__ import annotations

import ctypes
import json
import socket
import subprocess
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from shaders import CharacterRenderer, FrameState
from shaders.pixels import unpremultiply


def xdotool(display: str, *args: str) -> str:
    return subprocess.run(["xdotool", *args], env={"DISPLAY": display}, capture_output=True, text=True,
                          check=True, timeout=30).stdout


def find_window(display: str, title: str, timeout: float = 30) -> int:
    """The id of the visible top-level window called `title` (waits for it to be mapped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", f"^{title}$"],
                               env={"DISPLAY": display}, capture_output=True, text=True).stdout.split()
        if found:
            return int(found[-1])
        time.sleep(0.02)
    raise AssertionError(f"no window {title!r} appeared within {timeout:g} s")


def window_geometry(display: str, wid: int) -> tuple[int, int, int, int]:
    fields = dict(line.split("=", 1) for line in xdotool(display, "getwindowgeometry", "--shell", str(wid)).split())
    return int(fields["X"]), int(fields["Y"]), int(fields["WIDTH"]), int(fields["HEIGHT"])


def click(display: str, x: int, y: int) -> None:
    """Move there and click; `mousemove --sync` waits for a move, so it hangs when the pointer is there already
    (a second launch of a window restored to the same place)."""
    here = dict(line.split("=", 1) for line in xdotool(display, "getmouselocation", "--shell").split())
    move = [] if (int(here["X"]), int(here["Y"])) == (x, y) else ["mousemove", "--sync", str(x), str(y)]
    xdotool(display, *move, "click", "1")


class _XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int), ("format", ctypes.c_int),
                ("data", ctypes.POINTER(ctypes.c_ubyte)), ("byte_order", ctypes.c_int), ("bitmap_unit", ctypes.c_int),
                ("bitmap_bit_order", ctypes.c_int), ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
                ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int), ("red_mask", ctypes.c_ulong),
                ("green_mask", ctypes.c_ulong), ("blue_mask", ctypes.c_ulong), ("obdata", ctypes.c_void_p),
                ("create_image", ctypes.c_void_p), ("destroy_image", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p))]


class _ClientMessage(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("window", ctypes.c_ulong), ("message_type", ctypes.c_ulong),
                ("format", ctypes.c_int), ("data", ctypes.c_long * 5), ("pad", ctypes.c_long * 12)]


@cache
def _xlib() -> ctypes.CDLL:
    x11 = ctypes.CDLL("libX11.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XDefaultRootWindow.restype = ctypes.c_ulong
    x11.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x11.XDisplayWidth.argtypes = x11.XDisplayHeight.argtypes = [ctypes.c_void_p, ctypes.c_int]
    x11.XGetImage.restype = ctypes.POINTER(_XImage)
    x11.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int, ctypes.c_uint,
                              ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
    x11.XInternAtom.restype = ctypes.c_ulong
    x11.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x11.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    x11.XFlush.argtypes = [ctypes.c_void_p]
    return x11


@cache
def _connection(display: str) -> int:
    """One X connection per display for the whole test run (Pillow's ImageGrab leaks one per grab,
    and a few hundred leaked connections leave the X server unable to accept the app's window)."""
    dpy = _xlib().XOpenDisplay(display.encode())
    assert dpy, f"cannot open X display {display}"
    return dpy


def grab(display: str) -> np.ndarray:
    """The whole screen as RGB (H, W, 3) — what a user of that display sees."""
    x11, dpy = _xlib(), _connection(display)
    width, height = x11.XDisplayWidth(dpy, 0), x11.XDisplayHeight(dpy, 0)
    image = x11.XGetImage(dpy, x11.XDefaultRootWindow(dpy), 0, 0, width, height, 0xFFFFFFFF, 2)  # ZPixmap
    assert image, "XGetImage failed"
    try:
        im = image.contents
        assert im.bits_per_pixel == 32, f"expected a 24-bit screen, got {im.bits_per_pixel} bits per pixel"
        rows = np.ctypeslib.as_array(im.data, shape=(height, im.bytes_per_line))
        return rows[:, :width * 4].reshape(height, width, 4)[..., 2::-1].copy()  # BGRX -> RGB
    finally:
        image.contents.destroy_image(image)


def close_window(display: str, wid: int) -> None:
    """What a window manager's close button does: send WM_DELETE_WINDOW to the window."""
    x11, dpy = _xlib(), _connection(display)
    event = _ClientMessage(type=33, send_event=1, display=dpy, window=wid,  # 33 = ClientMessage
                           message_type=x11.XInternAtom(dpy, b"WM_PROTOCOLS", 0), format=32)
    event.data[0] = x11.XInternAtom(dpy, b"WM_DELETE_WINDOW", 0)
    x11.XSendEvent(dpy, wid, 0, 0, ctypes.byref(event))
    x11.XFlush(dpy)


class Page:
    """The window's page, through the shell's page automation socket (desktop/page_automation.py): the same
    for WebKitGTK and Qt WebEngine."""

    def __init__(self, path: Path, timeout: float = 30) -> None:
        self._sock = socket.socket(socket.AF_UNIX)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._sock.connect(str(path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    self._sock.close()
                    raise AssertionError(f"the window's page automation socket {path} did not open") from None
                time.sleep(0.05)
        self._sock.settimeout(60)
        self._replies = self._sock.makefile("rb")

    def eval(self, expression: str) -> Any:
        self._sock.sendall(json.dumps({"js": expression}).encode() + b"\n")
        reply = json.loads(self._replies.readline() or b'{"error": "the window closed the socket"}')
        if "error" in reply:
            raise AssertionError(f"{expression!r} failed in the page: {reply['error']}")
        return reply["value"]

    def wait(self, expression: str, timeout: float = 20) -> Any:
        """The expression's value once truthy; until then a throw (the page still loading) is "not yet"."""
        deadline, error = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except AssertionError as exc:
                value, error = None, exc
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"{expression!r} did not become true within {timeout:g} s (last error: {error})")

    def rect(self, selector: str) -> tuple[int, int, int, int]:
        """An element's box in the page's CSS pixels (= screen pixels under Xvfb)."""
        r = self.eval(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                      " return [r.x, r.y, r.width, r.height]; })()")
        return tuple(round(v) for v in r)

    def close(self) -> None:
        self._replies.close()
        self._sock.close()


@cache
def references(size: tuple[int, int]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each outfit as the moderngl renderer draws it at `size`: (straight RGB, alpha 0..1)."""
    with CharacterRenderer(idle_blink=False, clock=lambda: 0.0) as renderer:
        out = {}
        for outfit in renderer.outfit_ids:
            rgba = unpremultiply(renderer.render(FrameState(outfit), size))
            out[outfit] = (rgba[..., :3].astype(np.float32), rgba[..., 3] / 255.0)
        return out


def outfit_distances(region: np.ndarray) -> dict[str, float]:
    """How far an on-screen character is from each outfit: mean colour error where the reference is opaque."""
    h, w = region.shape[:2]
    scores = {}
    for outfit, (rgb, alpha) in references((w, h)).items():
        solid = alpha > 0.95
        scores[outfit] = float(np.abs(region.astype(np.float32)[solid] - rgb[solid]).mean())
    return scores


def shown_outfit(region: np.ndarray) -> str:
    scores = outfit_distances(region)
    return min(scores, key=scores.get)
