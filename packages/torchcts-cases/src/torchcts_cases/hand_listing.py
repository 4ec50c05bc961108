"""What selection needs of the hand-written cases, without importing them.

The suites are modules of check functions that import torch; selection reads only
each case's spec and two device requirements. An xdist controller selects but runs
no case, so the listing is kept in a cache file (``$TORCHCTS_CACHE_DIR/hand-listing``)
keyed by the torch version and a fingerprint of the files it is derived from (this
package's sources and the schema package's, which makes case ids): a process
that has not imported the suites reads it in milliseconds instead of importing torch.
A missing, stale or unreadable file is rebuilt from the suites themselves (importing
them) and written atomically; it is never trusted over the code it came from.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torchcts_schema
from torchcts_schema import CaseSpec, slug, torch_version, write_atomic

from torchcts_cases.index import cache_root
from torchcts_cases.source_digest import files_digest, package_digest

LISTING_FORMAT = "torchcts-hand-listing"
LISTING_VERSION = 1
_SUITES_MODULE = "torchcts_cases.suites"


@dataclass(frozen=True)
class HandListing:
    """A hand-written case as selection sees it: its spec and device requirements."""

    spec: CaseSpec
    min_devices: int = 1
    needs_other_device: bool = False

    @property
    def suite(self) -> str:
        """The suite the case belongs to."""
        return self.spec.suite

    @property
    def name(self) -> str:
        """The case's name within its suite (its op segment)."""
        return self.spec.op

    @property
    def dtype(self) -> str | None:
        """The dtype this expansion of the case runs in (None: dtype-free)."""
        return self.spec.dtype

    @property
    def capability(self) -> str:
        """The manifest capability that claims it."""
        return self.spec.capability

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (the cache's)."""
        return {
            "spec": self.spec.to_dict(),
            "min_devices": self.min_devices,
            "needs_other_device": self.needs_other_device,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HandListing:
        """Inverse of `to_dict`; raises on a malformed entry."""
        min_devices = data["min_devices"]
        other = data["needs_other_device"]
        if type(min_devices) is not int or type(other) is not bool:
            raise ValueError("malformed device requirements")
        return cls(CaseSpec.from_dict(data["spec"]), min_devices, other)


@functools.cache
def hand_listings() -> tuple[HandListing, ...]:
    """Every hand-written case in the suites' stable order."""
    if _SUITES_MODULE in sys.modules:
        return _from_suites()  # imported already: nothing to save
    path = listing_path()
    listed = _read(path)
    if listed is None:
        listed = _from_suites()
        payload = {
            "format": LISTING_FORMAT,
            "version": LISTING_VERSION,
            "cases": [c.to_dict() for c in listed],
        }
        write_atomic(path, json.dumps(payload, sort_keys=True), fsync=False)
    return listed


def listing_path() -> Path:
    """The cache file for this torch and these sources."""
    root = cache_root() / f"hand-listing-v{LISTING_VERSION}"
    return root / slug(torch_version()) / f"{source_fingerprint()[:24]}.json"


@functools.cache
def source_fingerprint() -> str:
    """sha256 over the sources the listing is derived from (read, not imported):
    this package's (the suites, the spec) and the schema's (which makes case ids)."""
    schema_dir = Path(torchcts_schema.__file__).parent
    schema = files_digest(schema_dir, sorted(schema_dir.glob("*.py")))
    return hashlib.sha256(f"{package_digest()} {schema}".encode()).hexdigest()


def _read(path: Path) -> tuple[HandListing, ...] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not (
            data.get("format") == LISTING_FORMAT
            and data.get("version") == LISTING_VERSION
        ):
            return None
        return tuple(HandListing.from_dict(entry) for entry in data["cases"])
    except (
        OSError,
        ValueError,
        UnicodeDecodeError,
        KeyError,
        TypeError,
        AttributeError,
    ):
        return None


def _from_suites() -> tuple[HandListing, ...]:
    from torchcts_cases.suites import all_hand_cases

    out = []
    for case in all_hand_cases().values():
        assert case.spec is not None
        out.append(HandListing(case.spec, case.min_devices, case.needs_other_device))
    return tuple(out)


__all__ = ["HandListing", "hand_listings", "listing_path", "source_fingerprint"]
