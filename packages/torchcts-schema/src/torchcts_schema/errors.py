"""The error types of bad input and failed writes, so every tool prints one clear line."""

from __future__ import annotations

import os
from pathlib import Path


class ArtifactError(Exception):
    """Bad or unreadable input; the message names the file and what is wrong."""

    def __init__(self, where: str | Path | None, problem: str) -> None:
        self.where = str(where) if where is not None else None
        self.problem = problem
        super().__init__(f"{self.where}: {problem}" if self.where else problem)


class ManifestError(ArtifactError):
    """A manifest that cannot be read statically or that breaks the schema."""


class ArtifactWriteError(ArtifactError):
    """An artifact that could not be written: disk full, quota, read-only, any OSError.

    The message names the file and the problem in words, so a run that fills its disk
    ends with one line instead of a traceback; ``errno`` keeps the number for callers
    that react to one kind (a full disk) differently.
    """

    def __init__(self, where: str | Path, exc: OSError) -> None:
        self.errno = exc.errno
        super().__init__(where, f"cannot write ({describe_os_error(exc)})")


def describe_os_error(exc: OSError) -> str:
    """``no space left on device``: the OS's own words, without the traceback."""
    words = exc.strerror or (os.strerror(exc.errno) if exc.errno else str(exc))
    return words[:1].lower() + words[1:] if words else type(exc).__name__
