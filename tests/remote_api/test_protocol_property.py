"""Property: whatever the network does, every message arrives exactly once and in order.

Hypothesis draws schedules of sends, deliveries, drops, duplicates, reorders, clock jumps,
disconnects and reconnects between a client and a server `LinkProtocol`; afterwards the
network heals and both directions must have delivered exactly what the other side sent.
Duplicates hit data envelopes (as retransmits do), reorders any envelope, except that within
one connection nothing overtakes the hello/welcome that opens it; losing a hello/welcome fails
its connection, as it does on both transports.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remote_api.envelope import Type
from remote_api.link_config import LinkConfig
from remote_api.protocol import LinkDead, LinkProtocol, Message, Role

from .clock import FakeClock

CFG = LinkConfig(heartbeat_interval=1.0, heartbeat_timeout=0.6, retransmit_timeout=0.3, ack_delay=0.05,
                 handshake_timeout=1.0, reorder_window=64)


class Network:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.client = LinkProtocol(Role.CLIENT, CFG, clock=self.clock, wall=self.clock)
        self.server = LinkProtocol(Role.SERVER, CFG, clock=self.clock, wall=self.clock, sid="S")
        self.wire: dict[str, list[bytes]] = {"c2s": [], "s2c": []}
        self.sent = {"client": [], "server": []}
        self.got = {"client": [], "server": []}
        self.connected = False

    def side(self, direction: str) -> tuple[LinkProtocol, str]:
        return (self.server, "server") if direction == "c2s" else (self.client, "client")

    def collect(self) -> None:
        """Move what each side wants to send onto the wire; handle what each side reports."""
        self.wire["c2s"] += self.client.data_to_send()
        self.wire["s2c"] += self.server.data_to_send()
        for name, proto in (("client", self.client), ("server", self.server)):
            for event in proto.events():
                if isinstance(event, Message):
                    self.got[name].append(event.body["outfit"] if name == "server" else event.body["text"])
                elif isinstance(event, LinkDead):
                    self.disconnect()  # the transport closes the socket: both ends see it

    def disconnect(self) -> None:
        self.client.connection_lost()
        self.server.connection_lost()
        self.wire = {"c2s": [], "s2c": []}
        self.connected = False

    def reconnect(self) -> None:
        self.disconnect()
        self.client.connection_made()
        self.server.connection_made()
        self.connected = True

    def movable(self, direction: str) -> list[int]:
        """Indexes the network may deliver now: nothing overtakes, or is overtaken by, a
        hello/welcome (they open a connection); everything else may arrive in any order."""
        out = []
        for i, frame in enumerate(self.wire[direction]):
            if json.loads(frame)["t"] in ("hello", "welcome"):
                return [i] if i == 0 else out
            out.append(i)
        return out

    def step(self, op: tuple) -> None:
        kind = op[0]
        if kind == "client_send":
            text = f"c{len(self.sent['client'])}"
            self.sent["client"].append(text)
            self.client.send(Type.OUTFIT, {"outfit": text})
        elif kind == "server_send":
            text = f"s{len(self.sent['server'])}"
            self.sent["server"].append(text)
            self.server.send(Type.TOKEN, {"rid": "r", "i": len(self.sent["server"]), "text": text})
        elif kind in ("deliver", "drop", "dup"):
            _, direction, pick = op
            choices = self.movable(direction) if kind != "drop" else list(range(len(self.wire[direction])))
            if kind == "dup":
                choices = [i for i in choices if json.loads(self.wire[direction][i])["seq"] > 0]
            if not choices:
                return
            i = choices[pick % len(choices)]
            frame = self.wire[direction].pop(i)
            if kind == "drop" and json.loads(frame)["t"] in ("hello", "welcome"):
                self.disconnect()  # a lost handshake fails its connection (its request errors)
            if kind == "dup":
                self.wire[direction].insert(i, frame)
            if kind != "drop":
                self.side(direction)[0].receive(frame)
        elif kind == "advance":
            self.clock.advance(op[1])
            self.client.tick()
            self.server.tick()
        elif kind == "disconnect":
            self.disconnect()
        elif kind == "reconnect":
            self.reconnect()
        self.collect()

    def heal(self) -> None:
        if not self.connected:
            self.reconnect()
        for _ in range(400):
            self.collect()
            for direction in ("c2s", "s2c"):
                while self.wire[direction]:
                    self.side(direction)[0].receive(self.wire[direction].pop(0))
            self.collect()
            if not self.connected:
                self.reconnect()
                continue
            done = (self.got["server"] == self.sent["client"] and self.got["client"] == self.sent["server"]
                    and self.client.backlog == 0 and self.server.backlog == 0)
            if done:
                return
            self.clock.advance(0.05)
            self.client.tick()
            self.server.tick()
        raise AssertionError(f"never converged: {self.got} vs {self.sent}")


direction = st.sampled_from(["c2s", "s2c"])
deliver = st.tuples(st.just("deliver"), direction, st.integers(0, 50))
ops = st.one_of(
    st.just(("client_send",)),
    st.just(("server_send",)),
    deliver, deliver, deliver,  # weight: most frames do arrive
    st.tuples(st.just("deliver"), direction, st.just(0)),
    st.tuples(st.just("drop"), direction, st.integers(0, 50)),
    st.tuples(st.just("dup"), direction, st.integers(0, 50)),
    st.tuples(st.just("advance"), st.sampled_from([0.01, 0.06, 0.35, 0.9, 2.0])),
    st.just(("disconnect",)),
    st.just(("reconnect",)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, max_size=150))
def test_every_message_is_delivered_exactly_once_and_in_order_in_both_directions(schedule):
    net = Network()
    net.reconnect()
    net.collect()
    net.step(("deliver", "c2s", 0))  # start from an open session: hello, then welcome
    net.step(("deliver", "s2c", 0))
    for op in schedule:
        net.step(op)
    net.heal()
    assert net.got["server"] == net.sent["client"]
    assert net.got["client"] == net.sent["server"]
