"""``results/coverage/`` after a whole run, copied from the last refresh of the same
inputs instead of auditing again.

The refresh (`coverage.refresh`) reads the coverage trace, classifies every aten
overload of the installed torch and writes five files: about 3 CPU-s, and an import
of torch in an xdist controller that otherwise never imports it, all in the tail
after the last case. Its output depends only on the torch version, this package's
sources (the exclusions, families, case catalog), the case index shards and the
trace (cached or packaged): the same inputs give the same bytes. So a refresh is
kept under ``$TORCHCTS_CACHE_DIR/coverage-refresh`` keyed by a digest of those
inputs (file contents for sources, size and modification time for the cached
shards and traces), and a later run with the same key copies it, torch-free, in
milliseconds. An entry counts only once its phrase is written, after its files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from torchcts_schema import COVERAGE_DIR, slug, torch_version, write_atomic

from torchcts_cases import index
from torchcts_cases.source_digest import PACKAGE_DIR, package_digest

REFRESH_VERSION = 1
PHRASE = "phrase.txt"  # the summary line without its path: written last


def refresh(results_dir: Path) -> str:
    """Write DIR/coverage/ (from the cache when its inputs are unchanged); the line
    saying what it holds and where."""
    out = Path(results_dir) / COVERAGE_DIR
    entry = refresh_cache_dir()
    phrase = _ensure(entry)
    for source in sorted((entry / COVERAGE_DIR).iterdir()):
        write_atomic(out / source.name, source.read_bytes())
    return f"{phrase}; {out}/"


def warm() -> None:
    """Make the cache entry of the current inputs, so the refresh after the run
    only copies it: a run calls this while its cases run (a new entry audits, about
    3 CPU-s and an import of torch, which would otherwise sit in the run's tail)."""
    _ensure(refresh_cache_dir())


def _ensure(entry: Path) -> str:
    """The entry's phrase, auditing into it first when it is not complete."""
    phrase = _cached_phrase(entry)
    if phrase is None:
        from torchcts_cases.coverage import refresh as audit_refresh

        line = audit_refresh(entry)
        phrase = line.removesuffix(f"; {entry / COVERAGE_DIR}/")
        write_atomic(entry / PHRASE, phrase)
    return phrase


def refresh_cache_dir() -> Path:
    """The cache entry of the current inputs."""
    root = index.cache_root() / f"coverage-refresh-v{REFRESH_VERSION}"
    return root / slug(torch_version()) / inputs_digest()[:24]


def inputs_digest() -> str:
    """What the refresh's output depends on, digested."""
    seeds = [
        PACKAGE_DIR / "coverage_seed" / f"{slug(torch_version())}.json.gz",
        PACKAGE_DIR / "index_seed" / f"{slug(torch_version())}.json.gz",
    ]
    cached = sorted(index.index_dir().glob("*.json"))
    stats = {str(path): _stat(path) for path in [*seeds, *cached]}
    payload = {"torch": torch_version(), "sources": package_digest(), "files": stats}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _stat(path: Path) -> list[int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def _cached_phrase(entry: Path) -> str | None:
    try:
        return (entry / PHRASE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


__all__ = ["refresh", "refresh_cache_dir", "warm"]
