"""Small helpers shared by test modules."""

import re

from remote_api.shared.processes import free_port

__all__ = ["free_port", "tokens_predicted"]

_PREDICTED = re.compile(r"^llamacpp:tokens_predicted_total (\S+)$", re.M)


def tokens_predicted(metrics: str) -> int:
    """The tokens llama-server has generated so far, from the text of its `/metrics` (--metrics):
    a count of what it did, for tests that must not judge by a clock."""
    found = _PREDICTED.search(metrics)
    assert found, "llama-server's /metrics has no tokens_predicted_total (started without --metrics?)"
    return int(float(found[1]))
