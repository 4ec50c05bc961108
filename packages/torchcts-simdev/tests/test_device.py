"""simdev behaves like a device: copies, factories, views, in-place ops, modules, RNG."""

from __future__ import annotations

import gc
import importlib

import pytest
import torch
import torchcts_simdev
from torchcts_simdev import payload

DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
    torch.complex128,
]  # fmt: skip


def _shares_payload(a: torch.Tensor, b: torch.Tensor) -> bool:
    return payload.payload_storage(a.untyped_storage()) is payload.payload_storage(
        b.untyped_storage()
    )


def test_import_is_idempotent_and_reload_safe() -> None:
    """Importing or reloading the package again keeps the one registration."""
    before = torch._torchcts_simdev_fallback  # type: ignore[attr-defined]
    importlib.reload(torchcts_simdev)
    assert torch._torchcts_simdev_fallback is before  # type: ignore[attr-defined]
    assert torch.device("simdev").type == "simdev"
    assert torch.simdev.device_count() == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_round_trip_keeps_values_dtype_and_strides(dtype: torch.dtype) -> None:
    """to("simdev") then .cpu() returns the same values, dtype and strides."""
    host = torch.arange(12).reshape(3, 4).to(dtype).t()
    device = host.to("simdev")
    assert device.device == torch.device("simdev", 0)
    assert device.dtype == dtype
    assert device.shape == host.shape and device.stride() == host.stride()
    assert torch.equal(device.cpu(), host)


def test_factories_make_device_tensors_with_true_metadata() -> None:
    """empty, zeros, full, arange and empty_strided report their real layout."""
    empty = torch.empty(2, 3, device="simdev")
    assert empty.device.type == "simdev" and empty.stride() == (3, 1)
    strided = torch.empty_strided((2, 3), (1, 2), device="simdev")
    assert strided.stride() == (1, 2)
    assert torch.equal(torch.zeros(4, device="simdev").cpu(), torch.zeros(4))
    assert torch.equal(torch.full((2,), 7, device="simdev").cpu(), torch.full((2,), 7))
    assert torch.equal(torch.arange(5, device="simdev").cpu(), torch.arange(5))


def test_views_share_payload_and_see_writes_both_ways() -> None:
    """A view of a simdev tensor is a view of its payload: writes show in both."""
    base = torch.zeros(4, 6, device="simdev")
    view = base.t()[1:, ::2]
    assert view._is_view() and view._base is base
    assert _shares_payload(view, base)
    host_view = torch.zeros(4, 6).t()[1:, ::2]
    assert view.stride() == host_view.stride()
    assert view.storage_offset() == host_view.storage_offset() == 1
    view.fill_(5)
    expected = torch.zeros(4, 6)
    expected.t()[1:, ::2] = 5
    assert torch.equal(base.cpu(), expected)
    base.add_(1)
    assert torch.equal(view.cpu(), torch.full((5, 2), 6.0))
    assert torch.equal(base.view(24).cpu(), (expected + 1).view(24))


def test_view_ops_that_reach_the_backend_alias_their_input() -> None:
    """view, as_strided, unfold and view_as_real return aliases, not copies."""
    base = torch.arange(8.0, device="simdev")
    for alias in (
        base.view(2, 4),
        base.as_strided((2, 2), (1, 2), 1),
        base.unfold(0, 2, 2),
        torch.view_as_real(torch.zeros(3, dtype=torch.complex64, device="simdev")),
    ):
        assert alias.untyped_storage().data_ptr() != 0
    assert base.view(2, 4).untyped_storage().data_ptr() == (
        base.untyped_storage().data_ptr()
    )
    complex_base = torch.zeros(3, dtype=torch.complex64, device="simdev")
    real = torch.view_as_real(complex_base)
    real[:, 1] = 2
    assert torch.equal(complex_base.cpu(), torch.full((3,), 2j, dtype=torch.complex64))


