# SPDX-License-Identifier: Apache-2.0
"""Two compiled FFS nodes in a chain (python -m ffs.lab.chain test, make chain-model) in CI, on each
chip's model: each node a tofino-model + bf_switchd + ffs-agent in a network namespace of its own,
wired by veth from topologies/chain-model.yaml (Tofino 2: chain-model-tofino2.yaml). PTF across
the chain (ptf-tests/chain/: labels s1 writes are the labels s2 normalizes, RRI across two hops,
the shim s1 inserts stripped at s2, trust only on the link) passes, and the differential across
it (the same seeded probes through the two models and the software switch's replay of the chain)
shows 0 mismatches and equal counters on both nodes, with γ drawn at both hops in its congested
phase. Afterwards nothing of the chain is left.

`make test` runs the chain on Tofino 2 only. On Tofino 1 each node's bf_switchd keeps up to three
quarters of a core busy while idle (its timer thread; docs/testing.md, "Two nodes in a chain"), so
two nodes on a 2-core machine take the chain from one minute to four, or eighteen on a loaded one.
What a node does on Tofino 1 is the PTF suite's and the differential's (test_ptf_suite.py,
test_differential_model.py, both chips); the chain adds what is between nodes, which does not
depend on the chip. `make chain-model` (CHIP=tofino) runs it on Tofino 1 too."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from sdekit import sde_missing

PTF_TESTS = {
    "test_chain.LabelWrittenAtS1IsNormalizedAtS2",
    "test_chain.RriAcrossTwoHops",
    "test_chain.ShimInsertedAtS1StrippedAtS2",
    "test_chain.TrustOnlyOnTheLink",
}


def p4src_sha256() -> str:
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.root(reason="tofino-model and bf_switchd need root (veths, hugepages)")
@pytest.mark.parametrize("chip", ["tofino2"])
def test_ptf_and_the_differential_across_two_nodes(tmp_path, chip):
    sha = p4src_sha256()
    why = sde_missing("ffs", chip, sha, check_grpc_port=False)
    if why:
        pytest.skip(f"{why} (make test builds both chips when an SDE is set)" if "make build" in why else why)
    logs = tmp_path / "logs"
    cmd = [sys.executable, "-m", "ffs.lab.chain", "test", "--chip", chip, "--sha256", sha, "--packets", "200"]
    p = subprocess.run([*cmd, "--log-dir", str(logs)], cwd=ROOT, capture_output=True, text=True, timeout=1500)
    out = p.stdout + p.stderr
    seed = next((line for line in out.splitlines() if "reproduces this run" in line), "no seed printed")
    print("\n".join(line for line in out.splitlines() if line.startswith("chain")))
    passed = set(re.findall(r"^(test_chain\.\w+) \.\.\. ok$", out, re.M))
    assert passed == PTF_TESTS, f"PTF across the chain: {sorted(PTF_TESTS - passed)} did not pass\n{out[-6000:]}"
    reports = {r["phase"]: r for r in json.loads((logs / "differential.json").read_text())}
    assert set(reports) == {"exact", "congested"}, out[-3000:]
    for phase, r in reports.items():
        assert r["mismatches"] == [], f"{seed}: {phase}: " + "\n".join(r["mismatches"][:5])
        assert r["counters_equal"] is True, f"{seed}: {phase}: {r['notes']}"
    assert reports["exact"]["probes"] == 200 and reports["congested"]["random"] > 0
    assert p.returncode == 0, out[-3000:]
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "ffs-chain-model" not in left, left
