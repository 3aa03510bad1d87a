# SPDX-License-Identifier: Apache-2.0
"""ffs.core.p4names against the bf-rt.json of a build already in build/<chip>/ffs (make build or make
compile wrote it): every table, key (name, match kind, width), action and parameter (name, width),
counter, register, LPF and the port metadata the control plane names exists with that shape, and
the program has no other. No compiler runs here; test_compiled_program compiles and checks the same.
Skipped, saying why, when there is no build or it is older than p4src/."""

from __future__ import annotations

import pytest

from bfrt_schema import check_p4names, schema_of
from conftest import ROOT


@pytest.mark.parametrize("chip", ["tofino", "tofino2"])
def test_p4names_match_the_compiled_bfrt_json(chip):
    out = ROOT / "build" / chip / "ffs"
    bfrt = out / "bf-rt.json"
    if not bfrt.exists():
        pytest.skip(f"no build/{chip}/ffs/bf-rt.json: make build CHIP={chip} (needs the SDE) compiles one")
    newer = [p for p in (ROOT / "p4src").rglob("*.p4") if p.stat().st_mtime > bfrt.stat().st_mtime]
    if newer:
        pytest.skip(f"build/{chip} is older than {newer[0].relative_to(ROOT)}: make build CHIP={chip}")
    check_p4names(schema_of(out))
