"""Rewrite the per-level case counts of the areas table in README.md and in
packages/torchcts-cases/README.md from the cases of the installed torch.

    bin/python tools/area_table.py          # rewrite the counts in place
    bin/python tools/area_table.py --check  # exit 1 naming each stale row

A row is ``| area | what it checks | judged against | level 1 ... 8 | total |``; the
three text cells are written by hand and kept. An area without a row (a new suite) is
an error naming it: its description is for a person to write.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torchcts_cases.area_counts import LEVELS, area_level_counts

ROOT = Path(__file__).resolve().parents[1]
READMES = (ROOT / "README.md", ROOT / "packages" / "torchcts-cases" / "README.md")
HEADER = (
    "| area (suite) | what it checks | judged against | "
    + " | ".join(f"level {n}" if n == 1 else str(n) for n in LEVELS)
    + " | total |"
)
CELLS = 3 + len(LEVELS) + 1


def _row_cells(line: str) -> list[str] | None:
    """The cells of an areas-table data row, or None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("|") or not stripped.endswith("|"):
        return None
    cells = [cell.strip() for cell in stripped[1:-1].split("|")]
    if len(cells) != CELLS or not all(c.isdigit() for c in cells[3:]):
        return None
    return cells


def rewrite(text: str, counts: dict[str, dict[int, int]]) -> tuple[str, list[str]]:
    """`text` with every row's counts from `counts`, and the problems found."""
    lines = text.splitlines(keepends=True)
    seen: set[str] = set()
    problems: list[str] = []
    for i, line in enumerate(lines):
        cells = _row_cells(line)
        if cells is None:
            continue
        area = cells[0]
        if area not in counts:
            problems.append(f"row {area!r} names no area of the installed torch")
            continue
        seen.add(area)
        per_level = [counts[area].get(n, 0) for n in LEVELS]
        numbers = [str(n) for n in (*per_level, sum(per_level))]
        lines[i] = "| " + " | ".join([*cells[:3], *numbers]) + " |\n"
    for area in counts:
        if area not in seen:
            problems.append(f"area {area!r} has no row: add one with its description")
    return "".join(lines), problems


def main(argv: list[str]) -> int:
    """Rewrite (or with --check, compare) both READMEs' areas tables."""
    check = "--check" in argv
    counts = {k: dict(v) for k, v in area_level_counts().items()}
    status = 0
    for path in READMES:
        text = path.read_text(encoding="utf-8")
        if HEADER not in text:
            print(f"{path.relative_to(ROOT)}: no areas table header {HEADER!r}")
            status = 1
            continue
        new, problems = rewrite(text, counts)
        for problem in problems:
            print(f"{path.relative_to(ROOT)}: {problem}")
            status = 1
        if new != text:
            if check:
                print(f"{path.relative_to(ROOT)}: areas table counts are stale")
                status = 1
            else:
                path.write_text(new, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
