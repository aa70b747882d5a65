"""What a Redis reader gets: nothing of the conversation and no secret. Two real replicas share
a real, password-protected Redis; sessions run through both (one fails over mid-reply) while
every key `redis-cli --scan` lists is dumped: no prompt, reply, signing key, link key, refresh
or fingerprint hash is in clear, yet the replicas' own key opens the values (they are there,
sealed). A replica without the state key refuses to start and says what to set; one with
another key cannot read the state; the Redis password is in no log line."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator

import pytest
import redis as redis_sync

from remote_api.client import Done, LinkClient
from remote_api.credentials import TokenSource
from remote_api.pairing import fingerprint_hash, proof_hash, refresh_proof
from remote_api.seal import b64e
from remote_api.state_key import StateKeyError, StateKeys, new_key_line
from tests import services
from tests.remote_api.harness import FAST, collect

from .test_failover import BIN, Replicas, start_replicas

pytestmark = pytest.mark.redis
PASSWORD = "hunter2-" + "7f3a9c0e5b"
PROMPT = "Tell me about Quentin the purple giraffe who lives on Wobbleton Street"


@pytest.fixture
def private_redis() -> Iterator[services.Redis]:
    with services.Redis(password=PASSWORD) as r:
        yield r


@pytest.fixture
def replicas_on_private_redis(private_redis, fake_upstream, tmp_path) -> Iterator[Replicas]:
    with start_replicas(private_redis.url, fake_upstream.url, tmp_path) as started:
        yield started


def dump(server: services.Redis) -> dict[bytes, list[bytes]]:
    """Every key redis-cli --scan lists, with every value (and hash field) it holds, raw."""
    scanned = subprocess.run(server.cli("--scan"), capture_output=True, env=server.cli_env, timeout=30, check=True)
    client = redis_sync.Redis(port=server.port, password=server.password)
    out: dict[bytes, list[bytes]] = {}
    try:
        for key in scanned.stdout.splitlines():
            kind = client.type(key)
            if kind == b"string":
                values = [client.get(key) or b""]
            elif kind == b"hash":
                values = [b for pair in client.hgetall(key).items() for b in pair]
            elif kind == b"set":
                values = sorted(client.smembers(key))
            else:
                values = [kind]
            out[key] = values
    finally:
        client.close()
    return out


def clear_text_found(dumped: dict[bytes, list[bytes]], secrets_: dict[str, bytes]) -> list[str]:
    """Which of `secrets_` (and any 64-hex hash or JSON of a link message) appear anywhere."""
    blob = b"\n".join([*dumped, *(v for values in dumped.values() for v in values)])
    found = [name for name, raw in secrets_.items() if raw in blob]
    values = b"\n".join(v for values in dumped.values() for v in values)
    if re.search(rb"[0-9a-f]{64}", values):
        found.append("a sha256 hex digest")
    for marker in (b'"messages"', b'"content"', b'"text"', b'"rid"', b'"prompt"'):
        if marker in values:
            found.append(f"JSON field {marker.decode()}")
    return found


def test_a_redis_dump_during_and_after_sessions_holds_nothing_in_clear(replicas_on_private_redis, private_redis,
                                                                      fake_upstream):
    replicas = replicas_on_private_redis
    fake_upstream.delay, fake_upstream.tokens = 0.03, 80
    keys = StateKeys.parse(replicas.env["STELLA_STATE__KEY"], "the test")

    async def scenario():
        creds = await replicas.pair("fp-giraffe")
        client = LinkClient(replicas.urls, FAST, credentials=TokenSource(creds, "fp-giraffe"))
        await client.connect(10)
        dumps = []

        def on_token(t):
            if t.index == 30:  # mid-reply: the request and unacknowledged tokens are in Redis
                dumps.append(dump(private_redis))
            if t.index == 50:  # fail over: the other replica reads the sealed state back
                os.kill(replicas.serving(client.server_url).pid, signal.SIGKILL)

        first = await collect(client.chat([{"role": "user", "content": PROMPT}], max_tokens=80, temperature=0,
                                          seed=3), on_token, timeout=60)
        second = await collect(client.chat([{"role": "user", "content": PROMPT + " again"}], max_tokens=10),
                               timeout=60)
        dumps.append(dump(private_redis))
        await client.close()
        return creds, first, second, dumps

    creds, first, second, dumps = asyncio.run(scenario())
    assert isinstance(first.end, Done) and [t.index for t in first.tokens] == list(range(80))
    assert isinstance(second.end, Done)
    during, after = dumps
    # The dumps are not empty: the device, the signing key and the session's replay buffer are there ...
    assert b"stella:signing-key" in during and any(k.endswith(b":req") for k in during)
    assert any(k.endswith(b":env") and v for k, v in during.items())
    # ... and the replicas' key opens them: the signing key is a real 32-byte Ed25519 key.
    signing = keys.open(during[b"stella:signing-key"][0], "stella:signing-key#")
    assert len(signing) == 32
    secrets_ = {
        "the prompt": PROMPT.encode(), "a word of the prompt": b"Wobbleton",
        "a reply token": json.dumps(" w17").encode(), "another reply token": json.dumps(" w42").encode(),
        "the signing key": signing, "the signing key (base64)": base64.b64encode(signing),
        "the link key": creds.link_key, "the link key (base64url)": b64e(creds.link_key).encode(),
        "the link key (base64)": base64.b64encode(creds.link_key),
        "the refresh hash": proof_hash(refresh_proof(creds.refresh_credential)).encode(),
        "the refresh credential": creds.refresh_credential.encode(),
        "the fingerprint hash": fingerprint_hash("fp-giraffe").encode(), "the fingerprint": b"fp-giraffe",
        "the Redis password": PASSWORD.encode(),
    }
    assert clear_text_found(during, secrets_) == []
    assert clear_text_found(after, secrets_) == []
    logs = "\n".join(path.read_text() for path in replicas.logs)
    assert "state: redis://:***@127.0.0.1" in logs and PASSWORD not in logs


def test_a_replica_without_the_state_key_refuses_to_start_and_says_what_to_set(private_redis, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STELLA_STATE__")}
    proc = subprocess.run([str(BIN / "stella-server"), "serve", "--upstream", "http://127.0.0.1:9", "--port", "9",
                           "--redis", private_redis.url], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "STELLA_STATE__KEY" in proc.stderr and "stella-server state-key" in proc.stderr
    assert PASSWORD not in proc.stderr and "Traceback" not in proc.stderr


def test_a_replica_with_another_key_cannot_read_the_state(replicas_on_private_redis, private_redis, tmp_path):
    replicas = replicas_on_private_redis
    asyncio.run(replicas.pair())  # the replicas wrote the signing key and a device under their key
    env = {**replicas.env, "STELLA_STATE__KEY": new_key_line("other")}
    listed = subprocess.run([str(BIN / "stella-server"), "device", "list", "--redis", private_redis.url],
                            capture_output=True, text=True, timeout=30, env=env)
    assert listed.returncode == 2 and "does not have" in listed.stderr and "Traceback" not in listed.stderr
    wrong = private_redis.url.replace(PASSWORD, "wrong-password")
    refused = subprocess.run([str(BIN / "stella-server"), "device", "list", "--redis", wrong],
                             capture_output=True, text=True, timeout=30, env=replicas.env)
    assert refused.returncode == 2 and "redis://:***@127.0.0.1" in refused.stderr
    assert "wrong-password" not in refused.stderr and PASSWORD not in listed.stderr + refused.stderr


def test_rotation_a_replica_with_the_new_key_first_reads_what_the_old_key_sealed(replicas_on_private_redis,
                                                                                 private_redis):
    replicas = replicas_on_private_redis
    asyncio.run(replicas.pair())
    old = replicas.env["STELLA_STATE__KEY"]
    env = {**replicas.env, "STELLA_STATE__KEY": f"{new_key_line('new')},{old}"}
    listed = subprocess.run([str(BIN / "stella-server"), "device", "list", "--json", "--redis", private_redis.url],
                            capture_output=True, text=True, timeout=30, env=env)
    assert listed.returncode == 0, listed.stderr
    assert [d["name"].startswith("phone-") for d in json.loads(listed.stdout)] == [True]


def test_state_key_prints_a_key_the_settings_take():
    printed = subprocess.run([str(BIN / "stella-server"), "state-key"], capture_output=True, text=True, timeout=30)
    keys = StateKeys.parse(printed.stdout, "its output")
    assert printed.returncode == 0 and len(keys.keys[keys.current]) == 32


def test_a_state_key_file_must_be_private_and_well_formed(tmp_path):
    path = tmp_path / "state.key"
    path.write_text(new_key_line("file") + "\n")
    path.chmod(0o644)
    with pytest.raises(StateKeyError, match="readable by other users; chmod 600"):
        StateKeys.load("", path)
    path.chmod(0o600)
    assert StateKeys.load("", path).current == "file"
    path.write_text("file:not-base64-of-32-bytes\n")
    with pytest.raises(StateKeyError, match="must be ID:KEY"):
        StateKeys.load("", path)
    with pytest.raises(StateKeyError, match="STELLA_STATE__KEY"):
        StateKeys.load("", None)
