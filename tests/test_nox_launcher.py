"""`bin/nox` runs the nox that `make` installs, and every documented nox command uses it.

make installs nox in its own environment (`.nox/bootstrap`), never on the PATH, so a
bare `nox -s run-mps` pasted after the README's commands is "command not found".
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP_NOX = ROOT / ".nox" / "bootstrap" / "bin" / "nox"
SKIPPED_DIRS = {".git", ".nox", ".venv", "results", "build", "dist"}
TEXT_SUFFIXES = {".md", ".py", ".sh", ".yml", ".toml", ".txt"}
# the bare word, not bin/nox and not .nox/bootstrap/bin/nox
BARE_NOX = re.compile(r"(?<![\w/.-])nox -s\b")
SESSION = re.compile(r"\bbin/nox -s ([a-z][a-z0-9-]*)(?![\w<-])")  # not run-<device>


def _documents() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        parts = set(path.relative_to(ROOT).parts)
        if parts & SKIPPED_DIRS or any(p.endswith(".egg-info") for p in parts):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name == "Makefile"):
            found.append(path)
    return found


def _sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_no_document_or_source_writes_a_bare_nox_command() -> None:
    """Every `nox -s ...` in a README, doc, docstring or printed string is `bin/nox`."""
    bare = []
    for path in _documents():
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if BARE_NOX.search(line):
                bare.append(f"{path.relative_to(ROOT)}:{number + 1}: {line.strip()}")
    assert not bare, "\n".join(bare)


def test_bin_nox_runs_the_bootstrap_nox_or_says_to_build_it(tmp_path: Path) -> None:
    """Before `make env`, bin/nox says to run it (127); after, it runs
    .nox/bootstrap/bin/nox with the arguments as given."""
    shutil.copytree(ROOT / "bin", tmp_path / "bin", symlinks=True)
    before = _sh(tmp_path, "bin/nox -s run-mps -- --level 8")
    assert before.returncode == 127, before.stderr
    assert before.stderr.startswith("nox: ") and "'make env'" in before.stderr
    fake = tmp_path / ".nox" / "bootstrap" / "bin" / "nox"
    fake.parent.mkdir(parents=True)
    fake.write_text('#!/bin/sh\necho "bootstrap nox: $*"\n')
    fake.chmod(0o755)
    after = _sh(tmp_path, "bin/nox -s run-mps -- --level 8")
    assert after.returncode == 0, after.stderr
    assert after.stdout == "bootstrap nox: -s run-mps -- --level 8\n"


def test_documented_nox_sessions_exist() -> None:
    """Each `bin/nox -s NAME` in the docs names a session `bin/nox -l` lists."""
    named = {
        m.group(1)
        for path in _documents()
        if path.suffix == ".md"
        for m in SESSION.finditer(path.read_text(encoding="utf-8"))
    }
    assert {"run-mps", "bench", "soak", "lint"} <= named, named
    if not BOOTSTRAP_NOX.exists():  # make has not installed nox here
        return
    listed = _sh(ROOT, "bin/nox -l")
    assert listed.returncode == 0, listed.stderr
    sessions = set(re.findall(r"^[*-] ([a-z][a-z0-9-]*) ->", listed.stdout, re.M))
    assert named <= sessions, named - sessions
