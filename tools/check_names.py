"""Fail on a results-dir name or the node prefix spelled by hand in package source.

Every file name a run leaves comes from ``torchcts_schema.ResultsLayout`` and its
constants (``layout.py``), the pytest node prefix from ``NODE_PREFIX`` (``identity.py``)
and the results-dir lock from ``LOCK_NAME`` (``run_lock.py``); a string literal
anywhere else that holds one of those spellings is a second definition that can drift.
Docstrings and other bare string statements are documentation, not names, and are not
checked (comments are not in the syntax tree at all). Exit status 1 lists every
violation as ``file:line: message``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = "use torchcts_schema.ResultsLayout or its constants"
# the spelling, and what to use instead
NAMES: dict[str, str] = {
    "_latest.json": LAYOUT,
    "_journal.jsonl": LAYOUT,
    "_history": LAYOUT,
    "_runlog.txt": LAYOUT,
    "_crashes": LAYOUT,
    "_repros": LAYOUT,
    "_scratch": LAYOUT,
    "_harness_probe_failures": LAYOUT,
    "_opinfo_oracle_failures": LAYOUT,
    "_adaptive_isolation": LAYOUT,
    "_recheck.": LAYOUT,
    ".junit.xml": LAYOUT,
    ".torchcts.lock": "use torchcts_schema.LOCK_NAME",
    "torchcts::": "use torchcts_schema.NODE_PREFIX or node_id_for_case",
}
# the one home of each spelling: (package, module file) -> the spellings it may hold
HOMES: dict[tuple[str, str], frozenset[str]] = {
    ("torchcts_schema", "layout.py"): frozenset(NAMES),
    ("torchcts_schema", "identity.py"): frozenset({"torchcts::"}),
    ("torchcts_schema", "run_lock.py"): frozenset({".torchcts.lock"}),
}


def _not_names(tree: ast.AST) -> set[int]:
    """ids of the string constants that name no file: bare string statements
    (docstrings and the like) and ``__all__`` entries (``"write_history"``)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named_all = any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in targets
            )
            if named_all and node.value is not None:
                skip.update(id(n) for n in ast.walk(node.value))
    return skip


def check_file(path: Path, package: str, shown: Path | str) -> list[str]:
    """Hand-spelled names in one module, as ``file:line: message`` lines."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except SyntaxError as exc:
        return [f"{shown}:{exc.lineno}: cannot parse ({exc.msg})"]
    allowed = HOMES.get((package, path.name), frozenset())
    skip = _not_names(tree)
    problems: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in skip:
            continue
        for name, instead in NAMES.items():
            if name in node.value and name not in allowed:
                problems.append(
                    (
                        node.lineno,
                        f"{shown}:{node.lineno}: {node.value!r} spells {name!r}; {instead}",
                    )
                )
    return [text for _, text in sorted(problems)]


def check(src_dirs: list[Path], exclude: frozenset[str] = frozenset()) -> list[str]:
    """Hand-spelled names in every package under the given src dirs, sorted."""
    problems: list[str] = []
    for src in src_dirs:
        for path in sorted(src.rglob("*.py")):
            package = path.relative_to(src).parts[0]
            if package in exclude:
                continue
            resolved = path.resolve()
            shown = (
                resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else path
            )
            problems += check_file(path, package, shown)
    return problems


def main(argv: list[str]) -> int:
    """Check packages/*/src (or the given src dirs); exit 1 on any hand-spelled name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="*", type=Path, help="src dirs to check")
    parser.add_argument(
        "--exclude-package",
        action="append",
        default=[],
        metavar="NAME",
        help="import name of a package to leave unchecked (repeatable)",
    )
    args = parser.parse_args(argv)
    dirs = args.src or sorted(ROOT.glob("packages/*/src"))
    problems = check(dirs, frozenset(args.exclude_package))
    for problem in problems:
        print(problem)
    print(f"hand-spelled names: {len(problems)} in {len(dirs)} source tree(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
