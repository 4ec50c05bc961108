"""Is the device still usable after a case ended in a device error, and who broke it?

A sticky device error (CUDA's illegal memory access, a driver that lost its context)
makes every later op in the process fail, so every case after it would be judged on a
broken device and blamed for it. After a case ends in ``error`` having reached the
device (the device raised, or judging what it returned did), the process that ran it
probes the device: the backend module's ``torchcts_health_check(device)`` when it has
one (it raises when the device is unusable), else a tiny create, add and copy back.
Runs without device errors never probe.

A failed probe proves the device is unusable now, not that this case broke it: an
earlier case may have broken it without raising itself. So `settle` runs the case
once more in a fresh process, probing before and after it (after any ending):

- the probe before fails: the device is unusable in any process, before any case; a
  configuration problem, not this case's doing (``UNUSABLE``);
- before passes, after fails: this case breaks the device; its record (the fresh
  run's) says so, with next fix ``crash_evidence``, and is never a pass
  (``BROKE_IT``);
- the fresh process died (signal, exit, timeout, hang): its crash is the case's
  record, with a note saying the first run's probe failed too (``CRASHED``);
- otherwise an earlier case broke the first process's device; the fresh run's result
  is the case's record, with a note, and nothing is blamed (``MET_IT``).

Except for ``UNUSABLE``, the first process then runs no more cases on its device: an
xdist worker is replaced, a run without xdist runs its remaining cases isolated
(``after_poison``), an isolation child is retired. No case is ever judged on a device
a failed probe showed broken.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from enum import Enum
from typing import Any

from torchcts_schema import CaseRecord, NextFix, Status

from torchcts_runner.classify import exception_text, exception_type_name
from torchcts_runner.interrupts import user_interrupted
from torchcts_runner.timeouts import CaseTimeout

PROBE_LIMIT_S = 10.0  # in process; in a child the case's own limit covers its probes
HOOK = "torchcts_health_check"  # optional on the backend module: hook(device) raises
PROBE_AFTER = "health_probe_after"  # extra: what the probe after the case raised
PROBE_BEFORE = "health_probe_before"  # extra: ... the probe before it (fresh runs)
# settled records keep the probe's message under one of these instead
POISONED = "device_poisoned"  # the case broke the device
MET_BROKEN = "device_found_broken"  # its first run met a device broken before it
UNUSABLE = "device_unusable"  # the device fails the probe before any case
_RAW = (PROBE_AFTER, PROBE_BEFORE)
POISON_CHECK = "poison_check"  # isolation of the fresh run that settles the blame
AFTER_POISON = "after_poison"  # isolation of cases run isolated after the device broke
_QUOTED = 200  # characters of a probe's message quoted in a detail


class Finding(Enum):
    """What the fresh run of `settle` showed."""

    UNUSABLE = "unusable"  # the device fails the probe before any case
    BROKE_IT = "broke_it"  # the case breaks a working device
    MET_IT = "met_it"  # the case ran fine on a working device: it met a broken one
    CRASHED = "crashed"  # the fresh process running the case died


def needs_probe(status: Status, reached_device: bool) -> bool:
    """Probe after an ``error`` that reached the device (never after other endings:
    a wrong value, an unsupported path or an expected error is normal behaviour)."""
    return status is Status.ERROR and reached_device


def generic_check(device: str) -> None:
    """Create, add and copy back four numbers; raise when the device cannot."""
    import torch

    got = (torch.arange(4.0, device=device) + 1).cpu().tolist()
    if got != [1.0, 2.0, 3.0, 4.0]:
        raise RuntimeError(f"arange(4) + 1 on {device} gave {got}")


def health_check_for(backend_import: str | None) -> Callable[[str], Any]:
    """The backend's own probe when its (already imported) module has one."""
    module = sys.modules.get(backend_import) if backend_import else None
    hook = getattr(module, HOOK, None)
    return hook if callable(hook) else generic_check


