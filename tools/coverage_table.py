"""Rewrite the coverage figures in README.md and packages/torchcts-cases/README.md
from the coverage trace packaged for the installed torch (torchcts_cases/coverage_seed/;
a machine's own cache is left out, so every checkout checks against the same trace).

    bin/python tools/coverage_table.py          # rewrite the figures in place
    bin/python tools/coverage_table.py --check  # exit 1 when they are stale

The figures sit between ``<!-- coverage-summary -->`` and ``<!-- /coverage-summary
-->``. Nothing is traced here: without a seed for this torch the tool says so and
exits 1. A seed packaged from a partial build gives figures labelled PARTIAL, with
the number of cases traced. The build's CPU time and whether the catalog changed
since stay out of the README: they depend on the machine and the commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

from torchcts_cases import coverage, coverage_trace

ROOT = Path(__file__).resolve().parents[1]
READMES = (ROOT / "README.md", ROOT / "packages" / "torchcts-cases" / "README.md")
START = "<!-- coverage-summary -->\n"
END = "<!-- /coverage-summary -->\n"


def rewrite(text: str, table: str) -> str | None:
    """`text` with the block between the markers replaced; None without markers."""
    start = text.find(START)
    end = text.find(END, start + len(START))
    if start < 0 or end < 0:
        return None
    return text[: start + len(START)] + "\n" + table + "\n" + text[end:]


def current_table() -> str | None:
    """The summary tables of the packaged trace, None when there is none."""
    trace = coverage_trace.read_seed()
    if trace is None:
        return None
    facts = coverage.trace_facts(trace)
    rows = coverage.audit(trace)
    readme_facts = {key: facts[key] for key in ("cases_traced", "universe", "complete")}
    return coverage.summary_markdown(coverage.summarize(rows, readme_facts))


def main(argv: list[str]) -> int:
    """Rewrite (or with --check, compare) both READMEs' coverage figures."""
    check = "--check" in argv
    table = current_table()
    if table is None:
        print(
            "no packaged coverage trace of the installed torch and case index: "
            "build one (bin/python -m torchcts_cases.coverage_trace), then package it "
            "(--seed)"
        )
        return 1
    status = 0
    for path in READMES:
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, table)
        name = path.relative_to(ROOT)
        if new is None:
            print(f"{name}: no {START.strip()} ... {END.strip()} block")
            status = 1
        elif new != text:
            if check:
                print(f"{name}: coverage figures are stale (tools/coverage_table.py)")
                status = 1
            else:
                path.write_text(new, encoding="utf-8")
                print(f"{name}: coverage figures rewritten")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
