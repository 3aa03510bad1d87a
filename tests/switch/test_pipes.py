# SPDX-License-Identifier: Apache-2.0
"""Every pipe: a node whose device ports span two pipes of a Tofino (0-63 and 128-191).

On Tofino every counter, register and LPF has one copy per pipe; an ingress object is updated in
the pipe of the packet's ingress port, an egress object in the pipe of its egress port, and a read
for every pipe returns one value per pipe, which the drivers sum. The software switch models that
(ffs.switch.tna). Here Table II runs both ways across the pipe boundary -- ingresses in pipe 0 to
an egress in pipe 1, and ingresses in pipe 1 to an egress in pipe 0 -- and the same node on ports
of one pipe is the reference: the cells land where the hardware puts them, the agent sees the same
totals, τ and status, and the allocation is the allocator's exact one either way."""

from __future__ import annotations

import pytest

from ffs.agent.core import Agent
from ffs.core import p4names
from ffs.core.allocator import allocate
from ffs.core.ports import pipe_of
from ffs.core.topology import load
from ffs.driver.base import pipe_counter, pipe_sum
from ffs.switch import fast, trace
from ffs.switch.driver import LocalDriver, ModelDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve
from ffs.switch.tna import PIPES

TOPO = """name: {name}
nodes:
  n:
    interfaces:
      a1: {{capacity: 15Gbps, port: {ports[0]}, trust: true}}
      a2: {{capacity: 15Gbps, port: {ports[1]}, trust: true}}
      a3: {{capacity: 15Gbps, port: {ports[2]}}}
      b1: {{capacity: 15Gbps, port: {ports[3]}, trust: true}}
      b2: {{capacity: 15Gbps, port: {ports[4]}, trust: true}}
      b3: {{capacity: 15Gbps, port: {ports[5]}}}
    fairness:
      b3: {{a1: 7Gbps, a2: 8Gbps}}
      a3: {{b1: 7Gbps, b2: 8Gbps}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: b3}}
      - {{prefix: 10.0.4.0/24, interface: a3}}
streams:
  - {{name: s1, path: [{{node: n, ingress: a1, egress: b3}}], demand: 3Gbps, r: 3Gbps, f: 6Gbps}}
  - {{name: s2, path: [{{node: n, ingress: a1, egress: b3}}], demand: 4Gbps, r: 4Gbps, f: 1Gbps}}
  - {{name: s3, path: [{{node: n, ingress: a2, egress: b3}}], demand: 16Gbps, r: 16Gbps, f: 8Gbps}}
  - {{name: t1, path: [{{node: n, ingress: b1, egress: a3}}], demand: 3Gbps, r: 3Gbps, f: 6Gbps}}
  - {{name: t2, path: [{{node: n, ingress: b1, egress: a3}}], demand: 4Gbps, r: 4Gbps, f: 1Gbps}}
  - {{name: t3, path: [{{node: n, ingress: b2, egress: a3}}], demand: 16Gbps, r: 16Gbps, f: 8Gbps}}
"""
ONE_PIPE = (1, 2, 3, 4, 5, 6)
TWO_PIPES = (1, 2, 3, 129, 130, 131)  # a* in pipe 0, b* in pipe 1 (same order: the same pair indices)
EXACT = {"s1": 3e9, "s2": 4e9 / 3, "s3": 32e9 / 3, "t1": 3e9, "t2": 4e9 / 3, "t3": 32e9 / 3}  # Table II twice
INGRESS = (
    p4names.PAIR_BYTES,
    p4names.PAIR_DROPS,
    p4names.OFFERED,
    p4names.ADMITTED,
    p4names.EVENTS,
)  # counted in the ingress port's pipe
EGRESS = (p4names.ACCEPTED, p4names.MALFORMED, p4names.PAIR_MALFORMED)  # counted in the egress port's pipe


def topo(tmp_path, name, ports):
    p = tmp_path / f"{name}.yaml"
    p.write_text(TOPO.format(name=name, ports=ports))
    return load(p)


def run(topology, engine="c", seconds=0.3):
    """The node with its agent every 5 ms of virtual time; the snapshots of every step."""
    p = fast.new_pipeline(7, engine)
    agent = Agent(LocalDriver(p), topology, "n")
    agent.install(now_s=0.0)
    snaps = []
    res = trace.run(
        topology, {"n": p}, seconds, period_s=0.005, on_period=lambda ns: snaps.append(agent.step(ns / 1e9)), seed=7
    )
    return p, agent, snaps, res


