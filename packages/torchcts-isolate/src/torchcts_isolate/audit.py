"""``torchcts-isolate audit``: check every known-crash rule and show what it matches.

The list of known cases comes from a file, so the audit needs no torch: one case id per
line (``#`` comments allowed), a JSON list of case ids or of `CaseSpec` dicts (with
``dtype`` and ``surfaces``), a JSON object with a ``cases`` list, or JSON lines of
`CaseSpec` dicts. ``torchcts-cases list`` output and the generated-case files under
``results/coverage/`` are such files. A malformed rule, a duplicate id, or a rule that
matches no listed case is an error with its file, index and id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts_schema import (
    ArtifactError,
    backend_matches,
    case_id_for_node,
    node_id_for_case,
    split_case_id,
)

from torchcts_isolate.ledger import Ledger, LedgerRule


@dataclass(frozen=True)
class KnownCase:
    """What the audit needs to know about a case."""

    case_id: str
    dtype: str | None
    surfaces: tuple[str, ...] = ()


@dataclass
class AuditResult:
    """Per rule: the cases it matches, or why it was not checked; plus errors."""

    matches: dict[str, list[str]] = field(default_factory=dict)
    not_checked: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def load_case_list(path: Path) -> list[KnownCase]:
    """Read a case list in any of the accepted forms; bad input names the file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ArtifactError(path, f"cannot read case list ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ArtifactError(path, "case list is not UTF-8 text") from None
    stripped = text.lstrip()
    items: list[Any]
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(text)
            items = data["cases"] if isinstance(data, dict) else data
        except json.JSONDecodeError:
            items = _json_lines(text, path)
        except RecursionError:
            raise ArtifactError(path, "not valid JSON (nested too deeply)") from None
        except KeyError:
            raise ArtifactError(path, "JSON object without a 'cases' list") from None
    else:
        items = [
            line.strip()
            for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    if not isinstance(items, list):
        raise ArtifactError(path, "'cases' must be a list")
    return [_case(item, path, n) for n, item in enumerate(items)]


def audit(ledger: Ledger, cases: list[KnownCase] | None, **context: Any) -> AuditResult:
    """Match every rule against ``cases`` (None: validation only).

    ``context`` may hold ``backend``, ``torch_version`` and ``hardware_key``; a rule
    for another backend is reported as not checked rather than as matching nothing.
    """
    result = AuditResult()
    backend = context.get("backend")
    for item in ledger.rules:
        label = _label(item)
        rule = item.rule
        if item.rule.review_due():
            result.warnings.append(
                f"{label}: review_after {rule.review_after} has passed; re-check it"
            )
        if cases is None:
            result.not_checked[label] = "no case list given"
            continue
        if backend is not None and not backend_matches(rule.backend, backend):
            result.not_checked[label] = f"for backend {rule.backend!r}, not {backend!r}"
            continue
        found = [
            case.case_id
            for case in cases
            if rule.matches(
                case_id=case.case_id,
                node_id=node_id_for_case(case.case_id),
                surfaces=case.surfaces,
                dtype=case.dtype,
                torch_version=context.get("torch_version"),
                hardware_key=context.get("hardware_key"),
            )
        ]
        result.matches[label] = found
        if not found:
            hint = ""
            if rule.surface is not None and not any(c.surfaces for c in cases):
                hint = "; the case list carries no surfaces (list CaseSpec dicts)"
            result.errors.append(
                f"{label}: matches no listed case ({rule.match_kind} "
                f"{getattr(rule, rule.match_kind)!r}{hint})"
            )
    return result


def _label(item: LedgerRule) -> str:
    return f"{item.source}: rule {item.index} (id {item.rule.id!r})"


def _json_lines(text: str, path: Path) -> list[Any]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ArtifactError(
                    path, f"line {number}: neither JSON nor JSON lines ({exc.msg})"
                ) from None
            except RecursionError:
                raise ArtifactError(
                    path, f"line {number}: not valid JSON (nested too deeply)"
                ) from None
    return out


def _case(item: Any, path: Path, index: int) -> KnownCase:
    if isinstance(item, str):
        case_id = case_id_for_node(item) or item
        return KnownCase(case_id, _dtype_of(case_id))
    if isinstance(item, dict) and isinstance(item.get("case_id"), str):
        surfaces = item.get("surfaces") or ()
        if not isinstance(surfaces, list | tuple) or not all(
            isinstance(s, str) for s in surfaces
        ):
            raise ArtifactError(path, f"case {index}: 'surfaces' must be a string list")
        dtype = item.get("dtype", _dtype_of(item["case_id"]))
        return KnownCase(item["case_id"], dtype, tuple(surfaces))
    raise ArtifactError(
        path, f"case {index}: expected a case id or an object with 'case_id'"
    )


def _dtype_of(case_id: str) -> str | None:
    try:
        return split_case_id(case_id)[3]
    except ValueError:
        return None
