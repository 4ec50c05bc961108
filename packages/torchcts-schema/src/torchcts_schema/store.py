"""The results directory: recovery snapshot, canonical history and the latest reference.

During a run ``<key>_latest.json`` is a full snapshot refreshed at most every few
seconds (the journal is the per-case durability layer). At completion the canonical
artifact is written once to ``<key>_history/<UTC stamp>.json`` and ``<key>_latest.json``
becomes a small relative reference to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from torchcts_schema.artifact import RunArtifact, encode_artifact
from torchcts_schema.atomic import write_atomic, write_once
from torchcts_schema.layout import ResultsLayout
from torchcts_schema.shared_codec import SharedTexts

REFERENCE_FORMAT = "torchcts-reference"
REFERENCE_VERSION = 1


def latest_path(results_dir: Path, run_key: str) -> Path:
    """``<key>_latest.json``."""
    return ResultsLayout(results_dir, run_key).latest


def history_dir(results_dir: Path, run_key: str) -> Path:
    """``<key>_history/``."""
    return ResultsLayout(results_dir, run_key).history_dir


def utc_stamp(moment: datetime | None = None) -> str:
    """A sortable UTC stamp for file names: ``20261130T011252Z``."""
    return (moment or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def write_snapshot(
    path: Path,
    artifact: RunArtifact,
    journal_cases: int,
    known: SharedTexts | None = None,
) -> None:
    """Atomically write a recovery snapshot that knows how much journal it covers
    (`known`: the shared values' texts noted as the records were journaled)."""
    # the journal case count lets the loader see a newer journal without comparing
    # times; compact because a snapshot of a large run is rewritten many times
    extra = {"snapshot": {"journal_cases": journal_cases}}
    text = encode_artifact(artifact, encoding="compact", extra=extra, known=known)
    write_atomic(path, text)


class SnapshotWriter:
    """Rate-limits snapshots so their cost never becomes per-case.

    The wait between writes is at least `min_interval_s` and at least `cost_factor`
    times the last write's duration, so on a 100,000-case run the snapshot stays a
    small share of the wall time however large it grows.
    """

    def __init__(
        self,
        path: Path,
        *,
        min_interval_s: float = 5.0,
        cost_factor: float = 40.0,
        known: SharedTexts | None = None,
    ) -> None:
        self.path = path
        self.known = known
        self.min_interval_s = min_interval_s
        self.cost_factor = cost_factor
        self._last = float("-inf")
        self._wait = min_interval_s
        self.writes = 0

    def hold(self, seconds: float) -> None:
        """No write (but a forced one) for the next `seconds`, e.g. after a large
        selection whose snapshot would cost seconds right at the start."""
        self._last = time.monotonic()
        self._wait = max(self.min_interval_s, seconds)

    def maybe_write(
        self, build: Callable[[], tuple[RunArtifact, int]], *, force: bool = False
    ) -> bool:
        """Write if the interval has passed (or `force`); `build` runs only when it does."""
        now = time.monotonic()
        if not force and now - self._last < self._wait:
            return False
        artifact, journal_cases = build()
        write_snapshot(self.path, artifact, journal_cases, self.known)
        self._last = time.monotonic()
        self._wait = max(self.min_interval_s, self.cost_factor * (self._last - now))
        self.writes += 1
        return True


def write_history(
    results_dir: Path,
    run_key: str,
    artifact: RunArtifact,
    known: SharedTexts | None = None,
) -> Path:
    """Write the canonical artifact once and point ``<key>_latest.json`` at it
    (`known`: the shared values' texts noted as the records were journaled)."""
    layout = ResultsLayout(results_dir, run_key)
    text = encode_artifact(artifact, known=known)
    target = write_once(layout.history_dir / f"{utc_stamp()}.json", text)
    write_reference(layout.latest, target)
    return target


def write_reference(reference: Path, target: Path) -> None:
    """A small relative reference from `reference` to `target` (same results tree)."""
    relative = target.resolve().relative_to(reference.parent.resolve()).as_posix()
    body = {
        "format": REFERENCE_FORMAT,
        "format_version": REFERENCE_VERSION,
        "target": relative,
    }
    write_atomic(reference, json.dumps(body, indent=1) + "\n")
