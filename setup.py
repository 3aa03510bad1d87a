"""The one compiled part of the package: the software switch's per-packet loop (`ffs.switch._fastpath`).

Everything else is declared in pyproject.toml; `pip install -e .` builds this with the system C
compiler. -ffp-contract=off keeps the LPF's float arithmetic rounding like Python's (no fused
multiply-add), which the differential test against the Python pipeline relies on.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "ffs.switch._fastpath",
            ["controlplane/ffs/switch/_fastpath.c"],
            extra_compile_args=["-O2", "-std=gnu11", "-ffp-contract=off", "-Wall", "-Wno-missing-braces"],
        )
    ]
)
