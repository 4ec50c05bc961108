"""Which next-fix category a case or a probe failure belongs to in the report.

The runner records a category per case from how the case ended; some facts only show
when the run is read as a whole, and the report corrects for them, in this order:

1. A not_run case whose cross-device comparison PyTorch calls not valid needs another
   test strategy: missing evidence, not a support-surface decision.
2. A case that errored because the device itself is absent or unusable (the backend
   import failed, the device is not available) is configuration: every operator
   result after it is meaningless until the setup is fixed.
3. Otherwise the record's own category, or the default for its status.

Probe rows: an import, device or harness probe that fails is configuration; a dtype
or capability probe checks what the device does, so its failure is a backend finding
(implement or declare when the note says the path is missing, else correctness).
"""

from __future__ import annotations

import re
from typing import Any

from torchcts_schema import CaseRecord, NextFix, NotRunReason, Status

from torchcts_report.tallies import next_fix_of

_DEVICE_UNUSABLE = re.compile(
    r"backend import .{0,200} failed"
    r"|device (?:is )?(?:not available|unavailable)"
    r"|no (?:cuda |xpu |mps |hip )?(?:gpus?|devices?) (?:are |is )?(?:available|found)"
    r"|not compiled with"
    r"|found no (?:nvidia )?driver"
    r"|(?:cuda|xpu|mps|hip|privateuse1) (?:backend )?(?:is )?(?:not available|unavailable)",
    re.IGNORECASE,
)
_NOT_IMPLEMENTED = re.compile(
    r"NotImplementedError|not implemented|unsupported|not supported|Could not run '",
    re.IGNORECASE,
)
_DEVICE_PROBES = frozenset({"capability", "dtype"})
_SCANNED = 2000  # characters of a message read for the patterns: they sit at the start


def counted_category(reason: NotRunReason) -> NextFix:
    """The category of not_run cases the report only counts, by their reason."""
    if reason is NotRunReason.COMPARISON_NOT_VALID:
        return NextFix.MISSING_EVIDENCE
    return NextFix.SUPPORT_SURFACE


def category_of(record: CaseRecord) -> NextFix | None:
    """The record's next-fix category after the corrections in the module docstring."""
    own = next_fix_of(record)
    # the same test as `summary.Group.counted`, so counted and listed cases agree
    if record.not_run_reason is not None and own is NextFix.SUPPORT_SURFACE:
        return counted_category(record.not_run_reason)
    if record.status in (Status.ERROR, Status.UNSUPPORTED) and device_unusable(record):
        return NextFix.CONFIGURATION
    return own


def device_unusable(record: CaseRecord) -> bool:
    """True when the case failed because the device could not be used at all."""
    detail = record.detail or ""
    if detail.startswith("configuration:"):
        return True
    for text in (record.exception_message, detail):
        if text and _DEVICE_UNUSABLE.search(text[:_SCANNED]):
            return True
    return False


def probe_category(row: dict[str, Any]) -> NextFix:
    """The category of one failing probe row (see the module docstring)."""
    kind = str(row.get("kind", "")).lower()
    if kind not in _DEVICE_PROBES:
        return NextFix.CONFIGURATION
    if _NOT_IMPLEMENTED.search(probe_note(row)[:_SCANNED]):
        return NextFix.IMPLEMENT_OR_DECLARE
    return NextFix.CORRECTNESS


def probe_note(row: dict[str, Any]) -> str:
    """What the probe row says went wrong."""
    return str(row.get("note") or row.get("error") or "")
