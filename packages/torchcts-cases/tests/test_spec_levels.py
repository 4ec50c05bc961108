"""CaseSpec, seeds and semantic levels."""

from __future__ import annotations

from torchcts_cases import LEVEL_DOCS, CaseSpec, case_seed
from torchcts_cases.levels import (
    VARIANT_TIER,
    op_family,
    opinfo_level,
    sample_tier,
    samples_within,
)
from torchcts_schema import ExpectedSource


def test_case_spec_round_trips_through_json() -> None:
    """CaseSpec.to_dict / from_dict is exact."""
    spec = CaseSpec(
        "opinfo/add/forward/float32/0", "opinfo", "add", "forward", "float32", 0, 1,
        ExpectedSource.CPU_REFERENCE, "forward", ("aten::add",),
    )  # fmt: skip
    assert CaseSpec.from_dict(spec.to_dict()) == spec


def test_case_seed_depends_on_the_id() -> None:
    """Different ids give different seeds (cross-process stability: test_select)."""
    assert case_seed("opinfo/add/forward/float32/1") != case_seed(
        "opinfo/add/forward/float32/0"
    )


def test_every_level_is_documented() -> None:
    """Levels 1 to 8 each have a description."""
    assert sorted(LEVEL_DOCS) == list(range(1, 9))


def test_level_is_the_deepest_tier() -> None:
    """Primitive forward float32 sample 0 is level 1; any deeper axis raises it."""
    primitive = op_family("add", elementwise_or_reduction=True)
    assert opinfo_level(primitive, "forward", "float32", 0) == 1
    assert opinfo_level(primitive, "forward", "float32", 1) == 2
    assert opinfo_level(primitive, "backward", "float32", 0) == 4
    assert opinfo_level(primitive, "forward", "uint16", 0) == 4
    assert opinfo_level(primitive, "forward", "float32", 40) == 8
    assert (
        opinfo_level(
            op_family("linalg.svd", elementwise_or_reduction=False),
            "forward",
            "float32",
            0,
        )
        == 4
    )


def test_every_variant_capability_has_a_tier() -> None:
    """Each OpInfo variant maps to a level tier."""
    from torchcts_schema import VARIANT_CAPABILITIES

    assert set(VARIANT_TIER) == set(VARIANT_CAPABILITIES)
    assert [sample_tier(i) for i in (0, 1, 3, 8, 32)] == [1, 2, 4, 6, 8]


def test_samples_within_a_level_are_a_prefix() -> None:
    """For every level, the samples whose tier fits it are exactly 0..k-1 (k from
    samples_within; None: all of them), the fact selection's counting relies on."""
    for level in range(1, 10):
        within = samples_within(level)
        fits = [n for n in range(300) if sample_tier(n) <= level]
        if within is None:
            assert fits == list(range(300))
        else:
            assert fits == list(range(within))
