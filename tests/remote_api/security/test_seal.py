"""Sealing, driven by hand (sans-I/O, fake clock): what crosses the wire is ciphertext that
nobody can read, alter, move or replay, and no key ever reuses a nonce."""

from __future__ import annotations

import json

import pytest

from remote_api.envelope import Envelope, ProtocolError, Type, decode, encode, header_ad
from remote_api.link_config import LinkConfig
from remote_api.protocol import Connected, LinkProtocol, Message, PlainCodec, Role
from remote_api.seal import KEPT_EPOCHS, KeyShare, SealCodec, b64d, b64e, derive_keys, nonce
from tests.remote_api.clock import FakeClock

CFG = LinkConfig(heartbeat_interval=1.0, heartbeat_timeout=0.5, retransmit_timeout=0.4, ack_delay=0.05,
                 handshake_timeout=2.0)
LINK_KEY = bytes(range(32))
SECRET = "the blue heron sings at midnight"
CHAT = {"rid": "r1", "messages": [{"role": "user", "content": SECRET}]}


def make_pair(client_key: bytes = LINK_KEY, server_key: bytes = LINK_KEY):
    clock = FakeClock()
    client = LinkProtocol(Role.CLIENT, CFG, clock=clock, wall=clock, codec=SealCodec(Role.CLIENT, client_key))
    server = LinkProtocol(Role.SERVER, CFG, clock=clock, wall=clock, sid="S1", codec=SealCodec(Role.SERVER, server_key))
    return clock, client, server


class Wire:
    """A perfect network between two protocols that remembers every frame it carried."""

    def __init__(self, client: LinkProtocol, server: LinkProtocol) -> None:
        self.client, self.server = client, server
        self.frames: list[tuple[str, bytes]] = []

    def pump(self) -> None:
        for _ in range(100):
            c2s, s2c = self.client.data_to_send(), self.server.data_to_send()
            if not c2s and not s2c:
                return
            for frame in c2s:
                self.frames.append(("c2s", frame))
                self.server.receive(frame)
            for frame in s2c:
                self.frames.append(("s2c", frame))
                self.client.receive(frame)
        raise AssertionError("the two sides never went quiet")

    def connect(self) -> None:
        self.client.connection_made()
        self.server.connection_made()
        self.pump()

    def lose(self) -> None:
        """Both sides transmit; the network carries nothing (the frames are still seen)."""
        self.frames += [("c2s", f) for f in self.client.data_to_send()]
        self.frames += [("s2c", f) for f in self.server.data_to_send()]

    def drop(self) -> None:
        self.client.connection_lost()
        self.server.connection_lost()

    def sealed(self) -> list[tuple[str, dict]]:
        """(direction, envelope) of every data envelope carried."""
        envs = [(d, json.loads(f)) for d, f in self.frames]
        return [(d, e) for d, e in envs if e["seq"]]


def messages(proto: LinkProtocol) -> list[Message]:
    return [e for e in proto.events() if isinstance(e, Message)]


def test_both_ends_agree_the_same_keys_and_each_direction_gets_its_own():
    a, b = KeyShare(), KeyShare()
    shared_a, shared_b = a.agree(b.public), b.agree(a.public)
    keys_a = derive_keys(shared_a, sid="S", client_share=a.public, server_share=b.public, link_key=LINK_KEY)
    keys_b = derive_keys(shared_b, sid="S", client_share=a.public, server_share=b.public, link_key=LINK_KEY)
    assert keys_a == keys_b and keys_a.client_to_server != keys_a.server_to_client
    assert len(keys_a.client_to_server) == 32  # AES-256
    other = derive_keys(shared_a, sid="S2", client_share=a.public, server_share=b.public, link_key=LINK_KEY)
    assert other.client_to_server != keys_a.client_to_server  # bound to the session


def test_a_sealed_link_carries_data_both_ways_and_the_wire_shows_no_plaintext():
    _, client, server = make_pair()
    wire = Wire(client, server)
    wire.connect()
    assert Connected("S1", resumed=False) in client.events()
    client.send(Type.CHAT, CHAT)
    wire.pump()
    assert messages(server)[0].body == CHAT
    server.send(Type.TOKEN, {"rid": "r1", "i": 0, "text": " midnight heron"})
    wire.pump()
    assert messages(client)[0].body["text"] == " midnight heron"
    everything = b"".join(f for _, f in wire.frames)
    assert SECRET.encode() not in everything and b"heron" not in everything
    assert all(e["b"].keys() == {"e", "n", "c"} for _, e in wire.sealed())


