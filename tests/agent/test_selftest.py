# SPDX-License-Identifier: Apache-2.0
"""The bring-up self-test (ffs.agent.selftest) against the software switch modelling each switch
whose pkt_length the frame check may meet: with or without the FCS, the arrival or the deparsed
length (docs/hardware.md). Expectations from spec §7.3's arithmetic: a truthful frame's excess is
pkt_length + arrival change - (L2 header + IP length) = FCS_LEN if the FCS is counted, plus
SHIM_LEN where pkt_length follows the deparser past an inserted shim; once the basis is set,
truthful frames pass and a frame lying by FCS_LEN either way is dropped."""

import ipaddress

import pytest

from agentkit import TWO_PIPES_NODE, make_agent
from ffs.agent.selftest import Basis, SelftestError, path_from, run_on_node, run_selftest
from ffs.core import constants, frames, p4names
from ffs.core.entries import counter_delta
from ffs.core.topology import load
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.tna import PktLength

HARDWARE = [(True, False), (False, False), (True, True), (False, True)]  # (FCS counted, deparsed)


def hardware(fcs: bool, deparsed: bool, off: int = 0) -> Pipeline:
    """The software switch with the pkt_length of a chip that counts the FCS or not and follows the
    deparser or not; `off`: a chip whose pkt_length is off by that many more bytes (none known)."""
    p = Pipeline(3)
    p.pkt_length_model = PktLength(fcs=fcs, deparsed=deparsed)
    if off:
        egress = p._egress
        p._egress = lambda buf, port, n, *a: egress(buf, port, n + off, *a)  # type: ignore[method-assign]
    return p


def sender(pipeline: Pipeline, port: int, copies: int = 1):
    t = [10**9]

    def send(frame: bytes) -> None:
        for _ in range(copies):
            t[0] += 10**6
            pipeline.process(frame, port, t[0])

    return send


def fate(pipeline: Pipeline, port: int, egress: int, frame: bytes) -> str:
    d = LocalDriver(pipeline)
    before = d.read_counters(p4names.ACCEPTED.name, [egress])[egress]
    sender(pipeline, port)(frame)
    after = d.read_counters(p4names.ACCEPTED.name, [egress])[egress]
    return "forwarded" if counter_delta(after, before).packets == 1 else "dropped"


@pytest.mark.parametrize("fcs,deparsed", HARDWARE)
def test_selftest_finds_the_basis_and_sets_the_frame_check(fcs, deparsed):
    pipeline = hardware(fcs, deparsed)
    agent = make_agent(driver=LocalDriver(pipeline))
    node = agent.node  # the dumbbell's s1: p1 inserts the shim
    r = run_on_node(agent.driver, node, "p1", sender(pipeline, node.interfaces["p1"].port))
    assert r.basis == Basis(fcs, deparsed)
    assert r.excess == constants.FCS_LEN * fcs + constants.SHIM_LEN * deparsed
    held = agent.driver.read_default(p4names.FRAME_BASIS.name)
    assert held.action_name == ("basis_deparsed" if deparsed else "basis_arrival")
    assert held.params == {"fcs": constants.FCS_COUNTED if fcs else constants.FCS_NOT_COUNTED}
    # plain frames into p1 toward p3 get a shim; truthful ones pass at every size, lies do not
    p1, p3 = node.interfaces["p1"].port, node.interfaces["p3"].port
    for size in (64, 100, 1500):
        good = frames.ipv4_frame("10.0.1.1", "10.0.3.1", size - constants.ETH_HDR_LEN)
        assert fate(pipeline, p1, p3, good) == "forwarded", size
        for lie in (constants.FCS_LEN, -constants.FCS_LEN):
            bad = frames.lie_ip_len(good, size - constants.ETH_HDR_LEN - lie)
            assert fate(pipeline, p1, p3, bad) == "dropped", (size, lie)


def test_without_the_selftest_a_deparsed_length_drops_every_inserted_frame():
    """Why the self-test exists: the P4 default (arrival length) on a chip that reports the
    deparsed length reads every inserted frame SHIM_LEN bytes long, a lie."""
    pipeline = hardware(True, True)
    agent = make_agent(driver=LocalDriver(pipeline))
    p1, p3 = agent.node.interfaces["p1"].port, agent.node.interfaces["p3"].port
    good = frames.ipv4_frame("10.0.1.1", "10.0.3.1", 1000)
    assert fate(pipeline, p1, p3, good) == "dropped"


@pytest.mark.parametrize("fcs", [True, False])
def test_a_port_that_inserts_nothing_leaves_the_length_unmeasured(tmp_path, fcs):
    f = tmp_path / "two.yaml"
    f.write_text(TWO_PIPES_NODE)
    node = load(f).node("s1")
    pipeline = hardware(fcs, False)
    from ffs.agent.core import Agent

    agent = Agent(LocalDriver(pipeline), load(f), "s1", guard_timer_ns=None)
    agent.install()
    r = run_on_node(agent.driver, node, "a", sender(pipeline, node.interfaces["a"].port))
    assert r.basis == Basis(fcs, None)
    assert "not measured" in r.basis.describe()


