"""A hand-written case: a check function run on CPU and on the device, or compared with
hand-written expected values (a reviewed reference).

A check takes ``(device, dtype)`` and returns a dict of observations: values, metadata,
and booleans such as "this view shares storage with its base". The CPU run of the same
check is the expectation unless the case carries reviewed values; a case may name a
context that CPU run happens in (compile: eagerly) and observations it only reports.
A check may size itself from the manifest's DEVICE_COUNT and memory_mb
(`suites.limits.run_limits`): both runs of it, on CPU and on the device, see the same
limits, so they build the same tensors.
Below the case, the helpers checks share (a hand-written repro carries stand-ins).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

import torch
from torchcts_schema import ExpectedSource, make_case_id

from torchcts_cases.spec import CaseSpec

Check = Callable[[str, str | None], dict[str, Any]]
Reviewed = Callable[[str | None], dict[str, Any]]


@dataclass(frozen=True)
class HandCase:
    """One hand-written check, expanded into one case per dtype."""

    suite: str
    name: str
    check: Check
    level: int
    capability: str
    source: ExpectedSource = ExpectedSource.PROPERTY
    dtypes: tuple[str | None, ...] = (None,)
    expected: Reviewed | None = None  # reviewed reference: values written by hand
    tolerance: tuple[float, float] | None = None  # (atol, rtol) reviewed with them
    metadata_only: bool = False  # legal output: only metadata is defined
    needs_other_device: bool = False  # compares the device with CPU: meaningless on CPU
    min_devices: int = 1
    surfaces: tuple[str, ...] = ()
    # (dtype, atol, rtol): a documented tolerance for checks whose values legitimately
    # drift further than one op's (several optimizer steps); the manifest's TOLERANCES
    # still wins
    tolerances: tuple[tuple[str, float, float], ...] = ()
    # entered while the CPU expectation is built: the compile suite's expectation is
    # the same check run eagerly on CPU, not compiled
    reference_context: Callable[[], AbstractContextManager[object]] | None = None
    # observation keys reported in the record's detail, never judged (the compile
    # suite's graph and recompile counts: facts about the device, not failures)
    reported: tuple[str, ...] = ()
    dtype: str | None = None
    spec: CaseSpec | None = None

    def expand(self) -> list[HandCase]:
        """One case per dtype, each with its spec."""
        out = []
        for dtype in self.dtypes:
            case_id = make_case_id(self.suite, self.name, "check", dtype, None)
            spec = CaseSpec(
                case_id=case_id,
                suite=self.suite,
                op=self.name,
                variant="check",
                dtype=dtype,
                sample=None,
                level=self.level,
                expected_source=self.source,
                capability=self.capability,
                surfaces=self.surfaces,
            )
            out.append(replace(self, dtype=dtype, spec=spec, dtypes=(dtype,)))
        return out


def case(
    suite: str,
    name: str,
    level: int,
    *,
    capability: str | None = None,
    **kwargs: Any,
) -> Callable[[Check], HandCase]:
    """Decorator: turn a check function into a `HandCase` of `suite`."""

    def wrap(fn: Check) -> HandCase:
        return HandCase(
            suite=suite,
            name=name,
            check=fn,
            level=level,
            capability=capability or suite,
            **kwargs,
        )

    return wrap


def storage_id(t: Any) -> int:
    """Identity of a tensor's storage that works even where data_ptr() is 0."""
    return int(t.untyped_storage()._cdata)


def exact(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as observations the judge compares bit for bit, taken on the host.

    Floating values come as float32/float64 values first (the readable mismatch), then
    as bit patterns (what a tolerance would hide: the sign of a zero, one float8
    step); complex tensors as both parts. No op specifies NaN's payload or sign, so
    NaN positions are compared instead of NaN bits. Integers and bool are exact as
    they are. (Repro scripts carry this function's source: it must stay standalone.)
    """
    host = t.detach().cpu().resolve_conj().resolve_neg()
    out: dict[str, Any] = {"dtype": str(host.dtype).removeprefix("torch.")}
    parts = torch.view_as_real(host) if host.is_complex() else host
    if not parts.is_floating_point():
        out["values"] = host
        return out
    size = parts.element_size()
    same_size = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    nan = parts.isnan()
    out["values"] = parts.double() if size == 8 else parts.float()
    out["bits"] = parts.contiguous().view(same_size[size]).masked_fill(nan, 0)
    out["nan"] = nan
    return out


def holds(ok: bool, why: str) -> bool | str:
    """True when a property holds, else the sentence saying how it broke, with the
    numbers seen (judged against True, the sentence is the mismatch)."""
    return True if ok else why


def all_hold(*keys: str) -> Callable[[str | None], dict[str, Any]]:
    """The hand-written expectation of a property case: each of `keys` holds."""
    return lambda dtype: dict.fromkeys(keys, True)


def device_function(device: str, name: str, capability: str) -> Any:
    """``torch.<device>.<name>`` (the device module's function), or NotImplementedError
    naming it: a manifest claiming `capability` claims the function exists."""
    try:
        module = torch.get_device_module(device)
    except RuntimeError as exc:
        raise NotImplementedError(
            f"torch.get_device_module({device!r}) failed ({exc}): {capability} is "
            "claimed, which needs the device module"
        ) from None
    found = getattr(module, name, None)
    if not callable(found):
        raise NotImplementedError(
            f"torch.{device}.{name} is missing: {capability} is claimed, which needs it"
        )
    return found