def test_inplace_ops_return_the_same_tensor_object() -> None:
    """x.add_(1), x.mul_(2) and out= return the very tensor they mutated."""
    x = torch.ones(3, device="simdev")
    assert x.add_(1) is x
    assert x.mul_(2) is x
    out = torch.empty(3, device="simdev")
    assert torch.add(x, x, out=out) is out
    assert torch.equal(out.cpu(), torch.full((3,), 8.0))


def test_out_argument_is_resized_with_true_metadata() -> None:
    """An out= tensor of the wrong size is resized and reports its new layout."""
    out = torch.empty(0, device="simdev")
    torch.mul(torch.ones(2, 3, device="simdev"), 3, out=out)
    assert out.shape == (2, 3) and out.stride() == (3, 1)
    assert torch.equal(out.cpu(), torch.full((2, 3), 3.0))


def test_metadata_inplace_ops_update_the_device_tensor() -> None:
    """t_, unsqueeze_ and resize_ change the device tensor's reported layout."""
    x = torch.arange(6.0, device="simdev").view(2, 3)
    x.t_()
    assert x.shape == (3, 2) and x.stride() == (1, 3)
    assert torch.equal(x.cpu(), torch.arange(6.0).view(2, 3).t())
    x.unsqueeze_(0)
    assert x.shape == (1, 3, 2)
    y = torch.zeros(2, device="simdev")
    y.resize_(10)
    assert y.shape == (10,) and y.untyped_storage().nbytes() >= 40


def test_conjugate_and_negative_bits_are_honoured() -> None:
    """Lazy conj/neg views compute and copy back as their values."""
    host = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    device = host.to("simdev")
    assert device.conj().is_conj()
    assert torch.equal(device.conj().cpu(), host.conj())
    assert torch.equal((device.conj() * 2).cpu(), host.conj() * 2)
    assert torch.equal(device.conj().imag.cpu(), host.conj().imag)


def test_item_and_comparisons_leave_the_device() -> None:
    """item(), equal and printing work on device tensors."""
    x = torch.tensor([1.5, 2.5]).to("simdev")
    assert x.sum().item() == 4.0
    assert torch.equal(x, x.clone())
    assert "device='simdev:0'" in repr(x)


def test_mixing_devices_raises_like_a_real_device() -> None:
    """A non-scalar CPU tensor in a simdev op is a device mismatch; 0-dim is allowed."""
    x = torch.ones(3, device="simdev")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same"):
        x + torch.ones(3)
    assert torch.equal((x + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))


def test_cpu_index_tensors_are_accepted_like_cuda() -> None:
    """CPU index tensors (a Tensor?[] argument) index a simdev tensor, as CUDA
    accepts them (OpInfo's index_put mask samples are built on the CPU for every
    device); a CPU tensor in another argument is still a device mismatch."""
    host = torch.arange(25.0).view(5, 5)
    x = host.to("simdev")
    mask = torch.tensor([True, False, True, False, False])
    rows = torch.tensor([0, 2])
    for accumulate in (False, True):
        got = torch.index_put(x, (mask,), torch.ones(5, device="simdev"), accumulate)
        want = torch.index_put(host, (mask,), torch.ones(5), accumulate)
        assert torch.equal(got.cpu(), want)
    assert torch.equal(x[rows].cpu(), host[rows])
    inplace = host.clone().to("simdev")
    inplace.index_put_((rows,), torch.zeros(2, 5, device="simdev"))
    assert torch.equal(inplace.cpu(), host.index_put((rows,), torch.zeros(2, 5)))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same"):
        torch.index_put(x, (rows,), torch.zeros(2, 5))


def test_copy_between_devices_in_both_directions() -> None:
    """copy_ works simdev<-cpu, cpu<-simdev and simdev<-simdev, with broadcasting."""
    dev = torch.zeros(2, 3, device="simdev")
    dev.copy_(torch.arange(3.0))
    host = torch.empty(2, 3)
    host.copy_(dev)
    assert torch.equal(host, torch.arange(3.0).expand(2, 3))
    other = torch.empty(2, 3, device="simdev", dtype=torch.float64).copy_(dev)
    assert torch.equal(other.cpu(), host.double())


