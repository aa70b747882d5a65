"""What the gateway remembers, behind one interface (`GatewayState`) with two backends.

- `LocalState`, the embedded default (one process, no Redis): the device registry, pairing
  codes, revoked tokens and the token signing key live in SQLite under the server's data dir,
  so `stella-server device ...` can change them while the server runs; sessions live only in
  the process's memory (their `LinkProtocol`s are the state), so nothing about them is written.
- `RedisState` (`remote_api.state_redis`, `stella-server serve --redis URL`): the same registry
  in Redis, plus every session's position, replay buffer and in-flight replies, written before
  anything is sent to the client, so any replica can take a session over when its own dies.

A session is owned by one replica at a time (the one its client is connected to); taking it
over is atomic and fences the previous owner out: its next write fails and it lets go.
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from remote_api.protocol import Outbound


class StateError(RuntimeError):
    """The state backend refused an operation; the message says why and what to do."""


@dataclass(frozen=True)
class Device:
    """A paired device. Only hashes of its secrets are kept, plus the link key sealing needs."""

    id: str
    name: str
    fingerprint_hash: str
    refresh_hash: str = field(repr=False)
    link_key: bytes = field(repr=False)
    created: float
    revoked: float | None = None
    last_refresh: float | None = None
    local: bool = False  # a loopback gateway's own device (`local-<port>`), replaced at every start

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"link_key": base64.b64encode(self.link_key).decode()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Device:
        return cls(**(data | {"link_key": base64.b64decode(data["link_key"])}))


@dataclass(frozen=True)
class DeviceIdentity:
    """Who an authenticated request comes from. Sessions compare devices, not tokens, so a
    refreshed token resumes the same session; `jti` and `expires` are that connection's token."""

    device_id: str
    link_key: bytes = field(repr=False)
    jti: str = field(default="", compare=False)
    expires: float = field(default=0.0, compare=False)


class PairingStatus(StrEnum):
    OK = "ok"
    UNKNOWN = "unknown"
    USED = "used"
    EXPIRED = "expired"


@dataclass
class TurnRecord:
    """A reply being generated: its request (with the seed the gateway fixed) and how far it got."""

    request: dict[str, Any]
    sent: int = 0  # token envelopes sent
    digest: str = ""  # sha256 of their text, to check a regenerated prefix


@dataclass
class SessionDelta:
    """What changed in a session since its last write (see `Session.delta`)."""

    sent_seq: int
    recv_seq: int
    acked_seq: int
    envelopes: list[Outbound] = field(default_factory=list)
    started: dict[str, dict[str, Any]] = field(default_factory=dict)  # rid -> request
    progress: dict[str, tuple[int, str]] = field(default_factory=dict)  # rid -> (sent, digest)
    finished: list[str] = field(default_factory=list)


@dataclass
class SessionRecord:
    """A session as another replica left it."""

    sid: str
    previous_owner: str
    sent_seq: int
    recv_seq: int
    acked_seq: int
    envelopes: list[Outbound]
    turns: dict[str, TurnRecord]


class Registry(Protocol):
    """Devices, pairing codes, revocations and the signing key."""

    async def signing_key(self) -> Ed25519PrivateKey: ...

    async def add_pairing(self, code_hash: str, name: str, expires: float) -> None: ...

    async def use_pairing(self, code_hash: str, now: float) -> tuple[PairingStatus, str]: ...

    async def add_device(self, device: Device) -> None: ...

    async def device(self, device_id: str) -> Device | None: ...

    async def devices(self) -> list[Device]: ...

    async def remove_device(self, device_id: str) -> None: ...

    async def revoke_device(self, name: str, now: float) -> Device | None: ...

    async def touch_device(self, device_id: str, now: float) -> None: ...

    async def revoke_token(self, jti: str, until: float) -> None: ...

    async def token_revoked(self, jti: str) -> bool: ...


class SessionStore(Protocol):
    """Sessions as replicas share them. `shared` False: one process, nothing to share."""

    shared: bool

    async def claim_rid(self, rid: str, sid: str, seq: int) -> bool: ...

    async def create_session(self, sid: str, owner: str, who: str) -> None: ...

    async def save_session(self, sid: str, owner: str, delta: SessionDelta) -> bool: ...

    async def take_session(self, sid: str, owner: str, who: str) -> SessionRecord | None: ...

    async def drop_session(self, sid: str, owner: str) -> None: ...

    async def keep_alive(self, sids: list[str]) -> None: ...


class GatewayState(Registry, SessionStore, Protocol):
    async def close(self) -> None: ...


class MemorySessions:
    """One process: the sessions in memory are all there is. Only request ids are remembered
    (bounded), each with the envelope that carried it, so a retransmit of that very envelope
    is told apart from a second request reusing the id."""

    shared = False

    def __init__(self, rid_memory: int = 16384) -> None:
        self._rids: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._rid_memory = rid_memory

    async def claim_rid(self, rid: str, sid: str, seq: int) -> bool:
        """True if `rid` may start a generation: never seen, or seen in this same envelope."""
        seen = self._rids.setdefault(rid, (sid, seq))
        if len(self._rids) > self._rid_memory:
            self._rids.popitem(last=False)
        return seen == (sid, seq)

    async def create_session(self, sid: str, owner: str, who: str) -> None:
        pass

    async def save_session(self, sid: str, owner: str, delta: SessionDelta) -> bool:
        return True

    async def take_session(self, sid: str, owner: str, who: str) -> SessionRecord | None:
        return None

    async def drop_session(self, sid: str, owner: str) -> None:
        pass

    async def keep_alive(self, sids: list[str]) -> None:
        pass


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, fingerprint_hash TEXT NOT NULL, refresh_hash TEXT NOT NULL,
    link_key BLOB NOT NULL, created REAL NOT NULL, revoked REAL, last_refresh REAL, local INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pairings (code_hash TEXT PRIMARY KEY, name TEXT NOT NULL, expires REAL NOT NULL,
    used REAL);
