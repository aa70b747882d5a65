"""The one error type of the atlas tools: it names the offending file and says what to do."""

from __future__ import annotations

from pathlib import Path


class AtlasError(Exception):
    """Bad atlas source: ``path`` is the file (or folder) at fault, ``problem`` a sentence for a human."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem
