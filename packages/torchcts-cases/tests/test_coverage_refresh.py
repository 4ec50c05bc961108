"""A whole run's results/coverage/: copied from the last refresh of the same inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torchcts_cases import coverage, coverage_refresh, index


@pytest.fixture
def audits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The audit itself replaced by one that writes two files and counts its calls;
    the cache in a directory of its own."""
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[Path] = []

    def audit(results_dir: Path) -> str:
        calls.append(Path(results_dir))
        out = Path(results_dir) / "coverage"
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.md").write_text(f"audit number {len(calls)}\n")
        (out / "summary.json").write_text("{}\n")
        return f"coverage: 50.0% of 2 overloads observed; {out}/"

    monkeypatch.setattr(coverage, "refresh", audit)
    return calls


def test_the_same_inputs_are_copied_not_audited_again(
    tmp_path: Path, audits: list[Path]
) -> None:
    """The first refresh audits into the cache; the next copies the same bytes into
    another results dir and names that dir in its line."""
    first = coverage_refresh.refresh(tmp_path / "run1")
    second = coverage_refresh.refresh(tmp_path / "run2")
    assert len(audits) == 1
    assert (
        first == f"coverage: 50.0% of 2 overloads observed; {tmp_path}/run1/coverage/"
    )
    assert second == first.replace("run1", "run2")
    for name in ("summary.md", "summary.json"):
        one = (tmp_path / "run1" / "coverage" / name).read_bytes()
        assert one == (tmp_path / "run2" / "coverage" / name).read_bytes()


def test_a_changed_index_or_torch_audits_again(
    tmp_path: Path, audits: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard or trace rewritten in the index cache, or another torch version, is
    another key: the audit runs again."""
    coverage_refresh.refresh(tmp_path / "run")
    shard = index.index_dir() / "float32.json"
    shard.parent.mkdir(parents=True, exist_ok=True)
    shard.write_text("{}")
    coverage_refresh.refresh(tmp_path / "run")
    monkeypatch.setattr(coverage_refresh, "torch_version", lambda: "9.9.9")
    coverage_refresh.refresh(tmp_path / "run")
    assert len(audits) == 3
    assert (tmp_path / "run" / "coverage" / "summary.md").read_text() == (
        "audit number 3\n"
    )


def test_an_entry_without_its_phrase_is_audited_again(
    tmp_path: Path, audits: list[Path]
) -> None:
    """An entry whose writer died before its phrase (written last) is incomplete."""
    coverage_refresh.refresh(tmp_path / "run")
    (coverage_refresh.refresh_cache_dir() / coverage_refresh.PHRASE).unlink()
    coverage_refresh.refresh(tmp_path / "run")
    assert len(audits) == 2


def test_a_cached_refresh_imports_no_torch(tmp_path: Path) -> None:
    """In a fresh interpreter (an xdist controller's tail) a cached entry is copied
    without importing torch."""
    script = textwrap.dedent(
        """
        import sys
        from torchcts_cases import coverage_refresh, refresh_coverage
        entry = coverage_refresh.refresh_cache_dir()
        (entry / "coverage").mkdir(parents=True)
        (entry / "coverage" / "summary.md").write_text("cached\\n")
        (entry / coverage_refresh.PHRASE).write_text("coverage: cached")
        print(refresh_coverage(sys.argv[1]))
        print("torch imported" if "torch" in sys.modules else "torch not imported")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "run")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TORCHCTS_CACHE_DIR": str(tmp_path / "cache")},
    ).stdout.splitlines()
    assert out == [
        f"coverage: cached; {tmp_path / 'run' / 'coverage'}/",
        "torch not imported",
    ]
    assert (tmp_path / "run" / "coverage" / "summary.md").read_text() == "cached\n"


def test_warming_audits_once_and_the_refresh_then_copies(
    tmp_path: Path, audits: list[Path]
) -> None:
    """warm() makes the entry (the audit runs there, not in the run's tail); the
    refresh after it only copies; warming a complete entry again does nothing."""
    coverage_refresh.warm()
    assert audits == [coverage_refresh.refresh_cache_dir()]
    coverage_refresh.warm()
    line = coverage_refresh.refresh(tmp_path / "run")
    assert len(audits) == 1
    assert line.endswith(f"; {tmp_path / 'run' / 'coverage'}/")
    assert (tmp_path / "run" / "coverage" / "summary.md").read_text() == (
        "audit number 1\n"
    )
