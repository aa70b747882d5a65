"""`GatewayState` in Redis, shared by any number of gateway replicas (`serve --redis URL`).

Keys (prefix ``stella:``): ``signing-key``; ``pair:<keyed hash of the code hash>`` (name,
expires, used); ``device:<id>`` (a hash: ``record``, ``revoked``, ``last_refresh``) and the
``devices`` set; ``revoked:<jti>`` (expiring with the token); ``rid:<rid>``; and per session
``s:{<sid>}`` (owner, who, positions) with ``:env`` (replay buffer: seq -> envelope), ``:req``
(in-flight requests) and ``:pos`` (their progress), all expiring `session_ttl` after the last
write or keep-alive. Session writes are Lua scripts: atomic, and refused unless the writer still
owns the session, which is what fences a replica out once another one has taken over.

Every secret or private value is sealed with the state key (`remote_api.state_key`) before it
leaves the replica; Lua only moves, compares positions and deletes, never reads inside one.
Device changes are field-level and atomic (a refresh writes ``last_refresh`` only, a revoke
``revoked`` only, each only if the device still exists), so no change can undo another.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import redis.asyncio as redis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from redis.exceptions import RedisError

from remote_api.envelope import Type
from remote_api.protocol import Outbound
from remote_api.shared.logs import redact
from remote_api.state import (
    Device,
    PairingStatus,
    SessionDelta,
    SessionRecord,
    StateError,
    TurnRecord,
)
from remote_api.state_key import StateKeys

P = "stella:"

# ARGV: owner, ttl_ms, sent, recv, acked, then counted groups: envelopes (seq, json),
# started (rid, request), progress (rid, "sent digest"), finished (rid).
_SAVE = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
local old = tonumber(redis.call('HGET', KEYS[1], 'acked') or '0')
redis.call('HSET', KEYS[1], 'sent', ARGV[3], 'recv', ARGV[4], 'acked', ARGV[5])
local i = 6
local n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]); i = i + 2 end
for seq = old + 1, tonumber(ARGV[5]) do redis.call('HDEL', KEYS[2], tostring(seq)) end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1]); i = i + 2 end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1]); i = i + 2 end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do redis.call('HDEL', KEYS[3], ARGV[i]); redis.call('HDEL', KEYS[4], ARGV[i]); i = i + 1 end
for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ARGV[2]) end
return 1
"""

# ARGV: owner, who, ttl_ms. Becomes the owner and returns everything, or nil.
_TAKE = """
if redis.call('HGET', KEYS[1], 'who') ~= ARGV[2] then return false end
local previous = redis.call('HGET', KEYS[1], 'owner')
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
for k = 1, 4 do redis.call('PEXPIRE', KEYS[k], ARGV[3]) end
return {previous, redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2]),
        redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[4])}
"""

_DROP = """
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
return 1
"""

# ARGV: "sid seq", ttl_s. Returns the earlier claim, or nil after claiming.
_CLAIM = """
local seen = redis.call('GET', KEYS[1])
if seen then return seen end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return false
"""