def probe_device(
    device: str, backend_import: str | None, guard: AbstractContextManager[object]
) -> str | None:
    """None when the device answers the probe within `guard`; else what went wrong."""
    check = health_check_for(backend_import)
    try:
        with guard:
            check(device)
    except CaseTimeout as exc:
        return f"no answer within the probe's limit ({exc})"
    except BaseException as exc:  # any failure means the device is not usable
        if isinstance(exc, KeyboardInterrupt) and user_interrupted():
            raise
        return f"{exception_type_name(exc)}: {exception_text(exc)}"
    return None


def with_probe(record: CaseRecord, key: str, problem: str | None) -> CaseRecord:
    """`record` with a failed probe's message under `key` (unchanged when it passed)."""
    if problem is None:
        return record
    return replace(record, extra={**record.extra, key: problem})


def probe_failed(record: CaseRecord) -> bool:
    """Whether the probe after this record's case found the device unusable."""
    return PROBE_AFTER in record.extra


def settle(
    first: CaseRecord, fresh_run: Callable[[], CaseRecord]
) -> tuple[CaseRecord, Finding]:
    """The record a case keeps after the probe after it failed (module docstring).

    `fresh_run` runs the case in a process that ran nothing before, with a probe
    before and after it.
    """
    fresh = fresh_run()
    after = str(first.extra.get(PROBE_AFTER, ""))
    before = fresh.extra.get(PROBE_BEFORE)
    if before is not None:
        note = (
            "the device fails its health probe in a fresh process before any case "
            f"runs ({_quote(str(before))}): it is unusable, not broken by this case"
        )
        found = (first, UNUSABLE, str(before), NextFix.CONFIGURATION)
        return _noted(*found, note), Finding.UNUSABLE
    if probe_failed(fresh):
        probe = str(fresh.extra[PROBE_AFTER])
        note = (
            f"this case left the device unusable: the health probe after it failed "
            f"({_quote(probe)}), and in a fresh process the probe passed before it "
            "and failed after it; no later case ran on a device it broke"
        )
        found = (fresh, POISONED, probe, NextFix.CRASH_EVIDENCE)
        broke = _noted(*found, note)
        if broke.status is Status.PASSED:  # right values, broken device: no pass
            broke = replace(broke, status=Status.ERROR)
        return broke, Finding.BROKE_IT
    first_run = (
        f"its first run (in {first.worker or 'this process'}: {first.status.value}) "
        f"was followed by a failed health probe ({_quote(after)})"
    )
    if fresh.status is Status.CRASHED:
        died = fresh.crash.detail if fresh.crash is not None else "it died"
        note = (
            f"{first_run}; run again in a fresh process (probe, case, probe), that "
            f"process died ({_quote(died)}): this is the fresh run's crash"
        )
        return _noted(fresh, MET_BROKEN, after, fresh.next_fix, note), Finding.CRASHED
    note = (
        f"{first_run}, but in a fresh process it left the device working: an "
        "earlier case may have broken that device; this is the fresh run's result"
    )
    return _noted(fresh, MET_BROKEN, after, fresh.next_fix, note), Finding.MET_IT


def _quote(message: str) -> str:
    return message if len(message) <= _QUOTED else message[:_QUOTED] + " [...]"


def _noted(
    record: CaseRecord, key: str, probe: str, next_fix: NextFix | None, note: str
) -> CaseRecord:
    """The settled record: the note first in its detail, the probe's message under
    `key` in place of the raw probe keys."""
    extra = {k: v for k, v in record.extra.items() if k not in _RAW}
    detail = f"{note}; {record.detail}" if record.detail else note
    return replace(
        record, detail=detail, next_fix=next_fix, extra={**extra, key: probe}
    )


__all__ = [
    "AFTER_POISON",
    "HOOK",
    "MET_BROKEN",
    "POISONED",
    "POISON_CHECK",
    "PROBE_AFTER",
    "PROBE_BEFORE",
    "PROBE_LIMIT_S",
    "UNUSABLE",
    "Finding",
    "generic_check",
    "health_check_for",
    "needs_probe",
    "probe_device",
    "probe_failed",
    "settle",
    "with_probe",
]
