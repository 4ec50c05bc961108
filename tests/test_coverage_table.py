"""The READMEs' coverage figures are those of the packaged trace of the installed
torch, and the tool that rewrites them touches only its marked block."""

from __future__ import annotations

from types import ModuleType

from script_module import load_script


def _tool() -> ModuleType:
    return load_script("tools/coverage_table.py")


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
