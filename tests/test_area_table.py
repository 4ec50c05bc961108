"""The README's areas table is current for the installed torch (OpInfo row included),
and the tool that rewrites it keeps the hand-written cells and names a missing row."""

from __future__ import annotations

from types import ModuleType

from script_module import load_script


def _tool() -> ModuleType:
    return load_script("tools/area_table.py")


def test_the_readmes_areas_tables_are_current() -> None:
    """`tools/area_table.py --check` passes on the committed READMEs."""
    assert _tool().main(["--check"]) == 0


def test_rewrite_keeps_text_cells_and_names_missing_and_unknown_rows() -> None:
    """Counts are replaced from the given numbers; descriptions stay; an area with
    no row and a row with no area are both reported."""
    tool = _tool()
    text = (
        "intro\n"
        "| views | what | property | 9 | 9 | 9 | 9 | 9 | 9 | 9 | 9 | 72 |\n"
        "| gone | old suite | CPU | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1 |\n"
    )
    new, problems = tool.rewrite(text, {"views": {1: 2, 3: 1}, "stress": {7: 4}})
    assert "| views | what | property | 2 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 3 |\n" in new
    assert new.startswith("intro\n")
    assert any("'gone'" in p for p in problems)
    assert any("'stress' has no row" in p for p in problems)
