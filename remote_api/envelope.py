"""Envelopes: the one wire format of the link, the same over WebSocket and long-poll.

An envelope is a JSON object ``{"v", "sid", "seq", "ack", "t", "ts", "b"}``:

- ``v``   protocol version (this module speaks ``VERSION``);
- ``sid`` session id (empty in the first hello of a new session);
- ``seq`` per-direction sequence number of a *data* envelope (1, 2, ...) or 0 for *control*
  envelopes (hello, welcome, ping, pong, ack, bye and link-level errors), which are never
  retransmitted;
- ``ack`` cumulative acknowledgement: the highest seq the sender has received in order;
- ``t``   type, ``ts`` sender's wall clock in ms, ``b`` body (an object; see ``BODY_SCHEMAS``).

Everything that comes off the network passes ``decode`` + ``validate_body``; anything wrong
becomes a ``ProtocolError`` with a stable code, a plain-language message and what to do.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

VERSION = 1
MAX_ID_LEN = 64


class Type(StrEnum):
    HELLO = "hello"  # client -> server: open or resume (sid, ack = last seq received)
    WELCOME = "welcome"  # server -> client: session id and where the server resumes from
    CHAT = "chat"  # client -> server: a chat request, idempotent by its `rid`
    CANCEL = "cancel"  # client -> server: stop generating reply `rid`
    WARM = "warm"  # client -> server: the next turn's prefix, to cache on the session's slot (a hint)
    TOKEN = "token"  # server -> client: one piece of reply `rid`
    DONE = "done"  # server -> client: reply `rid` finished (reason, counts, timings)
    ERROR = "error"  # either way: code + message + action (data when about a reply)
    OUTFIT = "outfit"  # either way: the character's outfit changed / should change
    PING = "ping"
    PONG = "pong"
    ACK = "ack"  # nothing to piggyback on: acknowledge alone
    BYE = "bye"  # client -> server: the session is over, free it


DATA_TYPES = frozenset({Type.CHAT, Type.CANCEL, Type.WARM, Type.TOKEN, Type.DONE, Type.ERROR, Type.OUTFIT})
CLIENT_TYPES = frozenset(
    {Type.HELLO, Type.CHAT, Type.CANCEL, Type.WARM, Type.OUTFIT, Type.PING, Type.ACK, Type.BYE, Type.ERROR}
)
SERVER_TYPES = frozenset(
    {Type.WELCOME, Type.TOKEN, Type.DONE, Type.ERROR, Type.OUTFIT, Type.PONG, Type.ACK}
)

# WebSocket close codes for protocol errors (4000-4999 is the application range).
CLOSE_CODES = {"frame_too_large": 1009}
DEFAULT_CLOSE_CODE = 4400
CLOSE_LIMIT = 4429  # a bound of the gateway (a setting, named in the close reason) was reached
NDJSON = "application/x-ndjson"  # long-poll bodies: one encoded envelope per line


class ProtocolError(Exception):
    """The peer broke the protocol: what was wrong (code, message) and what to do about it."""

    def __init__(self, code: str, message: str, action: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.action = action or "This is a bug in the program on the other end; update Stella."

    @property
    def close_code(self) -> int:
        return CLOSE_CODES.get(self.code, DEFAULT_CLOSE_CODE)

    @property
    def reason(self) -> str:
        """The WebSocket close reason."""
        return self.code

    def body(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "action": self.action}


class LimitError(ProtocolError):
    """A bound on what one client may make the gateway hold was reached. `setting` names it (the
    close reason says it too); `status` is the HTTP answer."""

    def __init__(self, code: str, message: str, action: str, setting: str, status: int = 429) -> None:
        super().__init__(code, message, action)
        self.setting = setting
        self.status = status

    @property
    def close_code(self) -> int:
        return CLOSE_LIMIT

    @property
    def reason(self) -> str:
        return f"{self.code} (link.{self.setting})"


class AuthError(ProtocolError):
    """A request could not be authenticated; `status` is the HTTP answer (401, or 429 when rate
    limited, with `retry_after` seconds). Nothing is created for a request refused this way."""

    def __init__(self, code: str, message: str, action: str, status: int = 401, retry_after: float = 0.0) -> None:
        super().__init__(code, message, action)
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Envelope:
    type: Type
    seq: int = 0
    ack: int = 0
    sid: str = ""
    ts: int = 0
    body: dict[str, Any] = field(default_factory=dict)
    v: int = VERSION


def encode(env: Envelope) -> bytes:
    """Compact UTF-8 JSON; never contains a raw newline, so it also works as an NDJSON line."""
    obj = {"v": env.v, "sid": env.sid, "seq": env.seq, "ack": env.ack, "t": str(env.type),
           "ts": env.ts, "b": env.body}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def encode_body(body: Mapping[str, Any]) -> bytes:
    """A body alone, in the same compact JSON as `encode` (what sealing encrypts)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def header_ad(kind: Type, seq: int, sid: str, ts: int, v: int = VERSION) -> bytes:
    """The parts of a data envelope's header that never change on a retransmit.

    Sealing authenticates them with the body (associated data), so a body cannot be moved to
    another session, position or type. `ack` is left out: it changes on every transmission.
    """
    return f"{v}|{sid}|{seq}|{kind}|{ts}".encode()


