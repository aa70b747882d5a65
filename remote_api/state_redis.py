"""`GatewayState` in Redis, shared by any number of gateway replicas (`serve --redis URL`).

Keys (prefix ``stella:``): ``signing-key``; ``pair:<code hash>``; ``device:<id>`` and the
``devices`` set; ``revoked:<jti>`` (expiring with the token); ``rid:<rid>``; and per session
``s:{<sid>}`` (owner, who, positions) with ``:env`` (replay buffer: seq -> envelope), ``:req``
(in-flight requests) and ``:pos`` (their progress), all expiring `session_ttl` after the last
write or keep-alive. Session writes are Lua scripts: atomic, and refused unless the writer still
owns the session, which is what fences a replica out once another one has taken over.
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
from remote_api.state import (
    Device,
    PairingStatus,
    SessionDelta,
    SessionRecord,
    StateError,
    TurnRecord,
)

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

# ARGV: now, used-marker ttl_s. Returns status and name.
_USE_PAIRING = """
local raw = redis.call('GET', KEYS[1])
if not raw then return {'unknown', ''} end
local code = cjson.decode(raw)
if code.used then return {'used', code.name} end
if code.expires < tonumber(ARGV[1]) then return {'expired', code.name} end
code.used = tonumber(ARGV[1])
redis.call('SET', KEYS[1], cjson.encode(code), 'EX', ARGV[2])
return {'ok', code.name}
"""


def _session_keys(sid: str) -> list[str]:
    base = f"{P}s:{{{sid}}}"  # one hash slot per session (Redis Cluster friendly)
    return [base, base + ":env", base + ":req", base + ":pos"]


class RedisState:
    """`GatewayState` for replicas. Redis errors become `StateError`."""

    shared = True

    def __init__(self, url: str, *, session_ttl: float = 300.0) -> None:
        self.url = url
        self._redis = redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=5.0)
        self._ttl_ms = int(session_ttl * 1000)
        self._rid_ttl = int(max(session_ttl, 3600))
        self._save = self._redis.register_script(_SAVE)
        self._take = self._redis.register_script(_TAKE)
        self._drop = self._redis.register_script(_DROP)
        self._claim = self._redis.register_script(_CLAIM)
        self._use_pairing = self._redis.register_script(_USE_PAIRING)

    async def _call(self, what: str, operation: Any) -> Any:
        try:
            return await operation
        except RedisError as exc:
            raise StateError(f"Redis at {self.url} failed to {what} ({exc}); check that it is up") from None

    async def close(self) -> None:
        await self._redis.aclose()

    # --- registry ---------------------------------------------------------------------------

    async def signing_key(self) -> Ed25519PrivateKey:
        key = P + "signing-key"
        await self._call("store the signing key",
                         self._redis.set(key, Ed25519PrivateKey.generate().private_bytes_raw(), nx=True))
        return Ed25519PrivateKey.from_private_bytes(await self._call("read the signing key", self._redis.get(key)))

    async def add_pairing(self, code_hash: str, name: str, expires: float) -> None:
        ttl = max(1, int(expires - time.time()) + 86400)  # kept a day past expiry: "expired" beats "unknown"
        record = json.dumps({"name": name, "expires": expires})
        await self._call("store a pairing code", self._redis.set(f"{P}pair:{code_hash}", record, ex=ttl))

    async def use_pairing(self, code_hash: str, now: float) -> tuple[PairingStatus, str]:
        status, name = await self._call("check a pairing code",
                                        self._use_pairing(keys=[f"{P}pair:{code_hash}"], args=[now, 86400]))
        return PairingStatus(status.decode()), name.decode()

    async def add_device(self, device: Device) -> None:
        devices = await self.devices()
        replaced = [d for d in devices if device.local and d.local and d.name == device.name]
        if any(d.name == device.name and d.revoked is None and d not in replaced for d in devices):
            raise StateError(f"a device named {device.name!r} is already paired; revoke it first "
                             f"(stella-server device revoke {device.name}) or choose another name")
        async with self._redis.pipeline(transaction=True) as pipe:
            for old in replaced:
                pipe.delete(f"{P}device:{old.id}").srem(P + "devices", old.id)
            pipe.set(f"{P}device:{device.id}", json.dumps(device.to_dict())).sadd(P + "devices", device.id)
            await self._call("store a device", pipe.execute())

    async def device(self, device_id: str) -> Device | None:
        raw = await self._call("read a device", self._redis.get(f"{P}device:{device_id}"))
        return None if raw is None else Device.from_dict(json.loads(raw))

    async def devices(self) -> list[Device]:
        ids = sorted(await self._call("list devices", self._redis.smembers(P + "devices")))
        if not ids:
            return []
        raws = await self._call("read devices", self._redis.mget([f"{P}device:{i.decode()}" for i in ids]))
        return sorted((Device.from_dict(json.loads(r)) for r in raws if r), key=lambda d: d.created)

    async def remove_device(self, device_id: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(f"{P}device:{device_id}").srem(P + "devices", device_id)
            await self._call("remove a device", pipe.execute())

    async def _replace(self, device: Device) -> None:
        await self._call("update a device", self._redis.set(f"{P}device:{device.id}", json.dumps(device.to_dict())))

    async def revoke_device(self, name: str, now: float) -> Device | None:
        for device in await self.devices():
            if name in (device.name, device.id) and device.revoked is None:
                revoked = dataclasses.replace(device, revoked=now)
                await self._replace(revoked)
                return revoked
        return None

    async def touch_device(self, device_id: str, now: float) -> None:
        device = await self.device(device_id)
        if device is not None:
            await self._replace(dataclasses.replace(device, last_refresh=now))

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
        for env in delta.envelopes:
            args += [env.seq, json.dumps({"t": str(env.type), "b": env.body, "ts": env.ts})]
        args.append(len(delta.started))
        for rid, request in delta.started.items():
            args += [rid, json.dumps(request)]
        args.append(len(delta.progress))
        for rid, (sent, digest) in delta.progress.items():
            args += [rid, f"{sent} {digest}"]
        args += [len(delta.finished), *delta.finished]
        return bool(await self._call("write a session", self._save(keys=_session_keys(sid), args=args)))

    async def take_session(self, sid: str, owner: str, who: str) -> SessionRecord | None:
        found = await self._call("take a session over",
                                 self._take(keys=_session_keys(sid), args=[owner, who, self._ttl_ms]))
        if not found:
            return None
        previous, meta, envs, requests, positions = found
        meta, envs, requests, positions = (_pairs(x) for x in (meta, envs, requests, positions))
        envelopes = []
        for seq, raw in sorted(envs.items(), key=lambda kv: int(kv[0])):
            env = json.loads(raw)
            envelopes.append(Outbound(int(seq), Type(env["t"]), env["b"], env["ts"]))
        turns = {}
        for rid, raw in requests.items():
            sent, _, digest = positions.get(rid, "0 ").partition(" ")
            turns[rid] = TurnRecord(json.loads(raw), int(sent), digest)
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


def _pairs(flat: list[bytes]) -> dict[str, str]:
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}
