"""The cheap, JSON-able description of a case and of what a run asks for.

`CaseSpec`, `Selection`, `SelectedCases` and `Verdict` are the schema's case
contract (`torchcts_schema.case_contract`), re-exported here as this package's API.

Listing cases builds only these; sample tensors are made when a case executes. Nothing
here imports torch, so selection and accounting stay fast.
"""

from __future__ import annotations

import hashlib

from torchcts_schema import CaseSpec, SelectedCases, Selection, Verdict


class OracleUnavailable(Exception):
    """The CPU reference for a case could not be built; never a backend result."""


def case_seed(case_id: str) -> int:
    """A seed derived from the case id only: the same on every machine and process.

    Python's ``hash()`` is salted per process, so it is never used for this.
    """
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "little")


__all__ = [
    "CaseSpec",
    "OracleUnavailable",
    "SelectedCases",
    "Selection",
    "Verdict",
    "case_seed",
]
