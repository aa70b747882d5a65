"""The sans-I/O parser of server-sent events (`text/event-stream`), as llama-server streams them.

Bytes in, event data out, no sockets and no clock: `remote_api.upstream` feeds it what httpx
reads; tests feed it any split of any stream.
"""

from __future__ import annotations

import re

from remote_api.upstream_types import SNIPPET_CHARS


class SSEError(ValueError):
    """The byte stream cannot be server-sent events (a line too long to be one)."""


class SSEParser:
    """Sans-I/O parser for `text/event-stream`: feed bytes as they arrive, get event data back.

    Follows the WHATWG rules that matter here: lines end in LF, CRLF or CR (a CRLF split across
    two chunks counts once); `data:` lines accumulate and a blank line dispatches the event
    (several lines join with LF); `:` comments (llama-server's keep-alive pings) and the
    `event`/`id`/`retry` fields are ignored; an event cut off by the end of the stream is never
    dispatched. Lines that are not SSE at all are counted in `junk_lines` (the first one kept in
    `first_junk`) so the caller can say "this is not an SSE stream" instead of "it broke".
    Nothing is buffered beyond the current line, so each event comes out of the `feed` call that
    completes it.
    """

    _EOL = re.compile(rb"\r\n|\r|\n")
    _KNOWN_FIELDS = frozenset({"event", "id", "retry"})

    def __init__(self, max_line: int = 1 << 20) -> None:
        self.max_line = max_line
        self.junk_lines = 0
        self.first_junk: str | None = None
        self._buf = bytearray()
        self._data: list[str] | None = None
        self._skip_lf = False  # the last chunk ended in CR: a leading LF belongs to it
        self._first_line = True

    @property
    def pending(self) -> bool:
        """True while part of an event has arrived but not the blank line that completes it."""
        return bool(self._buf) or self._data is not None

    def feed(self, chunk: bytes) -> list[str]:
        """Consume `chunk`; return the data of every event it completed, in order."""
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        scan_from = len(self._buf)  # what is already buffered holds no line end
        self._buf += chunk
        events: list[str] = []
        start = 0
        for match in self._EOL.finditer(self._buf, scan_from):
            self._line(bytes(self._buf[start:match.start()]), events)
            start = match.end()
        if start:
            self._skip_lf = self._buf[start - 1:start] == b"\r"
            del self._buf[:start]
        if len(self._buf) > self.max_line:
            raise SSEError(f"a line longer than {self.max_line} bytes")
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        line = raw.decode("utf-8", errors="replace")
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            if self._data is not None:
                events.append("\n".join(self._data))
                self._data = None
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            if self._data is None:
                self._data = []
            self._data.append(value.removeprefix(" "))
        elif name not in self._KNOWN_FIELDS:
            self.junk_lines += 1
            if self.first_junk is None:
                self.first_junk = line[:SNIPPET_CHARS]
