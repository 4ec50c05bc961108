# mypy: disable-error-code="no-untyped-call"
# (torch leaves Tensor.backward and parts of torch._dynamo untyped)
"""torch.compile on the device: per-op graphs from OpInfo samples, small models forward
and backward, dynamic shapes and a deliberate graph break, with backend="aot_eager"
(any device: Dynamo captures the graph with fake tensors, AOTAutograd traces forward
and backward, and the device runs the aten ops traced) and, claimed on its own,
backend="inductor" (code generated for the device).

A backend can pass every eager op and still fail compiled: its tensors break fake
tensor tracing, a meta function disagrees with its kernel, a buffer mutated inside a
graph (batch-norm statistics) is not written back, a resumed frame after a graph break
runs on the wrong device. The expectation is eager CPU: while it is built (`eager`)
every function the suite would compile runs as plain Python.

Graph breaks and recompiles are facts about the device's compile stack, not wrong
results: each case reports them in its record's detail, unjudged. A backend that
claims compile_fullgraph gets them judged by the fullgraph case, which fails on any
break or recompile and names the reason Dynamo gave.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from itertools import islice
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_flatten, tree_unflatten
from torchcts_schema import ExpectedSource

from torchcts_cases.opinfo_source import find_op
from torchcts_cases.suites.base import case

SUITE = "compile"
# (dtype, atol, rtol): generated kernels fuse and reorder float32 reductions and use
# vectorised exp/tanh; a forward and backward through a few fused kernels
CODEGEN_TOLERANCE = (("float32", 1e-4, 1e-4),)
# a forward and backward through ~10 kernels, each the device's own rounding of a
# CPU kernel (as workloads' models); single-op graphs use the default tolerance
MODEL_TOLERANCE = (("float32", 1e-4, 1e-4),)
OP_SAMPLES = 2  # per op: the first samples whose first tensor has two elements or more
DYNAMIC_ROWS = (3, 5, 8)  # sizes 0 and 1 are specialised by Dynamo: never used here
_EAGER: ContextVar[bool] = ContextVar("compile_suite_eager", default=False)


def _case(name: str, level: int, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
    """A case of this suite (a HandCase): judged against eager CPU, its compile facts
    reported."""
    return case(
        SUITE,
        name,
        level,
        source=ExpectedSource.CPU_REFERENCE,
        reference_context=eager,
        reported=("compile",),
        **kwargs,
    )


@contextmanager
def eager() -> Iterator[None]:
    """Inside: every function the suite compiles runs eagerly (the CPU expectation)."""
    token = _EAGER.set(True)
    try:
        yield
    finally:
        _EAGER.reset(token)


class Compiled:
    """`fn` under torch.compile, counting the graphs, breaks and recompiles it caused.

    Every graph Dynamo captures passes through `_count` on its way to the backend,
    under its compile id (frame, compile of that frame). A recompile is a compile of a
    frame Dynamo compiled before (its guards failed: a new shape, value or device);
    frames that resume after a graph break are new frames. Dynamo's caches are reset
    first, so code compiled for another device (the CPU run of the same check) or
    another case never counts as this one's recompile.
    """

    def __init__(
        self, fn: Callable[..., Any], backend: str = "aot_eager", **options: Any
    ) -> None:
        self.compiles: set[tuple[int | None, int | None]] = set()
        self.breaks: Counter[str] = Counter()  # Dynamo's reason -> how many times
        self.backend = backend
        self._fn: Callable[..., Any] = fn
        if not _EAGER.get():
            torch._dynamo.reset()
            self._fn = torch.compile(fn, backend=self._count, **options)

    @property
    def graphs(self) -> int:
        """Graphs compiled (a frame analysed twice in one compile counts once)."""
        return len(self.compiles)

    @property
    def recompiles(self) -> int:
        """Compiles of a frame after its first."""
        return sum(1 for frame, again in self.compiles if frame is not None and again)

    def _count(self, gm: Any, example_inputs: Any) -> Any:
        from torch._dynamo.backends.registry import lookup_backend

        compile_id = torch._guards.CompileContext.current_compile_id()
        if compile_id is None:  # outside a Dynamo compile: a graph of its own
            self.compiles.add((None, len(self.compiles)))
        else:
            self.compiles.add((compile_id.frame_id, compile_id.frame_compile_id))
        return lookup_backend(self.backend)(gm, example_inputs)

    def __call__(self, *args: Any) -> Any:
        if _EAGER.get():
            return self._fn(*args)
        counters = torch._dynamo.utils.counters
        breaks = Counter(counters["graph_break"])
        try:
            with _host_build(self.backend):
                return self._fn(*args)
        finally:
            self.breaks += Counter(counters["graph_break"]) - breaks


def _host_build(backend: str) -> AbstractContextManager[object]:
    """inductor compiles its kernels in this process, not in a worker pool per case:
    that is host build parallelism, not what the device runs."""
    if backend != "inductor":
        return nullcontext()
    import torch._inductor.config

    patch: AbstractContextManager[object] = torch._inductor.config.patch(
        compile_threads=1
    )
    return patch


def judged(*runs: Compiled) -> dict[str, Any]:
    """Graph breaks (with Dynamo's reasons) and recompiles of `runs` added up: what
    compile_fullgraph judges."""
    breaks: Counter[str] = sum((run.breaks for run in runs), Counter())
    text = "none"
    if breaks:
        reasons = sorted({reason.strip().splitlines()[0][:80] for reason in breaks})
        text = f"{sum(breaks.values())}: " + "; ".join(reasons)
    return {"graph_breaks": text, "recompiles": sum(run.recompiles for run in runs)}


def facts(*runs: Compiled) -> dict[str, Any]:
    """Graphs, graph breaks and recompiles of `runs`: reported, not judged."""
    return {"graphs": sum(run.graphs for run in runs), **judged(*runs)}


def _big_enough(sample: Any) -> bool:
    first = sample.input[0] if isinstance(sample.input, list | tuple) else sample.input
    return isinstance(first, torch.Tensor) and first.numel() >= 2


def _as_graph(info: Any, sample: Any) -> tuple[Callable[..., Any], list[torch.Tensor]]:
    """The sample's call as a function of its tensors only (the graph's inputs); its
    other arguments (dims, flags, scalars) are constants of the graph."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    template = [None if i in slots else leaf for i, leaf in enumerate(leaves)]

    def graph(*tensors: torch.Tensor) -> Any:
        filled = list(template)
        for i, tensor in zip(slots, tensors, strict=True):
            filled[i] = tensor
        inp, args, kwargs = tree_unflatten(filled, spec)
        return info.op(inp, *args, **kwargs)

    return graph, [leaves[i] for i in slots]