def test_non_blocking_copy_to_host_works() -> None:
    """.to("cpu", non_blocking=True) needs no pinned-memory allocator on simdev."""
    x = torch.arange(4.0, device="simdev")
    assert torch.equal(x.to("cpu", non_blocking=True), torch.arange(4.0))


def test_module_to_simdev_keeps_parameters_working() -> None:
    """nn.Module.to("simdev") moves parameters whose payload survives re-wrapping."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    reference = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    reference.load_state_dict(model.state_dict())
    model.to("simdev")
    weight = model[0].weight
    assert isinstance(weight, torch.nn.Parameter) and weight.device.type == "simdev"
    x = torch.randn(5, 4)
    assert torch.equal(model(x.to("simdev")).cpu(), reference(x))


def test_autograd_backward_matches_cpu() -> None:
    """backward() on simdev produces the CPU gradients, on leaves and parameters."""
    torch.manual_seed(1)
    host = torch.randn(4, 5, requires_grad=True)
    weight = torch.randn(5, 3, requires_grad=True)
    dev = host.detach().to("simdev").requires_grad_()
    dev_weight = weight.detach().to("simdev").requires_grad_()
    (host @ weight).sin().sum().backward()
    (dev @ dev_weight).sin().sum().backward()
    assert dev.grad is not None and dev.grad.device.type == "simdev"
    torch.testing.assert_close(dev.grad.cpu(), host.grad, rtol=0, atol=0)
    assert dev_weight.grad is not None
    torch.testing.assert_close(dev_weight.grad.cpu(), weight.grad, rtol=0, atol=0)


def test_module_training_step_updates_parameters() -> None:
    """An SGD step on simdev updates parameters like on CPU."""
    torch.manual_seed(2)
    model = torch.nn.Linear(3, 2)
    twin = torch.nn.Linear(3, 2)
    twin.load_state_dict(model.state_dict())
    twin.to("simdev")
    x = torch.randn(4, 3)
    for net, data in ((model, x), (twin, x.to("simdev"))):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        net(data).pow(2).mean().backward()
        optimizer.step()
    torch.testing.assert_close(twin.weight.cpu(), model.weight, rtol=0, atol=0)


def test_manual_seed_makes_simdev_rng_reproducible() -> None:
    """torch.manual_seed reseeds simdev; its stream is separate from the CPU one."""
    torch.manual_seed(123)
    first = torch.randn(5, device="simdev").cpu()
    torch.manual_seed(123)
    torch.randn(7)  # CPU draws must not advance simdev's generator
    second = torch.randn(5, device="simdev").cpu()
    assert torch.equal(first, second)
    torch.manual_seed(123)
    x = torch.empty(1000, device="simdev").uniform_()
    assert x.min().item() >= 0.0 and x.max().item() < 1.0
    assert not torch.equal(torch.rand(5, device="simdev").cpu(), first)


def test_rng_state_round_trips() -> None:
    """get_rng_state/set_rng_state replay simdev's random stream."""
    state = torch.simdev.get_rng_state()  # type: ignore[attr-defined]
    first = torch.rand(4, device="simdev").cpu()
    torch.simdev.set_rng_state(state)  # type: ignore[attr-defined]
    assert torch.equal(torch.rand(4, device="simdev").cpu(), first)


def test_payloads_are_freed_with_their_tensors() -> None:
    """Device storages drop their CPU payload when the last tensor dies."""
    gc.collect()
    before = payload.live_storages()
    tensors = [torch.ones(100, device="simdev") * i for i in range(20)]
    views = [t.view(10, 10) for t in tensors]
    assert payload.live_storages() >= before + 20
    del tensors, views
    gc.collect()
    assert payload.live_storages() <= before


def test_save_then_load_to_cpu_round_trips() -> None:
    """torch.save of a simdev tensor loads back on the CPU with its values."""
    import io

    buffer = io.BytesIO()
    torch.save(torch.arange(6.0).view(2, 3).to("simdev"), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, map_location="cpu", weights_only=True)
    assert torch.equal(loaded, torch.arange(6.0).view(2, 3))
