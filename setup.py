# SPDX-License-Identifier: Apache-2.0
"""The one compiled part of the package: the software switch's per-packet loop (`ffs.switch._fastpath`).

Everything else is declared in pyproject.toml. The ordinary build of a wheel (`pip wheel .`,
`python -m build`, `pip install .`) leaves it out: the wheel is pure Python (py38-none-any) and
installs on every Python the agent supports, 3.8 and later, a switch's among them
(docs/hardware.md); the agent and ffsctl never load it. The laboratory's install, `pip install -e .` (make setup), builds it with
the system C compiler, as does any build with FFS_BUILD_FASTPATH=1 (FFS_BUILD_FASTPATH=0: never).
It is optional: without a C compiler the install still succeeds (with a warning) and the switch
runs its Python reference pipeline; the fast path's tests then fail and say why.
-ffp-contract=off keeps the LPF's float arithmetic rounding like Python's (no fused multiply-add),
which the differential test against the Python pipeline relies on.
"""

import hashlib
import os
import sys
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


def build_fastpath() -> bool:
    """FFS_BUILD_FASTPATH=1/0 decides; unset, only an editable install (the laboratory's) builds it:
    setuptools runs this file with the command it builds, `editable_wheel` for `pip install -e`."""
    asked = os.environ.get("FFS_BUILD_FASTPATH")
    if asked in ("0", "1"):
        return asked == "1"
    return any(cmd in sys.argv for cmd in ("editable_wheel", "develop"))


# py38: the oldest Python the agent runs on. pip checks a wheel's tag before its dependencies, and
# Requires-Python only after them: on 3.7 it would refuse a py3 wheel for a dependency's sake
# (prometheus-client>=0.20), where it refuses this one for its tag, which names 3.8
setup(ext_modules=FASTPATH if build_fastpath() else [], options={"bdist_wheel": {"python_tag": "py38"}})
