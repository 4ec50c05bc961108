"""Known-crash rules: which cases must run in a child interpreter, and why.

A rule never forgives anything. It only moves matching cases into a subprocess so a
crash there cannot take the run down; the case still gets its honest status. The rules
live in the schema so the isolation package (which applies them) and the evidence
package (which writes accepted candidates) share one validator.

File format (``known_segfaults.json``)::

    {"format": "torchcts-known-crashes", "version": 1, "rules": [
      {"id": "simdev-add-f16", "backend": "simdev",
       "match": {"case_glob": "opinfo/add/*/float16/*"},
       "constraints": {"dtype": "float16", "torch": ">=2.12,<2.14",
                       "hardware_key": "*"},
       "expected_signal": "SIGSEGV", "reason": "...", "owner": "...",
       "repro": "...", "review_after": "2027-01-31",
       "evidence": {"url": "https://github.com/pytorch/pytorch/issues/...",
                    "summary": "one line: what crashed, how"}}]}

A bare list of rules is accepted too. ``match`` holds exactly one of ``case_glob``
(fnmatch on the case id), ``node_id`` (exact pytest node id) or ``surface`` (fnmatch on
an aten overload the case exercises). ``constraints`` is optional; ``torch`` compares
PyTorch *minor families* (``2.13.0+cpu`` is family ``2.13``). ``evidence`` is optional:
the public report a rule rests on (an ``https://`` address and a one-line summary of
the crash there), so a reviewer can check the rule against its source; every rule
TorchCTS ships carries one.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts_schema.errors import ArtifactError
from torchcts_schema.identity import node_id_for_case

KNOWN_CRASH_FORMAT = "torchcts-known-crashes"
KNOWN_CRASH_VERSION = 1
MATCH_KEYS = ("case_glob", "node_id", "surface")
CONSTRAINT_KEYS = ("dtype", "torch", "hardware_key")
RULE_KEYS = (
    "id",
    "backend",
    "match",
    "constraints",
    "expected_signal",
    "reason",
    "owner",
    "repro",
    "review_after",
    "evidence",
)
EVIDENCE_KEYS = ("url", "summary")
_OPTIONAL_KEYS = ("constraints", "evidence")
_REQUIRED_TEXT = ("backend", "reason", "owner", "repro")
_EXPECTED_KINDS = ("timeout", "hang", "subprocess")
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:\-]*")
# every signal name a crash record carries on Linux or macOS, so a ledger written on
# one loads on the other while a misspelt one (SIGFOO, SIGSEV) is refused; and SIG<n>,
# what the isolate writes for a signal number with no name
_SIGNAL_RE = re.compile(
    r"SIG(ABRT|ALRM|BUS|CHLD|CLD|CONT|EMT|FPE|HUP|ILL|INFO|INT|IO|IOT|KILL|LOST|PIPE"
    r"|POLL|PROF|PWR|QUIT|RTMAX|RTMIN|SEGV|STKFLT|STOP|SYS|TERM|TRAP|TSTP|TTIN|TTOU"
    r"|URG|USR1|USR2|VTALRM|WINCH|XCPU|XFSZ|[1-9][0-9]{0,2})"
)
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_URL_RE = re.compile(r"https://[^\s/]+\.[^\s/]+/\S*")
_CLAUSE_RE = re.compile(r"\s*(>=|<=|==|!=|>|<)?\s*(\d+)\.(\d+)\s*")
_VERSION_RE = re.compile(r"\s*v?(\d+)\.(\d+)")


class KnownCrashError(ArtifactError):
    """A ledger that breaks the rule schema; ``problems`` lists every finding."""

    def __init__(self, where: str | Path | None, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(where, "; ".join(problems))


@dataclass(frozen=True, slots=True)
class CrashEvidence:
    """The public report a rule rests on: where it is and what crashed there."""

    url: str  # https:// address of the report (an issue, a pull request)
    summary: str  # one line: the crash the report shows


@dataclass(frozen=True, slots=True)
class KnownCrashRule:
    """One reviewed rule. Exactly one of case_glob, node_id, surface is set."""

    id: str
    backend: str
    expected_signal: str  # "SIGSEGV", "SIGABRT", ... or "timeout" / "hang"
    reason: str
    owner: str
    repro: str
    review_after: str  # YYYY-MM-DD: when a person must look at the rule again
    case_glob: str | None = None
    node_id: str | None = None
    surface: str | None = None
    dtype: str | None = None
    torch: str | None = None  # e.g. ">=2.12,<2.14" (minor families)
    hardware_key: str | None = None  # fnmatch glob on the hardware key
    evidence: CrashEvidence | None = None

    @property
    def match_kind(self) -> str:
        """Which match key the rule uses."""
        return next(k for k in MATCH_KEYS if getattr(self, k) is not None)

    def matches(
        self,
        *,
        case_id: str,
        node_id: str | None = None,
        surfaces: Iterable[str] = (),
        dtype: str | None = None,
        torch_version: str | None = None,
        hardware_key: str | None = None,
        backend: str | None = None,
    ) -> bool:
        """Whether this rule covers a case. Unknown context (None) never excludes:
        a rule only chooses where a case runs, so erring towards isolation is safe."""
        if backend is not None and not backend_matches(self.backend, backend):
            return False
        if self.case_glob is not None and not fnmatch.fnmatchcase(
            case_id, self.case_glob
        ):
            return False
        if self.node_id is not None and self.node_id != (
            node_id if node_id is not None else node_id_for_case(case_id)
        ):
            return False
        if self.surface is not None and not any(
            fnmatch.fnmatchcase(s, self.surface) for s in surfaces
        ):
            return False
        if self.dtype is not None and dtype is not None and dtype != self.dtype:
            return False
        if (
            self.hardware_key is not None
            and hardware_key is not None
            and not fnmatch.fnmatchcase(hardware_key, self.hardware_key)
        ):
            return False
        if self.torch is not None and torch_version is not None:
            family = torch_minor_family(torch_version)
            if family is not None and not torch_spec_contains(self.torch, family):
                return False
        return True

    def review_due(self, today: _dt.date | None = None) -> bool:
        """True once the review-after date has passed."""
        return _dt.date.fromisoformat(self.review_after) < (today or _dt.date.today())


def backend_matches(rule_backend: str, backend: str) -> bool:
    """A rule's backend matches a device type or backend name, case-insensitively;
    ``*`` matches every backend."""
    return rule_backend == "*" or rule_backend.lower() == backend.lower()


def torch_minor_family(version: str) -> tuple[int, int] | None:
    """``"2.13.0+cpu"`` -> ``(2, 13)``; None when the text is not a version."""
    found = _VERSION_RE.match(version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def torch_spec_contains(spec: str, family: tuple[int, int]) -> bool:
    """Whether a minor family satisfies every clause of ``spec`` (">=2.12,<2.14")."""
    return all(_compare(family, op, b) for op, b in _parse_torch_spec(spec))


def rule_to_dict(rule: KnownCrashRule) -> dict[str, Any]:
    """The JSON form of a rule, keys in the documented order (inverse of loading)."""
    out: dict[str, Any] = {
        "id": rule.id,
        "backend": rule.backend,
        "match": {
            k: getattr(rule, k) for k in MATCH_KEYS if getattr(rule, k) is not None
        },
    }
    constraints = {k: getattr(rule, k) for k in CONSTRAINT_KEYS if getattr(rule, k)}
    if constraints:
        out["constraints"] = constraints
    for key in ("expected_signal", "reason", "owner", "repro", "review_after"):
        out[key] = getattr(rule, key)
    if rule.evidence is not None:
        out["evidence"] = {"url": rule.evidence.url, "summary": rule.evidence.summary}
    return out


def rules_to_json(rules: Sequence[KnownCrashRule]) -> str:
    """A whole ledger file's text, deterministic and ready for `write_atomic`."""
    body = {
        "format": KNOWN_CRASH_FORMAT,
        "version": KNOWN_CRASH_VERSION,
        "rules": [rule_to_dict(r) for r in rules],
    }
    return json.dumps(body, indent=2) + "\n"


