# SPDX-License-Identifier: Apache-2.0
"""The chain of Tofino nodes (ffs.lab.chain) without an SDE: what it would make of
topologies/chain-model.yaml (a port map per node of only the ports it uses, the link wired node to
node, one management address per node), what it refuses in one line before it makes anything, and
the software switch's replay of the chain that the differential compares the models with."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TOPOLOGIES
from ffs.agent.core import Agent
from ffs.core import constants
from ffs.core.frames import ipv4_frame
from ffs.core.topology import load
from ffs.lab.chain import ChainError, ChainPlan, plan
from ffs.lab.chain_differential import PORTS_PER_NODE, SoftChain, endpoint
from ffs.lab.differential import Probe, read_state
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline

CHAIN = TOPOLOGIES / "chain-model.yaml"


def test_each_node_gets_a_port_map_of_its_own_ports_and_the_link_is_wired_node_to_node():
    p = plan(load(CHAIN), CHAIN, "tofino")
    s1, s2 = p.nodes
    assert [n.name for n in p.nodes] == ["s1", "s2"] and len(set(p.namespaces())) == 3
    for n in p.nodes:
        assert [e["device_port"] for e in n.port_map()["PortToVeth"]] == [1, 2, 3]
        assert all(len(ifname) <= 15 for ifname in n.hosts.values())
    assert s1.links == {3: ("s2", 1)} and s2.links == {1: ("s1", 3)}
    assert set(s1.hosts) == {1, 2} and set(s2.hosts) == {2, 3}
    assert s1.grpc != s2.grpc and s1.grpc.endswith(":50052")
    assert ChainPlan.from_json(p.to_json()) == p
    p2 = plan(load(TOPOLOGIES / "chain-model-tofino2.yaml"), CHAIN, "tofino2")
    assert [e["device_port"] for e in p2.nodes[0].port_map()["PortToVeth"]] == [8, 9, 10]


@pytest.mark.parametrize(
    ("topology", "chip", "words"),
    [
        ("chain-model.yaml", "tofino2", "not a front-panel port of tofino2"),
        ("differential.yaml", "tofino", "needs two nodes or more"),
    ],
)
def test_what_the_chain_cannot_be_is_said_in_one_line(topology, chip, words):
    with pytest.raises(ChainError, match=words) as e:
        plan(load(TOPOLOGIES / topology), TOPOLOGIES / topology, chip)
    assert "\n" not in str(e.value)


@pytest.mark.skipif(shutil.which("ip") is None, reason="the ip command (iproute2) is missing: make setup")
def test_the_runner_refuses_without_an_sde_in_one_line_and_makes_nothing():
    env = {k: v for k, v in os.environ.items() if k not in ("SDE", "SDE_INSTALL")}
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    r = subprocess.run(
        [sys.executable, "-m", "ffs.lab.chain", "test"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("chain: "), r.stderr
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == before


def _soft_chain() -> SoftChain:
    topo = load(CHAIN)
    states = {}
    for name in topo.nodes:
        d = LocalDriver(Pipeline(1))
        Agent(d, topo, name).install()
        states[name] = read_state(d)
    return SoftChain(plan(topo, CHAIN, "tofino"), topo, states, seed=1)


def test_the_software_replay_follows_the_link_inserts_at_s1_and_strips_at_s2():
    """h1 -> h4: s1 inserts the shim (h1's port), s2 strips it (h4's port): h4 gets h1's bytes,
    out of s2's device port 3. h1 -> h3: the shim stays (h3's port keeps it), 8 bytes longer,
    with IP protocol 253 (spec §2). h1 -> 192.0.2.1: no route at s1, dropped there."""
    soft = _soft_chain()
    to_h4 = ipv4_frame("10.0.1.1", "10.0.4.7", 500)
    out = soft.process(Probe(0, endpoint(0, 1), to_h4, "test"), 1_000_000)
    assert (out.egress_port, out.frame) == (endpoint(1, 3), to_h4)
    to_h3 = ipv4_frame("10.0.1.1", "10.0.3.7", 500)
    out = soft.process(Probe(1, endpoint(0, 1), to_h3, "test"), 2_000_000)
    assert out.egress_port == endpoint(1, 2) and out.frame is not None
    assert len(out.frame) == len(to_h3) + constants.SHIM_LEN and out.frame[23] == constants.IP_PROTO_FFS
    lost = soft.process(Probe(2, endpoint(0, 1), ipv4_frame("10.0.1.1", "192.0.2.1", 500), "test"), 3_000_000)
    assert lost.egress_port is None and lost.drop_reason is not None
    assert PORTS_PER_NODE > constants.NUM_PORTS - 1


def test_the_counter_cells_read_by_index_hold_every_cell_the_probes_move():
    """The differential reads a Tofino's counters at its pairs' pids and its ports only (a whole
    4096-cell counter is a Sync, seconds on a loaded model): through the software replay of the
    chain, 300 probes of every kind move no counter cell outside those, on either node."""
    from ffs.lab.differential import Cells, counters, counters_moved, generate

    soft = _soft_chain()
    topo = load(CHAIN)
    cells = Cells(topo, {k: read_state(d) for k, d in soft.drivers.items()})
    for k, d in soft.drivers.items():
        cells.bind(k, d)
    routes = sorted({r.prefix for n in topo.nodes.values() for r in n.routes})
    ports = (endpoint(0, 1), endpoint(0, 2), endpoint(1, 2), endpoint(1, 3))
    probes = generate(3, 300, ports, [p for p in routes if ":" not in p], [p for p in routes if ":" in p])
    for i, p in enumerate(probes):
        soft.process(p, 1_000_000 * (i + 1))
    for d in soft.drivers.values():
        moved = counters_moved(counters(d), {})
        assert any(moved.values())
        assert counters_moved(cells.read(d), {}) == moved
