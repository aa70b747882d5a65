"""Timings and limits of the link, shared by the gateway and the client.

Defaults suit a conversation app: a dead link is noticed within a few seconds (not the 25-45 s
of web stacks) and a reconnect starts almost at once, because a user is waiting for a reply.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class LinkConfig:
    """Every knob of the link protocol and its transports (seconds, bytes, counts)."""

    # Heartbeat: the client pings every `heartbeat_interval`; a ping unanswered for
    # `heartbeat_timeout` means the link is dead (so at most interval + timeout of silence).
    heartbeat_interval: float = 2.0
    heartbeat_timeout: float = 2.0
    # A sent envelope not acknowledged within this time is sent again.
    retransmit_timeout: float = 1.5
    # Received data is acknowledged by the next outgoing envelope, or alone after this delay.
    ack_delay: float = 0.05
    # A new connection must finish hello/welcome within this time.
    handshake_timeout: float = 5.0
    # Client reconnects: exponential backoff between min and max, +/- jitter (a fraction).
    reconnect_min: float = 0.1
    reconnect_max: float = 8.0
    reconnect_jitter: float = 0.3
    connect_timeout: float = 5.0
    # Long-poll: how long the gateway holds a poll open when it has nothing to send.
    longpoll_hold: float = 15.0
    # Switch to long-poll after this many WebSocket failures in a row (an HTTP refusal of the
    # upgrade switches at once), then try the WebSocket again every `upgrade_probe_interval`.
    ws_failures_before_fallback: int = 2
    upgrade_probe_interval: float = 10.0
    # Limits: one envelope's size, unacknowledged envelopes kept for replay, out-of-order
    # envelopes held while a gap is filled, and how long a disconnected session is kept.
    max_frame_bytes: int = 256 * 1024
    replay_limit: int = 4096
    reorder_window: int = 1024
    session_ttl: float = 300.0
    # Bounds on what one client can make the gateway hold (`LimitError`, close code 4429): bytes
    # of envelopes waiting for a missing one, bytes waiting to reach the client (unacknowledged,
    # or queued for a socket it does not read), sessions and replies being written per device,
    # and sessions per gateway process. A device over its session bound loses its oldest idle one.
    reorder_bytes: int = 4 * 1024 * 1024
    outbound_bytes: int = 4 * 1024 * 1024
    max_sessions_per_device: int = 8
    max_generations_per_device: int = 4
    max_sessions: int = 10_000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"link setting '{f.name}' must be a number, got {value!r}")
            if value < 0 or (value == 0 and f.name not in ("ack_delay", "reconnect_jitter")):
                raise ValueError(f"link setting '{f.name}' must be positive, got {value!r}")
        if self.reconnect_jitter >= 1:
            raise ValueError("link setting 'reconnect_jitter' is a fraction and must be below 1")
        if self.reconnect_max < self.reconnect_min:
            raise ValueError("link setting 'reconnect_max' must not be below 'reconnect_min'")
