"""Table II packet by packet: three streams through the software switch in virtual time at 15 Gb/s,
with the agent's tau loop, settle at the exact FFS allocation (Eq. 2: tau = 4/3; 3, 4/3, 32/3)."""

import pytest

from ffs.agent.core import Agent
from ffs.allocator import allocate
from ffs.driver.model import LocalDriver
from ffs.switch import trace
from ffs.switch.pipeline import Pipeline
from ffs.topology import load


def test_table_ii_replay_converges_to_exact_allocation(topo_dir):
    topo = load(topo_dir / "table2.yaml")
    exact = allocate(topo)
    p = Pipeline(seed=7)
    agent = Agent(LocalDriver(p), topo, "n")
    agent.install()
    taus = []

    def on_period(now_ns):
        snap = agent.step(now_ns / 1e9)
        taus.append(snap.egresses[0].tau)

    res = trace.run(topo, {"n": p}, 0.25, period_s=0.005, on_period=on_period, seed=7)
    for s in exact.streams:
        assert res.rate_bps(s.name, 0.15, 0.25) == pytest.approx(s.rate, rel=0.05), s.name
    settled = taus[-20:]
    assert sum(settled) / len(settled) == pytest.approx(exact.tau("n", "j"), rel=0.05)
    assert min(settled) >= 1.0  # Lemma 1
