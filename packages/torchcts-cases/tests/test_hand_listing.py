"""The hand-written cases as selection reads them: from a cache, without torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torchcts_cases import hand_listing, index
from torchcts_cases.suites import all_hand_cases

ROOT = Path(__file__).resolve().parents[3]

SELECT_WITHOUT_TORCH = textwrap.dedent(
    """
    import sys
    from torchcts_schema import load_manifest
    from torchcts_cases import Selection, select_cases
    selection = Selection(level=2, record_outside=False)
    selected = select_cases(load_manifest("manifests/cpu.py"), selection)
    print(len(selected.runnable))
    print("torch imported" if "torch" in sys.modules else "torch not imported")
    """
)


def _select_in_a_fresh_interpreter(cache: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", SELECT_WITHOUT_TORCH],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "TORCHCTS_CACHE_DIR": str(cache)},
    )
    return out.stdout.splitlines()


def test_the_listing_is_every_hand_case_with_its_requirements() -> None:
    """Spec and device requirements of each case, in the suites' order."""
    listed = hand_listing._from_suites()
    cases = list(all_hand_cases().values())
    assert [entry.spec for entry in listed] == [case.spec for case in cases]
    assert [
        (entry.min_devices, entry.needs_other_device, entry.suite, entry.capability)
        for entry in listed
    ] == [
        (case.min_devices, case.needs_other_device, case.suite, case.capability)
        for case in cases
    ]
    assert any(entry.needs_other_device for entry in listed)
    assert any(entry.min_devices > 1 for entry in listed)


def test_selection_reads_the_cache_and_never_imports_torch(tmp_path: Path) -> None:
    """The first selection builds the listing (importing the suites, so torch);
    the next, in a fresh interpreter, selects the same cases without torch."""
    index.shard("float32")  # this process's index, copied: only the listing is new
    built = index.index_dir()
    shutil.copytree(built, tmp_path / built.relative_to(index.cache_root()))
    first = _select_in_a_fresh_interpreter(tmp_path)
    assert first[1] == "torch imported"
    cached = list(tmp_path.glob("hand-listing-v*/*/*.json"))
    assert len(cached) == 1
    again = _select_in_a_fresh_interpreter(tmp_path)
    assert again == [first[0], "torch not imported"]


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"format": "torchcts-hand-listing", "version": 1, "cases": [{}]}),
        json.dumps({"format": "torchcts-hand-listing", "version": 1, "cases": 3}),
        json.dumps(["a list"]),
        json.dumps({"format": "another", "version": 1, "cases": []}),
    ],
)
def test_an_unreadable_or_foreign_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """A cache file that does not parse as a listing is replaced by one built from
    the suites, never trusted."""
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchcts_cases.suites")  # read the cache
    hand_listing.hand_listings.cache_clear()
    path = hand_listing.listing_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    try:
        listed = hand_listing.hand_listings()
    finally:
        hand_listing.hand_listings.cache_clear()
    assert [e.spec for e in listed] == [c.spec for c in all_hand_cases().values()]
    rebuilt = json.loads(path.read_text())
    assert len(rebuilt["cases"]) == len(listed)
