"""One error type for bad input, so every tool can print a single clear line."""

from __future__ import annotations

from pathlib import Path


class ArtifactError(Exception):
    """Bad or unreadable input; the message names the file and what is wrong."""

    def __init__(self, where: str | Path | None, problem: str) -> None:
        self.where = str(where) if where is not None else None
        self.problem = problem
        super().__init__(f"{self.where}: {problem}" if self.where else problem)


class ManifestError(ArtifactError):
    """A manifest that cannot be read statically or that breaks the schema."""