def test_an_unknown_length_is_refused_and_the_default_restored():
    pipeline = hardware(True, False, off=2)
    agent = make_agent(driver=LocalDriver(pipeline))
    default = agent.driver.read_default(p4names.FRAME_BASIS.name)
    with pytest.raises(SelftestError, match=r"pkt_length reads \+6 bytes beside a 514-byte frame"):
        run_on_node(agent.driver, agent.node, "p1", sender(pipeline, 1))
    assert agent.driver.read_default(p4names.FRAME_BASIS.name) == default


def test_frames_that_never_arrive_and_other_traffic_are_refused():
    pipeline = hardware(True, False)
    agent = make_agent(driver=LocalDriver(pipeline))
    with pytest.raises(SelftestError, match="did not reach its frame check within 0.2 s"):
        run_selftest(agent.driver, lambda f: None, egress_port=2, dst="10.0.2.9", inserts=True, timeout_s=0.2)
    with pytest.raises(SelftestError, match="other traffic toward port 2 kept disturbing"):
        run_selftest(agent.driver, sender(pipeline, 1, copies=2), egress_port=2, dst="10.0.2.9", inserts=True)


def test_the_path_follows_the_node_routes():
    node = make_agent().node
    egress, port, dst, inserts = path_from(node, "p1")  # the dumbbell: p1 inserts, p2 and p3 are managed
    assert (egress, port, inserts) == ("p2", 2, True) and ipaddress.ip_address(dst) in ipaddress.ip_network(
        "10.0.2.0/24"
    )
    with pytest.raises(SelftestError, match="no interface 'p9'"):
        path_from(node, "p9")


def test_the_path_prefers_a_managed_egress(tmp_path):
    """Only a managed pair's frames get a shim at an insert port (spec §6): the route toward p2,
    no managed egress, comes first in the file but the path takes p3's; with no managed egress
    at all the arrival length cannot be measured."""
    text = TWO_PIPES_NODE.replace(
        "a: {capacity: 10Gbps, port: 0, fp: 1/0}", "a: {capacity: 10Gbps, port: 0, insert: true}"
    )
    three = text.replace(
        "      b: {capacity: 10Gbps, port: 129, fp: 17/1}\n",
        "      b: {capacity: 10Gbps, port: 129, fp: 17/1}\n      c: {capacity: 10Gbps, port: 2}\n",
    )
    three = three.replace(
        "      - {prefix: 10.0.1.0/24", "      - {prefix: 10.0.9.0/24, interface: c}\n      - {prefix: 10.0.1.0/24"
    )
    f = tmp_path / "three.yaml"
    f.write_text(three)
    node = load(f).node("s1")
    assert "c" not in node.fairness and node.routes[0].interface == "c"
    assert path_from(node, "a")[0::3] == ("b", True)
    f.write_text(three.replace("      a: {b: 10Gbps}\n      b: {a: 10Gbps}\n", "      {}\n"))
    assert path_from(load(f).node("s1"), "a")[0::3] == ("c", False)


def test_the_agent_repairs_the_measured_basis():
    """A basis changed behind the agent's back (or lost with a reload) is written again."""
    pipeline = hardware(False, True)
    agent = make_agent(driver=LocalDriver(pipeline))
    agent.selftest = run_on_node(agent.driver, agent.node, "p1", sender(pipeline, 1))
    want = agent.driver.read_default(p4names.FRAME_BASIS.name)
    agent.driver.clear_table(p4names.FRAME_BASIS.name)
    assert agent.driver.read_default(p4names.FRAME_BASIS.name) != want
    agent.check()
    assert agent.driver.read_default(p4names.FRAME_BASIS.name) == want


def test_a_frame_counted_before_the_probe_is_not_taken_for_it():
    """Other traffic: a lying frame toward the egress counted just before the first probe, which
    arrives 5 ms later. Taken for the probe, the truthful frame would read as dropped; the self-test
    waits for a second frame as long again as the first took, sees two, sends the probe again, and
    finds the basis."""
    import threading

    pipeline = hardware(True, False)
    agent = make_agent(driver=LocalDriver(pipeline))
    probe_send = sender(pipeline, 1)
    lie = frames.lie_ip_len(frames.ipv4_frame("10.0.2.1", "10.0.2.9", 500), 400)
    first = [True]

    def send(frame: bytes) -> None:
        if first[0]:
            first[0] = False
            sender(pipeline, 1)(lie)
            threading.Timer(0.005, probe_send, (frame,)).start()
        else:
            probe_send(frame)

    r = run_selftest(agent.driver, send, egress_port=2, dst="10.0.2.9", inserts=True)
    assert (r.basis, r.excess) == (Basis(True, False), constants.FCS_LEN)
