"""The cheap, JSON-able description of a case and of what a run asks for.

Listing cases builds only these; sample tensors are made when a case executes. Nothing
here imports torch, so selection and accounting stay fast.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from torchcts_schema import CaseRecord, ExpectedSource


@dataclass(frozen=True)
class CaseSpec:
    """One case: its stable id, what it exercises and what it is compared against."""

    case_id: str
    suite: str
    op: str
    variant: str
    dtype: str | None
    sample: int | None
    level: int
    expected_source: ExpectedSource
    capability: str
    surfaces: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "case_id": self.case_id,
            "suite": self.suite,
            "op": self.op,
            "variant": self.variant,
            "dtype": self.dtype,
            "sample": self.sample,
            "level": self.level,
            "expected_source": self.expected_source.value,
            "capability": self.capability,
            "surfaces": list(self.surfaces),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseSpec:
        """Inverse of `to_dict`."""
        return cls(
            case_id=data["case_id"],
            suite=data["suite"],
            op=data["op"],
            variant=data["variant"],
            dtype=data.get("dtype"),
            sample=data.get("sample"),
            level=int(data["level"]),
            expected_source=ExpectedSource(data["expected_source"]),
            capability=data["capability"],
            surfaces=tuple(data.get("surfaces", ())),
        )


@dataclass
class Selection:
    """What the runner asks for; empty filters mean "everything the manifest declares"."""

    level: int | None = None
    dtypes: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    op_globs: tuple[str, ...] = ()


@dataclass
class SelectedCases:
    """The runnable cases in a deterministic order, and one record per excluded case."""

    runnable: list[CaseSpec] = field(default_factory=list)
    not_run: list[CaseRecord] = field(default_factory=list)


@dataclass
class Verdict:
    """The judgement of one observed result; `mismatch` is a one-line summary."""

    ok: bool
    mismatch: str | None = None


class OracleUnavailable(Exception):
    """The CPU reference for a case could not be built; never a backend result."""


def case_seed(case_id: str) -> int:
    """A seed derived from the case id only: the same on every machine and process.

    Python's ``hash()`` is salted per process, so it is never used for this.
    """
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little")
