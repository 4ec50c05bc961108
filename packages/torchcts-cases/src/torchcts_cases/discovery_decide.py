"""Dtype discovery, step 3: the `DTYPES` and `OPS` a probe's evidence supports.

Only a *declaration* is ever proposed away: an (op, dtype) pair leaves the claims when
every sample the probe executed raised unsupported / not implemented. A pair whose
samples failed, erred or crashed keeps its claim (the device has a kernel; a wrong one
is a bug the run must go on reporting), and so does one that is only partly
unsupported (say, backward alone): the manifest has no per-variant dtype syntax.

Per dtype, in this order:

1. Not probed: the manifest's value stays.
2. A whole probe (no ``--op``): the evidence alone decides. No op declared
   unsupported: ``True``. No op with a kernel: ``False``. Otherwise a regex: of the
   exceptions (``(?!(?:a|b)$).*``) when the ops with a kernel are at least as many as
   the unsupported ones, else of the ops with a kernel (``c|d``).
3. A probe of some ops (``--op``): the manifest's value, amended for the probed ops
   only, so ops the probe did not reach keep their claim.

An op unsupported in every dtype it was probed in, and in at least two, goes to
``OPS.exclude`` instead, when every dtype the proposal claims was probed (else an
unprobed dtype might have a kernel) and the op's name is not the OpInfo name of other
ops (a glob matches names).

A regex claims an op by its segment *or* its OpInfo name (`dtype_claims`), so
``round`` cannot be claimed while ``round.decimals_3`` is not. Such pairs are resolved
towards claiming (the run then shows them unsupported, nothing is hidden) and listed
as `DtypeDecision.inexpressible`. No torch: the op names come in as a mapping.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from torchcts_schema import DTYPE_NAMES, dtype_claims

from torchcts_cases.discovery_evidence import DECLARED, HAS_KERNEL, Cell, Verdict

Support = bool | str
# evidence in one dtype cannot tell "no kernel at all" from "none in this dtype"
MIN_DTYPES_FOR_OPS = 2


@dataclass(frozen=True)
class DtypeDecision:
    """One dtype: what the manifest claims, what the evidence supports, and why."""

    dtype: str
    claimed: Support
    proposed: Support
    probed: bool
    works: tuple[str, ...] = ()  # every executed sample passed
    kept: tuple[str, ...] = ()  # a kernel with problems, or partly unsupported
    declared: tuple[str, ...] = ()  # unsupported, no longer claimed by `proposed`
    in_ops: tuple[str, ...] = ()  # unsupported, excluded through OPS.exclude instead
    inexpressible: tuple[str, ...] = ()  # unsupported, but `proposed` still claims it
    untested: tuple[str, ...] = ()  # probed, nothing executed

    @property
    def has_evidence(self) -> bool:
        """Did some probed op of this dtype execute a sample?"""
        return bool(
            self.works
            or self.kept
            or self.declared
            or self.in_ops
            or self.inexpressible
        )


@dataclass(frozen=True)
class OpExclusion:
    """An op unsupported in every dtype it was probed in."""

    op: str
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Proposal:
    """The decisions of one probe; `dtypes` in `DTYPE_NAMES` order."""

    dtypes: tuple[DtypeDecision, ...]
    exclusions: tuple[OpExclusion, ...]
    subset: bool

    def proposed_dtypes(self) -> dict[str, Support]:
        """The proposed ``DTYPES``: a dtype that stays False is listed only when the
        manifest named it or the probe found evidence in it."""
        return {
            d.dtype: d.proposed
            for d in self.dtypes
            if d.proposed is not False or d.claimed is not False or d.has_evidence
        }


def decide(
    cells: Mapping[tuple[str, str], Cell],
    names: Mapping[str, str],
    claimed: Mapping[str, Support],
    probed: Iterable[str],
    *,
    subset: bool,
) -> Proposal:
    """The proposal for `cells` (`collect_cells`); `names` maps every op segment of
    this torch to its OpInfo name; `probed` are the dtypes the probe covered."""
    probed_set = set(probed)
    by_dtype: dict[str, dict[str, Cell]] = {}
    for (op, dtype), cell in cells.items():
        by_dtype.setdefault(dtype, {})[op] = cell
    wanted = [d for d in DTYPE_NAMES if d in probed_set or d in claimed]

    def one(dtype: str, moved: frozenset[str]) -> DtypeDecision:
        claim = claimed.get(dtype, False)
        if dtype not in probed_set:
            return DtypeDecision(dtype, claim, claim, probed=False)
        return _decide_dtype(
            dtype, by_dtype.get(dtype, {}), names, claim, subset, moved
        )

    first = {d: one(d, frozenset()) for d in wanted}
    exclusions = _exclusions(cells, names, first, probed_set)
    moved = frozenset(e.op for e in exclusions)
    decisions = []
    for dtype in wanted:
        decision = one(dtype, moved) if moved else first[dtype]
        if first[dtype].proposed is False and decision.proposed is not False:
            # the ops that made the dtype unsupported moved to OPS; it still is
            decision = _with(decision, proposed=False)
        decisions.append(decision)
    return Proposal(tuple(decisions), exclusions, subset)


def _exclusions(
    cells: Mapping[tuple[str, str], Cell],
    names: Mapping[str, str],
    first: Mapping[str, DtypeDecision],
    probed: set[str],
) -> tuple[OpExclusion, ...]:
    if any(d.proposed is not False and d.dtype not in probed for d in first.values()):
        return ()
    by_op: dict[str, list[Cell]] = {}
    for (op, _dtype), cell in cells.items():
        by_op.setdefault(op, []).append(cell)
    named = {name for segment, name in names.items() if segment != name}
    out = []
    for op, op_cells in sorted(by_op.items()):
        if op in named:  # a glob of it would exclude other ops (its variants) too
            continue
        if len(op_cells) >= MIN_DTYPES_FOR_OPS and all(
            c.verdict in DECLARED for c in op_cells
        ):
            out.append(OpExclusion(op, tuple(sorted({c.dtype for c in op_cells}))))
    return tuple(out)


@dataclass
class _Form:
    """A DTYPES value in parts: claimed when (`base` claims it or its segment is in
    `plus`) and not (segment and OpInfo name both in `minus`)."""

    base: Support
    plus: set[str]
    minus: set[str]

    def value(self) -> Support:
        neg = f"(?!(?:{_alternation(self.minus)})$)" if self.minus else ""
        if self.base is True:
            return f"{neg}.*" if neg else True
        parts = ([self.base] if isinstance(self.base, str) else []) + [
            re.escape(op) for op in sorted(self.plus)
        ]
        if not parts:
            return False
        if neg:
            return f"{neg}(?:{'|'.join(parts)})"
        if len(parts) == 1 or not isinstance(self.base, str):
            return "|".join(parts)
        return "|".join(f"(?:{p})" if i == 0 else p for i, p in enumerate(parts))


def _alternation(ops: Iterable[str]) -> str:
    return "|".join(re.escape(op) for op in sorted(ops))


def _decide_dtype(
    dtype: str,
    cells: Mapping[str, Cell],
    names: Mapping[str, str],
    claim: Support,
    subset: bool,
    moved: frozenset[str],
) -> DtypeDecision:
    verdicts = {op: cell.verdict for op, cell in cells.items()}
    kernel = {op for op, v in verdicts.items() if v in HAS_KERNEL}
    unsupported = {op for op, v in verdicts.items() if v in DECLARED} - moved
    form = _form(claim, kernel, unsupported, names, subset)
    intent = _intent(claim, kernel, unsupported, names, subset, verdicts)
    _resolve(form, intent, names, unsupported)
    _minimise(form, intent, names)
    value = form.value()
    claims = re.compile(value) if isinstance(value, str) else value
    still = {u for u in unsupported if dtype_claims(claims, u, names.get(u, u))}
    return DtypeDecision(
        dtype,
        claim,
        value,
        probed=True,
        works=_ops(verdicts, {Verdict.WORKS}),
        kept=_ops(verdicts, {Verdict.PARTIAL, Verdict.FAULTY}),
        declared=tuple(sorted(unsupported - still)),
        in_ops=tuple(sorted(moved & set(verdicts))),
        inexpressible=tuple(sorted(still)),
        untested=_ops(verdicts, {Verdict.UNTESTED}),
    )


def _ops(verdicts: Mapping[str, Verdict], which: set[Verdict]) -> tuple[str, ...]:
    return tuple(sorted(op for op, v in verdicts.items() if v in which))


def _form(
    claim: Support,
    kernel: set[str],
    unsupported: set[str],
    names: Mapping[str, str],
    subset: bool,
) -> _Form:
    minus = _minus(unsupported, names)
    if not subset:
        if not unsupported and not kernel:
            return _Form(claim, set(), set())
        if not unsupported:
            return _Form(True, set(), set())
        if not kernel or len(kernel) < len(unsupported):
            return _Form(False, set(kernel), set())
        return _Form(True, set(), minus)
    if claim is True:
        return _Form(True, set(), minus)
    listed = set() if claim is False else _listed_names(claim)
    if listed is not None:  # False, or a plain list of names: rebuilt as a list
        return _Form(False, (listed - unsupported) | kernel, minus)
    assert isinstance(claim, str)
    rx = re.compile(claim)
    plus = {k for k in kernel if not dtype_claims(rx, k, names.get(k, k))}
    return _Form(claim, plus, minus)


_NAME_LIST = re.compile(r"\^?\((?:\?:)?(?P<inner>[^()]*)\)\$?|(?P<bare>[^()]*)")
_LISTED_NAME = re.compile(r"(?:[A-Za-z0-9_]|\\[.-])+")


def _listed_names(claim: str) -> set[str] | None:
    """The names of a regex that is only a list of them (``add|mul``,
    ``^(add|sub)$``), else None: such a regex claims exactly the ops whose segment
    or name is listed, as a set of names would."""
    whole = _NAME_LIST.fullmatch(claim)
    if whole is None:
        return None
    inner = whole.group("inner") if whole.group("inner") is not None else claim
    words = inner.split("|")
    if not all(_LISTED_NAME.fullmatch(w) for w in words):
        return None
    return {w.replace("\\", "") for w in words}


def _minus(unsupported: set[str], names: Mapping[str, str]) -> set[str]:
    """Both the segment and the OpInfo name of each op: a regex excludes an op only
    when it matches neither."""
    return unsupported | {names.get(u, u) for u in unsupported}


def _intent(
    claim: Support,
    kernel: set[str],
    unsupported: set[str],
    names: Mapping[str, str],
    subset: bool,
    verdicts: Mapping[str, Verdict],
) -> dict[str, bool]:
    """Which ops the value must claim (True) or must not (False); others are free."""
    intent: dict[str, bool] = {}
    if subset:  # ops the probe did not reach keep the manifest's claim
        rx = re.compile(claim) if isinstance(claim, str) else claim
        for op, name in names.items():
            if op not in verdicts:
                intent[op] = dtype_claims(rx, op, name)
    intent.update({op: True for op in kernel})
    intent.update({op: False for op in unsupported})
    return intent


def _resolve(
    form: _Form,
    intent: Mapping[str, bool],
    names: Mapping[str, str],
    unsupported: set[str],
) -> None:
    """Drop from `form.minus` every name that unclaims an op that must stay claimed.

    A name in `minus` (added for an unsupported variant) also unclaims the plain op of
    that name; claiming wins, and the variant is then listed as inexpressible.
    """
    changed = True
    while changed:
        changed = False
        value = form.value()
        claims = re.compile(value) if isinstance(value, str) else value
        for op, wanted in sorted(intent.items()):
            if not wanted or dtype_claims(claims, op, names.get(op, op)):
                continue
            for word in (op, names.get(op, op)):
                if word in form.minus and word not in unsupported:
                    form.minus.discard(word)
                    changed = True
            if changed:
                break


def _minimise(
    form: _Form, intent: Mapping[str, bool], names: Mapping[str, str]
) -> None:
    """Drop every word of `form.minus` the value claims the same ops without (an
    unsupported op that the list no longer names needs no exception)."""
    for word in sorted(form.minus):
        form.minus.discard(word)
        value = form.value()
        claims = re.compile(value) if isinstance(value, str) else value
        if any(
            dtype_claims(claims, op, names.get(op, op)) != wanted
            for op, wanted in intent.items()
        ):
            form.minus.add(word)


def _with(decision: DtypeDecision, *, proposed: Support) -> DtypeDecision:
    return replace(decision, proposed=proposed)


__all__ = ["DtypeDecision", "OpExclusion", "Proposal", "Support", "decide"]
