"""The link's reliability rules, driven by hand with a fake clock: no sockets, no sleeps."""

from __future__ import annotations

import json

import pytest

from remote_api.envelope import Envelope, ProtocolError, Type, encode
from remote_api.link_config import LinkConfig
from remote_api.protocol import (
    Connected,
    LinkDead,
    LinkProtocol,
    Message,
    PeerError,
    PlainCodec,
    Role,
    SessionLost,
)

from .clock import FakeClock

CFG = LinkConfig(heartbeat_interval=1.0, heartbeat_timeout=0.5, retransmit_timeout=0.4, ack_delay=0.05,
                 handshake_timeout=2.0)


def make_pair(cfg: LinkConfig = CFG, sid: str = "S1") -> tuple[FakeClock, LinkProtocol, LinkProtocol]:
    clock = FakeClock()
    client = LinkProtocol(Role.CLIENT, cfg, clock=clock, wall=clock)
    server = LinkProtocol(Role.SERVER, cfg, clock=clock, wall=clock, sid=sid)
    return clock, client, server


def pump(client: LinkProtocol, server: LinkProtocol) -> None:
    """Deliver everything both sides want to send until they are quiet (a perfect network)."""
    for _ in range(100):
        c2s, s2c = client.data_to_send(), server.data_to_send()
        if not c2s and not s2c:
            return
        for frame in c2s:
            server.receive(frame)
        for frame in s2c:
            client.receive(frame)
    raise AssertionError("the two sides never went quiet")


def connect(client: LinkProtocol, server: LinkProtocol) -> None:
    client.connection_made()
    server.connection_made()
    pump(client, server)


def messages(proto: LinkProtocol) -> list[Message]:
    return [e for e in proto.events() if isinstance(e, Message)]


def texts(proto: LinkProtocol) -> list[str]:
    return [m.body["text"] for m in messages(proto)]


def tok(i: int) -> dict:
    return {"rid": "r1", "i": i, "text": f"t{i}"}


CHAT = {"rid": "r1", "messages": [{"role": "user", "content": "hi"}]}


def test_handshake_opens_a_new_session_and_both_sides_learn_its_id():
    _, client, server = make_pair()
    connect(client, server)
    assert client.events() == [Connected("S1", resumed=False)]
    assert server.events() == [Connected("S1", resumed=False)]
    assert client.sid == "S1" and client.established and server.established


def test_data_arrives_in_order_and_acks_empty_the_replay_buffer():
    clock, client, server = make_pair()
    connect(client, server)
    for i in range(3):
        server.send(Type.TOKEN, tok(i))
    pump(client, server)
    assert texts(client) == ["t0", "t1", "t2"]
    assert server.backlog == 3  # the client has not acknowledged yet (delayed ack)
    clock.advance(CFG.ack_delay)
    client.tick()
    pump(client, server)
    assert server.backlog == 0


def test_a_lost_envelope_is_retransmitted_after_the_timeout_and_delivered_once():
    clock, client, server = make_pair()
    connect(client, server)
    server.send(Type.TOKEN, tok(0))
    assert len(server.data_to_send()) == 1  # ... and the network loses it
    clock.advance(CFG.retransmit_timeout - 0.01)
    server.tick()
    assert server.data_to_send() == []  # not yet
    clock.advance(0.02)
    server.tick()
    resent = server.data_to_send()
    assert [json.loads(f)["seq"] for f in resent] == [1]
    for frame in resent:
        client.receive(frame)
    assert texts(client) == ["t0"]


def test_duplicates_are_dropped_and_answered_with_an_immediate_ack():
    clock, client, server = make_pair()
    connect(client, server)
    client.events()
    server.send(Type.TOKEN, tok(0))
    (frame,) = server.data_to_send()
    client.receive(frame)
    client.receive(frame)
    client.receive(frame)
    assert texts(client) == ["t0"]
    client.tick()  # no time passed: the duplicate made the ack due now
    acks = [json.loads(f) for f in client.data_to_send()]
    assert [(a["t"], a["ack"]) for a in acks] == [("ack", 1)]


def test_out_of_order_envelopes_are_held_until_the_gap_is_filled():
    _, client, server = make_pair()
    connect(client, server)
    for i in range(4):
        server.send(Type.TOKEN, tok(i))
    frames = server.data_to_send()
    for frame in (frames[3], frames[1], frames[2]):
        client.receive(frame)
    assert texts(client) == []
    client.receive(frames[0])
    assert texts(client) == ["t0", "t1", "t2", "t3"]


