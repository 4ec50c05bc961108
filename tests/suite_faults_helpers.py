"""What the simdev suite-fault tests share: a manifest claiming every capability, the
clean profile around every test, and one case judged on simdev under fault rules.

A fault test asks one question: does this rule, on the overload a real backend would
get wrong, fail the case it belongs to, with a mismatch naming what broke? The answer
is the case's own judgement of simdev's run against its CPU reference, as the runner
makes it; memory-suite cases run under the manifest's memory_mb cap, as the runner
applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import torchcts_simdev
from torchcts_cases import get_case, prepare
from torchcts_isolate import memory_limit
from torchcts_schema import CAPABILITY_NAMES, Manifest, load_manifest


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
