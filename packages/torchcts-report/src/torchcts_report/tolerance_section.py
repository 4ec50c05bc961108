"""The scorecard's tolerance-override section: widening a tolerance is never silent.

Every manifest override a run judged with is listed with the number of cases judged
under it, and every case that passed only because of it (it fails under the default
tolerance) is flagged by name.
"""

from __future__ import annotations

from collections import Counter

from torchcts_schema import OVERRIDE_SOURCES, CaseRecord, Status, ToleranceSource

from torchcts_report.text import md, md_code, table

MAX_FLAGGED = 50


def tolerance_section(records: list[CaseRecord]) -> str:
    """Markdown for the overrides used, or "" when no case was judged with one."""
    used: Counter[tuple[str, str, str, float, float]] = Counter()
    needed: Counter[tuple[str, str, str, float, float]] = Counter()
    flagged: list[tuple[str, tuple[str, str, str, float, float]]] = []
    for record in records:
        t = record.tolerance
        if t is None or t.source not in OVERRIDE_SOURCES:
            continue
        op = record.op if t.source is ToleranceSource.MANIFEST_OP else "every op"
        key = (t.source.value, op, t.dtype or "-", t.atol, t.rtol)
        used[key] += 1
        if t.override_needed and record.status is Status.PASSED:
            needed[key] += 1
            flagged.append((record.case_id, key))
    if not used:
        return ""
    parts = [
        "## Tolerance overrides",
        "",
        f"{sum(used.values())} judged case(s) used a manifest tolerance override; "
        f"**{len(flagged)} pass only under an override** (they fail under the "
        "default tolerance).",
        "",
        table(
            ["override", "op", "dtype", "atol", "rtol", "cases", "pass only under it"],
            [
                [md(s), md(op), md(d), f"{a:g}", f"{r:g}", str(n), str(needed[k])]
                for k, n in sorted(used.items())
                for s, op, d, a, r in [k]
            ],
        ),
    ]
    if flagged:
        parts += ["", "Cases that pass only under an override:", ""]
        for case_id, (source, op, dtype, atol, rtol) in sorted(flagged)[:MAX_FLAGGED]:
            where = f"{op} {dtype}"
            parts.append(
                f"- {md_code(case_id)}: {md(source)} {md(where)} atol={atol:g} rtol={rtol:g}"
            )
        if len(flagged) > MAX_FLAGGED:
            parts.append(f"- ... and {len(flagged) - MAX_FLAGGED} more")
    return "\n".join(parts)
