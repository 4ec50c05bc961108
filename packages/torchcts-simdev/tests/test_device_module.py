"""torch.simdev's memory statistics count live payloads once, a failed payload
allocation is torch.OutOfMemoryError, and the device faults (uncounted_free,
phantom_device) break exactly the function they name."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torchcts_simdev
from torchcts_simdev import ProfileError, load_profile

MIB = 1 << 20
Inject = Callable[..., torchcts_simdev.FaultProfile]


def _allocated() -> int:
    return int(torch.simdev.memory_allocated())  # type: ignore[attr-defined]


def test_views_share_one_count_and_frees_return_it() -> None:
    """A tensor's payload counts once however many views share it; the last
    reference freed brings memory_allocated back."""
    before = _allocated()
    x = torch.empty(4 * MIB, dtype=torch.uint8, device="simdev")
    view = x[1:].view(-1)
    assert _allocated() - before == 4 * MIB
    del x
    assert _allocated() - before == 4 * MIB  # the view keeps the payload alive
    del view
    assert _allocated() == before


def test_peak_keeps_a_freed_allocation_until_reset() -> None:
    """max_memory_allocated keeps a freed 8 MiB until reset_peak_memory_stats."""
    module = torch.simdev  # type: ignore[attr-defined]
    module.reset_peak_memory_stats()
    base = module.max_memory_allocated()
    assert base == _allocated()
    x = torch.ones(8 * MIB, dtype=torch.uint8, device="simdev")
    del x
    assert module.max_memory_allocated() >= base + 8 * MIB
    module.empty_cache()  # nothing cached: changes nothing
    module.reset_peak_memory_stats()
    assert module.max_memory_allocated() == _allocated() == base


def test_resized_output_counts_its_new_size() -> None:
    """An out= tensor resized by the op is counted at its new size, once."""
    out = torch.empty(0, device="simdev")
    before = _allocated()
    torch.add(torch.ones(MIB, device="simdev"), 1, out=out)
    assert _allocated() - before == 4 * MIB  # float32 MiB elements; inputs freed
    del out
    assert _allocated() == before  # its original payload held no bytes


def test_failed_payload_allocation_is_out_of_memory() -> None:
    """An allocation no host can give (1 PiB, refused without touching a page) is
    torch.OutOfMemoryError naming the op, and the device still computes."""
    with pytest.raises(
        torch.OutOfMemoryError, match=r"simdev: out of memory in aten::"
    ):
        torch.empty(1 << 50, dtype=torch.uint8, device="simdev")
    assert (torch.arange(3, device="simdev") * 2).tolist() == [0, 2, 4]


def test_other_kernel_errors_stay_what_they_were() -> None:
    """Only the CPU allocator's failure becomes OutOfMemoryError."""
    with pytest.raises(RuntimeError) as info:
        torch.ones(2, 3, device="simdev") @ torch.ones(4, 5, device="simdev")
    assert not isinstance(info.value, torch.OutOfMemoryError)


def test_uncounted_free_keeps_freed_bytes(inject: Inject) -> None:
    """uncounted_free: a freed tensor stays in memory_allocated; clean counts again."""
    inject(op="simdev::memory_allocated", fault="uncounted_free")
    before = _allocated()
    x = torch.empty(MIB, dtype=torch.uint8, device="simdev")
    del x
    assert _allocated() - before == MIB
    torchcts_simdev.configure("clean")
    start = _allocated()
    y = torch.empty(MIB, dtype=torch.uint8, device="simdev")
    del y
    assert _allocated() == start


def test_phantom_device_counts_a_device_that_is_not_there(inject: Inject) -> None:
    """phantom_device: device_count() is 2, yet simdev:1 tensors land on simdev:0."""
    inject(op="simdev::device_count", fault="phantom_device")
    assert torch.simdev.device_count() == 2  # type: ignore[attr-defined]
    assert torch.ones(1, device="simdev:1").device == torch.device("simdev", 0)
    torchcts_simdev.configure("clean")
    assert torch.simdev.device_count() == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        (
            {"op": "simdev::device_count", "fault": "uncounted_free"},
            "rules[0].op: uncounted_free breaks simdev::memory_allocated",
        ),
        (
            {"op": "simdev::device_count", "fault": "phantom_device", "ndim": 1},
            "rules[0].ndim: phantom_device is a fault of the device module",
        ),
    ],
)
def test_device_fault_rules_name_their_function(
    rule: dict[str, object], problem: str
) -> None:
    """A device fault must name the one function it breaks, and nothing narrows it."""
    with pytest.raises(ProfileError, match=problem.replace("[", r"\[")):
        load_profile({"rules": [rule]})