def decode(data: bytes | str, max_bytes: int) -> Envelope:
    """Parse and validate one envelope's framing (not its body: that may still be sealed)."""
    raw = data.encode() if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise ProtocolError(
            "frame_too_large", f"an envelope of {len(raw)} bytes exceeds the limit of {max_bytes} bytes",
            "Send shorter messages or trim the conversation history.",
        )
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):
        raise ProtocolError("bad_json", "the envelope is not valid UTF-8 JSON") from None
    if not isinstance(obj, dict):
        raise ProtocolError("bad_envelope", "an envelope must be a JSON object")
    missing = {"v", "sid", "seq", "ack", "t", "ts"} - obj.keys()
    if missing:
        raise ProtocolError("bad_envelope", f"the envelope lacks {', '.join(sorted(missing))}")
    extra = obj.keys() - {"v", "sid", "seq", "ack", "t", "ts", "b"}
    if extra:
        raise ProtocolError("bad_envelope", f"the envelope has unknown fields {', '.join(sorted(extra))}")
    if obj["v"] != VERSION or not _is_int(obj["v"]):
        raise ProtocolError(
            "bad_version", f"protocol version {obj['v']!r} is not supported (this side speaks {VERSION})",
            "Update the Stella app and server to the same release.",
        )
    try:
        kind = Type(obj["t"])
    except (ValueError, TypeError):
        raise ProtocolError("unknown_type", f"unknown envelope type {obj['t']!r}") from None
    for name in ("seq", "ack"):
        if not _is_int(obj[name]) or obj[name] < 0:
            raise ProtocolError("bad_envelope", f"'{name}' must be a non-negative integer")
    if not isinstance(obj["sid"], str) or len(obj["sid"]) > MAX_ID_LEN:
        raise ProtocolError("bad_envelope", f"'sid' must be a string of at most {MAX_ID_LEN} characters")
    if not _is_int(obj["ts"]):
        raise ProtocolError("bad_envelope", "'ts' must be an integer (ms)")
    body = obj.get("b", {})
    if not isinstance(body, dict):
        raise ProtocolError("bad_envelope", "'b' (the body) must be a JSON object")
    if kind in DATA_TYPES:
        if obj["seq"] == 0 and kind is not Type.ERROR:
            raise ProtocolError("bad_seq", f"a '{kind}' envelope must carry a sequence number >= 1")
    elif obj["seq"] != 0:
        raise ProtocolError("bad_seq", f"a '{kind}' envelope is not sequenced; its seq must be 0")
    return Envelope(kind, obj["seq"], obj["ack"], obj["sid"], obj["ts"], body, obj["v"])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- bodies --------------------------------------------------------------------------------

Check = Callable[[Any], bool]


def _text(max_len: int) -> Check:
    return lambda v: isinstance(v, str) and len(v) <= max_len


