"""Repro for TorchCTS case workloads/sdpa_masks/check/-/- (torch 2.13.0+cpu)."""
import json
import torch
import torchcts_simdev
_configure = getattr(torchcts_simdev, 'torchcts_configure', None)
if _configure is not None:
    _configure(json.loads("{\"fault_profile\": \"demo\"}"))


def case(*args, **kwargs):
    return lambda check: check


def storage_id(t):
    return int(t.untyped_storage()._cdata)


class ExpectedSource:
    CPU_REFERENCE = REVIEWED_REFERENCE = LEGAL_OUTPUT = PROPERTY = None


def find_op(segment):
    from torch.testing._internal.common_methods_invocations import op_db

    return next(o for o in op_db if (o.name + "." + o.variant_test_name
                                     if o.variant_test_name else o.name) == segment)



class RunLimits:
    def __init__(self, device_count, memory_mb):
        self.device_count, self.memory_mb = device_count, memory_mb


def run_limits():  # DEVICE_COUNT, RESOURCE_LIMITS memory_mb
    return RunLimits(1, 4096)


from collections.abc import Callable
from typing import Any


def holds(ok: bool, why: str) -> bool | str:
    """True when a property holds, else the sentence saying how it broke, with the
    numbers seen (judged against True, the sentence is the mismatch)."""
    return True if ok else why


def all_hold(*keys: str) -> Callable[[str | None], dict[str, Any]]:
    """The hand-written expectation of a property case: each of `keys` holds."""
    return lambda dtype: dict.fromkeys(keys, True)


def device_function(device: str, name: str, capability: str) -> Any:
    """``torch.<device>.<name>`` (the device module's function), or NotImplementedError
    naming it: a manifest claiming `capability` claims the function exists."""
    try:
        module = torch.get_device_module(device)
    except RuntimeError as exc:
        raise NotImplementedError(
            f"torch.get_device_module({device!r}) failed ({exc}): {capability} is "
            "claimed, which needs the device module"
        ) from None
    found = getattr(module, name, None)
    if not callable(found):
        raise NotImplementedError(
            f"torch.{device}.{name} is missing: {capability} is claimed, which needs it"
        )
    return found
# mypy: disable-error-code="no-untyped-call"
# (torch leaves Tensor.backward, Function.apply and LR-scheduler factories untyped)
"""Real model blocks on the device: attention with each kind of mask, a transformer
block, a conv net with batch norm in channels_last, embedding + LSTM/GRU and a tiny
language model, each a forward pass and a training step compared with CPU.

Single ops can all pass while a model fails: a fused attention kernel that ignores a
mask, batch-norm running statistics that are not updated, an RNN kernel that mixes up
its gates, a channels_last layout lost between layers. Every model is seeded on CPU and
moved, so the CPU run of the same check is the expectation. A forward plus one update
chains dozens of kernels, hence the documented tolerance `MODEL_TOLERANCE`.
"""


from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F


SUITE = "workloads"
# (dtype, atol, rtol): a forward plus one SGD step through ~20 kernels in float32
MODEL_TOLERANCE = (("float32", 1e-4, 1e-4),)


def _seeded(device: str, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)
    return build().to(device)


def _randn(device: str, seed: int, *shape: int) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(*shape).to(device)


