# SPDX-License-Identifier: Apache-2.0
"""Trace mode: the compiled loop reproduces the Python loop packet for packet (same arrivals, same
draws, same agents' decisions, same traffic managers), and runs are deterministic for a seed."""

from __future__ import annotations

import numpy as np
import pytest

from ffs.agent.core import Agent
from ffs.core import p4names
from ffs.core.topology import load
from ffs.switch import fast, trace
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.tm import configure_node

TM_ARRAYS = ("backlog", "last", "drops", "drop_bytes", "enqueued", "delay_sum", "drain")


def _run(topo, cls, duration, *, poisson=False, jitter=False, small_buffers=False, drain=False, seed=3, period_s=0.005):
    pipes = {n: cls(seed + k) for k, n in enumerate(sorted(topo.nodes))}
    for n, p in pipes.items():
        configure_node(p.tm, topo.nodes[n])  # every port at its line rate
        if small_buffers:  # queues that overflow: tail drops in the comparison
            for i in topo.nodes[n].interfaces.values():
                p.tm.configure(i.port, i.speed, 30_000)
        for i in topo.nodes[n].interfaces.values() if drain else ():  # ports that send 60 % of their speed
            p.tm.set_drain(i.port, 0.6, 0)
    agents = {n: Agent(LocalDriver(p), topo, n) for n, p in pipes.items()}
    for a in agents.values():
        a.install()

    def on_period(now_ns):
        return {n: [(e.egress, e.tau, e.congested) for e in a.step(now_ns / 1e9).egresses] for n, a in agents.items()}

    res = trace.run(
        topo, pipes, duration, period_s=period_s, on_period=on_period, seed=seed, poisson=poisson, jitter=jitter
    )
    counters = {n: {c: LocalDriver(p).read_counters(c) for c in p.counters} for n, p in pipes.items()}
    qstate = {n: {a: getattr(p.tm, a).tolist() for a in TM_ARRAYS} for n, p in pipes.items()}
    return res, counters, qstate


@pytest.mark.parametrize("mode", ["constant", "poisson", "jitter+small-buffers", "jitter+small-buffers+drain"])
def test_compiled_trace_is_the_python_trace(topo_dir, mode):
    fast.require()
    topo = load(topo_dir / "chain.yaml")
    kw = {
        "poisson": mode == "poisson",
        "jitter": mode.startswith("jitter"),
        "small_buffers": "small-buffers" in mode,
        "drain": mode.endswith("drain"),
    }
    a, ca, qa = _run(topo, Pipeline, 0.012, period_s=0.002, **kw)
    b, cb, qb = _run(topo, fast.FastPipeline, 0.012, period_s=0.002, **kw)
    assert a.packets == b.packets > 10_000
    assert a.sent == b.sent and a.dropped == b.dropped
    assert sum(a.dropped.values()) > 1000  # the agents' tau made FFS drop: the comparison covers it
    for name in a.delivered:
        assert np.array_equal(a.delivered[name], b.delivered[name]), name
    assert a.periods == b.periods
    assert ca == cb
    assert qa == qb
    assert sum(sum(q["enqueued"]) for q in qa.values()) > 1000  # the frames went through the TMs
    if kw["small_buffers"]:
        assert sum(sum(q["drops"]) for q in qa.values()) > 0


def test_trace_is_deterministic_for_a_seed(topo_dir):
    fast.require()
    topo = load(topo_dir / "table2.yaml")
    runs = [_run(topo, fast.FastPipeline, 0.02, poisson=True, seed=s) for s in (5, 5, 6)]
    assert runs[0][0].dropped == runs[1][0].dropped and runs[0][1] == runs[1][1]
    assert runs[0][0].dropped != runs[2][0].dropped  # another seed, other draws
    pair_bytes = runs[0][1]["n"][p4names.PAIR_BYTES.name]
    assert sum(v.packets for v in pair_bytes.values()) == runs[0][0].packets  # every packet is on a managed pair
