# SPDX-License-Identifier: Apache-2.0
"""The differential run (ffs.lab.differential) in CI, on each chip's model: seeded probes of every kind
through tofino-model + bf_switchd, programmed by ffs-agent from topologies/differential.yaml
(differential-tofino2.yaml on Tofino 2), and through the software switch with the table state read
back from the model. Every output and every counter agrees exactly in every phase (random draws
replayed from the model's outcome), the γ phases too, at 200 packets a γ: what γ's frequency is,
at the n that tells γ from 0.8 γ and 1.2 γ, is PTF's `DropFrequencyIsGamma` on both chips' models
and the software switch (test_ptf_suite.py), not repeated here. The seed changes every run and is
printed (`--seed N` reproduces a failure). `make differential-model [CHIP=tofino2]` is the long
version (3000 probes, γ at that n)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT
from sdekit import sde_missing

GAMMA_PACKETS = 200  # a γ phase's bytes and counters; its frequency is PTF's DropFrequencyIsGamma


def why_not(chip: str) -> str | None:
    want = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True
    ).stdout.strip()
    why = sde_missing("ffs", chip, want)
    return f"{why} (make test builds both chips when an SDE is set)" if why and "make build" in why else why


@pytest.mark.root(reason="tofino-model and bf_switchd need root (veths, hugepages)")
@pytest.mark.parametrize("chip", ["tofino", "tofino2"])
def test_tofino_model_and_the_software_switch_agree(tmp_path, chip):
    why = why_not(chip)
    if why:
        pytest.skip(why)
    # the README's command, as a user runs it (test_docs_commands.py leaves that block to this test)
    p = subprocess.run(
        [
            "make",
            "-s",
            "differential-model",
            f"CHIP={chip}",
            "PACKETS=400",
            f"PYTHON={sys.executable}",
            f"DIFFERENTIAL_ARGS=--log-dir {tmp_path / 'logs'} --json --gamma-packets {GAMMA_PACKETS}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    seed = next((line for line in p.stderr.splitlines() if "reproduces this run" in line), "no seed printed")
    print(seed)
    assert p.returncode in (0, 1), f"{seed}\n" + p.stderr[-3000:]
    reports = {r["phase"]: r for r in json.loads(p.stdout)}
    assert set(reports) == {"exact", "congested", "gamma d=128", "gamma d=66", "gamma d=203"}, p.stderr[-2000:]
    for phase, r in reports.items():
        assert r["mismatches"] == [], f"{seed}: {chip} {phase}: " + "\n".join(r["mismatches"][:5])
        assert r["counters_equal"] is True, f"{seed}: {chip} {phase}: {r['notes']}"
    assert reports["exact"]["probes"] == 400 and reports["congested"]["random"] > 0  # γ < 1 was exercised
    assert p.returncode == 0
