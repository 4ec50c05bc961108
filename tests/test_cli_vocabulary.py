"""One command-line vocabulary across the five tools (issue #13 item 7).

Every tool answers ``--version`` with ``<tool> <version>``; every ``--help``, of the
tool and of each subcommand, lists the exit codes, gives every option a help text and
shows no reStructuredText markup; the results directory is ``--results`` wherever a
command reads one; the ``--json`` outputs parse and carry the documented keys.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torchcts_cases.cli as cases_cli
import torchcts_evidence.cli as evidence_cli
import torchcts_isolate.cli as isolate_cli
import torchcts_report.cli as report_cli
import torchcts_runner.cli as runner_cli
from torchcts_runner.options import add_options
from torchcts_runner.run_judgement import EXIT_CODES

TOOLS: dict[str, Any] = {
    "torchcts-cases": cases_cli,
    "torchcts-evidence": evidence_cli,
    "torchcts-isolate": isolate_cli,
    "torchcts-report": report_cli,
    "torchcts-run": runner_cli,
}
# ``double backticks``, :role:`x` and :option: are RST; help is read as plain text
RST = re.compile(r"``|:[a-z]+:`|:option:|\.\. [a-z]+::")
RESULTS_READERS = {
    ("torchcts-report", "render"),
    ("torchcts-report", "export-skips"),
    ("torchcts-evidence", "archive"),
    ("torchcts-evidence", "backend-pack"),
    ("torchcts-evidence", "crash-candidate"),
    ("torchcts-isolate", "adaptive"),
    ("torchcts-cases", "coverage"),
}


def _parsers(tool: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """The tool's parser and one per subcommand."""
    top: argparse.ArgumentParser = TOOLS[tool]._parser()
    found = [("", top)]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += sorted(action.choices.items())
    return found


def _exit(main: Callable[[list[str]], int], argv: list[str], capsys: Any) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    return str(capsys.readouterr().out)


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_version_names_tool_and_version(tool: str, capsys: Any) -> None:
    """``--version`` prints ``<tool> 0.1.0`` and exits 0."""
    assert _exit(TOOLS[tool].main, ["--version"], capsys).strip() == f"{tool} 0.1.0"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_help_lists_exit_codes_without_rst(tool: str, capsys: Any) -> None:
    """The tool's and each subcommand's --help list exit codes and hold no RST."""
    for name, _parser in _parsers(tool):
        text = _exit(TOOLS[tool].main, [*([name] if name else []), "--help"], capsys)
        assert "exit codes:\n" in text, (tool, name)
        assert re.search(r"^\s+0  ", text, re.M), (tool, name)
        assert not RST.search(text), (tool, name, RST.search(text))


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_option_has_help_text(tool: str) -> None:
    """No option or positional is shown in --help without a help text."""
    for name, parser in _parsers(tool):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, (tool, name, action.option_strings or action.dest)


@pytest.mark.parametrize(("tool", "command"), sorted(RESULTS_READERS))
def test_results_dir_is_spelled_results(tool: str, command: str) -> None:
    """Every command that reads a results directory takes it as --results DIR."""
    parser = dict(_parsers(tool))[command]
    options = {o for a in parser._actions for o in a.option_strings}
    assert "--results" in options


def test_run_help_lists_its_options_before_pytest(capsys: Any) -> None:
    """torchcts-run --help shows its own options, then the pytest pass-through."""
    text = _exit(runner_cli.main, ["--help"], capsys)
    flags = ["--level", "--dtype", "--op", "--suite", "--shard", "--resume"]
    flags += ["--isolate", "--validation", "--fail-on", "--junit-all", "--json"]
    for flag in flags:
        assert f"\n  {flag}" in text, flag
    assert text.index("--fail-on") < text.index("Other arguments go to pytest")


def test_readmes_list_the_exit_codes_run_help_lists() -> None:
    """The README's exit statuses and the runner README's table name exactly the codes
    of `torchcts-run --help` (EXIT_CODES)."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    listed = readme.split("(what `make run` calls) exits with the run's status", 1)[1]
    listed = listed.split("`bin/torchcts-run --help` lists them", 1)[0]
    assert {int(n) for n in re.findall(r"\b\d+\b", listed)} == set(EXIT_CODES)
    runner = (root / "packages" / "torchcts-runner" / "README.md").read_text()
    rows = re.findall(r"^\| ([\d, ]+) \|", runner, re.M)
    assert {int(n) for row in rows for n in row.split(",")} == set(EXIT_CODES)


class _Group:
    """Records the options the plugin registers, as pytest's group would."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))


class _Parser:
    def __init__(self) -> None:
        self.group = _Group()

    def getgroup(self, name: str, description: str = "") -> _Group:
        return self.group


def test_pytest_options_have_plain_help() -> None:
    """Each plugin option has plain-text help (or is hidden) and --results/--junit-all."""
    parser = _Parser()
    add_options(parser)  # type: ignore[arg-type]
    names = {n for names, _ in parser.group.options for n in names}
    assert {"--results", "--junit-all", "--level", "--op"} <= names
    for names, kwargs in parser.group.options:
        text = kwargs.get("help")
        assert text, names
        assert not RST.search(text), (names, text)


def test_show_skips_json(tmp_path: Path, capsys: Any) -> None:
    """show-skips --json prints one object with the counts per not_run reason."""
    manifest = tmp_path / "m.py"
    manifest.write_text('DEVICE = "cpu"\nDTYPES = {"float32": True}\n')
    argv = ["show-skips", "--manifest", str(manifest), "--op", "add", "--json"]
    assert cases_cli.main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {
        "manifest",
        "device",
        "level",
        "runnable",
        "not_run",
        "not_run_by_reason",
    }
    assert data["device"] == "cpu" and data["runnable"] > 0
    assert data["not_run"] == sum(data["not_run_by_reason"].values())


def test_coverage_report_json(tmp_path: Path, capsys: Any) -> None:
    """coverage report --json prints the stored summary as JSON."""
    summary = {
        "torch_version": "2.13.0",
        "overloads": 3,
        "counts": {"covered_by_opinfo": 1, "unknown": 2},
        "excluded_by_reason": {},
    }
    folder = tmp_path / "coverage"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    argv = ["coverage", "report", "--results", str(tmp_path), "--json"]
    assert cases_cli.main(argv) == 0
    assert json.loads(capsys.readouterr().out) == summary


def test_isolate_audit_json(tmp_path: Path, capsys: Any) -> None:
    """isolate audit --json lists rules, matches and problems as one object."""
    ledger = tmp_path / "known_segfaults.json"
    ledger.write_text('{"version": 1, "rules": []}')
    argv = ["audit", "--ledger", str(ledger), "--no-packaged", "--json"]
    code = isolate_cli.main(argv)
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(data) == {"rules", "cases", "matches", "not_checked", "warnings"} | {
        "errors"
    }
    assert data["rules"] == 0 and data["errors"] == []
