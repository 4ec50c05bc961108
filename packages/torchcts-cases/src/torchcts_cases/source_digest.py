"""Digests of source files, read and never imported: the keys of derived caches.

A cache derived from code (the case index from OpInfo's sources, the coverage trace
and the hand-written cases' listing from this package's) is valid only for the exact
files it came from; hashing them costs milliseconds, importing them seconds.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE_DIR = Path(__file__).parent


def files_digest(root: Path, files: Iterable[Path]) -> str:
    """sha256 over each file's path relative to `root` and its bytes, in the order
    given (callers sort)."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.relative_to(root).as_posix().encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


@functools.cache
def package_digest() -> str:
    """sha256 of this package's Python sources: what its derived caches depend on."""
    return files_digest(PACKAGE_DIR, sorted(PACKAGE_DIR.rglob("*.py")))


__all__ = ["PACKAGE_DIR", "files_digest", "package_digest"]
