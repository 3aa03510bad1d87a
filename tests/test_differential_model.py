"""The differential run (ffs.differential) in CI, on each chip's model: seeded probes of every kind
through tofino-model + bf_switchd, programmed by ffs-agent from topologies/differential.yaml
(differential-tofino2.yaml on Tofino 2), and through the software switch with the table state read
back from the model. Every deterministic output and every counter agrees exactly; γ = 1/2 within a
4σ binomial bound on both. `make differential-model [CHIP=tofino2]` is the long version (3000
probes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdekit import sde_missing

ROOT = Path(__file__).resolve().parent.parent


def why_not(chip: str) -> str | None:
    want = subprocess.run(["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True).stdout.strip()
    why = sde_missing("ffs", chip, want)
    return f"{why} (make test builds both chips when an SDE is set)" if why and "make build" in why else why


@pytest.mark.root
@pytest.mark.parametrize("chip", ["tofino", "tofino2"])
def test_tofino_model_and_the_software_switch_agree(tmp_path, chip):
    why = why_not(chip)
    if why:
        pytest.skip(why)
    p = subprocess.run([sys.executable, "-m", "ffs.differential", "--chip", chip, "--start-sde", "--packets", "400",
                        "--gamma-packets", "300", "--seed", "11", "--log-dir", str(tmp_path / "logs"), "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert p.returncode in (0, 1), p.stderr[-3000:]
    reports = {r["phase"]: r for r in json.loads(p.stdout)}
    assert set(reports) == {"exact", "congested", "gamma"}, p.stderr[-2000:]
    for phase, r in reports.items():
        assert r["mismatches"] == [], f"{chip} {phase}: " + "\n".join(r["mismatches"][:5])
    assert reports["exact"]["counters_equal"] is True, reports["exact"]["notes"]
    assert reports["congested"]["counters_equal"] is True, reports["congested"]["notes"]
    assert reports["exact"]["probes"] == 400 and reports["congested"]["random"] > 0  # γ < 1 was exercised
    assert p.returncode == 0
