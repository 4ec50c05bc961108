"""Every command a run prints works when pasted at the root of a checkout.

A checkout-like directory (the repository's `bin/` launchers and `manifests/`) gets a
simdev demo run that fails, errs, lacks a kernel and crashes; then each distinct command
the run printed (the .md, .html and .junit.xml rerun lines, the crash record's repro,
the explain command's repro script) is pasted into `sh` there, as a person would. None
may fail as a shell command (127 not found, 126 not executable) or as a usage error
(2, 4), and none may print a traceback. The README's `bin/...` commands name tools and
subcommands that exist.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from e2e_env import without_torchcts_env

pytestmark = pytest.mark.timeout(1500)
ROOT = Path(__file__).resolve().parent.parent
ENV_READY = (ROOT / ".nox" / "torchcts" / "bin" / "torchcts-run").exists()
OPS = ["mul", "where", "exp"]  # wrong values, no kernel, segfault in the demo profile
COMMAND = re.compile(r"('?bin/(?:torchcts-[a-z]+|python)\b[^`<\n]*)")
USAGE_OR_SHELL = {2, 4, 126, 127}


def _env() -> dict[str, str]:
    env = without_torchcts_env()
    env["TORCHCTS_SIMDEV_PROFILE"] = "demo"
    env.pop("PYTHONPATH", None)  # as pasted: nothing but the checkout
    return env


def _sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", command],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory that looks like a checkout root after `make run`, with one run."""
    if not ENV_READY:
        pytest.fail("the environment .nox/torchcts is not built (make env)")
    root = tmp_path_factory.mktemp("checkout")
    (root / "bin").symlink_to(ROOT / "bin")
    (root / "manifests").symlink_to(ROOT / "manifests")
    # sample 0's forward case of each op in both dtypes, by node id: level 1 also
    # runs their other variants and edge samples, and every failure prints its own
    # rerun line, each pasted below (a run apiece)
    cases = " ".join(
        f"torchcts::opinfo/{op}/forward/{dtype}/0"
        for op in OPS
        for dtype in ("float32", "int64")
    )
    done = _sh(root, f"bin/torchcts-run --manifest manifests/simdev.py {cases}")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def _printed(root: Path) -> list[str]:
    (folder,) = (root / "results" / "selections").iterdir()
    found: list[str] = []
    for suffix in (".md", ".html", ".junit.xml"):
        (report,) = folder.glob(f"*{suffix}")
        text = report.read_text(encoding="utf-8")
        if suffix != ".md":
            text = html.unescape(text)
        found += [
            m.group(1).strip().rstrip("\\").strip() for m in COMMAND.finditer(text)
        ]
    for crash in folder.glob("*_crashes/*.json"):
        repro = json.loads(crash.read_text(encoding="utf-8")).get("repro_command")
        if repro:
            found.append(shlex.join(repro))
    return sorted(set(found))


def test_the_reports_print_commands_a_shell_at_the_root_can_run(
    checkout: Path,
) -> None:
    """Each distinct printed command runs from the checkout root: no usage error, no
    command-not-found, no traceback."""
    commands = _printed(checkout)
    reruns = [c for c in commands if c.startswith("bin/torchcts-run ")]
    assert reruns, commands
    assert any("--isolate all" in c for c in reruns), reruns  # the crash's rerun
    for command in commands:
        done = _sh(checkout, command)
        where = f"{command!r} exited {done.returncode}:\n{done.stderr[-2000:]}"
        assert done.returncode not in USAGE_OR_SHELL, where
        assert "Traceback (most recent call last)" not in done.stderr, where


def test_explain_prints_a_repro_command_that_reproduces_alone(checkout: Path) -> None:
    """`bin/torchcts-report explain` of the failed case prints `bin/python <script>`;
    pasted, the script reproduces the mismatch (exit 1)."""
    explained = _sh(checkout, "bin/torchcts-report explain opinfo/mul/forward/int64/0")
    assert explained.returncode == 0, explained.stderr
    (line,) = [x for x in explained.stdout.splitlines() if x.startswith("repro: ")]
    command = line.removeprefix("repro: ")
    assert command.startswith("bin/python "), line
    done = _sh(checkout, command)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISMATCH" in done.stdout + done.stderr


def test_readme_commands_name_tools_and_subcommands_that_exist() -> None:
    """Every `bin/<tool> <subcommand>` in the README answers `--help` with exit 0."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pairs = set()
    for match in re.finditer(r"bin/(torchcts-[a-z]+)((?: [a-z][a-z-]+)?)", readme):
        pairs.add((match.group(1), match.group(2).strip()))
    assert pairs
    for tool, sub in sorted(pairs):
        assert (ROOT / "bin" / tool).exists(), tool
        if not ENV_READY:
            continue
        words = [f"bin/{tool}", *([sub] if sub else []), "--help"]
        done = subprocess.run(
            words, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"{' '.join(words)}: {done.stderr[-500:]}"
