"""Edge samples and the default run: a primitive op's empty, 0-dim, scalar and
broadcast samples are level 1 in every dtype and variant; other ops keep their tiers."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torchcts_cases import get_case
from torchcts_cases.catalog import primitive_edges
from torchcts_cases.edge_samples import EdgeFinder, edge_kinds
from torchcts_cases.levels import is_primitive, opinfo_level


class Sample:
    """The three fields of an OpInfo SampleInput that edge_kinds reads."""

    def __init__(self, input: Any, *args: Any, **kwargs: Any) -> None:
        self.input, self.args, self.kwargs = input, args, kwargs


@pytest.mark.parametrize(
    ("sample", "kinds"),
    [
        (Sample(torch.ones(3, 4)), set()),
        (Sample(torch.ones(3, 4), torch.ones(3, 4)), set()),
        (Sample(torch.ones(0, 4)), {"empty"}),
        (Sample(torch.tensor(2.0)), {"zero_dim"}),
        (Sample(torch.ones(3, 4), 2.5), {"scalar"}),
        (Sample(torch.ones(3, 4), alpha=1j), {"scalar"}),
        # integers are dims and sizes, bools flags: not scalar operands
        (Sample(torch.ones(3, 4), 1, keepdim=True), set()),
        (Sample(torch.ones(3, 1), torch.ones(4)), {"broadcast"}),
        (Sample(torch.ones(5, 3), [torch.ones(5, 1)]), {"broadcast"}),
        # shapes that differ without broadcasting (cat, mm) are not broadcast
        (Sample(torch.ones(2, 3), torch.ones(3, 4)), set()),
        (Sample(torch.ones(0, 1, 3), torch.ones(0, 10, 3)), {"empty", "broadcast"}),
    ],
)
def test_edge_kinds(sample: Sample, kinds: set[str]) -> None:
    """Each kind is recognised from the shapes and argument types alone."""
    assert edge_kinds(sample) == kinds


def test_the_finder_keeps_each_kinds_first_sample_but_never_sample_zero() -> None:
    """Sample 0 is always level 1, so it is not listed; later repeats are not kept."""
    finder = EdgeFinder()
    for n, sample in enumerate(
        [Sample(torch.tensor(1.0)), Sample(torch.ones(2)), Sample(torch.ones(0)),
         Sample(torch.tensor(3.0)), Sample(torch.ones(0, 2)), Sample(torch.ones(2), 0.5)]
    ):  # fmt: skip
        finder.see(n, sample)
    assert finder.samples() == [2, 5]


def test_primitive_edge_samples_are_level_one_in_every_variant_and_dtype() -> None:
    """A primitive op's edge sample is level 1 even in uint16 backward; nonfinite
    keeps its tier; a non-edge sample and a non-primitive op keep theirs."""
    assert is_primitive("add") and is_primitive("div.floor_rounding")
    assert not is_primitive("linalg.solve") and not is_primitive("acosh")
    for variant in ("forward", "method", "inplace", "out", "backward", "noncontiguous"):
        assert opinfo_level(1, variant, "uint16", 8, True) == 1
    assert opinfo_level(1, "nonfinite", "float32", 0, True) == 3
    assert opinfo_level(1, "backward", "float32", 8, False) == 6
    assert opinfo_level(1, "forward", "float32", 0, False) == 1


def test_the_index_places_adds_edges_at_level_one() -> None:
    """add's OpInfo samples in float32: 0 is 0-dim, 1 broadcasts, 8 is empty, 10
    has a float alpha (read from OpInfo's sample list for torch 2.13.0); they are
    level 1 in float64 and in the backward variant too, sample 5 is not."""
    from torchcts_cases import index

    entry = index.shard("float32")["add"]
    assert {0, 1, 8, 10} <= set(primitive_edges("add", entry, "forward"))
    assert get_case("opinfo/add/backward/float32/8").level == 1
    assert get_case("opinfo/add/out/float64/1").level == 1
    assert get_case("opinfo/add/forward/float32/5").level > 1
    assert get_case("opinfo/add/nonfinite/float32/1").level == 3
    assert get_case("opinfo/acosh/forward/float64/0").level > 1