def rule_from_dict(data: Any, where: str | Path | None = None) -> KnownCrashRule:
    """Validate one rule's JSON form; problems raise `KnownCrashError`."""
    problems = _rule_problems(data, "rule")
    if problems:
        raise KnownCrashError(where, problems)
    return _build(data)


def validate_rules(
    rules: Sequence[KnownCrashRule | dict[str, Any]], where: str | Path | None = None
) -> list[KnownCrashRule]:
    """Check every rule (objects or JSON dicts) and that ids are unique.

    Every problem is collected, each naming the rule index, its id and the key, so one
    run of ``torchcts-isolate audit`` shows them all.
    """
    problems: list[str] = []
    built: list[KnownCrashRule] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(rules):
        data = rule_to_dict(item) if isinstance(item, KnownCrashRule) else item
        label = _label(index, data)
        found = _rule_problems(data, label)
        problems.extend(found)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            rid = data["id"]
            if rid in seen:
                problems.append(
                    f"{label}: key 'id': duplicate id (first used by rule {seen[rid]})"
                )
            else:
                seen[rid] = index
        if not found:
            built.append(_build(data))
    if problems:
        raise KnownCrashError(where, problems)
    return built


def load_known_crash_rules(path: Path | str) -> list[KnownCrashRule]:
    """Read and validate a ledger file. A file that cannot be read as JSON (missing,
    not UTF-8, not JSON) is an `ArtifactError`, one line; a ledger that breaks the
    rule schema is a `KnownCrashError` listing every problem. Tools tell the two
    apart: unreadable input is not a malformed rule."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ArtifactError(path, f"cannot read ledger ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise ArtifactError(path, "ledger is not UTF-8 text") from None
    return parse_known_crash_rules(text, path)


def parse_known_crash_rules(text: str, path: Path | str) -> list[KnownCrashRule]:
    """`load_known_crash_rules` of a ledger's text (errors name `path`)."""
    path = Path(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(
            path, f"line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None
    except RecursionError:
        raise ArtifactError(path, "not valid JSON (nested too deeply)") from None
    return validate_rules(_rule_list(data, path), path)


def _rule_list(data: Any, path: Path) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise KnownCrashError(path, ["top level must be an object or a list of rules"])
    unknown = sorted(set(data) - {"format", "version", "description", "rules"})
    if unknown:
        raise KnownCrashError(path, [f"unknown top-level key {unknown[0]!r}"])
    if data.get("format", KNOWN_CRASH_FORMAT) != KNOWN_CRASH_FORMAT:
        found = data.get("format")
        raise KnownCrashError(
            path, [f"key 'format': expected {KNOWN_CRASH_FORMAT!r}, not {found!r}"]
        )
    if data.get("version", KNOWN_CRASH_VERSION) != KNOWN_CRASH_VERSION:
        raise KnownCrashError(
            path, [f"key 'version': unsupported version {data.get('version')!r}"]
        )
    rules = data.get("rules")
    if not isinstance(rules, list):
        raise KnownCrashError(path, ["key 'rules' must be a list of rules"])
    return rules


def _label(index: int, data: Any) -> str:
    rid = data.get("id") if isinstance(data, dict) else None
    return f"rule {index} (id {rid!r})" if isinstance(rid, str) else f"rule {index}"


def _rule_problems(data: Any, label: str) -> list[str]:
    if not isinstance(data, dict):
        return [f"{label}: must be an object, not {type(data).__name__}"]
    out = [f"{label}: unknown key {k!r}" for k in sorted(set(data) - set(RULE_KEYS))]
    missing = [k for k in RULE_KEYS if k not in _OPTIONAL_KEYS and k not in data]
    out += [f"{label}: key {k!r} is missing" for k in missing]
    rid = data.get("id")
    if "id" in data and not (isinstance(rid, str) and _ID_RE.fullmatch(rid)):
        out.append(f"{label}: key 'id': must match [A-Za-z0-9][A-Za-z0-9_.:-]*")
    for key in _REQUIRED_TEXT:
        if key in data and not (isinstance(data[key], str) and data[key].strip()):
            out.append(f"{label}: key {key!r}: must be a non-empty string")
    signal = data.get("expected_signal")
    if "expected_signal" in data and not (
        isinstance(signal, str)
        and (_SIGNAL_RE.fullmatch(signal) or signal in _EXPECTED_KINDS)
    ):
        out.append(
            f"{label}: key 'expected_signal': {signal!r:.40} is not a signal name "
            f"(SIGSEGV, SIGABRT, ...) or one of {', '.join(_EXPECTED_KINDS)}"
        )
    review = data.get("review_after")
    if "review_after" in data and not _is_date(review):
        out.append(f"{label}: key 'review_after': {review!r} is not a YYYY-MM-DD date")
    if "match" in data:
        out += _match_problems(data["match"], label)
    if "constraints" in data:
        out += _constraint_problems(data["constraints"], label)
    if "evidence" in data:
        out += _evidence_problems(data["evidence"], label)
    return out


def _unknown_keys(
    given: dict[str, Any], name: str, keys: Sequence[str], label: str
) -> list[str]:
    """One line per key of the object `name` that is not one of `keys`."""
    return [
        f"{label}: key '{name}.{k}': unknown (use {', '.join(keys)})"
        for k in sorted(set(given) - set(keys))
    ]


def _evidence_problems(evidence: Any, label: str) -> list[str]:
    if not isinstance(evidence, dict):
        return [f"{label}: key 'evidence': must be an object with url and summary"]
    out = _unknown_keys(evidence, "evidence", EVIDENCE_KEYS, label)
    out += [
        f"{label}: key 'evidence.{k}' is missing"
        for k in EVIDENCE_KEYS
        if k not in evidence
    ]
    url = evidence.get("url")
    if "url" in evidence and not (isinstance(url, str) and _URL_RE.fullmatch(url)):
        out.append(
            f"{label}: key 'evidence.url': {url!r:.60} is not an https:// address"
        )
    summary = evidence.get("summary")
    if "summary" in evidence and not (
        isinstance(summary, str) and summary.strip() and "\n" not in summary
    ):
        out.append(f"{label}: key 'evidence.summary': must be one non-empty line")
    return out


def _match_problems(match: Any, label: str) -> list[str]:
    if not isinstance(match, dict):
        return [f"{label}: key 'match': must be an object with one of {MATCH_KEYS}"]
    unknown = sorted(set(match) - set(MATCH_KEYS))
    if unknown:
        return [f"{label}: key 'match.{unknown[0]}': unknown (use {MATCH_KEYS})"]
    if len(match) != 1:
        return [f"{label}: key 'match': needs exactly one of {', '.join(MATCH_KEYS)}"]
    ((key, value),) = match.items()
    if not isinstance(value, str) or not value.strip():
        return [f"{label}: key 'match.{key}': must be a non-empty string"]
    return []


def _constraint_problems(constraints: Any, label: str) -> list[str]:
    if not isinstance(constraints, dict):
        return [f"{label}: key 'constraints': must be an object"]
    out = _unknown_keys(constraints, "constraints", CONSTRAINT_KEYS, label)
    for key in CONSTRAINT_KEYS:
        value = constraints.get(key)
        if value is not None and not (isinstance(value, str) and value.strip()):
            out.append(f"{label}: key 'constraints.{key}': must be a non-empty string")
    spec = constraints.get("torch")
    if isinstance(spec, str) and spec.strip():
        try:
            _parse_torch_spec(spec)
        except ValueError as exc:
            out.append(f"{label}: key 'constraints.torch': {exc}")
    return out


def _parse_torch_spec(spec: str) -> list[tuple[str, tuple[int, int]]]:
    clauses = []
    for part in spec.split(","):
        found = _CLAUSE_RE.fullmatch(part)
        if not found:
            raise ValueError(
                f"clause {part.strip()!r} is not <op><major>.<minor> "
                f"(ops >=, <=, >, <, ==, !=; versions by minor family like 2.13)"
            )
        op = found.group(1) or "=="
        clauses.append((op, (int(found.group(2)), int(found.group(3)))))
    return clauses


def _compare(family: tuple[int, int], op: str, bound: tuple[int, int]) -> bool:
    return {
        ">=": family >= bound,
        "<=": family <= bound,
        ">": family > bound,
        "<": family < bound,
        "==": family == bound,
        "!=": family != bound,
    }[op]


def _is_date(value: Any) -> bool:
    if not isinstance(value, str) or not _DATE_RE.fullmatch(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _build(data: dict[str, Any]) -> KnownCrashRule:
    match = data["match"]
    constraints = data.get("constraints") or {}
    evidence = data.get("evidence")
    return KnownCrashRule(
        id=data["id"],
        backend=data["backend"],
        expected_signal=data["expected_signal"],
        reason=data["reason"],
        owner=data["owner"],
        repro=data["repro"],
        review_after=data["review_after"],
        case_glob=match.get("case_glob"),
        node_id=match.get("node_id"),
        surface=match.get("surface"),
        dtype=constraints.get("dtype"),
        torch=constraints.get("torch"),
        hardware_key=constraints.get("hardware_key"),
        evidence=(
            CrashEvidence(evidence["url"], evidence["summary"]) if evidence else None
        ),
    )
