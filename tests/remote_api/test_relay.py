"""The relay's and the take-over's decisions, sans-I/O (remote_api/relay.py, remote_api/takeover.py):
what the client is sent for each item llama-server streams, and which copy of a session resumes."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

from remote_api.envelope import Type
from remote_api.link_config import LinkConfig
from remote_api.link_sessions import TurnProgress
from remote_api.relay import REPLY_DIVERGED, Outgoing, ReplyStream
from remote_api.state import SessionRecord, TurnRecord
from remote_api.takeover import resume_plan
from remote_api.upstream_types import Finished, TokenDelta

CONFIG = LinkConfig()
DONE = Finished("stop", 3, {"predicted_n": 3})


def fed(stream: ReplyStream, items: list[TokenDelta | Finished], backlog: int = 0) -> list[Outgoing | None]:
    return [stream.feed(item, backlog, 0) for item in items]


def taken_over(sent_texts: list[str]) -> TurnProgress:
    """A reply another replica had sent `sent_texts` of, as this one reads it from the store."""
    digest = hashlib.sha256("".join(sent_texts).encode()).hexdigest()
    return TurnProgress({"messages": []}, TurnRecord({"messages": []}, sent=len(sent_texts), digest=digest))


def test_each_token_is_sent_with_its_index_and_the_end_with_the_count_and_timings() -> None:
    turn = TurnProgress({"messages": []})
    out = fed(ReplyStream("r1", turn, CONFIG), [TokenDelta("Hi"), TokenDelta(" there"), DONE])
    assert out == [Outgoing(Type.TOKEN, {"rid": "r1", "i": 0, "text": "Hi"}),
                   Outgoing(Type.TOKEN, {"rid": "r1", "i": 1, "text": " there"}),
                   Outgoing(Type.DONE, {"rid": "r1", "reason": "stop", "tokens": 2, "timings": {"predicted_n": 3}},
                            final=True)]
    assert turn.sent == 2 and turn.digest == hashlib.sha256(b"Hi there").hexdigest()


def test_a_reply_outgrowing_the_replay_buffer_of_a_client_not_receiving_ends_with_a_plain_error() -> None:
    stream = ReplyStream("r1", TurnProgress({"messages": []}), CONFIG)
    assert stream.feed(TokenDelta("a"), CONFIG.replay_limit - 1, 0) is not None
    out = stream.feed(TokenDelta("b"), CONFIG.replay_limit, 0)
    assert out is not None and out.final and out.kind is Type.ERROR
    assert out.body["code"] == "replay_overflow" and "link.replay_limit" in out.body["message"]
    over_bytes = ReplyStream("r2", TurnProgress({"messages": []}), CONFIG).feed(TokenDelta("c"), 0,
                                                                               CONFIG.outbound_bytes)
    assert over_bytes is not None and over_bytes.body["code"] == "replay_overflow"


def test_a_reply_taken_over_skips_what_the_client_has_and_carries_on_from_there() -> None:
    turn = taken_over(["Hi", " there"])
    out = fed(ReplyStream("r1", turn, CONFIG), [TokenDelta("Hi"), TokenDelta(" there"), TokenDelta("!"), DONE])
    assert out[:2] == [None, None]
    assert out[2] == Outgoing(Type.TOKEN, {"rid": "r1", "i": 2, "text": "!"})
    assert out[3] is not None and out[3].body["tokens"] == 3
    assert turn.digest == hashlib.sha256(b"Hi there!").hexdigest()  # the running hash goes on from the prefix


def test_a_reply_regenerated_differently_ends_as_diverged_and_sends_none_of_it() -> None:
    diverged = Outgoing(Type.ERROR, {"rid": "r1", **REPLY_DIVERGED}, final=True)
    assert fed(ReplyStream("r1", taken_over(["Hi", " there"]), CONFIG),
               [TokenDelta("Hi"), TokenDelta(" you")]) == [None, diverged]
    assert fed(ReplyStream("r1", taken_over(["Hi", " there"]), CONFIG),
               [TokenDelta("Hi"), DONE]) == [None, diverged]  # ended before the client's part was rewritten


def test_which_copy_of_a_session_resumes_on_a_take_over() -> None:
    record = SessionRecord("s1", previous_owner="me", sent_seq=0, recv_seq=0, acked_seq=0, envelopes=[], turns={})
    local = SimpleNamespace(sid="s1")
    assert resume_plan(local, record, "me") == "keep_local"  # ours all along: memory is as new, or newer
    assert resume_plan(local, record, "other-replica") == "adopt"  # carried on elsewhere: the store's copy
    assert resume_plan(None, record, "me") == "adopt"  # this replica restarted: from the store
    assert resume_plan(local, None, "me") == "new"
