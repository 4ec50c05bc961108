"""Dtype discovery's decisions, from hand-made evidence (no torch, no run).

Every proposed DTYPES value is checked against the op set it must claim, through
`dtype_claims`, the rule selection uses: so a regex that reads right but selects the
wrong ops fails here.
"""

from __future__ import annotations

from typing import Any

import pytest
from torchcts_cases.discovery_decide import Proposal, decide
from torchcts_cases.discovery_evidence import Cell, Verdict
from torchcts_schema import dtype_claims

# op segment -> OpInfo name; round and max have variants, as in OpInfo
NAMES = {
    "add": "add",
    "mul": "mul",
    "sin": "sin",
    "cos": "cos",
    "exp": "exp",
    "where": "where",
    "round": "round",
    "round.decimals_3": "round",
    "max.binary": "max",
    "max.reduction_with_dim": "max",
}
PASS = {"forward": {"passed": 2}, "backward": {"passed": 2}}
UNSUP = {"forward": {"unsupported": 2}, "backward": {"unsupported": 2}}


def _cells(table: dict[str, dict[str, Any]]) -> dict[tuple[str, str], Cell]:
    """{"float16": {"add": PASS, ...}} -> cells."""
    return {
        (op, dtype): Cell(op, dtype, counts)
        for dtype, ops in table.items()
        for op, counts in ops.items()
    }


def _claimed(proposal: Proposal, dtype: str) -> set[str]:
    (decision,) = [d for d in proposal.dtypes if d.dtype == dtype]
    return {
        op for op, name in NAMES.items() if dtype_claims(decision.proposed, op, name)
    }


@pytest.mark.parametrize(
    ("counts", "verdict"),
    [
        (PASS, Verdict.WORKS),
        (UNSUP, Verdict.UNSUPPORTED),
        ({"forward": {"passed": 2}, "backward": {"unsupported": 2}}, Verdict.PARTIAL),
        ({"forward": {"passed": 1, "failed": 1}}, Verdict.FAULTY),
        ({"forward": {"unsupported": 1, "crashed": 1}}, Verdict.PARTIAL),
        ({"forward": {"crashed": 2}}, Verdict.FAULTY),
        ({"forward": {"not_run": 2, "skipped": 1}}, Verdict.UNTESTED),
        ({"forward": {"unsupported": 2, "not_run": 1}}, Verdict.UNSUPPORTED),
    ],
)
def test_cell_verdict(counts: dict[str, dict[str, int]], verdict: Verdict) -> None:
    """Unsupported only when every executed sample is; not_run never counts."""
    assert Cell("add", "float16", counts).verdict is verdict


def test_counts_text_lists_each_variant_in_legend_order() -> None:
    """passed/failed/unsupported/error/crashed per variant, forward first."""
    cell = Cell(
        "add",
        "float16",
        {
            "backward": {"error": 1, "crashed": 1},
            "forward": {"passed": 1, "unsupported": 1, "not_run": 3},
        },
    )
    assert cell.counts_text() == "forward 1/0/1/0/0 (+3 not run), backward 0/0/0/1/1"


def test_whole_probe_all_working_claims_the_dtype() -> None:
    """A dtype the manifest left out becomes True when every probed op works."""
    cells = _cells({"float16": {"add": PASS, "mul": PASS}})
    proposal = decide(cells, NAMES, {"float32": True}, ["float16"], subset=False)
    (f16,) = [d for d in proposal.dtypes if d.dtype == "float16"]
    assert (f16.claimed, f16.proposed, f16.works) == (False, True, ("add", "mul"))
    assert proposal.proposed_dtypes() == {"float16": True, "float32": True}


def test_whole_probe_nothing_working_unclaims_the_dtype() -> None:
    """Every probed op unsupported: False, whatever the manifest claimed."""
    cells = _cells({"float16": {"add": UNSUP, "mul": UNSUP}, "float32": {"add": PASS}})
    proposal = decide(
        cells, NAMES, {"float16": True}, ["float16", "float32"], subset=False
    )
    assert proposal.proposed_dtypes()["float16"] is False


