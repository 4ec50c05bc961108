"""Semantic levels 1-8: how deep a case goes, assigned to every case from its id alone.

A case's level is the deepest of four tiers: the op family, the variant, the dtype and
the sample index, except for the primitive ops (`PRIMITIVE_OPS`), whose sample 0 and
edge samples (empty, 0-dim, Python scalar, broadcast: `torchcts_cases.edge_samples`)
are level `PRIMITIVE_EDGE_LEVEL` (1) in every dtype and every variant but nonfinite.
Level 1 is the default run: those primitive-op cases, plus sample 0 in
float32/int64/bool forward of the other elementwise and reduction ops; level 4 is broad
production behaviour (every op and variant, common dtypes, the first eight samples);
level 8 is release depth (every sample of every op in every dtype).
"""

from __future__ import annotations

LEVEL_DOCS: dict[int, str] = {
    1: "the default run: the primitive ops in every declared dtype and every variant "
    "(forward, method, in-place, out=, backward, error inputs, noncontiguous) on "
    "sample 0 and their edge samples (empty, 0-dim, scalar, broadcast); the other "
    "elementwise and reduction ops on sample 0, float32/int64/bool, forward; the "
    "basic hand-written checks",
    2: "first three samples; method and in-place variants; float16, bfloat16, "
    "float64, int32",
    3: "every general op (not only primitives); out= and error inputs; NaN and "
    "+/-Inf placed into the inputs (nonfinite); int8, int16, uint8, complex64",
    4: "broad production behaviour: every op family (linalg, fft, special, nn), "
    "backward and noncontiguous variants, the first eight samples, remaining dtypes",
    5: "deeper hand-written checks (serialization round trips, multi-device)",
    6: "samples 8-31 of every op",
    7: "hand-written stress (large and adversarial shapes)",
    8: "release depth: every sample of every op in every dtype; the stress suite's "
    "tensor sized from the manifest's memory_mb",
}

VARIANT_TIER: dict[str, int] = {
    "forward": 1,
    "method": 2,
    "inplace": 2,
    "out": 3,
    "error_inputs": 3,
    # with error inputs, the other edge behaviour every production path meets: -inf
    # masks in attention and softmax, inf checks in loss scaling, NaN propagating
    # through reductions; a case costs what a forward case costs
    "nonfinite": 3,
    "backward": 4,
    "noncontiguous": 4,
}

DTYPE_TIER: dict[str, int] = {
    "float32": 1,
    "int64": 1,
    "bool": 1,
    "float16": 2,
    "bfloat16": 2,
    "float64": 2,
    "int32": 2,
    "int8": 3,
    "int16": 3,
    "uint8": 3,
    "complex64": 3,
}

FAMILY_PRIMITIVE = 1
FAMILY_GENERAL = 3
FAMILY_SPECIALISED = 4

# Shape, indexing and copy ops every backend needs before anything else works.
PRIMITIVE_OPS = frozenset(
    [
        "abs",
        "add",
        "addcmul",
        "addcdiv",
        "all",
        "amax",
        "amin",
        "any",
        "argmax",
        "argmin",
        "cat",
        "chunk",
        "clamp",
        "clone",
        "contiguous",
        "cumsum",
        "div",
        "eq",
        "exp",
        "expand",
        "fill",
        "flatten",
        "flip",
        "floor",
        "ge",
        "gather",
        "gt",
        "index_add",
        "index_put",
        "index_select",
        "le",
        "log",
        "lt",
        "masked_fill",
        "masked_select",
        "matmul",
        "max",
        "min",
        "mm",
        "movedim",
        "mul",
        "narrow",
        "ne",
        "neg",
        "nonzero",
        "permute",
        "pow",
        "reciprocal",
        "repeat",
        "reshape",
        "rsqrt",
        "scatter",
        "scatter_add",
        "select",
        "sigmoid",
        "sign",
        "sin",
        "cos",
        "split",
        "sqrt",
        "squeeze",
        "stack",
        "sub",
        "sum",
        "mean",
        "prod",
        "t",
        "tanh",
        "transpose",
        "tril",
        "triu",
        "unbind",
        "unsqueeze",
        "view",
        "view_as",
        "where",
        "zero_",
        "relu",
        "nn.functional.relu",
        "softmax",
        "log_softmax",
        "bmm",
        "addmm",
    ]
)

# PyTorch's foreach OpInfo lists: every optimizer step without a fused kernel runs
# them, so they are general ops (level 3), not private ones despite the underscore
FOREACH_PREFIX = "_foreach_"
_SPECIALISED_PREFIXES = (
    "linalg.",
    "fft.",
    "special.",
    "masked.",
    "sparse.",
    "signal.",
    "_refs.",
    "torch.",
    "_",
)


def sample_tier(sample: int | None) -> int:
    """Deeper samples belong to deeper levels; None (no sample axis) is level 1."""
    if sample is None or sample == 0:
        return 1
    if sample <= 2:
        return 2
    if sample <= 7:
        return 4
    if sample <= 31:
        return 6
    return 8


def samples_within(level: int) -> int | None:
    """How many leading samples (0, 1, ...) have a sample tier of at most `level`:
    every later one is deeper (None: every sample is within). Selection counts a
    group's deeper samples at once instead of deciding them one by one."""
    for first_deeper in (1, 3, 8, 32):
        if sample_tier(first_deeper) > level:
            return first_deeper
    return None


def dtype_tier(dtype: str | None) -> int:
    """Core dtypes first; rare ones (uint16, float8, complex32...) at level 4."""
    return 1 if dtype is None else DTYPE_TIER.get(dtype, 4)


def op_family(name: str, *, elementwise_or_reduction: bool) -> int:
    """The family tier of an OpInfo name (without its variant test name)."""
    if name.startswith(FOREACH_PREFIX):
        return FAMILY_GENERAL
    if name.startswith(_SPECIALISED_PREFIXES):
        return FAMILY_SPECIALISED
    if name in PRIMITIVE_OPS or (elementwise_or_reduction and "." not in name):
        return FAMILY_PRIMITIVE
    if name.startswith("nn.functional."):
        return FAMILY_SPECIALISED
    return FAMILY_GENERAL


# The level of a primitive op's sample 0 and edge samples in every dtype and variant:
# the default run's (simdev selects 7,414 level-1 cases with them, 580 without; a
# clean simdev run of them takes about a minute on 2 cores).
PRIMITIVE_EDGE_LEVEL = 1
# what the primitive ops' edge samples exercise: every variant but nonfinite
# (NaN and Inf placed in the inputs wait for level 3 with every other op's)
PRIMITIVE_VARIANTS = frozenset(VARIANT_TIER) - {"nonfinite"}


def is_primitive(op: str) -> bool:
    """Whether OpInfo entry `op` (``div.floor_rounding``) is of a primitive op."""
    return op in PRIMITIVE_OPS or op.partition(".")[0] in PRIMITIVE_OPS


def opinfo_level(
    family: int,
    variant: str,
    dtype: str | None,
    sample: int | None,
    primitive_edge: bool = False,
) -> int:
    """The level of an OpInfo case: the deepest of its four tiers, or at most
    `PRIMITIVE_EDGE_LEVEL` for sample 0 or an edge sample of a primitive op
    (`primitive_edge`) in a primitive variant."""
    tiers = max(family, VARIANT_TIER[variant], dtype_tier(dtype), sample_tier(sample))
    if primitive_edge and variant in PRIMITIVE_VARIANTS:
        return min(tiers, PRIMITIVE_EDGE_LEVEL)
    return tiers
