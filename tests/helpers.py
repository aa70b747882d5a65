"""Small helpers shared by test modules."""

import re

from remote_api.shared.processes import free_port

__all__ = ["free_port", "tokens_decoding", "tokens_predicted"]

_PREDICTED = re.compile(r"^llamacpp:tokens_predicted_total (\S+)$", re.M)


def tokens_predicted(metrics: str) -> int:
    """The tokens llama-server has generated so far for the replies it has finished, from the text of
    its `/metrics` (--metrics): a count of what it did, for tests that must not judge by a clock. A
    reply is counted only once its slot is released (`tokens_decoding` has the ones under way)."""
    found = _PREDICTED.search(metrics)
    assert found, "llama-server's /metrics has no tokens_predicted_total (started without --metrics?)"
    return int(float(found[1]))


def tokens_decoding(slots: list[dict]) -> int:
    """The tokens the busy slots have generated so far for the replies under way, from `/slots`."""
    def decoded(slot: dict) -> int:
        nxt = slot.get("next_token") or {}
        return int((nxt[0] if isinstance(nxt, list) else nxt).get("n_decoded", 0))

    return sum(decoded(s) for s in slots if s["is_processing"])