def test_whole_probe_broad_support_lists_the_exceptions() -> None:
    """Mostly working: a regex of exceptions, claiming every other op (even ones
    the probe had no evidence for)."""
    cells = _cells(
        {"float16": {"add": PASS, "mul": PASS, "exp": PASS, "sin": UNSUP, "cos": UNSUP}}
    )
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    assert proposal.proposed_dtypes()["float16"] == r"(?!(?:cos|sin)$).*"
    assert _claimed(proposal, "float16") == set(NAMES) - {"sin", "cos"}
    (f16,) = proposal.dtypes
    assert f16.declared == ("cos", "sin") and f16.inexpressible == ()


def test_whole_probe_narrow_support_lists_the_working_ops() -> None:
    """Mostly unsupported: a regex of the ops with a kernel."""
    cells = _cells({"float16": {"add": PASS, "sin": UNSUP, "cos": UNSUP, "exp": UNSUP}})
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    assert proposal.proposed_dtypes()["float16"] == "add"
    assert _claimed(proposal, "float16") == {"add"}


def test_a_wrong_or_crashing_kernel_stays_claimed() -> None:
    """Failures, errors and crashes are bugs to report, never declared away."""
    faulty = {"forward": {"failed": 1, "crashed": 1}, "backward": {"error": 2}}
    partial = {"forward": {"passed": 2}, "backward": {"unsupported": 2}}
    cells = _cells(
        {"float16": {"add": PASS, "mul": faulty, "exp": partial, "sin": UNSUP}}
    )
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    (f16,) = proposal.dtypes
    assert f16.kept == ("exp", "mul")
    assert _claimed(proposal, "float16") == set(NAMES) - {"sin"}


def test_subset_probe_amends_the_manifest_regex_for_probed_ops_only() -> None:
    """--op: unprobed ops keep the manifest's claim; probed ones follow evidence."""
    claim = "add|sin|round"
    cells = _cells({"float16": {"sin": UNSUP, "mul": PASS, "add": PASS}})
    proposal = decide(cells, NAMES, {"float16": claim}, ["float16"], subset=True)
    # round and its variant stay claimed (unprobed), sin leaves, mul joins
    assert _claimed(proposal, "float16") == {"add", "mul", "round", "round.decimals_3"}


def test_subset_probe_of_a_true_dtype_keeps_unprobed_ops() -> None:
    """A True dtype with one unsupported probed op becomes a regex of that op."""
    cells = _cells({"float16": {"sin": UNSUP, "add": UNSUP, "mul": PASS}})
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=True)
    assert _claimed(proposal, "float16") == set(NAMES) - {"sin", "add"}


def test_an_unsupported_variant_is_excluded_without_its_siblings() -> None:
    """max.binary unsupported, max.reduction_with_dim working: only the first goes."""
    cells = _cells(
        {"float16": {"max.binary": UNSUP, "max.reduction_with_dim": PASS, "add": PASS}}
    )
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    assert _claimed(proposal, "float16") == set(NAMES) - {"max.binary"}


def test_a_variant_of_a_working_plain_op_cannot_be_unclaimed_alone() -> None:
    """round works, round.decimals_3 is unsupported: a regex claiming round claims
    its variants, so the variant stays claimed and is listed as inexpressible."""
    cells = _cells({"float16": {"round": PASS, "round.decimals_3": UNSUP, "add": PASS}})
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    (f16,) = proposal.dtypes
    assert "round" in _claimed(proposal, "float16")
    assert f16.inexpressible == ("round.decimals_3",) and f16.declared == ()