def _op_graphs(device: str, name: str) -> dict[str, Any]:
    """The OpInfo entry `name`'s first float32 samples (of two elements or more; drawn
    after seeding 0), each compiled on its own."""
    info = find_op(name)
    torch.manual_seed(0)
    found = filter(
        _big_enough, info.sample_inputs_func(info, "cpu", torch.float32, False)
    )
    observed: dict[str, Any] = {}
    runs = []
    for n, sample in enumerate(islice(found, OP_SAMPLES)):
        graph, tensors = _as_graph(info, sample)
        runs.append(Compiled(graph))
        observed[f"sample_{n}"] = runs[-1](*(t.to(device) for t in tensors))
    return {**observed, "compile": facts(*runs)}


@_case("graph_add", 1)
def graph_add(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo add (broadcasting tensor + tensor), compiled, against eager CPU."""
    return _op_graphs(device, "add")


@_case("graph_matmul", 1)
def graph_matmul(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo matmul (matrix x vector, vector x matrix), compiled."""
    return _op_graphs(device, "matmul")


@_case("graph_softmax", 1)
def graph_softmax(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo softmax, compiled."""
    return _op_graphs(device, "softmax")


@_case("graph_sum", 1)
def graph_sum(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo sum (full and along a dim), compiled."""
    return _op_graphs(device, "sum")


@_case("graph_mul", 2)
def graph_mul(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo mul, compiled."""
    return _op_graphs(device, "mul")


@_case("graph_layer_norm", 2)
def graph_layer_norm(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo nn.functional.layer_norm (with weight and bias), compiled."""
    return _op_graphs(device, "nn.functional.layer_norm")


@_case("graph_where", 2)
def graph_where(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo where (a bool condition made on CPU), compiled."""
    return _op_graphs(device, "where")


@_case("graph_cat", 2)
def graph_cat(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo cat (a list of tensors as graph inputs), compiled."""
    return _op_graphs(device, "cat")


@_case("graph_index_select", 2)
def graph_index_select(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo index_select (an int64 index tensor), compiled."""
    return _op_graphs(device, "index_select")


@_case("graph_relu", 2)
def graph_relu(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo nn.functional.relu, compiled."""
    return _op_graphs(device, "nn.functional.relu")


@_case("graph_gelu", 2)
def graph_gelu(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo nn.functional.gelu (exact and tanh), compiled."""
    return _op_graphs(device, "nn.functional.gelu")


@_case("graph_embedding", 2)
def graph_embedding(device: str, dtype: str | None) -> dict[str, Any]:
    """OpInfo nn.functional.embedding (a gather by index), compiled."""
    return _op_graphs(device, "nn.functional.embedding")


def _seeded(device: str, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)
    return build().to(device)


def _randn(device: str, seed: int, *shape: int) -> torch.Tensor:
    torch.manual_seed(seed)
    return torch.randn(*shape).to(device)


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.down = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.down(self.norm(F.gelu(self.up(x))))
        return out


class _ConvBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 3 * 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        out: torch.Tensor = self.head(features.flatten(1))
        return out


class _Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.proj = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, 2, 4).permute(2, 0, 3, 1, 4)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.norm(
            x + self.proj(heads.transpose(1, 2).reshape(batch, length, 8))
        )
        return out


def _model_step(
    device: str,
    build: Callable[[], torch.nn.Module],
    shape: tuple[int, ...],
    backend: str = "aot_eager",
) -> tuple[dict[str, Any], Compiled]:
    """The compiled model's output, a backward through its compiled graph (input and
    parameter gradients) and its buffers after the training-mode forward."""
    model = _seeded(device, build)
    x = _randn(device, 1, *shape).requires_grad_()
    compiled = Compiled(model, backend)
    out = compiled(x)
    out.pow(2).mean().backward()
    observed = {
        "out": out.detach(),
        "input_grad": x.grad,
        "grads": {n: p.grad for n, p in model.named_parameters()},
        "buffers": {n: b for n, b in model.named_buffers()},
    }
    return observed, compiled


def _with_facts(found: tuple[dict[str, Any], Compiled]) -> dict[str, Any]:
    observed, compiled = found
    return {**observed, "compile": facts(compiled)}


@_case("mlp", 1, tolerances=MODEL_TOLERANCE)
def mlp(device: str, dtype: str | None) -> dict[str, Any]:
    """Linear, gelu, layer norm, linear compiled: output and gradients vs eager CPU."""
    return _with_facts(_model_step(device, _MLP, (5, 8)))


@_case("conv_block", 2, tolerances=MODEL_TOLERANCE)
def conv_block(device: str, dtype: str | None) -> dict[str, Any]:
    """conv, batch norm (training: its running statistics are buffers the compiled
    graph mutates), relu, max pool, linear: output, gradients and statistics."""
    return _with_facts(_model_step(device, _ConvBlock, (2, 3, 6, 6)))


@_case(
    "attention",
    2,
    tolerances=MODEL_TOLERANCE,
    surfaces=("aten::_scaled_dot_product_flash_attention_for_cpu",),
)
def attention(device: str, dtype: str | None) -> dict[str, Any]:
    """A causal self-attention block (scaled_dot_product_attention, a residual and a
    layer norm) compiled: output and gradients."""
    return _with_facts(_model_step(device, _Attention, (2, 5, 8)))


def _dynamic_fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Symbolic sizes in a matmul, a cat along the dynamic dim, a reduction over it
    and the size itself as a number."""
    h = F.gelu(x @ w)
    return torch.cat([h, h.flip(0)]).softmax(-1).mean(0) * h.shape[0]


def _dynamic_runs(
    device: str, backend: str = "aot_eager", **options: Any
) -> tuple[dict[str, Any], Compiled]:
    w = _randn(device, 0, 6, 4)
    compiled = Compiled(_dynamic_fn, backend, **options)
    observed = {f"rows_{n}": compiled(_randn(device, n, n, 6), w) for n in DYNAMIC_ROWS}
    return observed, compiled


@_case("dynamic_shapes", 1, tolerances=MODEL_TOLERANCE)
def dynamic_shapes(device: str, dtype: str | None) -> dict[str, Any]:
    """dynamic=True compiled once for 3, 5 and 8 rows; automatic dynamic shapes
    (the default) recompile once, on the second size. Results against eager CPU."""
    marked, marked_run = _dynamic_runs(device, dynamic=True)
    automatic, automatic_run = _dynamic_runs(device)
    return {
        "dynamic_true": marked,
        "automatic": automatic,
        "compile": {
            "dynamic_true": facts(marked_run),
            "automatic": facts(automatic_run),
        },
    }


def _branchy(x: torch.Tensor) -> torch.Tensor:
    y = x.sin() * 2
    if y.sum().item() > 0:  # a Python branch on a device value: Dynamo breaks here
        return y.cos()
    return y - 1


@_case("graph_break", 2)
def graph_break(device: str, dtype: str | None) -> dict[str, Any]:
    """A graph break on .item() (a value read back from the device mid-function):
    both branches resume correctly after it."""
    compiled = Compiled(_branchy)
    positive = compiled(_randn(device, 0, 4, 3).abs())
    negative = compiled(-_randn(device, 1, 4, 3).abs())
    return {"positive": positive, "negative": negative, "compile": facts(compiled)}


@_case("fullgraph", 2, capability="compile_fullgraph", tolerances=MODEL_TOLERANCE)
def fullgraph(device: str, dtype: str | None) -> dict[str, Any]:
    """The MLP, conv block and attention block each compile to graphs without a
    break, and dynamic=True compiles once for three sizes (judged: breaks and
    recompiles, with the reasons Dynamo gave)."""
    observed: dict[str, Any] = {}
    graphs: dict[str, int] = {}
    models = (("mlp", _MLP, (5, 8)), ("conv_block", _ConvBlock, (2, 3, 6, 6)))
    for name, build, shape in (*models, ("attention", _Attention, (2, 5, 8))):
        values, compiled = _model_step(device, build, shape)
        observed[name] = {**values, **judged(compiled)}
        graphs[name] = compiled.graphs
    values, compiled = _dynamic_runs(device, dynamic=True)
    observed["dynamic_shapes"] = {**values, **judged(compiled)}
    graphs["dynamic_shapes"] = compiled.graphs
    return {**observed, "compile": {"graphs": graphs}}


def _fused(x: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Pointwise, reductions, a normalisation, a gather and a matmul in one graph:
    what a code generator fuses."""
    h = torch.where(x > 0, F.gelu(x), y * 0.5)
    h = F.layer_norm(torch.cat([h, y]).softmax(-1), (6,))
    return (h.index_select(0, idx) @ h.t()).relu() + h.sum()


@_case("inductor_ops", 3, capability="inductor", tolerances=CODEGEN_TOLERANCE)
def inductor_ops(device: str, dtype: str | None) -> dict[str, Any]:
    """where, gelu, cat, softmax, layer_norm, index_select, matmul, relu and sum in
    one graph compiled by inductor, against eager CPU."""
    x, y = _randn(device, 0, 4, 6), _randn(device, 1, 4, 6)
    idx = torch.tensor([0, 3, 5, 7]).to(device)
    compiled = Compiled(_fused, "inductor")
    return {"out": compiled(x, y, idx), "compile": facts(compiled)}


@_case("inductor_mlp", 3, capability="inductor", tolerances=CODEGEN_TOLERANCE)
def inductor_mlp(device: str, dtype: str | None) -> dict[str, Any]:
    """The MLP compiled by inductor: output and gradients (a generated backward)."""
    return _with_facts(_model_step(device, _MLP, (5, 8), "inductor"))


@_case(
    "inductor_dynamic_shapes",
    3,
    capability="inductor",
    tolerances=CODEGEN_TOLERANCE,
)
def inductor_dynamic_shapes(device: str, dtype: str | None) -> dict[str, Any]:
    """dynamic=True under inductor: one kernel set with symbolic sizes, 3 sizes."""
    return _with_facts(_dynamic_runs(device, "inductor", dynamic=True))


CASES = (
    graph_add,
    graph_matmul,
    graph_softmax,
    graph_sum,
    graph_mul,
    graph_layer_norm,
    graph_where,
    graph_cat,
    graph_index_select,
    graph_relu,
    graph_gelu,
    graph_embedding,
    mlp,
    conv_block,
    attention,
    dynamic_shapes,
    graph_break,
    fullgraph,
    inductor_ops,
    inductor_mlp,
    inductor_dynamic_shapes,
)