def _ident(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= MAX_ID_LEN


def _count(lo: int, hi: int) -> Check:
    return lambda v: _is_int(v) and lo <= v <= hi


def _number(lo: float, hi: float) -> Check:
    return lambda v: (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                      and lo <= v <= hi)


def _messages(v: Any) -> bool:
    return (isinstance(v, list) and 0 < len(v) <= 512 and all(
        isinstance(m, dict) and m.keys() == {"role", "content"}
        and m["role"] in ("system", "user", "assistant") and isinstance(m["content"], str) for m in v))


def _stops(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 16 and all(isinstance(s, str) and 0 < len(s) <= 64 for s in v)


_SEED = lambda v: v is None or _count(-(2**31), 2**32)(v)  # noqa: E731
_KEY_SHARE = _text(64)  # an X25519 public key, base64url (checked in full by remote_api.seal)

# type -> {field: (check, required, what it must be)}
BODY_SCHEMAS: dict[Type, dict[str, tuple[Check, bool, str]]] = {
    Type.HELLO: {
        "agent": (_text(128), False, "a short string"),
        "kx": (_KEY_SHARE, False, "a key share (base64url)"),
    },
    Type.WELCOME: {
        "resumed": (lambda v: isinstance(v, bool), True, "true or false"),
        "heartbeat_interval": (_number(0.001, 3600), True, "seconds"),
        "heartbeat_timeout": (_number(0.001, 3600), True, "seconds"),
        "kx": (_KEY_SHARE, False, "a key share (base64url)"),
        "e": (_text(16), False, "a key epoch id"),
    },
    Type.CHAT: {
        "rid": (_ident, True, f"an id of 1-{MAX_ID_LEN} characters"),
        "messages": (_messages, True, "a list of {role: system|user|assistant, content: text}"),
        "max_tokens": (_count(1, 8192), False, "an integer from 1 to 8192"),
        "temperature": (_number(0, 5), False, "a number from 0 to 5"),
        "seed": (_SEED, False, "an integer or null"),
        "stop": (_stops, False, "a list of at most 16 short strings"),
        "repeat_penalty": (_number(1, 2), False, "a number from 1 (off) to 2"),
        "dry_multiplier": (_number(0, 5), False, "a number from 0 (off) to 5"),
    },
    Type.CANCEL: {"rid": (_ident, True, "the id of the request to cancel")},
    # No answer: the gateway evaluates `messages` (persona + history, no question) into the
    # session's pinned llama-server slot, generating nothing; a chat preempts it (remote_api.slots).
    Type.WARM: {"messages": (_messages, True, "a list of {role: system|user|assistant, content: text}")},
    Type.TOKEN: {
        "rid": (_ident, True, "a request id"),
        "i": (_count(0, 2**31), True, "the token's index in the reply"),
        "text": (_text(65536), True, "text"),
    },
    Type.DONE: {
        "rid": (_ident, True, "a request id"),
        "reason": (_text(32), True, "a short reason"),
        "tokens": (_count(0, 2**31), True, "a token count"),
        "timings": (lambda v: isinstance(v, dict), False, "an object"),
    },
    Type.ERROR: {
        "code": (_text(64), True, "a short code"),
        "message": (_text(2000), True, "text"),
        "action": (_text(2000), True, "text"),
        "rid": (_ident, False, "a request id"),
    },
    Type.OUTFIT: {"outfit": (_ident, True, "an outfit id"), "source": (_text(32), False, "a short string")},
    Type.PING: {"n": (_count(0, 2**62), True, "a counter")},
    Type.PONG: {"n": (_count(0, 2**62), True, "the counter of the ping it answers")},
    Type.ACK: {},
    Type.BYE: {},
}


def validate_body(kind: Type, body: Mapping[str, Any]) -> None:
    """Check one body against its type's schema; unknown fields are an error too."""
    schema = BODY_SCHEMAS[kind]
    unknown = body.keys() - schema.keys()
    if unknown:
        raise ProtocolError("bad_body", f"a '{kind}' body has unknown fields {', '.join(sorted(unknown))}")
    for name, (check, required, what) in schema.items():
        if name not in body:
            if required:
                raise ProtocolError("bad_body", f"a '{kind}' body needs '{name}' ({what})")
        elif not check(body[name]):
            raise ProtocolError("bad_body", f"'{name}' in a '{kind}' body must be {what}")
