"""The READMEs' coverage figures are those of the packaged trace of the installed
torch, and the tool that rewrites them touches only its marked block."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "coverage_table", ROOT / "tools" / "coverage_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readmes_coverage_figures_are_current() -> None:
    """`tools/coverage_table.py --check` passes on the committed READMEs."""
    assert _tool().main(["--check"]) == 0


def test_rewrite_replaces_only_the_marked_block() -> None:
    """Text around the markers stays; a README without them is reported (None)."""
    tool = _tool()
    text = f"intro\n{tool.START}old\n{tool.END}after\n"
    assert tool.rewrite(text, "| new |\n") == (
        f"intro\n{tool.START}\n| new |\n\n{tool.END}after\n"
    )
    assert tool.rewrite("no markers\n", "| new |\n") is None
