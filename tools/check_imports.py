"""Enforce the architecture's "may import" column on every package's source.

Each package may import the stdlib, the third-party modules listed for it, and other
TorchCTS packages only through their public root (``torchcts_schema``, never
``torchcts_schema.records``). Only one module of torchcts_cases may touch
``torch.testing._internal``. Exit status 1 lists every violation with file and line.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STDLIB = set(sys.stdlib_module_names)
ALLOWED: dict[str, set[str]] = {
    "torchcts_schema": set(),
    "torchcts_isolate": {"torchcts_schema"},
    "torchcts_report": {"torchcts_schema", "markdown_it"},
    "torchcts_evidence": {"torchcts_schema"},
    "torchcts_simdev": {"torch"},
    "torchcts_cases": {"torchcts_schema", "torch", "numpy", "expecttest"},
    "torchcts_runner": {
        "torchcts_schema",
        "torchcts_cases",
        "torchcts_isolate",
        "torch",
        "pytest",
        "_pytest",
        "xdist",
        "pytest_timeout",
        "pluggy",
        "execnet",
    },
}
INTERNAL_ALLOWED_IN = "opinfo_source.py"


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def check_package(package: str, src: Path) -> list[str]:
    """Violations of one package's import rules, as ``file:line: message`` lines."""
    problems: list[str] = []
    internal_users: list[str] = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        try:
            tree = ast.parse(path.read_text(), str(path))
        except SyntaxError as exc:
            problems.append(f"{rel}:{exc.lineno}: cannot parse ({exc.msg})")
            continue
        for line, name in _imports(tree):
            top = name.split(".")[0]
            if top == package or top in STDLIB or top == "__future__":
                continue
            if top not in ALLOWED[package]:
                problems.append(f"{rel}:{line}: {package} may not import {name}")
            elif top.startswith("torchcts_") and name != top:
                problems.append(
                    f"{rel}:{line}: import {top} through its public root, not {name}"
                )
            if name.startswith("torch.testing._internal"):
                internal_users.append(f"{rel}:{line}")
                if path.name != INTERNAL_ALLOWED_IN or package != "torchcts_cases":
                    problems.append(
                        f"{rel}:{line}: only torchcts_cases/{INTERNAL_ALLOWED_IN} may import {name}"
                    )
    return problems


def main() -> int:
    """Check every package; print violations; exit 1 if any."""
    problems: list[str] = []
    for package in ALLOWED:
        dist = package.replace("_", "-")
        src = ROOT / "packages" / dist / "src" / package
        if src.exists():
            problems += check_package(package, src)
    for problem in problems:
        print(problem)
    print(f"import directions: {len(problems)} violation(s) in {len(ALLOWED)} packages")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
