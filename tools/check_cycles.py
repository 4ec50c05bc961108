"""Fail on any import cycle between modules of one package's source.

A cycle worked around with a function-level import still couples the two modules
both ways and makes import order matter; so every import counts here, at module
level or inside a function, under ``TYPE_CHECKING`` or not. Exit status 1 prints each
cycle as ``a -> b -> a`` with the file and line of every edge.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Edge = tuple[str, str, str]  # importer, imported, "file:line"


def module_name(src: Path, path: Path) -> str:
    """``torchcts_runner.controller_hooks`` for ``src/torchcts_runner/control.py``."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def edges(src: Path) -> list[Edge]:
    """Every import from one module of `src` to another module of `src`."""
    modules = {module_name(src, p): p for p in src.rglob("*.py")}
    found: list[Edge] = []
    for name, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{getattr(node, 'lineno', 0)}"
            for target in targets:
                if (
                    target in modules
                    and target != name
                    and not _is_package_root(target, name)
                ):
                    found.append((name, target, where))
    return found


def _is_package_root(target: str, name: str) -> bool:
    # a submodule naming its own package's __init__ is how Python finds siblings
    return name.startswith(target + ".")


def cycles(graph_edges: list[Edge]) -> list[list[Edge]]:
    """Each elementary cycle found by a depth-first search (one per back edge)."""
    graph: dict[str, list[Edge]] = {}
    for edge in graph_edges:
        graph.setdefault(edge[0], []).append(edge)
    found: list[list[Edge]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[Edge] = []

    def visit(node: str) -> None:
        state[node] = 1
        for edge in graph.get(node, []):
            target = edge[1]
            if state.get(target) == 1:
                start = (
                    next(i for i, e in enumerate(stack) if e[0] == target)
                    if any(e[0] == target for e in stack)
                    else len(stack)
                )
                found.append([*stack[start:], edge])
            elif state.get(target) is None:
                stack.append(edge)
                visit(target)
                stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node)
    return found


def check(src_dirs: list[Path]) -> list[str]:
    """Cycle descriptions for every package source directory given."""
    problems = []
    for src in src_dirs:
        for cycle in cycles(edges(src)):
            chain = " -> ".join([cycle[0][0], *(e[1] for e in cycle)])
            where = "; ".join(e[2] for e in cycle)
            problems.append(f"import cycle: {chain} ({where})")
    return problems


def main(argv: list[str]) -> int:
    """Check packages/*/src (or the given src dirs); exit 1 on any cycle."""
    dirs = [Path(a) for a in argv] or sorted(ROOT.glob("packages/*/src"))
    problems = check(dirs)
    for problem in problems:
        print(problem)
    print(f"import cycles: {len(problems)} in {len(dirs)} source tree(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