def test_an_op_unsupported_everywhere_goes_to_ops_exclude() -> None:
    """where unsupported in every probed dtype, every claimed dtype probed: OPS."""
    cells = _cells(
        {
            "float16": {"add": PASS, "where": UNSUP, "sin": UNSUP},
            "float32": {"add": PASS, "where": UNSUP, "sin": PASS},
        }
    )
    claimed = {"float16": True, "float32": True}
    proposal = decide(cells, NAMES, claimed, ["float16", "float32"], subset=True)
    assert [(e.op, e.dtypes) for e in proposal.exclusions] == [
        ("where", ("float16", "float32"))
    ]
    # where is OPS's now: DTYPES lists sin alone for float16, float32 stays True
    assert proposal.proposed_dtypes() == {
        "float16": r"(?!(?:sin)$).*",
        "float32": True,
    }
    assert proposal.dtypes[0].in_ops == ("where",)


def test_no_ops_exclude_while_an_unprobed_dtype_is_claimed() -> None:
    """float64 claimed but not probed: where might work there, so DTYPES only."""
    cells = _cells({"float16": {"add": PASS, "where": UNSUP}})
    claimed = {"float16": True, "float64": True}
    proposal = decide(cells, NAMES, claimed, ["float16"], subset=True)
    assert proposal.exclusions == ()
    assert _claimed(proposal, "float16") == set(NAMES) - {"where"}
    assert proposal.proposed_dtypes()["float64"] is True


def test_no_ops_exclude_for_a_name_other_ops_share() -> None:
    """A glob 'round' would exclude round.decimals_3 too: it stays in DTYPES."""
    cells = _cells({"float16": {"round": UNSUP, "round.decimals_3": PASS, "add": PASS}})
    proposal = decide(cells, NAMES, {"float16": True}, ["float16"], subset=False)
    assert proposal.exclusions == ()
    assert _claimed(proposal, "float16") == set(NAMES) - {"round"}


def test_a_dtype_made_unsupported_by_ops_moved_to_ops_stays_false() -> None:
    """Every op of float16 unsupported (and so in OPS): float16 is still False."""
    cells = _cells({"float16": {"where": UNSUP}, "float32": {"where": UNSUP}})
    claimed = {"float16": True, "float32": True}
    proposal = decide(cells, NAMES, claimed, ["float16", "float32"], subset=False)
    assert [e.op for e in proposal.exclusions] == ["where"]
    assert proposal.proposed_dtypes() == {"float16": False, "float32": False}


def test_unprobed_and_untested_dtypes_keep_the_manifest_value() -> None:
    """No evidence, no change."""
    cells = _cells({"float16": {"add": {"forward": {"not_run": 2}}}})
    claimed = {"float16": "add|mul", "bfloat16": True}
    proposal = decide(cells, NAMES, claimed, ["float16"], subset=False)
    assert proposal.proposed_dtypes() == {"float16": "add|mul", "bfloat16": True}
    assert proposal.dtypes[0].untested == ("add",)


def test_subset_probe_rebuilds_a_plain_list_of_names() -> None:
    """simdev's style ``^(add|sin)$``: rebuilt as a plain list, sin out, mul in."""
    cells = _cells({"float16": {"sin": UNSUP, "mul": PASS}})
    claimed = {"float16": "^(add|sin|max)$"}
    proposal = decide(cells, NAMES, claimed, ["float16"], subset=True)
    assert proposal.proposed_dtypes()["float16"] == "add|max|mul"
    assert _claimed(proposal, "float16") == {
        "add",
        "mul",
        "max.binary",
        "max.reduction_with_dim",
    }


def test_subset_probe_keeps_a_pattern_and_adds_exceptions() -> None:
    """A real pattern cannot be rebuilt: it is kept, with exceptions and additions."""
    cells = _cells({"float16": {"max.binary": UNSUP, "mul": PASS}})
    claimed = {"float16": "max.*|round.*"}
    proposal = decide(cells, NAMES, claimed, ["float16"], subset=True)
    assert _claimed(proposal, "float16") == {
        "mul",
        "max.reduction_with_dim",
        "round",
        "round.decimals_3",
    }