@pytest.mark.parametrize("field", ["ciphertext", "seq", "type", "ts", "epoch", "nonce"])
def test_altering_a_sealed_envelope_is_detected_and_nothing_is_delivered(field):
    _, client, server = make_pair()
    wire = Wire(client, server)
    wire.connect()
    client.send(Type.CHAT, CHAT)
    (frame,) = client.data_to_send()
    env = json.loads(frame)
    if field == "ciphertext":
        raw = bytearray(b64d(env["b"]["c"]))
        raw[5] ^= 1
        env["b"]["c"] = b64e(bytes(raw))
    elif field == "seq":
        env["seq"] = 2  # moved to another position in the stream
    elif field == "type":
        env["t"] = "outfit"
    elif field == "ts":
        env["ts"] += 1
    elif field == "epoch":
        env["b"]["e"] = "AAAAAAAA"
    else:
        env["b"]["n"] += 1
    with pytest.raises(ProtocolError) as err:
        server.receive(json.dumps(env).encode())
    assert err.value.code == "bad_seal" and err.value.action
    assert messages(server) == []
    error = decode(server.data_to_send()[-1], 1 << 20)
    assert error.type is Type.ERROR and error.body["code"] == "bad_seal"


def test_a_proxy_that_swaps_the_key_shares_cannot_read_and_is_caught_at_the_first_message():
    """The link key (from pairing, never on the wire) salts the keys: a man in the middle who
    runs X25519 with each side separately derives different keys than either end."""
    clock = FakeClock()
    client = LinkProtocol(Role.CLIENT, CFG, clock=clock, wall=clock, codec=SealCodec(Role.CLIENT, LINK_KEY))
    server = LinkProtocol(Role.SERVER, CFG, clock=clock, wall=clock, sid="S1", codec=SealCodec(Role.SERVER, LINK_KEY))
    mitm_to_server = SealCodec(Role.CLIENT, b"")  # the proxy does not know the link key
    mitm_to_client = SealCodec(Role.SERVER, b"")
    client.connection_made()
    server.connection_made()
    (hello,) = client.data_to_send()
    env = json.loads(hello)
    mitm_to_client.welcome("S1", env["b"])
    env["b"] |= mitm_to_server.hello()  # the proxy's own key share instead of the client's
    server.receive(json.dumps(env).encode())
    (welcome,) = server.data_to_send()
    client_welcome = json.loads(welcome)
    mitm_to_server.welcomed("S1", client_welcome["b"])
    client_welcome["b"] |= mitm_to_client.welcome("S1", {"kx": env["b"]["kx"]})  # forged answer to the client
    client_welcome["b"]["e"] = "x"  # the proxy cannot name the client's epoch either
    with pytest.raises(ProtocolError) as err:
        client.receive(json.dumps(client_welcome).encode())
    assert err.value.code == "bad_seal"
    # Even passing the server's sealed data straight through, the proxy's keys open nothing.
    server.send(Type.TOKEN, {"rid": "r1", "i": 0, "text": "secret"})
    sealed = [json.loads(f) for f in server.data_to_send() if json.loads(f)["seq"]][0]
    with pytest.raises(ProtocolError):
        mitm_to_server.open(header_ad(Type.TOKEN, sealed["seq"], "S1", sealed["ts"]), sealed["b"])


def test_every_reconnect_rekeys_and_no_key_ever_reuses_a_nonce():
    clock, client, server = make_pair()
    wire = Wire(client, server)
    wire.connect()
    epochs = []
    for round_ in range(5):
        epochs.append(client._codec.epoch)  # noqa: SLF001
        for i in range(3):
            server.send(Type.TOKEN, {"rid": "r1", "i": 3 * round_ + i, "text": f"t{i}"})
            client.send(Type.OUTFIT, {"outfit": f"o{round_}{i}"})
        for _ in range(2):  # sent, lost, retransmitted on this connection, lost again ...
            wire.lose()
            clock.advance(CFG.retransmit_timeout + 0.01)
            server.tick()
            client.tick()
        wire.drop()
        wire.connect()  # ... and delivered after a reconnect, under new keys
    assert len(set(epochs)) == 5 and client._codec.epoch not in epochs  # noqa: SLF001
    used: dict[tuple[str, str, int], str] = {}
    for direction, env in wire.sealed():
        key = (direction, env["b"]["e"], env["b"]["n"])
        # a (key, nonce) pair only ever carries the very same ciphertext: a retransmit
        assert used.setdefault(key, env["b"]["c"]) == env["b"]["c"]
    first = [e["b"] for d, e in wire.sealed() if d == "s2c" and e["seq"] == 1]
    assert len(first) == 3 and first[0] == first[1] and first[2]["e"] != first[0]["e"]
    assert [m.body["i"] for m in messages(client)] == list(range(15))  # each delivered once
    assert [m.body["outfit"] for m in messages(server)] == [f"o{r}{i}" for r in range(5) for i in range(3)]