def test_resume_replays_exactly_what_the_client_missed_including_tokens_sent_while_away():
    _, client, server = make_pair()
    connect(client, server)
    client.events()
    for i in range(10):
        server.send(Type.TOKEN, tok(i))
    frames = server.data_to_send()
    for frame in frames[:4]:
        client.receive(frame)
    got = texts(client)
    client.connection_lost()  # the connection dies with t4..t9 in flight
    server.connection_lost()
    server.send(Type.TOKEN, tok(10))  # the reply goes on while the client is away
    server.send(Type.TOKEN, tok(11))
    client.connection_made()
    (hello,) = client.data_to_send()
    hello_env = json.loads(hello)
    assert (hello_env["t"], hello_env["sid"], hello_env["ack"]) == ("hello", "S1", 4)  # the resume point
    server.connection_made()
    server.receive(hello)
    replay = server.data_to_send()
    assert json.loads(replay[0])["t"] == "welcome" and json.loads(replay[0])["b"]["resumed"] is True
    assert [json.loads(f)["seq"] for f in replay[1:]] == list(range(5, 13))
    for frame in replay:
        client.receive(frame)
    events = client.events()
    assert events[0] == Connected("S1", resumed=True)
    got += [m.body["text"] for m in events[1:]]
    assert got == [f"t{i}" for i in range(12)]


def test_resume_sends_the_servers_missing_client_messages_and_nothing_it_already_has():
    clock, client, server = make_pair()
    connect(client, server)
    client.send(Type.CHAT, CHAT)
    server.receive(client.data_to_send()[0])  # the server got the request ...
    assert len(messages(server)) == 1
    server.data_to_send()  # ... but its ack is lost with the connection
    client.send(Type.CANCEL, {"rid": "r1"})
    client.data_to_send()  # lost on the wire
    client.connection_lost()
    server.connection_lost()
    connect(client, server)
    assert [m.type for m in messages(server)] == [Type.CANCEL]  # the chat is not delivered twice
    clock.advance(CFG.ack_delay)
    server.tick()
    pump(client, server)
    assert client.backlog == 0


def test_a_resent_request_is_delivered_once():
    clock, client, server = make_pair()
    connect(client, server)
    client.send(Type.CHAT, CHAT)
    (frame,) = client.data_to_send()
    server.receive(frame)
    assert [m.body["rid"] for m in messages(server)] == ["r1"]
    server.data_to_send()  # the server's ack never reaches the client
    clock.advance(CFG.retransmit_timeout + 0.01)
    client.tick()
    resent = [f for f in client.data_to_send() if json.loads(f)["t"] == "chat"]
    assert len(resent) == 1
    server.receive(resent[0])
    assert messages(server) == []


def test_a_black_holed_link_is_declared_dead_within_interval_plus_timeout():
    clock, client, server = make_pair()
    connect(client, server)
    client.events()
    server.events()
    step = 0.01
    for _ in range(500):  # 5 s of healthy traffic: pings answered, nobody dies
        clock.advance(step)
        client.tick()
        server.tick()
        pump(client, server)
    assert not [e for e in client.events() + server.events() if isinstance(e, LinkDead)]
    hole = clock.now
    dead: dict[str, float] = {}
    while len(dead) < 2 and clock.now - hole < 5:
        clock.advance(step)
        for name, side in (("client", client), ("server", server)):
            side.tick()
            side.data_to_send()  # into the black hole
            if any(isinstance(e, LinkDead) for e in side.events()):
                dead[name] = clock.now - hole
    bound = CFG.heartbeat_interval + CFG.heartbeat_timeout + step
    assert dead["client"] <= bound and dead["server"] <= bound
    assert dead["client"] >= CFG.heartbeat_timeout - step  # not before a ping could have timed out
    assert not client.established


def test_a_handshake_that_never_completes_times_out():
    clock, client, _ = make_pair()
    client.connection_made()
    client.data_to_send()
    clock.advance(CFG.handshake_timeout)
    client.tick()
    assert isinstance(client.events()[0], LinkDead)


def test_a_server_that_forgot_the_session_is_reported_as_lost():
    clock, client, server = make_pair()
    connect(client, server)
    client.send(Type.CHAT, CHAT)
    client.data_to_send()
    client.connection_lost()
    restarted = LinkProtocol(Role.SERVER, CFG, clock=clock, wall=clock, sid="S2")
    connect(client, restarted)
    assert SessionLost("S1", "S2") in client.events()
    assert client.sid == "S2" and client.backlog == 0
    client.send(Type.CHAT, {**CHAT, "rid": "r2"})
    pump(client, restarted)
    assert [m.body["rid"] for m in messages(restarted)] == ["r2"]


