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

import contextlib
from dataclasses import replace
from typing import Any

import torch
from torchcts_schema import Manifest

from torchcts_cases import opinfo_source
from torchcts_cases.compare import RaisedError, compare
from torchcts_cases.cpu_pinned import cpu_pinned, pinned_tensors
from torchcts_cases.device_choices import resolve_for
from torchcts_cases.dispatch_recorder import overloads_reached
from torchcts_cases.fallback_watch import route_recorder_off
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
from torchcts_cases.opinfo_errors import (
    DEVICE_ERROR_NOTE,
    LEGAL_CALL_NOTE,
    device_expectation,
    expected_error,
    is_unsupported,
    reject_not_implemented,
)
from torchcts_cases.opinfo_marks import errors_marked_failing
from torchcts_cases.out_call import empty_like_on, out_kwargs, out_names
from torchcts_cases.prepared import PreparedCase
from torchcts_cases.replay import Replay, capture
from torchcts_cases.repro import opinfo_repro
from torchcts_cases.sample_stream import rng_state, set_rng_state
from torchcts_cases.spec import CaseSpec, OracleUnavailable, Verdict, case_seed
from torchcts_cases.tolerances import Tolerance, judge_with_provenance
from torchcts_cases.transfer import backward_loss, tensors_in, to_device, to_host
from torchcts_cases.upstream_defects import (
    ModeDefect,
    UpstreamDefect,
    bystander_mode,
    cpu_disagrees,
    defect_for,
    mode_defect_for,
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
        # an error input PyTorch's own review calls a legal call, and OpInfo's
        # expected error on the device when it is not the CPU's (`opinfo_errors`)
        self._legal_call = False
        self._device_error: RaisedError | None = None
        # a reviewed call PyTorch changes under any dispatch mode, shown by this
        # sample on the CPU: the device runs it with TorchCTS's watch off
        self._mode_defect: ModeDefect | None = None
        self._out_fill: int | None = None  # what out= tensors hold before the call
        self._stepped_aside = False  # the device's out= call ran without the watch
        # what the CPU's call resolved as PyTorch does for the manifest's device
        # (`torchcts_cases.device_choices`)
        self._choice_note: str | None = None

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
                self._nonfinite = with_nonfinite(item, self.spec.case_id, self.op.name)
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
        if self.manifest.device != "cpu":
            # building the inputs, not the device's work: found here, before the
            # device's stage, so its time (a first meta pass may import seconds of
            # PyTorch) and any failure of it are the harness's, never the device's
            self.cpu_pinned()
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
            result, self._legal_call = expected_error(self.op, self.item(), result)
        self._reference = result
        return result

    def run_on(self, device: str) -> object:
        """Run on `device`; exceptions propagate unless an exception is expected."""
        expected = self.reference()
        if not isinstance(expected, RaisedError):
            return self._execute(device)
        if self.spec.variant == "error_inputs" and device != "cpu" and not self._replay:
            with route_recorder_off():  # building the input is not the case's call
                self._device_error = device_expectation(
                    self.op, self.built_from, device, self.item(), expected
                )
        try:
            return self._execute(device)
        except Exception as exc:
            if is_unsupported(self.manifest.unsupported_patterns, exc, expected):
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
        if isinstance(expected, RaisedError) and self._device_error is not None:
            expected = self._device_error

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

        verdict = judge_with_provenance(
            mismatch_under, self.spec.dtype, self.spec.op, self.manifest.tolerances
        )
        notes = [
            LEGAL_CALL_NOTE if self._legal_call else "",
            DEVICE_ERROR_NOTE if self._device_error is not None else "",
            self._mode_defect.note()
            if self._mode_defect is not None and self._stepped_aside
            else "",
            self._choice_note or "",
        ]
        if any(notes):
            return replace(verdict, note="; ".join(n for n in notes if n))
        return verdict

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
        None when it would not be exact (`torchcts_cases.replay.capture`; a capsule
        carries no OpInfo marks nor OpInfo's error for the device, which decide how
        an error input is judged)."""
        if self.spec.variant == "error_inputs" and (
            errors_marked_failing(self.op) or self._device_error is not None
        ):
            return None
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
        if device == "cpu":
            (inp, args, kwargs), note = resolve_for(
                (inp, args, kwargs), self.manifest.device
            )
            self._choice_note = self._choice_note or note
        if variant == "noncontiguous":
            inp, args, kwargs = opinfo_source.make_noncontiguous((inp, args, kwargs))
        fn = opinfo_source.variant_callable(self.op, variant)
        if variant == "out":
            return self._execute_out(fn, inp, args, kwargs, device)
        result = fn(inp, *args, **kwargs)
        if variant == "error_inputs":
            reject_not_implemented(result)
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
        out = empty_like_on(self._template(), device)
        if self._out_fill is not None:
            for t in tensors_in(out):
                t.fill_(self._out_fill)
        aside = self._mode_defect is not None and device != "cpu"
        self._stepped_aside |= aside
        with route_recorder_off() if aside else contextlib.nullcontext():
            returned = fn(inp, *args, **kwargs, **out_kwargs(fn, out))
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
        mode_defect = mode_defect_for(self.spec.op, "out")
        if mode_defect is not None and self._out_ignored_under_a_mode():
            self._mode_defect = mode_defect

    def _out_ignored_under_a_mode(self) -> bool:
        """Does CPU's out= call, with a do-nothing dispatch mode on, keep what out
        held before (two fills, two results)? Then the reviewed mode defect shows on
        this sample; once PyTorch is fixed it does not, and the watch stays on."""
        found = []
        for fill in (0, 1):
            self._out_fill = fill
            try:
                with bystander_mode():
                    found.append(self._execute("cpu"))
            finally:
                self._out_fill = None
        outputs = [r["output"] for r in found if isinstance(r, dict)]
        return len(outputs) == 2 and cpu_disagrees(*outputs)

    def out_names(self) -> tuple[str, ...] | None:
        """The schema names the out= call passes its outputs by, when not ``out=``
        (`torchcts_cases.out_call`)."""
        fn = opinfo_source.variant_callable(self.op, "out")
        return out_names(fn, len(tensors_in(self._template())))

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
        "inconsistent range for TensorList output", pytorch/pytorch#144580; both in
        docs/upstream-defects.md). A device's backward that raises is the device's
        result, as always.
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


def _dispatched(fn: Any, inputs: tuple[Any, Any, dict[str, Any]]) -> list[str]:
    """The aten overloads `fn` dispatches on copies of the CPU inputs (aliasing
    kept), leaving the inputs and the global RNGs as they were."""
    state = rng_state()
    inp, args, kwargs = to_device(inputs, "cpu")
    try:
        return overloads_reached(lambda: fn(inp, *args, **kwargs))
    finally:
        set_rng_state(state)
