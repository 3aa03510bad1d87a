# SPDX-License-Identifier: Apache-2.0
"""The compiled program's bf-rt.json tables, for test_compiled_program (which compiles). That the
control plane's names are the compiled ones is ffs.core.p4names_gen's check (tests/sde/test_p4names_bfrt.py)."""

from __future__ import annotations

import json
from pathlib import Path


def schema_of(out: Path) -> dict[str, dict]:
    """bf-rt.json's tables of a build directory (build/<chip>/ffs), by name without `pipe.`."""
    return {t["name"].removeprefix("pipe."): t for t in json.loads((out / "bf-rt.json").read_text())["tables"]}
