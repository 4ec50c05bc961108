"""PyTorch's OpInfo database imported without the compiler stack, and nothing else
changed by it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from torchcts_cases.inductor_stand_in import inductor_gpu_types, without_inductor


def test_the_database_loads_without_inductor_and_inductor_stays_real() -> None:
    """In a fresh interpreter the OpInfo table loads with neither torch._inductor nor
    torch._dynamo; afterwards importing them gives the real modules, whose
    GPU_TYPES is the list the stand-in held."""
    script = textwrap.dedent(
        """
        import sys
        import torch
        from torchcts_cases.opinfo_source import op_table
        print(len(op_table()) > 500)
        print(sorted(n for n in sys.modules if n.startswith(("torch._inductor",
              "torch._dynamo"))))
        import torch.testing._internal.common_device_type as cdt
        import torch._inductor.utils as real
        print(real.__file__.endswith("utils.py"), real.GPU_TYPES == cdt.GPU_TYPES)
        print(torch._inductor is sys.modules["torch._inductor"])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["True", "[]", "True True", "True"]


def test_the_stand_in_holds_the_files_list() -> None:
    """The list is read from torch/_inductor/utils.py as the real module defines it."""
    import torch._inductor.utils as real

    assert inductor_gpu_types() == real.GPU_TYPES


def test_anything_else_of_inductor_is_an_import_error_and_leaves_nothing() -> None:
    """Inside the block another inductor module cannot be imported (the caller then
    imports the ordinary way); after it, no stand-in is left in sys.modules."""
    script = textwrap.dedent(
        """
        import sys
        import torch
        from torchcts_cases.inductor_stand_in import without_inductor
        try:
            with without_inductor():
                import torch._inductor.config
        except ImportError:
            print("ImportError")
        print([n for n in sys.modules if n.startswith("torch._inductor")])
        import torch._inductor.config
        print(torch._inductor.config.__file__.endswith("config.py"))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["ImportError", "[]", "True"]


def test_a_loaded_inductor_is_left_alone() -> None:
    """Where torch._inductor is loaded already the block changes nothing."""
    import torch._inductor.utils as real

    with without_inductor():
        assert sys.modules["torch._inductor.utils"] is real
    assert sys.modules["torch._inductor.utils"] is real