def _train_step(
    model: torch.nn.Module, loss_of: Callable[[], torch.Tensor]
) -> dict[str, Any]:
    """One SGD step: the loss, every gradient and the updated weights, by name."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    opt.zero_grad()
    loss = loss_of()
    loss.backward()
    grads = {
        n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None
    }
    opt.step()
    params = {n: p.detach() for n, p in model.named_parameters()}
    return {"loss": loss.detach(), "grads": grads, "params": params}


@case(
    SUITE,
    "sdpa_masks",
    1,
    tolerances=MODEL_TOLERANCE,
    # a backend without a fused kernel gets attention decomposed: mask to where, bmm,
    # _safe_softmax; CPU itself uses its flash kernel
    surfaces=("aten::where.self", "aten::bmm", "aten::_safe_softmax"),
)
def sdpa_masks(device: str, dtype: str | None) -> dict[str, Any]:
    """scaled_dot_product_attention with a bool mask, is_causal and an additive mask
    agrees with CPU, and each mask means the same as its explicit equivalent."""
    q, k, v = (_randn(device, s, 2, 2, 5, 8) for s in (1, 2, 3))
    keep = torch.rand(5, 5, generator=torch.Generator().manual_seed(4)) > 0.3
    keep |= torch.eye(5, dtype=torch.bool)  # every query attends to something
    keep = keep.to(device)
    additive = torch.zeros(5, 5).masked_fill(~keep.cpu(), float("-inf")).to(device)
    causal = torch.ones(5, 5, dtype=torch.bool).tril().to(device)
    bias = _randn(device, 5, 5, 5)
    out_bool = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    out_add = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    out_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out_tril = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    plain = F.scaled_dot_product_attention(q, k, v)
    return {
        "bool_mask": out_bool,
        "additive_mask": F.scaled_dot_product_attention(q, k, v, attn_mask=bias),
        "causal": out_causal,
        "no_mask": plain,
        "bool_equals_additive": bool(torch.allclose(out_bool, out_add, atol=1e-6)),
        "causal_equals_tril": bool(torch.allclose(out_causal, out_tril, atol=1e-6)),
        "mask_changes_result": not bool(torch.allclose(out_bool, plain)),
    }


@case(SUITE, "transformer_block", 2, tolerances=MODEL_TOLERANCE)
def transformer_block(device: str, dtype: str | None) -> dict[str, Any]:
    """A TransformerEncoderLayer with a causal mask and key padding: training
    forward and step, and the inference fast path, against CPU."""
    layer = _seeded(
        device,
        lambda: torch.nn.TransformerEncoderLayer(
            d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True
        ),
    )
    x = _randn(device, 1, 2, 5, 8)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5).to(device)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2]).to(device)
    layer.eval()
    with torch.inference_mode():
        fast = layer(x, src_key_padding_mask=padding)
    step = _train_step(
        layer, lambda: layer(x, src_mask=mask, is_causal=True).pow(2).mean()
    )
    return {"inference": fast.masked_fill(padding[..., None], 0.0), **step}


class _ConvNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = F.relu(self.bn(self.conv(x)))
        self.last_channels_last = features.is_contiguous(
            memory_format=torch.channels_last
        )
        logits: torch.Tensor = self.head(F.adaptive_avg_pool2d(features, 1).flatten(1))
        return logits


@case(SUITE, "conv_bn_channels_last", 2, tolerances=MODEL_TOLERANCE)
def conv_bn_channels_last(device: str, dtype: str | None) -> dict[str, Any]:
    """conv + batch norm + relu in channels_last: the layout survives, running
    statistics update in training, eval uses them; all against CPU."""
    # Module.to takes memory_format at run time; torch's overloads omit it
    net = _seeded(device, _ConvNet).to(memory_format=torch.channels_last)  # type: ignore[call-overload]
    x = _randn(device, 1, 2, 3, 6, 6).contiguous(memory_format=torch.channels_last)
    target = torch.tensor([0, 2]).to(device)
    step = _train_step(net, lambda: F.cross_entropy(net(x), target))
    layout = net.last_channels_last
    net.eval()
    with torch.no_grad():
        evaluated = net(x)
    return {
        "channels_last_kept": layout,
        "running_mean": net.bn.running_mean,
        "running_var": net.bn.running_var,
        "batches_tracked": int(net.bn.num_batches_tracked),
        "eval": evaluated,
        **step,
    }


class _Recurrent(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(20, 6, padding_idx=0)
        self.lstm = torch.nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.gru = torch.nn.GRU(8, 5, bidirectional=True)

    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, ...]:
        seq, (h, c) = self.lstm(self.embed(tokens))
        out, g = self.gru(seq.transpose(0, 1))
        return out, h, c, g


@case(SUITE, "embedding_lstm_gru", 2, tolerances=MODEL_TOLERANCE)
def embedding_lstm_gru(device: str, dtype: str | None) -> dict[str, Any]:
    """Embedding (with padding_idx) into a 2-layer LSTM and a bidirectional GRU:
    outputs, final states and one training step against CPU."""
    model = _seeded(device, _Recurrent)
    tokens = torch.tensor([[3, 7, 0, 19], [1, 0, 5, 5]]).to(device)
    out, h, c, g = model(tokens)
    step = _train_step(model, lambda: model(tokens)[0].pow(2).mean())
    pad_row = step["grads"].get("embed.weight")
    return {
        "out": out,
        "lstm_h": h,
        "lstm_c": c,
        "gru_h": g,
        "padding_row_grad_zero": pad_row is not None and not bool(pad_row[0].any()),
        **step,
    }


class _TinyLM(torch.nn.Module):
    def __init__(self, vocab: int = 16, width: int = 8, context: int = 6) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(context, width)
        # no biases: the key bias has an exactly-zero gradient, and AdamW would turn
        # its rounding noise into lr-sized updates that differ on every device
        self.block = torch.nn.TransformerEncoderLayer(
            width, 2, 16, dropout=0.0, batch_first=True, norm_first=True, bias=False
        )
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.tokens(ids) + self.positions(pos)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(
            ids.shape[1], device=ids.device
        )
        h = self.block(h, src_mask=mask, is_causal=True)
        logits: torch.Tensor = self.norm(h) @ self.tokens.weight.t()  # tied head
        return logits


@case(SUITE, "tiny_language_model", 3, tolerances=MODEL_TOLERANCE)
def tiny_language_model(device: str, dtype: str | None) -> dict[str, Any]:
    """A one-block causal language model with tied embeddings: logits, and two AdamW
    steps of next-token cross-entropy, against CPU."""
    model = _seeded(device, _TinyLM)
    ids = torch.tensor([[1, 4, 9, 2, 7, 3], [5, 5, 0, 12, 15, 8]]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, foreach=False)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 16), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return {
        "logits": logits.detach(),
        "losses": torch.stack(losses),
        "params": {n: p.detach() for n, p in model.named_parameters()},
    }


CASES = (
    sdpa_masks,
    transformer_block,
    conv_bn_channels_last,
    embedding_lstm_gru,
    tiny_language_model,
)

DEVICE = 'simdev'
TOLERANCES = {"bfloat16": [0.01, 0.016], "complex128": [1e-07, 1e-07], "complex32": [0.001, 0.001], "complex64": [1e-05, 1.3e-05], "float16": [0.001, 0.001], "float32": [0.0001, 0.0001], "float64": [1e-07, 1e-07], "float8_e4m3fn": [0.125, 0.125], "float8_e5m2": [0.25, 0.25]}  # (atol, rtol) per dtype
METADATA_ONLY = False
JUDGE_STRIDES = True
CPU_PINNED = ()

import math
import sys


def to_dev(x, device, _seen=None):
    # the tensors at CPU_PINNED (in order of appearance) stay on the CPU, as OpInfo
    # builds them for any device
    seen = [0] if _seen is None else _seen
    if isinstance(x, torch.Tensor):
        where = "cpu" if seen[0] in CPU_PINNED else device
        seen[0] += 1
        moved = x.detach().to(where, copy=True)
        return moved.requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(to_dev(v, device, seen) for v in x)
    if isinstance(x, dict):
        return {k: (torch.device(device) if k == "device" else to_dev(v, device, seen))
                for k, v in x.items()}
    return x


def host_copy(t):
    # .to("cpu") makes a tensor with gaps or overlaps contiguous: copy the storage
    # span it covers and view it with the device's strides, as TorchCTS did
    host = t.to("cpu")
    if (t.layout != torch.strided or t.numel() <= 1 or t.is_quantized
            or host.stride() == t.stride()):
        return host
    span = 1 + sum((n - 1) * s for n, s in zip(t.size(), t.stride()))
    flat = t.as_strided((span,), (1,), t.storage_offset()).to("cpu")
    return flat.as_strided(t.size(), t.stride(), 0)


def outcome(run, device, expected=None):
    try:
        return run(device)
    except Exception as exc:  # CPU's exception is the expected behaviour
        if device != "cpu" and not isinstance(expected, BaseException):
            raise  # the device raised where CPU returned: the traceback says why
        return exc


def empty_on(template, device):
    if isinstance(template, torch.Tensor):
        return torch.empty(template.shape, dtype=template.dtype, device=device)
    return type(template)(empty_on(t, device) for t in template)


def first_difference(exp, got, path="output"):
    if isinstance(exp, BaseException):
        if isinstance(got, BaseException):
            return None if isinstance(got, type(exp)) else (
                f"{path}: expected {type(exp).__name__}, got {type(got).__name__}")
        return f"{path}: expected {type(exp).__name__} ({exp}), but nothing was raised"
    if isinstance(exp, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{path}: expected a tensor, got {type(got).__name__}"
        got = host_copy(got.detach())
        if exp.dtype != got.dtype:
            return f"{path}: dtype {got.dtype}, expected {exp.dtype}"
        if exp.shape != got.shape:
            return f"{path}: shape {list(got.shape)}, expected {list(exp.shape)}"
        if exp.layout != torch.strided:
            exp, got = exp.to_dense(), got.to_dense()
        if METADATA_ONLY:
            if JUDGE_STRIDES and exp.numel() > 1 and exp.stride() != got.stride():
                return f"{path}: strides {got.stride()}, expected {exp.stride()}"
            return None
        exp = exp.detach().resolve_conj().resolve_neg()
        got = got.resolve_conj().resolve_neg()
        name = str(exp.dtype).replace("torch.", "")
        atol, rtol = TOLERANCES.get(name, (0.0, 0.0))
        try:
            torch.testing.assert_close(got, exp, atol=atol, rtol=rtol,
                                       equal_nan=True, check_stride=False)
        except AssertionError as exc:
            return f"{path}: " + "; ".join(
                line.strip() for line in str(exc).splitlines() if line.strip())
        return None
    if isinstance(exp, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(exp):
            return f"{path}: expected {len(exp)} items, got {got!r:.80}"
        for i, (e, g) in enumerate(zip(exp, got)):
            found = first_difference(e, g, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(exp, dict):
        if not isinstance(got, dict) or set(got) != set(exp):
            return f"{path}: expected keys {sorted(exp)}, got {got!r:.80}"
        for key in exp:
            found = first_difference(exp[key], got[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(exp, float) and isinstance(got, (int, float)) and not METADATA_ONLY:
        atol, rtol = TOLERANCES.get("float64", (0.0, 0.0))
        if exp == got or exp != exp and got != got:
            return None  # equal_nan; Inf equals only itself
        finite = math.isfinite(exp) and math.isfinite(got)
        if finite and abs(exp - got) <= atol + rtol * abs(exp):
            return None
    if METADATA_ONLY and isinstance(exp, (int, float)) and not isinstance(exp, bool):
        return None
    if exp != got:
        return f"{path}: expected {exp!r:.80}, got {got!r:.80}"
    return None


def judge(expected, got):
    problem = first_difference(expected, got)
    if problem:
        print("MISMATCH on", DEVICE + ":", problem)
        sys.exit(1)
    print("matches the CPU result on", DEVICE + ": the failure did not reproduce")


def run(device):
    return sdpa_masks(device, None)


expected = outcome(run, 'cpu')
judge(expected, outcome(run, DEVICE, expected))