def cells(p: Pipeline) -> dict[str, list]:
    """Every counter, register and LPF cell, per pipe: name -> [pipe][index] -> value."""
    out = {}
    for name, c in p.counters.items():
        out[name] = [
            list(zip(c.packets[k * c.size : (k + 1) * c.size], c.bytes[k * c.size : (k + 1) * c.size], strict=False))
            for k in range(PIPES)
        ]
    for name, r in p.registers.items():
        out[name] = [list(r.cells[k * r.size : (k + 1) * r.size]) for k in range(PIPES)]
    for name, f in p.lpfs.items():
        out[name] = [
            list(zip(f.state[k * f.size : (k + 1) * f.size], f.seen[k * f.size : (k + 1) * f.size], strict=False))
            for k in range(PIPES)
        ]
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    fast.require()
    d = tmp_path_factory.mktemp("pipes")
    return {ports: (topo(d, "pipes", ports), *run(topo(d, "pipes", ports))) for ports in (ONE_PIPE, TWO_PIPES)}


def test_the_allocation_is_the_same_on_one_pipe_and_across_two(tmp_path):
    one, two = allocate(topo(tmp_path, "one", ONE_PIPE)), allocate(topo(tmp_path, "two", TWO_PIPES))
    assert {s.name: s.rate for s in two.streams} == {s.name: s.rate for s in one.streams} == pytest.approx(EXACT)
    assert two.tau("n", "b3") == one.tau("n", "b3") == pytest.approx(4 / 3)
    assert two.tau("n", "a3") == one.tau("n", "a3") == pytest.approx(4 / 3)


def test_ingress_cells_live_in_the_ingress_pipe_and_egress_cells_in_the_egress_pipe(runs):
    t, p, agent, snaps, _ = runs[TWO_PIPES]
    got = cells(p)
    port = {name: i.port for name, i in t.node("n").interfaces.items()}
    pairs = {(x.ingress, x.egress): x.pid for x in snaps[-1].pairs}
    for (ing, eg), pid in pairs.items():
        here = pipe_of(port[ing])
        for name in (p4names.PAIR_BYTES.name, p4names.PAIR_DROPS.name, p4names.F_EST.name, p4names.F_LPF.name):
            per_pipe = [got[name][k][pid] for k in range(PIPES)]
            assert all(not any(v) if isinstance(v, tuple) else v == 0 for k, v in enumerate(per_pipe) if k != here), (
                name,
                ing,
                eg,
            )
        if ing in ("a1", "a2", "b1", "b2") and eg in ("a3", "b3") and (ing[0] != eg[0]):  # a pair with traffic
            assert got[p4names.PAIR_BYTES.name][here][pid][0] > 0 and got[p4names.F_LPF.name][here][pid][1] == 1
            assert got[p4names.F_EST.name][here][pid] > 0 and got[p4names.PAIR_DROPS.name][here][pid][0] > 0
    # R*_j: counted where the packets came in; A_j: where they leave
    assert got[p4names.OFFERED.name][0][port["b3"]][0] > 0 and got[p4names.OFFERED.name][1][port["b3"]] == (0, 0)
    assert got[p4names.OFFERED.name][1][port["a3"]][0] > 0 and got[p4names.OFFERED.name][0][port["a3"]] == (0, 0)
    assert got[p4names.ACCEPTED.name][1][port["b3"]][0] > 0 and got[p4names.ACCEPTED.name][0][port["b3"]] == (0, 0)
    assert got[p4names.ACCEPTED.name][0][port["a3"]][0] > 0 and got[p4names.ACCEPTED.name][1][port["a3"]] == (0, 0)
    for name in got:  # pipes 2 and 3 have no port of this node (each pipe's packet generator runs the timer)
        if name != p4names.GUARD_TIMERS.name:
            assert not any(any(v) if isinstance(v, tuple) else v for k in (2, 3) for v in got[name][k]), name


def test_a_pairs_estimate_reads_as_its_ingress_pipes_cell_because_the_others_hold_zero(runs):
    """The drivers sum a register over the pipes (BF-RT reads one value per pipe). For f_est that is
    right only because the pair's cell is written in its ingress pipe alone."""
    t, p, agent, snaps, _ = runs[TWO_PIPES]
    ctl = SwitchControl(p)
    pids = [x.pid for x in snaps[-1].pairs]
    per_pipe = ctl.read_registers(p4names.F_EST.name, pids)
    for x in snaps[-1].pairs:
        cell = per_pipe[x.pid]
        assert len(cell) == PIPES and [k for k, v in enumerate(cell) if v] in ([], [x.pipe]), (
            x.ingress,
            x.egress,
            cell,
        )
        assert pipe_sum(cell) == cell[x.pipe] == LocalDriver(p).read_registers(p4names.F_EST.name, [x.pid])[x.pid]
    counters = ctl.read_counters(p4names.PAIR_BYTES.name, pids)
    assert {i: pipe_counter(*v) for i, v in counters.items()} == LocalDriver(p).read_counters(
        p4names.PAIR_BYTES.name, pids
    )


