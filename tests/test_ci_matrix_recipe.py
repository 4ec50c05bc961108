"""The CI-matrix recipe (docs/ci-matrix.yml) does what docs/ci-matrix.md says.

The workflow's own shard step runs three times, each in a directory of its own (one
"machine" each), its uploads are copied where its download step puts them, and its
merge step runs on a fourth. The merged result must equal an unsharded run of the
same selection case for case, and its archive must verify. What GitHub would do is
emulated only as far as the steps need: the step's environment (workflow env, step
env with its `${{ }}` expressions filled in), `$GITHUB_OUTPUT`, bash with
`-eo pipefail`, artifacts without hidden files. PyYAML is not a dependency, so the
workflow is read by a small parser of the YAML it is written in, which refuses
anything else.

Four real runs of the runner (three shards and the unsharded one) make this the
slowest end-to-end test after the soak: about 50 s on a 2-core machine.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torchcts_schema import CaseRecord, RunArtifact, load_result

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "docs" / "ci-matrix.yml"
# cheap and telling: 17 level-1 cases, passed, failed (a demo fault) and not_run
SELECTION = "--suite factories -n 0"
TOOLS = {
    "torchcts-run": "torchcts_runner.cli",
    "torchcts-report": "torchcts_report.cli",
    "torchcts-evidence": "torchcts_evidence.cli",
}
INCIDENTAL = ("duration_s", "worker", "isolation", "extra")  # how a case ran
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class WorkflowSyntaxError(ValueError):
    """The workflow uses YAML this reader does not know: extend it or simplify."""


class _Reader:
    """Block mappings, block sequences, `|` literals, plain or double-quoted
    scalars and flow sequences of plain scalars; nothing else."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.at = 0

    def fail(self, problem: str) -> WorkflowSyntaxError:
        return WorkflowSyntaxError(f"{WORKFLOW.name}:{self.at + 1}: {problem}")

    def peek(self) -> tuple[int, str] | None:
        while self.at < len(self.lines):
            line = self.lines[self.at]
            if "\t" in line:
                raise self.fail("tab character")
            text = line.strip()
            if text and not text.startswith("#"):
                return len(line) - len(line.lstrip(" ")), text
            self.at += 1
        return None

    def document(self) -> dict[str, Any]:
        node = self.node(0)
        if self.peek() is not None:
            raise self.fail("text after the document")
        if not isinstance(node, dict):
            raise self.fail("the document is not a mapping")
        return node

    def node(self, indent: int) -> Any:
        head = self.peek()
        assert head is not None and head[0] == indent
        if head[1].startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent, {})

    def mapping(self, indent: int, into: dict[str, Any]) -> dict[str, Any]:
        while (head := self.peek()) is not None and head[0] >= indent:
            if head[0] > indent or head[1].startswith("- "):
                raise self.fail("unexpected indentation")
            self.at += 1
            self.entry(into, head[1], indent)
        return into

    def entry(self, into: dict[str, Any], text: str, indent: int) -> None:
        key, colon, rest = text.partition(":")
        if not colon or not _KEY.match(key) or (rest and not rest.startswith(" ")):
            raise self.fail(f"not a 'key: value' line: {text!r}")
        if key in into:
            raise self.fail(f"duplicate key {key!r}")
        rest = rest.strip()
        if rest == "|":
            into[key] = self.literal(indent)
        elif rest:
            into[key] = self.scalar(rest)
        else:
            head = self.peek()
            # `workflow_dispatch:` alone: a null, as in YAML
            into[key] = (
                None if head is None or head[0] <= indent else self.node(head[0])
            )

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (head := self.peek()) is not None and head[0] >= indent:
            if head[0] > indent or not head[1].startswith("- "):
                raise self.fail("unexpected indentation in a sequence")
            self.at += 1
            text = head[1][2:].lstrip()
            if re.match(r"^[A-Za-z0-9_-]+:( |$)", text):
                item: dict[str, Any] = {}
                self.entry(item, text, indent + 2)
                items.append(self.mapping(indent + 2, item))
            else:
                items.append(self.scalar(text))
        return items

    def literal(self, indent: int) -> str:
        body: list[str] = []
        block = None
        while self.at < len(self.lines):
            line = self.lines[self.at]
            width = len(line) - len(line.lstrip(" "))
            if line.strip():
                if width <= indent or (block is not None and width < block):
                    break
                block = width if block is None else block
            body.append(line[block or 0 :] if line.strip() else "")
            self.at += 1
        while body and not body[-1]:
            body.pop()
        if block is None:
            raise self.fail("empty literal block")
        return "\n".join(body) + "\n"

    def scalar(self, text: str) -> Any:
        if text.startswith("[") and text.endswith("]"):
            return [self.scalar(part.strip()) for part in text[1:-1].split(",")]
        if text.startswith('"'):
            if (
                len(text) < 2
                or not text.endswith('"')
                or re.search(r'["\\]', text[1:-1])
            ):
                raise self.fail(f"unsupported quoted scalar {text!r}")
            return text[1:-1]
        if text[0] in "'&*!%@`|>{[]}," or ": " in text or " #" in text:
            raise self.fail(f"unsupported scalar {text!r}")
        return text


