"""RESOURCE_LIMITS: every key has a range, and a value outside it is a manifest error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from torchcts_schema import ManifestError, load_manifest, validate_manifest

WEEK = 7 * 24 * 3600


def _limits(tmp_path: Path, literal: str) -> dict[str, float]:
    path = tmp_path / "manifest.py"
    path.write_text(f"DEVICE = 'simdev'\nRESOURCE_LIMITS = {{{literal}}}\n")
    return load_manifest(path).resource_limits


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        # past setitimer's time_t: the run died in a traceback
        ("'case_timeout_s': 1e10", "case_timeout_s: 10000000000.0 is out of range"),
        ("'case_timeout_s': 1e300", "case_timeout_s: 1e+300 is out of range"),
        ("'case_timeout_s': 1e400", "case_timeout_s: inf is out of range"),
        ("'case_timeout_s': -1e400", "case_timeout_s: -inf is out of range"),
        (f"'case_timeout_s': {WEEK + 1}", f"{WEEK + 1} is out of range"),
        ("'case_timeout_s': 0", "case_timeout_s: 0 is out of range"),
        ("'case_timeout_s': '60'", "case_timeout_s: '60' is not a number"),
        ("'hang_heartbeat_s': 1e300", "hang_heartbeat_s: 1e+300 is out of range"),
        ("'hang_heartbeat_s': True", "hang_heartbeat_s: True is not a number"),
        # past RLIMIT_AS: every case an OverflowError blamed on the backend
        ("'memory_mb': " + "1" + "0" * 30, "memory_mb: 1000000000000000000000000000"),
        (f"'memory_mb': {64 * 1024 * 1024 + 1}", "memory_mb: 67108865 is out of range"),
        ("'memory_mb': 0.5", "memory_mb: 0.5 is not a whole number"),  # int(): no cap
        ("'memory_mb': 0", "memory_mb: 0 is out of range"),
        ("'workers': 1e400", "workers: inf is not a whole number"),
        ("'workers': 1025", "workers: 1025 is out of range"),
        ("'workers': 0", "workers: 0 is out of range"),
        ("'workers': -2", "workers: -2 is out of range"),
    ],
)
def test_a_limit_out_of_range_is_refused(
    tmp_path: Path, literal: str, message: str
) -> None:
    """Too large, infinite, zero, negative or the wrong kind: one error naming the
    key, the value and the range."""
    with pytest.raises(ManifestError, match=re.escape(message)) as info:
        _limits(tmp_path, literal)
    assert str(info.value).startswith(str(tmp_path / "manifest.py"))
    assert "\n" not in str(info.value)


def test_nan_is_refused() -> None:
    """NaN compares false with every bound, so it must be refused on its own (a
    manifest cannot write one; a manifest edit's dict can hold one)."""
    raw = {"DEVICE": "simdev", "RESOURCE_LIMITS": {"case_timeout_s": float("nan")}}
    with pytest.raises(ManifestError, match="case_timeout_s: nan is out of range"):
        validate_manifest(raw, Path("m.py"), "sha256:00")


def test_the_range_ends_are_accepted(tmp_path: Path) -> None:
    """A week of seconds, 64 TiB, 1024 workers and a fraction of a second all load."""
    literal = (
        f"'case_timeout_s': {WEEK}, 'hang_heartbeat_s': 0.25, "
        f"'memory_mb': {64 * 1024 * 1024}, 'workers': 1024"
    )
    assert _limits(tmp_path, literal) == {
        "case_timeout_s": WEEK,
        "hang_heartbeat_s": 0.25,
        "memory_mb": 67108864,
        "workers": 1024,
    }