CREATE TABLE IF NOT EXISTS revoked_tokens (jti TEXT PRIMARY KEY, until REAL NOT NULL);
"""
_DEVICE_COLUMNS = "id, name, fingerprint_hash, refresh_hash, link_key, created, revoked, last_refresh, local"


class LocalState(MemorySessions):
    """The embedded default: the registry in SQLite (`<data_dir>/gateway.db`), sessions in memory."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        self.path = Path(data_dir) / "gateway.db"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.touch(mode=0o600, exist_ok=True)  # it holds link keys and the signing key
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StateError(f"cannot open the gateway's state at {self.path} ({exc}); check the --data-dir "
                             "permissions, or move the damaged file away to start afresh (devices must pair again)"
                             ) from None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction, writer lock taken up front (the CLI may write at the same time)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    async def close(self) -> None:
        with self._lock:
            self._db.close()

    async def signing_key(self) -> Ed25519PrivateKey:
        with self._tx() as db:
            db.execute("INSERT OR IGNORE INTO meta VALUES ('signing_key', ?)",
                       (Ed25519PrivateKey.generate().private_bytes_raw(),))
            (raw,) = db.execute("SELECT value FROM meta WHERE key = 'signing_key'").fetchone()
        return Ed25519PrivateKey.from_private_bytes(raw)

    async def add_pairing(self, code_hash: str, name: str, expires: float) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM pairings WHERE expires < ?", (time.time() - 86400,))
            db.execute("INSERT INTO pairings VALUES (?, ?, ?, NULL)", (code_hash, name, expires))

    async def use_pairing(self, code_hash: str, now: float) -> tuple[PairingStatus, str]:
        with self._tx() as db:
            row = db.execute("SELECT name, expires, used FROM pairings WHERE code_hash = ?", (code_hash,)).fetchone()
            if row is None:
                return PairingStatus.UNKNOWN, ""
            name, expires, used = row
            if used is not None:
                return PairingStatus.USED, name
            if expires < now:
                return PairingStatus.EXPIRED, name
            db.execute("UPDATE pairings SET used = ? WHERE code_hash = ?", (now, code_hash))
            return PairingStatus.OK, name

    async def add_device(self, device: Device) -> None:
        with self._tx() as db:
            if device.local:  # the previous gateway on this port is gone
                db.execute("DELETE FROM devices WHERE local = 1 AND name = ?", (device.name,))
            taken = db.execute("SELECT 1 FROM devices WHERE name = ? AND revoked IS NULL", (device.name,)).fetchone()
            if taken:
                raise StateError(f"a device named {device.name!r} is already paired; revoke it first "
                                 f"(stella-server device revoke {device.name}) or choose another name")
            db.execute(f"INSERT INTO devices ({_DEVICE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (device.id, device.name, device.fingerprint_hash, device.refresh_hash, device.link_key,
                        device.created, device.revoked, device.last_refresh, int(device.local)))

    async def device(self, device_id: str) -> Device | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_DEVICE_COLUMNS} FROM devices WHERE id = ?", (device_id,)).fetchone()
        return None if row is None else _device(row)

    async def devices(self) -> list[Device]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_DEVICE_COLUMNS} FROM devices ORDER BY created").fetchall()
        return [_device(row) for row in rows]

    async def remove_device(self, device_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM devices WHERE id = ?", (device_id,))

    async def revoke_device(self, name: str, now: float) -> Device | None:
        with self._tx() as db:
            row = db.execute(f"SELECT {_DEVICE_COLUMNS} FROM devices WHERE (name = ? OR id = ?) AND revoked IS NULL",
                             (name, name)).fetchone()
            if row is None:
                return None
            db.execute("UPDATE devices SET revoked = ? WHERE id = ?", (now, row[0]))
        return _device(row[:6] + (now,) + row[7:])

    async def touch_device(self, device_id: str, now: float) -> None:
        with self._tx() as db:
            db.execute("UPDATE devices SET last_refresh = ? WHERE id = ?", (now, device_id))

    async def revoke_token(self, jti: str, until: float) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM revoked_tokens WHERE until < ?", (time.time(),))
            db.execute("INSERT OR REPLACE INTO revoked_tokens VALUES (?, ?)", (jti, until))

    async def token_revoked(self, jti: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM revoked_tokens WHERE jti = ?", (jti,)).fetchone() is not None


def _device(row: tuple[Any, ...]) -> Device:
    return Device(*row[:8], local=bool(row[8]))


def default_data_dir() -> Path:
    """Where `stella-server` keeps its state unless told otherwise (--data-dir)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("stella")) / "gateway"