def read_workflow(text: str) -> dict[str, Any]:
    """The workflow as nested dicts, lists and strings."""
    return _Reader(text).document()


def _expand(value: str, context: dict[str, str]) -> str:
    """Fill in `${{ name }}`; an expression the test does not know is an error."""

    def one(match: re.Match[str]) -> str:
        if match.group(1) not in context:
            raise AssertionError(f"unknown expression {match.group(0)} in {value!r}")
        return context[match.group(1)]

    return _EXPRESSION.sub(one, value)


def _step(job: dict[str, Any], step_id: str) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if s.get("id") == step_id]
    return step


def _uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if s.get("uses", "").startswith(action + "@")]


def _shims(folder: Path) -> Path:
    """The tools by name, run by this interpreter (so a worktree's sources count)."""
    folder.mkdir()
    scripts = {
        name: f"import sys; sys.argv[0] = {name!r}; from {module} import main; "
        "sys.exit(main())"
        for name, module in TOOLS.items()
    }
    for name, code in scripts.items():
        (folder / name).write_text(
            f'#!/bin/sh\nexec "{sys.executable}" -c "{code}" "$@"\n'
        )
    (folder / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for tool in folder.iterdir():
        tool.chmod(0o755)
    return folder


def _machine(tmp_path: Path, name: str, manifest: str) -> Path:
    """A fresh checkout as far as the steps read one: the manifest."""
    home = tmp_path / name
    (home / manifest).parent.mkdir(parents=True)
    shutil.copyfile(ROOT / manifest, home / manifest)
    return home


def _bash(
    script: str, home: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Run a step the way GitHub does (`shell: bash`), with its own $GITHUB_OUTPUT."""
    (home / "step.sh").write_text(script)
    outputs = home / "github_output"
    outputs.write_text("")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(home / "step.sh")],
        cwd=home,
        env={**env, "GITHUB_OUTPUT": str(outputs)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    pairs = (line.split("=", 1) for line in outputs.read_text().splitlines())
    return done, dict(pairs)


def _upload(source: Path, target: Path) -> None:
    """upload-artifact keeps the directory's contents, leaving out hidden files."""
    shutil.copytree(
        source, target, ignore=lambda _, names: [n for n in names if n[0] == "."]
    )


def _case_for_case(artifact: RunArtifact) -> dict[str, dict[str, Any]]:
    def result(record: CaseRecord) -> dict[str, Any]:
        data = record.to_dict()
        for name in INCIDENTAL:
            data.pop(name, None)
        return data

    return {r.case_id: result(r) for r in artifact.records}


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    """docs/ci-matrix.yml, read once for the module."""
    return read_workflow(WORKFLOW.read_text(encoding="utf-8"))


def test_the_reader_refuses_yaml_it_does_not_know() -> None:
    """A flow mapping, an anchor or a folded block is an error, never a guess."""
    for text in ("a: {b: 1}\n", "a: &x 1\n", "a: >\n  b\n", "a: 1\na: 2\n"):
        with pytest.raises(WorkflowSyntaxError):
            read_workflow(text)
    parsed = read_workflow('a:\n  - b: "1"\n    c: |\n      x\n\n      y\n  - [1, 2]\n')
    assert parsed == {"a": [{"b": "1", "c": "x\n\ny\n"}, ["1", "2"]]}


def test_the_workflow_wires_shards_to_the_merge(workflow: dict[str, Any]) -> None:
    """Matrix and N agree, every shard uploads under a name the merge downloads, and
    the merge runs after the shards even when one failed."""
    shard, merge = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    total = int(workflow["env"]["SHARDS"])
    assert shard["strategy"]["matrix"]["shard"] == [str(i) for i in range(1, total + 1)]
    assert shard["strategy"]["fail-fast"] == "false"
    assert merge["needs"] == "shard" and "cancelled()" in merge["if"]
    (upload,) = _uses(shard, "actions/upload-artifact")
    assert upload["with"]["path"] == "${{ steps.run.outputs.results }}"
    assert upload["if"].startswith("${{ always() &&")
    (download,) = _uses(merge, "actions/download-artifact")
    names = {_expand(upload["with"]["name"], {"matrix.shard": str(i)}) for i in (1, 2)}
    assert len(names) == 2  # artifacts are immutable: one name per shard
    assert all(fnmatch.fnmatch(n, download["with"]["pattern"]) for n in names)


def test_the_run_step_fails_on_exit_codes_above_one(
    workflow: dict[str, Any], tmp_path: Path
) -> None:
    """A malformed option (exit 4) or a matrix of the wrong size fails the step."""
    step = _step(workflow["jobs"]["shard"], "run")
    bin_dir = _shims(tmp_path / "bin")
    env = {**os.environ, **workflow["env"], "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    home = _machine(tmp_path, "machine", workflow["env"]["MANIFEST"])
    context = {"matrix.shard": "1", "strategy.job-total": workflow["env"]["SHARDS"]}
    step_env = {k: _expand(v, context) for k, v in step["env"].items()}
    done, outputs = _bash(
        step["run"], home, {**env, **step_env, "RUN_ARGS": "--isolate bogus"}
    )
    assert done.returncode == 4 and outputs["exit_code"] == "4", done.stderr[-2000:]
    wrong = {**step_env, "JOB_TOTAL": "2"}
    done, _ = _bash(step["run"], home, {**env, **wrong})
    assert done.returncode == 2 and "SHARDS is 3" in done.stdout


def test_three_shards_merge_to_the_unsharded_run(
    workflow: dict[str, Any], tmp_path: Path
) -> None:
    """The recipe's merged result is the unsharded run, case for case; it verifies."""
    env_vars = dict(workflow["env"])
    manifest = env_vars["MANIFEST"]
    total = int(env_vars["SHARDS"])
    bin_dir = _shims(tmp_path / "bin")
    base = {
        **os.environ,
        **env_vars,
        "RUN_ARGS": SELECTION,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    run_step = _step(shard_job, "run")
    (upload,) = _uses(shard_job, "actions/upload-artifact")
    (download,) = _uses(merge_job, "actions/download-artifact")
    collector = _machine(tmp_path, "merger", manifest)
    exit_codes = []
    for index in shard_job["strategy"]["matrix"]["shard"]:
        context = {"matrix.shard": index, "strategy.job-total": str(total)}
        step_env = {k: _expand(v, context) for k, v in run_step["env"].items()}
        home = _machine(tmp_path, f"machine-{index}", manifest)
        done, outputs = _bash(run_step["run"], home, {**base, **step_env})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        exit_codes.append(outputs["exit_code"])
        name = _expand(upload["with"]["name"], context)
        _upload(home / outputs["results"], collector / download["with"]["path"] / name)
    # the demo fault in factories lands in one shard: the exit-1 path is exercised
    assert sorted(exit_codes) == ["0", "0", "1"]

    done, _ = _bash(_step(merge_job, "merge")["run"], collector, base)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]

    alone = _machine(tmp_path, "unsharded", manifest)
    options = ["--results", "results", "--quiet", "--json"]
    command = ["torchcts-run", "--manifest", manifest, *SELECTION.split(), *options]
    ran = subprocess.run(
        command, cwd=alone, env=base, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 1, ran.stderr[-3000:]
    unsharded = load_result(alone / json.loads(ran.stdout)["results"])
    merged = load_result(collector / "merged")

    per_shard = [
        load_result(p) for p in sorted((collector / download["with"]["path"]).iterdir())
    ]
    assert all(shard.records for shard in per_shard)  # every shard ran something
    assert sum(len(shard.records) for shard in per_shard) == len(unsharded.records)
    assert len(unsharded.records) >= 15
    assert _case_for_case(merged) == _case_for_case(unsharded)
    assert merged.metadata.counts == unsharded.metadata.counts
    assert merged.metadata.outside == unsharded.metadata.outside != {}
    assert merged.metadata.completed_normally is True
    assert "missing_shards" not in merged.diagnostics

    (archive,) = (collector / "submission").glob("torchcts-results-*.zip")
    verified = subprocess.run(
        ["torchcts-evidence", "verify", str(archive)],
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert merged.metadata.run_key in verified.stdout
