"""A simdev fault in the device_api suite's territory fails the right case, naming
what broke; the clean simdev passes every device_api case its manifest claims, and
the ones it leaves out are not_run with the reason, which the tests here pin."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_faults_helpers import clean_simdev, simdev_mismatch  # noqa: F401 (autouse)
from torchcts_cases import Selection, get_case, prepare, select_cases
from torchcts_cases.suites import all_hand_cases
from torchcts_schema import Manifest, NotRunReason, load_manifest

ROOT = Path(__file__).resolve().parent.parent
# what manifests/simdev.py leaves out, each with the reason its comment gives
NOT_CLAIMED = {
    "device_api/device_properties/check/-/-": "device_properties",
    "device_api/streams/check/-/-": "streams",
    "device_api/events/check/-/-": "events",
    "device_api/generator_seeded/check/-/-": "device_generator",
    "device_api/generator_state/check/-/-": "device_generator",
}
TWO_DEVICES = {
    "device_api/set_device_switches/check/-/-",
    "device_api/copy_between_devices/check/-/-",
}
CLAIMED = sorted(
    cid
    for cid, c in all_hand_cases().items()
    if c.suite == "device_api" and cid not in NOT_CLAIMED and cid not in TWO_DEVICES
)


@pytest.fixture
def manifest() -> Manifest:
    """manifests/simdev.py (DEVICE_COUNT 1)."""
    return load_manifest(ROOT / "manifests" / "simdev.py")


@pytest.mark.parametrize("case_id", CLAIMED)
def test_clean_simdev_passes_device_api(case_id: str, manifest: Manifest) -> None:
    """module_basics, synchronize and current_device pass on the clean simdev."""
    assert simdev_mismatch(case_id, manifest) == ""


def test_unclaimed_cases_are_not_run_with_their_reason(manifest: Manifest) -> None:
    """Paths simdev cannot provide are capability_not_declared; two-device cases
    need DEVICE_COUNT 2."""
    selected = select_cases(manifest, Selection(level=8, suites=("device_api",)))
    reasons = {r.case_id: (r.not_run_reason, r.detail) for r in selected.not_run}
    for case_id, capability in NOT_CLAIMED.items():
        assert reasons[case_id] == (
            NotRunReason.CAPABILITY_NOT_DECLARED,
            f"capability {capability} not in CAPABILITIES",
        )
    for case_id in TWO_DEVICES:
        assert reasons[case_id] == (NotRunReason.DEVICE_COUNT, "needs 2 devices")
    assert {s.case_id for s in selected.runnable} == set(CLAIMED)


def test_phantom_device_fails_module_basics(manifest: Manifest) -> None:
    """A device_count() that counts a device that is not there fails module_basics
    at counted_devices_work, saying where the tensor landed."""
    found = simdev_mismatch(
        "device_api/module_basics/check/-/-",
        manifest,
        {"op": "simdev::device_count", "fault": "phantom_device"},
    )
    assert found == (
        "module_basics.counted_devices_work: expected bool True, got str "
        "'device_count() is 2 but a tensor made on simdev:1 landed on simdev:0'"
    )


def test_wrong_kernel_after_synchronize_fails_it(manifest: Manifest) -> None:
    """synchronize's values are judged against CPU: a wrong mm fails the product."""
    found = simdev_mismatch(
        "device_api/synchronize/check/-/-",
        manifest,
        {"op": "aten::mm*", "fault": "wrong_values"},
    )
    assert found.startswith("synchronize.product: Tensor-likes are not close")


def test_simdev_has_no_device_generator(manifest: Manifest) -> None:
    """The reason the manifest leaves device_generator out: PyTorch asks the C++
    PrivateUse1HooksInterface for a generator, which a Python backend cannot give."""
    case = prepare(get_case("device_api/generator_seeded/check/-/-"), manifest)
    with pytest.raises(NotImplementedError, match="getNewGenerator"):
        case.run_on("simdev")


@pytest.mark.parametrize(
    ("case_id", "missing"),
    [
        ("device_api/streams/check/-/-", "torch.simdev.Stream is missing"),
        ("device_api/events/check/-/-", "torch.simdev.Event is missing"),
        (
            "device_api/device_properties/check/-/-",
            "torch.simdev.get_device_properties is missing",
        ),
    ],
)
def test_simdev_lacks_what_it_does_not_claim(
    case_id: str, missing: str, manifest: Manifest
) -> None:
    """Claimed anyway, each would be unsupported, naming the missing function."""
    case = prepare(get_case(case_id), manifest)
    with pytest.raises(NotImplementedError, match=missing):
        case.run_on("simdev")
