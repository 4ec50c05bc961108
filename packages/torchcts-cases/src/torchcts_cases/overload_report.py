"""What the generated overload cases cover, for ``torchcts-cases overloads``: cases
per kind and variant, and every overload no case is generated for, with its reason
(nothing is left out silently)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from torchcts_cases import index


def summary() -> dict[str, Any]:
    """{torch, overloads, generated: {kind: n}, cases: {variant: n},
    not_generated: {overload: {kind, reason}}, skipped_variants: {case: reason}}."""
    import torch

    entries = index.shard(index.OVERLOADS_SHARD)
    generated: Counter[str] = Counter()
    cases: Counter[str] = Counter()
    not_generated: dict[str, dict[str, str]] = {}
    skipped: dict[str, str] = {}
    for name, entry in sorted(entries.items()):
        if "reason" in entry:
            not_generated[name] = {"kind": entry["kind"], "reason": entry["reason"]}
            continue
        generated[entry["kind"]] += 1
        cases.update(entry["variants"])
        for variant, reason in sorted(entry.get("skipped", {}).items()):
            skipped[f"{name}/{variant}"] = reason
    return {
        "torch": torch.__version__,
        "overloads": len(entries),
        "generated": dict(sorted(generated.items())),
        "cases": dict(sorted(cases.items())),
        "not_generated": not_generated,
        "skipped_variants": skipped,
    }


def summary_lines(data: dict[str, Any], *, listing: bool) -> list[str]:
    """The summary as text: counts, reasons by frequency, and with `listing` every
    overload left out and every variant skipped, one line each."""
    lines = [
        f"aten overloads in torch {data['torch']}: {data['overloads']}; "
        f"generated cases for {sum(data['generated'].values())} "
        f"({', '.join(f'{k} {n}' for k, n in data['generated'].items())})",
        "cases by variant: "
        + ", ".join(f"{k} {n}" for k, n in data["cases"].items())
        + f" (total {sum(data['cases'].values())})",
        f"not generated: {len(data['not_generated'])} overloads",
    ]
    reasons = Counter(reason_group(e["reason"]) for e in data["not_generated"].values())
    lines += [f"  {n:>5}  {reason}" for reason, n in reasons.most_common()]
    if listing:
        lines += ["", "overloads without generated cases:"]
        lines += [
            f"  aten::{name} ({e['kind']}): {e['reason']}"
            for name, e in data["not_generated"].items()
        ]
        lines += ["", "variants not generated:"]
        lines += [f"  {case}: {why}" for case, why in data["skipped_variants"].items()]
    return lines


_NAMED = (
    (
        re.compile(
            r"^.*; CPU raises on every schema-built input \(\w+: CPU raises "
            r"NotImplementedError: Could not run .* from the 'CPU' backend.*$"
        ),
        "no captured call, and this torch has no CPU kernel for it",
    ),
    (
        re.compile(r"^.*; CPU raises on every schema-built input .*$"),
        "no captured call, and CPU raises on every schema-built input",
    ),
    (
        re.compile(r"^.*; CPU crashes on a schema-built input .*$"),
        "no captured call, and CPU crashes on a schema-built input",
    ),
    (
        re.compile(r"^.*; its argument '\w+' \(.*\) has no schema-built value$"),
        "no captured call, and an argument has no schema-built value",
    ),
    (
        re.compile(r"^no OpInfo sample calls \S+ or a sibling of it$"),
        "no OpInfo sample calls it or a sibling of it (no call to build inputs from)",
    ),
    (
        re.compile(r"^\S+ supplies no '\w+' for \S+$"),
        "the captured sibling call lacks an argument it requires",
    ),
    (
        re.compile(r"^\S+'s '\w+' does not convert to .*$"),
        "the captured sibling call's argument does not convert to its type",
    ),
    (
        re.compile(r"^no functional overload of \S+ takes its arguments$"),
        "no functional overload takes its arguments",
    ),
    (re.compile(r"^(\w+: )?CPU raises .*"), "CPU itself raises on the captured call"),
)


def reason_group(reason: str) -> str:
    """A reason without the overload names in it, for counting."""
    for pattern, group in _NAMED:
        if pattern.match(reason):
            return group
    return reason