class SealingCodec(PlainCodec):
    """A toy codec (the real one is remote_api.seal): the wire never shows the plain body."""

    def seal(self, ad, body):
        return {"sealed": json.dumps(body)[::-1]}

    def open(self, ad, body):
        return json.loads(body["sealed"][::-1])


def test_the_body_codec_hook_seals_data_bodies_end_to_end():
    clock = FakeClock()
    client = LinkProtocol(Role.CLIENT, CFG, clock=clock, codec=SealingCodec())
    server = LinkProtocol(Role.SERVER, CFG, clock=clock, sid="S1", codec=SealingCodec())
    connect(client, server)
    client.send(Type.CHAT, {**CHAT, "messages": [{"role": "user", "content": "secret words"}]})
    (frame,) = client.data_to_send()
    assert b"secret words" not in frame
    server.receive(frame)
    assert messages(server)[0].body["messages"][0]["content"] == "secret words"


# --- bad input --------------------------------------------------------------------------------


def frame(**fields) -> bytes:
    env = {"v": 1, "sid": "S1", "seq": 1, "ack": 0, "t": "chat", "ts": 0, "b": CHAT} | fields
    return json.dumps(env).encode()


BAD = {
    "bad_json": b"{not json",
    "bad_envelope": b"[1, 2]",
    "bad_version": frame(v=2),
    "unknown_type": frame(t="teleport"),
    "frame_too_large": frame(b={**CHAT, "messages": [{"role": "user", "content": "x" * 5000}]}),
    "bad_seq": frame(seq=5000),
    "bad_body": frame(b={"rid": "r1", "messages": "hi"}),
    "unexpected_type": frame(t="token", b=tok(0)),
    "wrong_session": frame(sid="S9"),
}


@pytest.mark.parametrize("code", sorted(BAD))
def test_bad_input_is_refused_with_an_error_envelope(code):
    cfg = LinkConfig(max_frame_bytes=4096, reorder_window=64)
    _, client, server = make_pair(cfg)
    connect(client, server)
    with pytest.raises(ProtocolError) as err:
        server.receive(BAD[code])
    assert err.value.code == code
    (reply,) = [json.loads(f) for f in server.data_to_send()]
    assert reply["t"] == "error" and reply["b"]["code"] == code
    assert reply["b"]["message"] and reply["b"]["action"]
    assert err.value.close_code == (1009 if code == "frame_too_large" else 4400)
    # the session itself is intact: a good envelope still goes through
    server.receive(frame())
    assert [m.body["rid"] for m in messages(server)] == ["r1"]


def test_an_ack_for_an_envelope_never_sent_is_a_bad_seq():
    _, client, server = make_pair()
    connect(client, server)
    with pytest.raises(ProtocolError, match="bad_seq"):
        server.receive(encode(Envelope(Type.PING, 0, 7, "S1", 0, {"n": 1})))


def test_the_first_envelope_must_be_hello():
    _, _, server = make_pair()
    server.connection_made()
    with pytest.raises(ProtocolError, match="hello_required"):
        server.receive(frame())


def test_a_bool_is_not_a_sequence_number():
    _, client, server = make_pair()
    connect(client, server)
    with pytest.raises(ProtocolError, match="bad_envelope"):
        server.receive(frame(seq=True))


def test_a_peer_error_during_the_handshake_is_reported():
    _, client, _ = make_pair()
    client.connection_made()
    client.receive(encode(Envelope(Type.ERROR, body={"code": "unauthorized", "message": "m", "action": "a"})))
    assert client.events() == [PeerError("unauthorized", "m", "a")]


def test_send_refuses_what_the_peer_would_refuse_before_queueing_anything():
    cfg = LinkConfig(max_frame_bytes=2048)
    _, client, server = make_pair(cfg)
    connect(client, server)
    too_long = {**CHAT, "messages": [{"role": "user", "content": "x" * 3000}]}
    with pytest.raises(ValueError, match="exceeds the link's limit"):
        client.send(Type.CHAT, too_long)  # else it would be resent, and refused, forever
    with pytest.raises(ValueError, match="messages"):
        client.send(Type.CHAT, {**CHAT, "messages": [{"role": "wizard", "content": "hi"}]})
    with pytest.raises(ValueError, match="cannot send"):
        client.send(Type.TOKEN, tok(0))
    assert client.backlog == 0 and client.data_to_send() == []
    assert client.send(Type.CHAT, CHAT) == 1
