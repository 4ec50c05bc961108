"""Repository invariants: the layout, the pins, CI, the import rules and file names."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["schema", "cases", "runner", "isolate", "report", "evidence", "simdev"]


def test_every_package_has_the_standard_layout() -> None:
    """Each distribution has pyproject, README, src/<import>/py.typed and tests/."""
    for name in PACKAGES:
        base = ROOT / "packages" / f"torchcts-{name}"
        assert (base / "pyproject.toml").is_file(), base
        assert (base / "README.md").is_file(), base
        assert (base / "src" / f"torchcts_{name}" / "py.typed").is_file(), base
        assert (base / "tests").is_dir(), base
        meta = tomllib.loads((base / "pyproject.toml").read_text())["project"]
        assert meta["name"] == f"torchcts-{name}"
        for dep in meta.get("dependencies", []):
            assert dep != "torch" and "==" not in dep, (
                f"{name} pins {dep}: declare a range"
            )


def test_constraints_pin_the_cpu_torch() -> None:
    """Development and CI install exactly torch 2.13.0, never a bare requirement."""
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in lines


def test_readme_gives_exactly_two_newcomer_commands() -> None:
    """The README's set-up block is `make run` and `make test`, in that order."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```(?:sh|bash|console)?\n(.*?)```", text, re.S)
    assert block is not None
    commands = [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]
    assert commands == ["make run", "make test"]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run calls `make test` and stops on the first failure."""
    text = (ROOT / ".ci" / "run").read_text()
    assert "make test" in text and "set -euo pipefail" in text


def test_results_dir_is_ignored_except_readme_and_samples() -> None:
    """Run artifacts never get committed by accident."""
    ignore = (ROOT / ".gitignore").read_text().splitlines()
    assert "/results/*" in ignore and "!/results/README.md" in ignore


def test_crash_candidate_files_at_the_root_are_ignored_and_not_linted(
    tmp_path: Path,
) -> None:
    """The packet, artifact and repro `torchcts-evidence crash-candidate` writes into
    the current directory stay out of git and out of `make lint` (a repro is a copy
    of the case's code, not project code)."""
    for name in ("pyproject.toml", ".gitignore"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    stem = "crash-candidate-opinfo-exp-forward-float32-0"
    written = [f"{stem}.json", f"{stem}.artifact.json", f"{stem}.py"]
    for name in written:
        (tmp_path / name).write_text("import os,sys\nx = 'unused'  ;  print( x )\n")
    (tmp_path / "code.py").write_text("x = 1\n")  # something left to lint
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    ignored = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", *written],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ignored.stdout.split() == written, ignored.stderr
    for check in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *check, "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def _checker() -> object:
    spec = importlib.util.spec_from_file_location(
        "check_imports", ROOT / "tools" / "check_imports.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_import_directions_hold() -> None:
    """The architecture's may-import column holds for every package today."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_imports.py")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_import_check_catches_a_planted_violation(tmp_path: Path) -> None:
    """torch in report, a deep import and torch.testing._internal outside cases are caught."""
    checker = _checker()
    src = tmp_path / "torchcts_report"
    src.mkdir()
    (src / "bad.py").write_text(
        "import torch\nfrom torchcts_schema.records import CaseRecord\n"
    )
    problems = checker.check_package("torchcts_report", src)  # type: ignore[attr-defined]
    assert any("may not import torch" in p for p in problems)
    assert any("through its public root" in p for p in problems)
    cases = tmp_path / "torchcts_cases"
    cases.mkdir()
    (cases / "other.py").write_text(
        "from torch.testing._internal import common_utils\n"
    )
    problems = checker.check_package("torchcts_cases", cases)  # type: ignore[attr-defined]
    assert any("only torchcts_cases/opinfo_source.py" in p for p in problems)


def test_no_import_cycles_today() -> None:
    """No module of any package imports, even inside a function, one that imports it."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_cycles.py")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_cycle_check_catches_a_planted_cycle(tmp_path: Path) -> None:
    """a -> b at module level and b -> a inside a function is a cycle, named with lines."""
    src = tmp_path / "src"
    package = src / "torchcts_demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from torchcts_demo.b import f\n")
    (package / "b.py").write_text(
        "def f():\n    from torchcts_demo import a  # worked around, still a cycle\n"
        "    from . import a as again\n"
    )
    (package / "c.py").write_text("from torchcts_demo.a import f\n")  # not in a cycle
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_cycles.py"), str(src)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stdout
    assert "torchcts_demo.a -> torchcts_demo.b -> torchcts_demo.a" in result.stdout
    assert "b.py:2" in result.stdout and "torchcts_demo.c" not in result.stdout


def test_no_hand_spelled_names_today() -> None:
    """No package's src spells a results suffix or the node prefix by hand."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_names.py")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_name_check_catches_a_planted_suffix(tmp_path: Path) -> None:
    """A suffix or prefix in a literal or f-string is caught with its line; docstrings,
    comments, __all__, the schema's own homes and excluded packages are not."""
    src = tmp_path / "src"
    demo = src / "torchcts_demo"
    demo.mkdir(parents=True)
    (demo / "bad.py").write_text(
        '"""Writes <key>_latest.json."""\n'
        "# and <key>_journal.jsonl\n"
        'LATEST = "_latest.json"\n'
        'def crashes(key):\n    return f"{key}_crashes/x.json"\n'
        'NODE = "torchcts::" + "x"\n'
        '__all__ = ["write_history"]\n'
    )
    (demo / "layout.py").write_text('LOCK = ".torchcts.lock"\n')  # not the schema's
    schema = src / "torchcts_schema"
    schema.mkdir()
    (schema / "layout.py").write_text('JOURNAL_SUFFIX = "_journal.jsonl"\n')
    (schema / "identity.py").write_text(
        'NODE_PREFIX = "torchcts::"\nLATE = "_latest.json"\n'
    )
    check = [sys.executable, str(ROOT / "tools" / "check_names.py"), str(src)]
    result = subprocess.run(check, capture_output=True, text=True)
    assert result.returncode == 1, result.stdout
    lines = [line.split(": ", 1)[0] for line in result.stdout.splitlines()[:-1]]
    assert lines == [
        str(demo / "bad.py") + ":3",
        str(demo / "bad.py") + ":5",
        str(demo / "bad.py") + ":6",
        str(demo / "layout.py") + ":1",
        str(schema / "identity.py") + ":2",
    ], result.stdout
    assert "spells '_crashes'" in result.stdout and "NODE_PREFIX" in result.stdout
    excluded = [*check, "--exclude-package", "torchcts_demo"]
    result = subprocess.run(excluded, capture_output=True, text=True)
    assert result.returncode == 1 and "torchcts_demo" not in result.stdout
