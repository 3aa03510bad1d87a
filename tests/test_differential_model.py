"""The differential run (ffs.differential) in CI: seeded probes of every kind through tofino-model +
bf_switchd, programmed by ffs-agent from topologies/differential.yaml, and through the software
switch with the table state read back from the model. Every deterministic output and every counter
agrees exactly; γ = 1/2 within a 4σ binomial bound on both. `make differential-model` is the long
version (3000 probes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdekit import sde_missing

ROOT = Path(__file__).resolve().parent.parent


def why_not() -> str | None:
    why = sde_missing("ffs")
    if why:
        return why
    installed = Path(os.environ["SDE_INSTALL"], "share", "tofinopd", "ffs", "p4src.sha256")
    want = subprocess.run(["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True).stdout.strip()
    if not installed.exists() or installed.read_text().strip() != want:
        return "the installed ffs is not this checkout's p4src/: make build (make test does it when an SDE is set)"
    return None


@pytest.mark.root
@pytest.mark.skipif(why_not() is not None, reason=why_not() or "")
def test_tofino_model_and_the_software_switch_agree(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ffs.differential", "--start-sde", "--packets", "400",
                        "--gamma-packets", "300", "--seed", "11", "--log-dir", str(tmp_path / "logs"), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    reports = {r["phase"]: r for r in json.loads(p.stdout)}
    assert set(reports) == {"exact", "congested", "gamma"}, p.stderr[-2000:]
    for phase, r in reports.items():
        assert r["mismatches"] == [], f"{phase}: " + "\n".join(r["mismatches"][:5])
    assert reports["exact"]["counters_equal"] is True, reports["exact"]["notes"]
    assert reports["congested"]["counters_equal"] is True, reports["congested"]["notes"]
    assert reports["exact"]["probes"] == 400 and reports["congested"]["random"] > 0  # γ < 1 was exercised
    assert p.returncode == 0
