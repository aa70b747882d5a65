"""remote_api.sse, the sans-I/O SSE parser: bytes in any chunking, events out; no sockets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remote_api.sse import SSEError, SSEParser


def test_parser_two_events_in_one_chunk_and_one_split_across_chunks():
    p = SSEParser()
    assert p.feed(b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: {"c"') == ['{"a": 1}', '{"b": 2}']
    assert p.pending
    assert p.feed(b": 3}\n") == []
    assert p.feed(b"\n") == ['{"c": 3}']
    assert not p.pending


def test_parser_splits_utf8_and_crlf_across_chunks():
    p = SSEParser()
    blob = "data: wör\r\n\r\n".encode()
    cut = blob.index(b"\xc3") + 1
    assert p.feed(blob[:cut]) == []
    assert p.feed(blob[cut:-3]) == []  # ends on the CR of the first CRLF
    assert p.feed(blob[-3:]) == ["wör"]  # the LF after that CR is not a second (blank) line


def test_parser_line_endings_multiline_data_and_ignored_fields():
    p = SSEParser()
    stream = b"\xef\xbb\xbf: ping\rdata:one\rdata: two\r\r" \
        b"event: x\nid: 9\nretry: 5\ndata:  three\n\ndata:\n\n"
    assert p.feed(stream) == ["one\ntwo", " three", ""]
    assert p.junk_lines == 0


def test_parser_counts_junk_and_never_dispatches_a_cut_event():
    p = SSEParser()
    assert p.feed(b"hello world\n<html>\n\ndata: cut") == []
    assert p.junk_lines == 2 and p.first_junk == "hello world"
    assert p.pending


def test_parser_refuses_an_endless_line():
    p = SSEParser(max_line=1000)
    p.feed(b"data: " + b"x" * 900)
    with pytest.raises(SSEError):
        p.feed(b"x" * 200)


_line = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


@given(
    events=st.lists(st.lists(_line, min_size=1, max_size=3), max_size=6),
    eol=st.sampled_from(["\n", "\r\n", "\r"]),
    noise=st.booleans(),
    cuts=st.lists(st.integers(min_value=0), max_size=30),
)
def test_parser_any_chunking_gives_the_same_events(events, eol, noise, cuts):
    parts = []
    for data_lines in events:
        if noise:
            parts.append(f": ping{eol}event: message{eol}id: 3{eol}")
        parts += [f"data: {line}{eol}" for line in data_lines]
        parts.append(eol)
    blob = "".join(parts).encode()
    bounds = sorted({c % (len(blob) + 1) for c in cuts} | {0, len(blob)})
    p = SSEParser()
    got = [e for a, b in zip(bounds, bounds[1:], strict=False) for e in p.feed(blob[a:b])]
    assert got == ["\n".join(data_lines) for data_lines in events]
    assert not p.pending and p.junk_lines == 0