# ARGV: now, used-marker ttl_s. Returns status and the (sealed) name.
_USE_PAIRING = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown', ''} end
local name = redis.call('HGET', KEYS[1], 'name')
if redis.call('HEXISTS', KEYS[1], 'used') == 1 then return {'used', name} end
if tonumber(redis.call('HGET', KEYS[1], 'expires')) < tonumber(ARGV[1]) then return {'expired', name} end
redis.call('HSET', KEYS[1], 'used', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {'ok', name}
"""

# ARGV: field, sealed value, only-once ("1": leave a value already there). Never recreates a
# device that was removed, and writes just its field: a refresh cannot undo a revoke.
_SET_DEVICE_FIELD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[3] == '1' and redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


def _session_keys(sid: str) -> list[str]:
    base = f"{P}s:{{{sid}}}"  # one hash slot per session (Redis Cluster friendly)
    return [base, base + ":env", base + ":req", base + ":pos"]


class RedisState:
    """`GatewayState` for replicas. Redis errors become `StateError`."""

    shared = True

    def __init__(self, url: str, keys: StateKeys, *, session_ttl: float = 300.0) -> None:
        self.url = url
        self._keys = keys
        self._redis = redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
        self._ttl_ms = int(session_ttl * 1000)
        self._rid_ttl = int(max(session_ttl, 3600))
        self._save = self._redis.register_script(_SAVE)
        self._take = self._redis.register_script(_TAKE)
        self._drop = self._redis.register_script(_DROP)
        self._claim = self._redis.register_script(_CLAIM)
        self._use_pairing = self._redis.register_script(_USE_PAIRING)
        self._set_device_field = self._redis.register_script(_SET_DEVICE_FIELD)

    async def _call(self, what: str, operation: Any) -> Any:
        try:
            return await operation
        except RedisError as exc:
            raise StateError(redact(f"Redis at {self.url} failed to {what} ({exc}); check that it is up")) from None

    def _seal(self, value: str | bytes, key: str, name: str = "") -> bytes:
        raw = value.encode() if isinstance(value, str) else value
        return self._keys.seal(raw, f"{key}#{name}")

    def _open(self, blob: bytes, key: str, name: str = "") -> bytes:
        try:
            return self._keys.open(blob, f"{key}#{name}")
        except ValueError as exc:
            raise StateError(str(exc)) from None

    async def close(self) -> None:
        await self._redis.aclose()

    # --- registry ---------------------------------------------------------------------------

    async def signing_key(self) -> Ed25519PrivateKey:
        key = P + "signing-key"
        fresh = self._seal(Ed25519PrivateKey.generate().private_bytes_raw(), key)
        await self._call("store the signing key", self._redis.set(key, fresh, nx=True))
        stored = await self._call("read the signing key", self._redis.get(key))
        return Ed25519PrivateKey.from_private_bytes(self._open(stored, key))

    def _pairing_key(self, code_hash: str) -> str:
        return f"{P}pair:{self._keys.name(code_hash)}"  # a plain code hash could be brute-forced

    async def add_pairing(self, code_hash: str, name: str, expires: float) -> None:
        ttl = max(1, int(expires - time.time()) + 86400)  # kept a day past expiry: "expired" beats "unknown"
        key = self._pairing_key(code_hash)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"name": self._seal(name, key, "name"), "expires": expires}).expire(key, ttl)
            await self._call("store a pairing code", pipe.execute())

    async def use_pairing(self, code_hash: str, now: float) -> tuple[PairingStatus, str]:
        key = self._pairing_key(code_hash)
        status, name = await self._call("check a pairing code", self._use_pairing(keys=[key], args=[now, 86400]))
        return PairingStatus(status.decode()), self._open(name, key, "name").decode() if name else ""

    async def add_device(self, device: Device) -> None:
        devices = await self.devices()
        replaced = [d for d in devices if device.local and d.local and d.name == device.name]
        if any(d.name == device.name and d.revoked is None and d not in replaced for d in devices):
            raise StateError(f"a device named {device.name!r} is already paired; revoke it first "
                             f"(stella-server device revoke {device.name}) or choose another name")
        key = f"{P}device:{device.id}"
        fields = {name: self._seal(json.dumps(value), key, name) for name, value in _device_fields(device).items()}
        async with self._redis.pipeline(transaction=True) as pipe:
            for old in replaced:
                pipe.delete(f"{P}device:{old.id}").srem(P + "devices", old.id)
            pipe.delete(key).hset(key, mapping=fields).sadd(P + "devices", device.id)
            await self._call("store a device", pipe.execute())

    def _device(self, device_id: str, fields: dict[bytes, bytes]) -> Device | None:
        if b"record" not in fields:
            return None
        key = f"{P}device:{device_id}"
        data = {name.decode(): json.loads(self._open(blob, key, name.decode())) for name, blob in fields.items()}
        return Device.from_dict(data.pop("record") | data)

    async def device(self, device_id: str) -> Device | None:
        return self._device(device_id, await self._call("read a device", self._redis.hgetall(f"{P}device:{device_id}")))

    async def devices(self) -> list[Device]:
        ids = sorted(i.decode() for i in await self._call("list devices", self._redis.smembers(P + "devices")))
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for i in ids:
                pipe.hgetall(f"{P}device:{i}")
            found = await self._call("read devices", pipe.execute())
        devices = (self._device(i, fields) for i, fields in zip(ids, found, strict=True))
        return sorted((d for d in devices if d is not None), key=lambda d: d.created)

    async def remove_device(self, device_id: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(f"{P}device:{device_id}").srem(P + "devices", device_id)
            await self._call("remove a device", pipe.execute())

    async def _set_field(self, device_id: str, name: str, value: float, once: bool) -> bool:
        key = f"{P}device:{device_id}"
        args = [name, self._seal(json.dumps(value), key, name), "1" if once else "0"]
        return bool(await self._call("update a device", self._set_device_field(keys=[key], args=args)))

    async def revoke_device(self, name: str, now: float) -> Device | None:
        for device in await self.devices():
            if name in (device.name, device.id) and device.revoked is None:
                if await self._set_field(device.id, "revoked", now, once=True):
                    return dataclasses.replace(device, revoked=now)
        return None

    async def touch_device(self, device_id: str, now: float) -> None:
        await self._set_field(device_id, "last_refresh", now, once=False)

    async def revoke_token(self, jti: str, until: float) -> None:
        await self._call("revoke a token", self._redis.set(f"{P}revoked:{jti}", 1, exat=max(int(until) + 1,
                                                                                             int(time.time()) + 1)))

    async def token_revoked(self, jti: str) -> bool:
        return bool(await self._call("check the revocation list", self._redis.exists(f"{P}revoked:{jti}")))

    # --- sessions ---------------------------------------------------------------------------

    async def claim_rid(self, rid: str, sid: str, seq: int) -> bool:
        mine = f"{sid} {seq}"
        seen = await self._call("claim a request id", self._claim(keys=[f"{P}rid:{rid}"], args=[mine, self._rid_ttl]))
        return seen is None or seen.decode() == mine

    async def create_session(self, sid: str, owner: str, who: str) -> None:
        meta = _session_keys(sid)[0]
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(meta, mapping={"owner": owner, "who": who, "sent": 0, "recv": 0, "acked": 0})
            pipe.pexpire(meta, self._ttl_ms)
            await self._call("store a new session", pipe.execute())

    async def save_session(self, sid: str, owner: str, delta: SessionDelta) -> bool:
        args: list[Any] = [owner, self._ttl_ms, delta.sent_seq, delta.recv_seq, delta.acked_seq,
                           len(delta.envelopes)]
        _, env_key, req_key, pos_key = keys = _session_keys(sid)
        for env in delta.envelopes:
            args += [env.seq, self._seal(json.dumps({"t": str(env.type), "b": env.body, "ts": env.ts}), env_key,
                                         str(env.seq))]
        args.append(len(delta.started))
        for rid, request in delta.started.items():
            args += [rid, self._seal(json.dumps(request), req_key, rid)]
        args.append(len(delta.progress))
        for rid, (sent, digest) in delta.progress.items():
            args += [rid, self._seal(f"{sent} {digest}", pos_key, rid)]
        args += [len(delta.finished), *delta.finished]
        return bool(await self._call("write a session", self._save(keys=keys, args=args)))

    async def take_session(self, sid: str, owner: str, who: str) -> SessionRecord | None:
        _, env_key, req_key, pos_key = keys = _session_keys(sid)
        found = await self._call("take a session over", self._take(keys=keys, args=[owner, who, self._ttl_ms]))
        if not found:
            return None
        previous, meta, envs, requests, positions = found
        meta = {k: v.decode() for k, v in _pairs(meta).items()}
        envs, requests, positions = (_pairs(x) for x in (envs, requests, positions))
        envelopes = []
        for seq, raw in sorted(envs.items(), key=lambda kv: int(kv[0])):
            env = json.loads(self._open(raw, env_key, seq))
            envelopes.append(Outbound(int(seq), Type(env["t"]), env["b"], env["ts"]))
        turns = {}
        for rid, raw in requests.items():
            position = self._open(positions[rid], pos_key, rid).decode() if rid in positions else "0 "
            sent, _, digest = position.partition(" ")
            turns[rid] = TurnRecord(json.loads(self._open(raw, req_key, rid)), int(sent), digest)
        return SessionRecord(sid, (previous or b"").decode(), int(meta["sent"]), int(meta["recv"]),
                             int(meta["acked"]), envelopes, turns)

    async def drop_session(self, sid: str, owner: str) -> None:
        await self._call("forget a session", self._drop(keys=_session_keys(sid), args=[owner]))

    async def keep_alive(self, sids: list[str]) -> None:
        if not sids:
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            for sid in sids:
                for key in _session_keys(sid):
                    pipe.pexpire(key, self._ttl_ms)
            await self._call("keep sessions alive", pipe.execute())


def _pairs(flat: list[bytes]) -> dict[str, bytes]:
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def _device_fields(device: Device) -> dict[str, object]:
    """A device as hash fields: what never changes in one, the two timestamps that do apart."""
    data = device.to_dict()
    fields: dict[str, object] = {"record": {k: v for k, v in data.items() if k not in ("revoked", "last_refresh")}}
    fields.update((k, data[k]) for k in ("revoked", "last_refresh") if data[k] is not None)
    return fields
