"""What the simdev fault tests share: a manifest claiming every capability, the
clean profile around every test, and one case judged on simdev under fault rules
(the case's own judgement, `simdev_mismatch`, or the record the runner's
`execute_case` makes of it, `simdev_record`).

A fault test asks one question: does this rule, on the overload a real backend would
get wrong, fail the case it belongs to, with a mismatch naming what broke? The answer
is the case's own judgement of simdev's run against its CPU reference, as the runner
makes it; memory-suite cases run under the manifest's memory_mb cap, as the runner
applies it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torchcts_cases
import torchcts_simdev
from torchcts_cases import get_case, prepare
from torchcts_isolate import memory_limit
from torchcts_runner.case_execution import CaseContext, execute_case
from torchcts_runner.casesource import CaseSource
from torchcts_schema import CAPABILITY_NAMES, CaseRecord, Manifest, load_manifest


def simdev_manifest(folder: Path, dtypes: Iterable[str]) -> Manifest:
    """A simdev manifest in `folder` claiming every capability and `dtypes`."""
    path = folder / "m.py"
    claimed = {name: True for name in dtypes}
    path.write_text(
        f'DEVICE = "simdev"\nCAPABILITIES = {list(CAPABILITY_NAMES)!r}\n'
        f"DTYPES = {claimed!r}\n"
    )
    return load_manifest(path)


@pytest.fixture(autouse=True)
def clean_simdev(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts and ends on the clean profile (autouse where imported)."""
    monkeypatch.delenv(torchcts_simdev.ENV_VAR, raising=False)
    torchcts_simdev.configure("clean")
    yield
    torchcts_simdev.configure("clean")


def simdev_mismatch(
    case_id: str,
    manifest: Manifest,
    *rules: dict[str, object],
    memory_capped: bool = False,
) -> str:
    """The judged mismatch of `case_id` on simdev under `rules` ('' if it passed)."""
    case = prepare(get_case(case_id), manifest)
    expected = case.reference()
    torchcts_simdev.configure({"name": "test", "rules": list(rules)})
    try:
        if memory_capped:
            with memory_limit(int(manifest.resource_limits["memory_mb"])):
                observed = case.run_on("simdev")
        else:
            observed = case.run_on("simdev")
    finally:
        torchcts_simdev.configure("clean")
    verdict = case.judge(expected, observed)
    return "" if verdict.ok else verdict.mismatch or "failed, without a mismatch"


def simdev_record(
    folder: Path, case_id: str, rules: list[dict[str, Any]], dtypes: Iterable[str]
) -> CaseRecord:
    """The record the runner makes of `case_id` on simdev under `rules` as its fault
    profile (named in the manifest, as a user names one), at level 8 with `dtypes`."""
    stem = f"profile{len(list(folder.iterdir()))}"
    profile = folder / f"{stem}.json"
    profile.write_text(json.dumps({"name": "fault-test", "rules": rules}))
    path = folder / f"{stem}.py"
    claimed = {name: True for name in dtypes}
    path.write_text(
        'DEVICE = "simdev"\nBACKEND_IMPORT = "torchcts_simdev"\n'
        f"BACKEND_OPTIONS = {{'fault_profile': {str(profile)!r}}}\n"
        f"CAPABILITIES = {list(CAPABILITY_NAMES)!r}\n"
        f"DTYPES = {claimed!r}\nLEVEL = 8\n"
    )
    source = CaseSource("torchcts_cases", torchcts_cases)
    ctx = CaseContext(load_manifest(path), source, "simdev", folder, "simdev_test")
    return execute_case(torchcts_cases.get_case(case_id), ctx)
