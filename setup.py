# SPDX-License-Identifier: Apache-2.0
"""The one compiled part of the package: the software switch's per-packet loop (`ffs.switch._fastpath`).

Everything else is declared in pyproject.toml; `pip install -e .` builds this with the system C
compiler. It is optional: without a C compiler the install still succeeds (with a warning) and the
switch runs its Python reference pipeline; the fast path's tests then fail and say why.
-ffp-contract=off keeps the LPF's float arithmetic rounding like Python's (no fused multiply-add),
which the differential test against the Python pipeline relies on.

FFS_BUILD_FASTPATH=0 leaves it out, so that the wheel is pure Python (py3-none-any) and installs on
every Python the agent supports (`make wheel`): the agent and ffsctl never load it.
"""

import hashlib
import os
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "controlplane/ffs/switch/_fastpath.c"
# the module carries the hash of the source it was built from: ffs.switch.fast refuses a stale build
DIGEST = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

FASTPATH = [
    Extension(
        "ffs.switch._fastpath",
        [SOURCE],
        define_macros=[("FFS_SOURCE_SHA256", f'"{DIGEST}"')],
        extra_compile_args=["-O2", "-std=gnu11", "-ffp-contract=off", "-Wall", "-Wno-missing-braces"],
        optional=True,
    )
]

setup(ext_modules=[] if os.environ.get("FFS_BUILD_FASTPATH") == "0" else FASTPATH)
