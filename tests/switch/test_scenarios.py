# SPDX-License-Identifier: Apache-2.0
"""Short versions of the evaluation's scenarios (scenarios/*.yaml, rates scaled down 10x so that a
run takes about a second): the steady-state per-stream rates of the packet-level run are within
5 % of the exact FFS allocation; the FIFO baseline is not."""

import dataclasses

import pytest

from conftest import ROOT
from ffs.core.allocator import allocate
from ffs.core.topology import load
from ffs.lab.experiments import fairness_index, run_scenario, settling_time, with_target_factor

SCENARIOS = ROOT / "scenarios"


def scaled(name: str, k: float = 0.1, factor: float | None = None):
    t = load(SCENARIOS / f"{name}.yaml")
    nodes = {
        n: dataclasses.replace(
            node,
            interfaces={i: dataclasses.replace(x, capacity=x.capacity * k) for i, x in node.interfaces.items()},
            fairness={e: {i: v * k for i, v in col.items()} for e, col in node.fairness.items()},
            targets={e: v * k for e, v in node.targets.items()},
        )
        for n, node in t.nodes.items()
    }
    streams = tuple(dataclasses.replace(s, demand=s.demand * k, r=s.r * k, f=s.f * k) for s in t.streams)
    return with_target_factor(dataclasses.replace(t, nodes=nodes, streams=streams), factor)


def errors(res):
    return {s["stream"]: s["error"] for s in res.streams}


@pytest.mark.parametrize("name", ["flood", "tampering", "many-streams", "chain", "underuse"])
def test_ffs_meets_the_exact_allocation(name):
    res = run_scenario(scaled(name), "ffs", duration_s=0.2, seed=3)
    assert all(abs(e) <= 0.05 for e in errors(res).values()), errors(res)


def test_fifo_does_not_isolate():
    topo = scaled("flood")
    ffs = {s["stream"]: s["measured"] for s in run_scenario(topo, "ffs", duration_s=0.2).streams}
    fifo = {s["stream"]: s["measured"] for s in run_scenario(topo, "fifo", duration_s=0.2).streams}
    exact = {s.name: s.rate for s in allocate(topo).streams}
    assert ffs["victim"] == pytest.approx(exact["victim"], rel=0.05)  # Corollary 1: min(r, M) kept
    assert fifo["victim"] < 0.5 * exact["victim"]  # tail drop shares by offered load: ~4/44 of C
    assert fairness_index([fifo["victim"], fifo["flood"]]) < fairness_index([ffs["victim"], ffs["flood"]])


def test_c85_keeps_accepted_at_the_target():
    topo = scaled("flood", factor=0.85)
    res = run_scenario(topo, "ffs", duration_s=0.2)
    total = sum(s["measured"] for s in res.streams)
    assert total == pytest.approx(0.85 * 1e9, rel=0.05)  # T = 0.85 * sum M, not the line rate
    assert all(abs(e) <= 0.05 for e in errors(res).values())  # the oracle with the same target


def test_step_settles_within_tens_of_ms():
    res = run_scenario(scaled("step"), "ffs", duration_s=0.3)
    ((key, settle),) = res.settling_s.items()
    assert settle is not None and settle - 0.1 < 0.1  # the burst starts at 0.1 s
    assert all(abs(e) <= 0.05 for e in errors(res).values())


def test_settling_time_helper():
    assert settling_time([0, 1, 2, 3], [5, 2, 1.05, 0.95], 1.0) == 2
    assert settling_time([0, 1], [5, 2], 1.0) is None


def test_csfq_baseline_is_per_flow_fair_and_ffs_is_not_fooled_by_more_streams():
    """Many streams on one ingress: CSFQ shares per flow (b1 gets 1/9 of the egress), FFS per
    ingress (b1 keeps M(b, j), half of it) — the 'no gain from more streams' property."""
    topo = scaled("many-streams")
    csfq = {s["stream"]: s["measured"] for s in run_scenario(topo, "csfq", duration_s=0.3).streams}
    ffs = {s["stream"]: s["measured"] for s in run_scenario(topo, "ffs", duration_s=0.2).streams}
    assert csfq["b1"] == pytest.approx(1e9 / 9, rel=0.2)
    assert ffs["b1"] == pytest.approx(0.5e9, rel=0.05)
    assert sum(v for k, v in ffs.items() if k.startswith("a")) == pytest.approx(0.5e9, rel=0.05)