def test_a_replayed_envelope_is_never_delivered_twice_and_a_recaptured_one_opens_nowhere_else():
    _, client, server = make_pair()
    wire = Wire(client, server)
    wire.connect()
    client.send(Type.CHAT, CHAT)
    (frame,) = client.data_to_send()
    server.receive(frame)
    server.receive(frame)  # replayed as is: a duplicate
    assert len(messages(server)) == 1
    wire.drop()
    wire.connect()
    server.receive(frame)  # replayed into a later connection
    assert messages(server) == []
    env = json.loads(frame)
    env["seq"], env["ack"] = 2, 0  # replayed as new data: the seal binds the seq
    with pytest.raises(ProtocolError) as err:
        server.receive(json.dumps(env).encode())
    assert err.value.code == "bad_seal"


def test_keys_of_old_connections_are_forgotten():
    client, server = SealCodec(Role.CLIENT, LINK_KEY), SealCodec(Role.SERVER, LINK_KEY)

    def handshake() -> None:
        client.welcomed("S1", server.welcome("S1", client.hello()))

    handshake()
    ad = header_ad(Type.OUTFIT, 1, "S1", 0)
    old = client.seal(ad, {"outfit": "red"})
    handshake()
    assert server.open(ad, old) == {"outfit": "red"}  # a frame still in flight across one reconnect
    for _ in range(KEPT_EPOCHS):
        handshake()
    with pytest.raises(ProtocolError) as err:
        server.open(ad, old)
    assert err.value.code == "bad_seal"


def test_neither_side_agrees_to_talk_in_clear():
    clock = FakeClock()
    sealing_client = LinkProtocol(Role.CLIENT, CFG, clock=clock, codec=SealCodec(Role.CLIENT, LINK_KEY))
    plain_server = LinkProtocol(Role.SERVER, CFG, clock=clock, sid="S1", codec=PlainCodec())
    sealing_client.connection_made()
    plain_server.connection_made()
    plain_server.receive(sealing_client.data_to_send()[0])
    with pytest.raises(ProtocolError) as err:  # a downgrade (a proxy stripping the key share) is refused
        sealing_client.receive(plain_server.data_to_send()[0])
    assert err.value.code == "seal_required"

    plain_client = LinkProtocol(Role.CLIENT, CFG, clock=clock, codec=PlainCodec())
    sealing_server = LinkProtocol(Role.SERVER, CFG, clock=clock, sid="S2", codec=SealCodec(Role.SERVER, LINK_KEY))
    plain_client.connection_made()
    sealing_server.connection_made()
    with pytest.raises(ProtocolError) as err:
        sealing_server.receive(plain_client.data_to_send()[0])
    assert err.value.code == "seal_required"
    assert "Update" in decode(sealing_server.data_to_send()[0], 1 << 20).body["action"]


def test_a_frame_too_large_once_sealed_is_refused_before_it_is_queued():
    clock = FakeClock()
    small = LinkConfig(max_frame_bytes=4096)
    client = LinkProtocol(Role.CLIENT, small, clock=clock, codec=SealCodec(Role.CLIENT, LINK_KEY))
    plain_fits = {"rid": "r1", "messages": [{"role": "user", "content": "x" * 3500}]}
    assert len(encode_plain(plain_fits)) < 4096  # it would fit unsealed ...
    with pytest.raises(ValueError, match="exceeds"):
        client.send(Type.CHAT, plain_fits)  # ... but not once sealed (base64 grows it by a third)
    assert client.backlog == 0


def encode_plain(body: dict) -> bytes:
    return encode(Envelope(Type.CHAT, 1, 0, "S1", 0, body))


def test_nonces_are_a_counter_in_96_bits():
    assert nonce(0) == bytes(12) and nonce(1)[-1] == 1 and len(nonce(2**64 - 1)) == 12
