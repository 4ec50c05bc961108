"""End to end: a simdev run where atan2 has no kernel of simdev's own and runs through
the CPU fallback (a profile's cpu_fallback rule), beside mul, which is native.

With the manifest allowing fallback, atan2 passes, its record names the overload,
and the scorecard, the summary line and ``--json`` count it apart from the native
pass; with ``CPU_FALLBACK = "forbid"`` the same case fails as implement_or_declare,
naming the overload, and explain says why. Two real runs (-n 0, one dtype, two ops):
about 15 s each, most of it importing torch and running the probes. A third runs the
README's example as printed and finds the summary line the README shows.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from torchcts_schema import NextFix, Status, load_result

pytestmark = pytest.mark.timeout(900)
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
ATAN2 = "opinfo/atan2/forward/float32/0"
MUL = "opinfo/mul/forward/float32/0"
PROFILE = {
    "name": "no-atan2",
    "rules": [{"op": "aten::atan2.out", "fault": "cpu_fallback"}],
}
MANIFEST = '''"""simdev without an atan2 kernel, narrowed for the end-to-end test."""
DEVICE = "simdev"
BACKEND_NAME = "simdev"
BACKEND_IMPORT = "torchcts_simdev"
BACKEND_OPTIONS = {"fault_profile": "no-atan2.json"}
DTYPES = {"float32": True}
CAPABILITIES = ["forward"]
LEVEL = 1
OPS = {"include": ["atan2", "mul"]}
'''


def _run(root: Path, policy: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    manifest = root / f"{policy}.py"
    manifest.write_text(MANIFEST + f'CPU_FALLBACK = "{policy}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
    args = ["--manifest", manifest.name, "--results", policy, "-n", "0", "--json"]
    done = subprocess.run(
        [str(BIN / "torchcts-run"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    return root / policy, done


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """The allowed and the forbidding run, each in its own results directory."""
    root = tmp_path_factory.mktemp("fallback")
    (root / "no-atan2.json").write_text(json.dumps(PROFILE))
    return {policy: _run(root, policy) for policy in ("allow", "forbid")}


def test_an_allowed_fallback_passes_labelled_and_counted_apart(
    runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
) -> None:
    """atan2 passed through the fallback, mul natively; every summary tells them
    apart: the record, the scorecard, the summary line and the JSON summary."""
    results, done = runs["allow"]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    records = {r.case_id: r for r in load_result(results).results}
    atan2, mul = records[ATAN2], records[MUL]
    assert atan2.status is Status.PASSED
    assert atan2.cpu_fallback == ("aten::atan2.out",)
    assert mul.status is Status.PASSED and mul.cpu_fallback is None
    (scorecard,) = results.glob("*.md")
    text = scorecard.read_text()
    passed = sum(r.status is Status.PASSED for r in records.values())
    assert (
        f"**1 of the {passed} passed case(s) passed only through the device's CPU "
        f"fallback**; {passed - 1} passed natively" in text
    )
    assert "| `aten::atan2.out` | 1 | 1 |" in text
    assert f"- `{ATAN2}`: `aten::atan2.out`" in text
    assert f"passed {passed} (1 via CPU fallback)" in done.stderr
    assert json.loads(done.stdout)["passed_via_cpu_fallback"] == 1


def test_a_forbidden_fallback_fails_as_implement_or_declare(
    runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
) -> None:
    """The same atan2 case fails, category implement_or_declare, naming the
    overload; mul still passes; the next-fix section and explain say why."""
    results, done = runs["forbid"]
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    records = {r.case_id: r for r in load_result(results).results}
    atan2 = records[ATAN2]
    assert atan2.status is Status.FAILED
    assert atan2.next_fix is NextFix.IMPLEMENT_OR_DECLARE
    assert atan2.detail is not None and atan2.detail.endswith(
        "(CPU_FALLBACK = 'forbid'): aten::atan2.out"
    )
    assert records[MUL].status is Status.PASSED and records[MUL].cpu_fallback is None
    assert json.loads(done.stdout)["passed_via_cpu_fallback"] == 0
    (scorecard,) = results.glob("*.md")
    text = scorecard.read_text()
    assert "### 3. implement or declare: 1 case(s)" in text
    assert "Implement atan2 for float32 or remove it from the manifest" in text
    assert "1 failed because the manifest forbids the CPU fallback" in text
    explain = subprocess.run(
        [str(BIN / "torchcts-report"), "explain", "--results", str(results), ATAN2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "cpu fallback: aten::atan2.out" in explain.stdout, explain.stderr


def test_the_readme_example_prints_what_the_readme_says(tmp_path: Path) -> None:
    """The README's try-it command, run as printed (manifests/simdev.py, demo
    profile), prints the summary line the README shows and exits 1 for its error."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Passes through a CPU fallback", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    command, said = block.group(1).splitlines()[:2]
    words = shlex.split(command)
    assert words[0] == "bin/torchcts-run", command
    (tmp_path / "manifests").symlink_to(ROOT / "manifests")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
    done = subprocess.run(
        [str(BIN / "torchcts-run"), *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    output = done.stdout + done.stderr
    summary = re.escape(said.removeprefix("# "))
    summary = summary.replace(re.escape("<hardware key>"), "[a-z0-9-]+")
    assert re.search(f"^{summary}$", output, re.M), output[-3000:]
    complete = "torchcts-run: run complete; 1 case(s) did not pass (1 error)"
    assert complete in " ".join(section.split())  # the prose's line, unwrapped
    assert done.returncode == 1 and complete in output
