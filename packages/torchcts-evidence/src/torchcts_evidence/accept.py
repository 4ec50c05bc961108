"""Turn a reviewed crash-candidate packet into a rule in the project's ledger.

The rule is validated by the schema's own known-crash validator together with every
rule already in the ledger, so a duplicate id or an unfinished review is refused and
the ledger on disk is only ever replaced by a valid one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchcts_schema import (
    HostIdentity,
    KnownCrashError,
    KnownCrashRule,
    find_identity,
    load_known_crash_rules,
    rule_to_dict,
    validate_rules,
    write_atomic,
)

from torchcts_evidence.crash import PACKET_FORMAT, PACKET_VERSION
from torchcts_evidence.errors import EvidenceError

LEDGER_FORMAT = "torchcts-known-crashes"
LEDGER_VERSION = 1
REVIEW_FIELDS = ("reason", "owner", "review_after")


def accept_packet(
    packet_path: Path,
    ledger: Path,
    overrides: dict[str, str],
    identity: HostIdentity,
) -> KnownCrashRule:
    """Append the packet's reviewed rule to `ledger`; refusals raise `EvidenceError`."""
    packet = _read_packet(packet_path)
    proposed = packet.get("proposed_rule")
    if not isinstance(proposed, dict):
        raise EvidenceError(f"{packet_path}: the packet has no 'proposed_rule' object")
    rule: dict[str, Any] = {**proposed, **{k: v for k, v in overrides.items() if v}}
    if not rule.get("repro"):
        rule["repro"] = packet.get("repro_command") or ""
    unfilled = [k for k in REVIEW_FIELDS if not str(rule.get(k) or "").strip()]
    if unfilled:
        raise EvidenceError(
            f"{packet_path}: not reviewed yet; fill proposed_rule "
            f"{', '.join(unfilled)} (or pass --{' --'.join(u.replace('_', '-') for u in unfilled)})"
        )
    leaks = find_identity(json.dumps(rule), HostIdentity(*_names(identity)))
    if leaks:
        raise EvidenceError(f"{packet_path}: the rule holds host identity ({leaks[0]})")
    existing = load_known_crash_rules(ledger) if ledger.exists() else []
    if any(r.id == rule.get("id") for r in existing):
        raise EvidenceError(
            f"{ledger}: a rule with id {rule.get('id')!r} already exists; pass --id"
        )
    try:
        rules = validate_rules([*existing, rule], where=ledger)
    except KnownCrashError as exc:
        raise EvidenceError(
            f"{ledger}: the accepted rule is invalid: {'; '.join(exc.problems)}"
        ) from None
    write_atomic(ledger, _ledger_text(ledger, rules))
    return rules[-1]


def _read_packet(path: Path) -> dict[str, Any]:
    try:
        packet = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: cannot read packet ({exc})") from None
    except json.JSONDecodeError as exc:
        raise EvidenceError(
            f"{path}: not JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(packet, dict) or packet.get("format") != PACKET_FORMAT:
        raise EvidenceError(f"{path}: not a crash-candidate packet ({PACKET_FORMAT})")
    if packet.get("format_version") != PACKET_VERSION:
        raise EvidenceError(
            f"{path}: unknown packet format_version {packet.get('format_version')!r}"
        )
    return packet


def _ledger_text(ledger: Path, rules: list[KnownCrashRule]) -> str:
    body: dict[str, Any] = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION}
    if ledger.exists():
        try:
            old = json.loads(ledger.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            old = None
        if isinstance(old, dict) and isinstance(old.get("description"), str):
            body["description"] = old["description"]
    body["rules"] = [rule_to_dict(r) for r in rules]
    return json.dumps(body, indent=2) + "\n"


def _names(
    identity: HostIdentity,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    return identity.host_names, identity.user_names, identity.homes
