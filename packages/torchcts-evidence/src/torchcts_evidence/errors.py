"""One error type for refusals, so the CLI prints a single clear line and exits 1."""

from __future__ import annotations


class EvidenceError(Exception):
    """A refusal or bad input; the message says what and why, naming the file."""
