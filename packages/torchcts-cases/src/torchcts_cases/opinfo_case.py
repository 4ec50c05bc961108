"""An OpInfo case prepared for execution: one sample of one op in one variant.

Inputs are rebuilt on CPU from a seed derived from the case id. The reference runs the
same variant on CPU copies; `run_on` runs it on device copies and copies results back.
When CPU raises (error inputs, or an in-place call that cannot broadcast), the expected
behaviour is that exception: the device must raise the same type (and, for error
inputs, a message matching OpInfo's pattern). A nonfinite case is the forward call on
its sample with NaN and Inf placed in it (`torchcts_cases.nonfinite`), on CPU and on
the device alike.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torchcts_schema import Manifest

from torchcts_cases import opinfo_source
from torchcts_cases.compare import RaisedError, compare
from torchcts_cases.cpu_pinned import cpu_pinned, pinned_tensors
from torchcts_cases.dispatch_recorder import overloads_reached
from torchcts_cases.layout_contract import (
    FUNCTIONAL_VARIANTS,
    Expected,
    functional_contract,
    inplace_contract,
    judge_layout,
    out_contract,
)
from torchcts_cases.legal import judge_legal
from torchcts_cases.nonfinite import NonfiniteSample, with_nonfinite
from torchcts_cases.prepared import PreparedCase
from torchcts_cases.replay import Replay, capture
from torchcts_cases.repro import opinfo_repro
from torchcts_cases.sample_stream import rng_state, set_rng_state
from torchcts_cases.spec import CaseSpec, OracleUnavailable, Verdict, case_seed
from torchcts_cases.tolerances import Tolerance, judge_with_provenance
from torchcts_cases.transfer import backward_loss, tensors_in, to_device, to_host
from torchcts_cases.upstream_defects import (
    UpstreamDefect,
    cpu_disagrees,
    defect_for,
    out_metadata_mismatch,
)

_UNSET: Any = object()


class OpInfoCase(PreparedCase):
    """One OpInfo sample in one variant (forward, method, in-place, out=, backward,
    error inputs, noncontiguous, nonfinite)."""

    def __init__(
        self,
        spec: CaseSpec,
        manifest: Manifest,
        mode: str | None,
        replay: Replay | None = None,
        built_from: int | None = None,
    ) -> None:
        super().__init__(spec, manifest)
        # a capsule of saved inputs (torchcts_cases.replay) stands in for OpInfo
        self.op: Any = replay.op if replay else opinfo_source.find_op(spec.op)
        self.mode = mode
        # the OpInfo sample the case is built from (`catalog.built_sample`)
        self.built_from = (spec.sample or 0) if built_from is None else built_from
        self._replay = replay
        self._item: Any = _UNSET
        self._nonfinite: NonfiniteSample | None = None
        self._reference: Any = _UNSET
        self._out_template: Any = _UNSET
        self._pinned: frozenset[int] | None = replay.pinned if replay else None
        # a reviewed upstream defect CPU's own out= shows on this very sample
        self._defect: UpstreamDefect | None = None
        # result layouts that are contract (`torchcts_cases.layout_contract`),
        # found while the CPU reference runs
        self._layout: tuple[Expected, ...] = ()

    # -- inputs -------------------------------------------------------------------
    def item(self) -> Any:
        """The OpInfo SampleInput (or ErrorInput) of this case, built once on CPU."""
        if self._item is _UNSET and self._replay is not None:
            self._item = self._replay.item
            opinfo_source.seed_everything(case_seed(self.spec.case_id))
        if self._item is _UNSET:
            dtype = getattr(torch, self.spec.dtype) if self.spec.dtype else None
            self._item = opinfo_source.build_sample(
                self.op,
                self.spec.variant,
                dtype,
                self.built_from,
                case_seed(self.spec.case_id),
            )
        return self._item

    def sample(self) -> Any:
        """The SampleInput (the one inside an ErrorInput for error cases; for a
        nonfinite case, a copy with its NaN and Inf in place)."""
        item = self.item()
        if self.spec.variant == "error_inputs":
            return item.sample_input
        if self.spec.variant == "nonfinite":
            if self._nonfinite is None:
                self._nonfinite = with_nonfinite(item, self.spec.case_id)
            return self._nonfinite
        return item

    def cpu_pinned(self) -> frozenset[int]:
        """Positions of the sample's tensors that stay on the CPU in a device run
        (`torchcts_cases.cpu_pinned`), found once."""
        if self._pinned is None:
            item = self.item()
            dtype = getattr(torch, self.spec.dtype) if self.spec.dtype else None
            # built_from, not the case's sample number: a nonfinite case numbers
            # only the forward samples it can place a value in
            self._pinned = cpu_pinned(
                self.op, self.spec.variant, dtype, self.built_from, item
            )
        return self._pinned

    # -- the contract --------------------------------------------------------------
    def reference(self) -> object:
        """Run on CPU copies; an exception there becomes the expected behaviour."""
        if self._reference is not _UNSET:
            return self._reference
        result: object
        try:
            if self.spec.variant == "out":
                # out= must equal the functional result: CPU's own out= path is not
                # the oracle (torch 2.13's fft.ihfftn(out=) leaves out unwritten)
                template = self._template()
                self._cpu_out_applies()
                result = {"output": to_host(template), "returns_out": True}
            else:
                result = self._execute("cpu", contract=True)
        except OracleUnavailable:
            raise
        except Exception as exc:
            result = RaisedError.of(exc, self._pattern())
        if self.spec.variant == "error_inputs":
            result = self._check_cpu_error(result)
        self._reference = result
        return result

    def run_on(self, device: str) -> object:
        """Run on `device`; exceptions propagate unless an exception is expected."""
        expected = self.reference()
        if not isinstance(expected, RaisedError):
            return self._execute(device)
        try:
            return self._execute(device)
        except Exception as exc:
            if self._is_unsupported(exc, expected):
                raise
            return RaisedError.of(exc)

    def judge(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> Verdict:
        """Compare under the case's source: CPU values, or a legal-output rule."""

        if self._defect is not None:
            mismatch = out_metadata_mismatch(expected, observed)
            return Verdict(
                ok=mismatch is None, mismatch=mismatch, note=self._defect.note()
            )
        if isinstance(expected, RaisedError) and self.spec.variant != "error_inputs":
            # a generic CPU error (not an OpInfo error input): the type is the contract
            expected = RaisedError(expected.type_name, expected.message, expected.mro)

        def mismatch_under(tol: Tolerance) -> str | None:
            if not isinstance(expected, RaisedError):
                found = judge_layout(self._layout, observed)
                if found:  # wrong strides explain the wrong values they bring
                    return found
            if self.mode and not metadata_only:
                return judge_legal(self.mode, self, expected, observed, tol)
            return compare(
                expected, observed, metadata_only=metadata_only, tolerance=tol
            )

        return judge_with_provenance(
            mismatch_under, self.spec.dtype, self.spec.op, self.manifest.tolerances
        )

    def facts(
        self, expected: object, observed: object, *, metadata_only: bool = False
    ) -> dict[str, Any]:
        """The shared facts, and the aten overloads the CPU run of this case reaches."""
        facts = super().facts(expected, observed, metadata_only=metadata_only)
        facts["aten"] = overloads_reached(lambda: self._execute("cpu"))
        sample = self.sample()
        if isinstance(sample, NonfiniteSample):
            facts["nonfinite"] = [p.describe() for p in sample.placements]
        return facts

    def metadata_only_facts(self) -> bool:
        """A legal-output op has more than one right set of values."""
        return bool(self.mode)

    def inputs(self) -> object:
        """The sample's input, args and kwargs, on CPU."""
        sample = self.sample()
        return {"input": sample.input, "args": sample.args, "kwargs": sample.kwargs}

    def repro_source(
        self, device: str, backend_import: str | None, backend_options: dict[str, Any]
    ) -> str:
        """A standalone script that rebuilds this sample and calls the op on `device`."""
        return opinfo_repro(self, device, backend_import, backend_options)

    def saved_inputs(self) -> bytes | None:
        """The capsule a rerun of this case replays instead of importing OpInfo, or
        None when it would not be exact (`torchcts_cases.replay.capture`)."""
        return capture(self.spec, self.op, self.item(), self.cpu_pinned())

    # -- execution -----------------------------------------------------------------
    def _execute(self, device: str, *, contract: bool = False) -> object:
        """Run the variant on `device`; on the CPU with `contract`, also note which
        result layouts are contract (`torchcts_cases.layout_contract`)."""
        variant = self.spec.variant
        sample = self.sample()
        grad = variant == "backward"
        keep = (  # the tensors of `sample`: a nonfinite case's are a copy's
            pinned_tensors(sample, self.cpu_pinned())
            if device != "cpu"
            else frozenset()
        )
        # one call, so tensors shared between input, args and kwargs stay shared
        inp, args, kwargs = to_device(
            (sample.input, sample.args, sample.kwargs),
            device,
            grad=grad,
            keep_on_cpu=keep,
        )
        if variant == "noncontiguous":
            inp, args, kwargs = opinfo_source.make_noncontiguous((inp, args, kwargs))
        fn = opinfo_source.variant_callable(self.op, variant)
        if variant == "out":
            return self._execute_out(fn, inp, args, kwargs, device)
        result = fn(inp, *args, **kwargs)
        if variant == "inplace":
            if contract:
                self._layout = inplace_contract(self.op, kwargs, inp)
            return {
                "output": to_host(result),
                "self": to_host(inp),
                "returns_self": result is inp,
            }
        if variant == "backward":
            return self._grads(sample, result, (inp, args, kwargs), device)
        if contract and variant in FUNCTIONAL_VARIANTS:
            self._layout = functional_contract(
                self.op,
                (inp, args, kwargs),
                kwargs,
                result,
                lambda: _dispatched(fn, (inp, args, kwargs)),
            )
        return to_host(result)

    def _execute_out(
        self, fn: Any, inp: Any, args: Any, kwargs: dict[str, Any], device: str
    ) -> object:
        out = _empty_like_on(self._template(), device)
        returned = fn(inp, *args, **kwargs, out=out)
        same = all(
            a is b for a, b in zip(tensors_in(returned), tensors_in(out), strict=False)
        )
        return {"output": to_host(out), "returns_out": same}

    def _cpu_out_applies(self) -> None:
        """A sample whose out= call CPU rejects (a tuple-returning mode, an out
        overload with other outputs) cannot judge a device's out=: not a result.
        Where CPU's out= returns other values than its functional call and a
        reviewed upstream defect covers the op, that defect's reference judges."""
        try:
            cpu_out = self._execute("cpu")
        except OracleUnavailable:
            raise
        except Exception as exc:
            raise OracleUnavailable(
                f"CPU's own out= call fails for this sample: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}"
            ) from exc
        if isinstance(cpu_out, dict):
            self._layout = out_contract(cpu_out["output"])
        defect = defect_for(self.spec.op, "out")
        if (
            defect is not None
            and isinstance(cpu_out, dict)
            and cpu_disagrees(self._template(), cpu_out["output"])
        ):
            self._defect = defect

    def _template(self) -> Any:
        """The functional CPU result: the expected out= contents and their shapes."""
        if self._out_template is _UNSET:
            cpu = self.sample()
            c_inp, c_args, c_kwargs = to_device(
                (cpu.input, cpu.args, cpu.kwargs), "cpu"
            )
            self._out_template = self.op.op(c_inp, *c_args, **c_kwargs)
        return self._out_template

    def _grads(self, sample: Any, result: Any, inputs: Any, device: str) -> object:
        """The forward outputs and the gradients of their sum.

        OpInfo's backward samples are differentiable by contract (its own
        test_backward runs them), so a CPU backward pass that raises after a forward
        that did not is an upstream defect, not an expected error: the case has no
        reference (torch 2.13: ``_foreach_addcdiv``'s backward raises IndexError;
        ``_foreach_add``'s with a 0-dim tensor operand that requires grad raises
        "inconsistent range for TensorList output"). A device's backward that raises
        is the device's result, as always.
        """
        processed = sample.output_process_fn_grad(result)
        outs = [t for t in tensors_in(processed) if t.requires_grad]
        leaves = [t for t in tensors_in(inputs) if t.requires_grad]
        if not outs or not leaves:
            raise OracleUnavailable("sample has no differentiable output or input")
        loss = backward_loss(outs)
        try:
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        except Exception as exc:
            if device != "cpu":
                raise
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise OracleUnavailable(
                f"CPU's own backward fails for this sample after its forward "
                f"succeeded: {type(exc).__name__}: {first}"
            ) from exc
        return {"output": to_host(processed), "grads": [to_host(g) for g in grads]}

    # -- error expectations --------------------------------------------------------
    def _pattern(self) -> str | None:
        if self.spec.variant != "error_inputs":
            return None
        return str(self.item().error_regex)

    def _check_cpu_error(self, result: object) -> RaisedError:
        item = self.item()
        if not isinstance(result, RaisedError):
            raise OracleUnavailable(
                f"CPU did not raise for OpInfo error input (expected {item.error_type.__name__})"
            )
        if item.error_type.__name__ not in result.mro or not re.search(
            item.error_regex, result.message
        ):
            raise OracleUnavailable(
                f"CPU raised {result.type_name}: {result.message[:120]!r}, not "
                f"{item.error_type.__name__} matching {item.error_regex!r} as OpInfo says"
            )
        return RaisedError(
            item.error_type.__name__, result.message, result.mro, item.error_regex
        )

    def _is_unsupported(self, exc: BaseException, expected: RaisedError) -> bool:
        """A backend 'not implemented' is reported as such, unless CPU said the same."""
        text = f"{type(exc).__name__}: {exc}"
        for pattern in self.manifest.unsupported_patterns:
            if re.search(pattern, text) and not re.search(
                pattern, f"{expected.type_name}: {expected.message}"
            ):
                return True
        return False


def _dispatched(fn: Any, inputs: tuple[Any, Any, dict[str, Any]]) -> list[str]:
    """The aten overloads `fn` dispatches on copies of the CPU inputs (aliasing
    kept), leaving the inputs and the global RNGs as they were."""
    state = rng_state()
    inp, args, kwargs = to_device(inputs, "cpu")
    try:
        return overloads_reached(lambda: fn(inp, *args, **kwargs))
    finally:
        set_rng_state(state)


def _empty_like_on(template: Any, device: str) -> Any:
    if isinstance(template, torch.Tensor):
        if template.layout != torch.strided:  # sparse outputs need their layout
            return torch.empty_like(template).to(device)
        return torch.empty(template.shape, dtype=template.dtype, device=device)
    if isinstance(template, list | tuple):
        return (
            type(template)(_empty_like_on(t, device) for t in template)
            if not hasattr(template, "_fields")
            else tuple(_empty_like_on(t, device) for t in template)
        )
    raise OracleUnavailable(f"out= template of type {type(template).__name__}")