def test_every_counter_reads_the_same_total_on_one_pipe_and_across_two(runs):
    """The pipes hold what one pipe held, split; the sums the agent reads are the same."""
    p1, p2 = runs[ONE_PIPE][1], runs[TWO_PIPES][1]
    d1, d2 = LocalDriver(p1), LocalDriver(p2)
    remap = dict(zip(ONE_PIPE, TWO_PIPES, strict=False))
    for c in INGRESS + EGRESS:
        one = {remap[i] if c.size == 512 else i: v for i, v in d1.read_counters(c.name).items() if v.packets}
        two = {i: v for i, v in d2.read_counters(c.name).items() if v.packets}
        assert one == two, c.name
    assert d1.read_registers(p4names.F_EST.name) == d2.read_registers(p4names.F_EST.name)


def test_the_agents_tau_status_and_telemetry_are_the_same_on_one_pipe_and_across_two(runs):
    (*_, one, r1), (*_, two, r2) = runs[ONE_PIPE], runs[TWO_PIPES]
    assert len(one) == len(two) == 60
    for a, b in zip(one, two, strict=False):
        assert [
            (e.egress, e.tau, e.congested, e.accepted_bps, e.offered_bps, e.drop_bps, e.drops) for e in a.egresses
        ] == [(e.egress, e.tau, e.congested, e.accepted_bps, e.offered_bps, e.drop_bps, e.drops) for e in b.egresses]
        assert [(x.pid, x.ingress, x.egress, x.share_bps, x.rate_bps, x.f_bps, x.drops) for x in a.pairs] == [
            (x.pid, x.ingress, x.egress, x.share_bps, x.rate_bps, x.f_bps, x.drops) for x in b.pairs
        ]
    assert {x.egress: x.pipe for x in two[-1].egresses} == {"a3": 0, "b3": 1}
    assert {x.ingress: x.pipe for x in two[-1].pairs} == {"a1": 0, "a2": 0, "a3": 0, "b1": 1, "b2": 1, "b3": 1}
    settled = [e.tau for s in two[-20:] for e in s.egresses]
    assert sum(settled) / len(settled) == pytest.approx(4 / 3, rel=0.05)
    for name, rate in EXACT.items():  # the exact FFS shares, across the pipe boundary both ways
        assert r2.rate_bps(name, 0.15, 0.3) == pytest.approx(rate, rel=0.05), name
        assert r2.rate_bps(name, 0.15, 0.3) == r1.rate_bps(name, 0.15, 0.3)


def test_the_python_pipeline_puts_every_cell_where_the_fast_path_does(tmp_path):
    """The compiled fast path against the reference, on ports in two pipes (a short run: the
    Python pipeline is slow)."""
    fast.require()
    t = topo(tmp_path, "pipes", TWO_PIPES)
    ref, *_ = run(t, "python", 0.01)
    fp, *_ = run(t, "c", 0.01)
    assert cells(fp) == cells(ref)
    assert sum(v[0] for v in cells(fp)[p4names.ACCEPTED.name][1]) > 0


def test_the_switch_over_grpc_answers_per_pipe_and_the_model_driver_sums_as_the_others(runs, tmp_path):

    t, p, agent, snaps, _ = runs[TWO_PIPES]
    ctl = SwitchControl(p)
    server = serve(ctl, f"unix:{tmp_path}/ctl.sock")
    try:
        m = ModelDriver(f"unix:{tmp_path}/ctl.sock")
        m.connect(timeout_s=10)
        raw = m._rpc("ReadCounters", {"name": p4names.ACCEPTED.name, "indices": [131]})["values"]["131"]
        assert [len(raw[0]), len(raw[1])] == [PIPES, PIPES] and raw[0][0] == 0 < raw[0][1]
        for c in INGRESS + EGRESS:
            assert m.read_counters(c.name) == LocalDriver(p).read_counters(c.name), c.name
        pids = [x.pid for x in snaps[-1].pairs]
        assert m.read_registers(p4names.F_EST.name, pids) == LocalDriver(p).read_registers(p4names.F_EST.name, pids)
        m.close()
    finally:
        server.stop(0)
