# SPDX-License-Identifier: Apache-2.0
"""FFS endpoints in virtual time (FFS §IX, App. D): MinLoss and MinTime transfers through the
software switch's pipeline and agent (FFS-C85, RI on) at 10 Gb/s, against the exact FFS allocation
(ffs.core.allocator, `ffs-sim allocate`) and against γ (Eq. 2)."""

import dataclasses

import numpy as np
import pytest

from conftest import ROOT
from ffs.core.allocator import allocate
from ffs.core.topology import load
from ffs.lab.endpoint.rate import MinLoss, MinLossParams, rri_factor
from ffs.lab.virtual_endpoints import Flow, run

TOPO = ROOT / "topologies" / "endpoint.yaml"
SCALE = 500  # the live 20 Mb/s dumbbell at 10 Gb/s
BIG = 10**10  # bytes: the transfers outlast the runs (greedy streams)


def topology(streams: tuple[str, ...], scale: float = SCALE):
    t = load(TOPO)
    SCALE = scale
    nodes = {
        n: dataclasses.replace(
            node,
            # jumbo frames at 10 Gb/s (run's ip_size, 9000): the ports' MTU fits them (spec §4)
            interfaces={
                i: dataclasses.replace(x, capacity=x.capacity * SCALE, mtu=9000) for i, x in node.interfaces.items()
            },
            fairness={e: {i: v * SCALE for i, v in col.items()} for e, col in node.fairness.items()},
        )
        for n, node in t.nodes.items()
    }
    keep = tuple(
        dataclasses.replace(s, demand=s.demand * SCALE, r=s.r * SCALE, f=s.f * SCALE)
        for s in t.streams
        if s.name in streams
    )
    return dataclasses.replace(t, nodes=nodes, streams=keep)


def mean_rate(f, t0, t1, bin_s):
    return float(f.send_bps[int(t0 / bin_s) : int(t1 / bin_s)].mean())


def drops_between(f, t0, t1, bin_s):
    return float(f.drop_bps[int(t0 / bin_s) : int(t1 / bin_s)].sum())


def test_minloss_one_stream_converges_to_its_exact_rate_and_loses_nothing():
    topo = topology(("h1",))
    exact = allocate(topo).stream("h1").rate  # T = 0.85 · 10 Gb/s
    assert exact == pytest.approx(8.5e9)
    res = run(topo, "s1", [Flow("h1", "h1", "h3", BIG, "minloss")], duration_s=0.25)
    f = res.flow("h1")
    got = mean_rate(f, 0.05, 0.25, res.bin_s)
    assert abs(got - exact) / exact <= 0.05, (got, exact)
    assert f.send_bps[0] < 0.15 * exact  # it started low (capacity / 10)
    assert f.router_drops == 0 and f.lost == 0 and f.retransmitted == 0


@pytest.mark.slow
def test_minloss_converges_at_100_gbps_too():
    topo = topology(("h1",), scale=5000)  # 100 Gb/s egress, target 85 Gb/s
    exact = allocate(topo).stream("h1").rate
    res = run(topo, "s1", [Flow("h1", "h1", "h3", 10**11, "minloss")], duration_s=0.05, bin_s=0.002)
    f = res.flow("h1")
    got = mean_rate(f, 0.03, 0.05, res.bin_s)
    assert abs(got - exact) / exact <= 0.05, (got, exact)
    assert f.router_drops == 0


def test_minloss_two_streams_both_converge_to_their_exact_rates():
    topo = topology(("h1", "h2"))
    alloc = allocate(topo)
    res = run(
        topo,
        "s1",
        [Flow("h1", "h1", "h3", BIG, "minloss"), Flow("h2", "h2", "h3", BIG, "minloss", start_s=0.05)],
        duration_s=0.25,
    )
    for name in ("h1", "h2"):
        exact = alloc.stream(name).rate  # 4.25 Gb/s each: τ · f with equal shares
        got = mean_rate(res.flow(name), 0.12, 0.25, res.bin_s)
        assert abs(got - exact) / exact <= 0.05, (name, got, exact)
        # loss only while the node adapts τ to the newcomer (FFS §IX, Figure 6), none afterwards
        assert drops_between(res.flow(name), 0.12, 0.25, res.bin_s) == 0
    assert res.flow("h1").rate_steps[1][1] > 0.9 * allocate(topology(("h1",))).stream("h1").rate  # alone first


@pytest.mark.parametrize("streams", [("h1",), ("h1", "h2")])
def test_mintime_loses_what_gamma_predicts(streams):
    """MinTime sends at the line rate C; the node forwards a fraction γ = rate/C of it (Eq. 2), so
    the router drops 1 − γ of what it sends: 15 % alone under FFS-C85, 57.5 % with two."""
    topo = topology(streams)
    alloc = allocate(topo)
    res = run(topo, "s1", [Flow(s, s, "h3", BIG, "mintime") for s in streams], duration_s=0.2)
    for s in streams:
        f = res.flow(s)
        cap = f.capacity_bps
        gamma = alloc.stream(s).rate / cap
        sent = mean_rate(f, 0.05, 0.2, res.bin_s)
        dropped = float(f.drop_bps[int(0.05 / res.bin_s) : int(0.2 / res.bin_s)].mean())
        assert sent == pytest.approx(cap, rel=1e-3)
        assert dropped / sent == pytest.approx(1 - gamma, abs=0.01), (s, dropped / sent, 1 - gamma)


class Recording(MinLoss):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen = []

    def on_echo(self, now, echo):
        self.seen.append((now, echo.rri_code, echo.sent_at, self.history.at(echo.sent_at)))
        super().on_echo(now, echo)


def test_every_echo_carries_the_nodes_rri_for_a_packet_the_source_sent():
    """Packet by packet: each ACK echoes the rri of the data packet it answers, arriving one RTT
    after that packet left; the indicator (RRI × the rate then, App. D) is the exact FFS rate."""
    topo = topology(("h1",))
    ctl = {}

    def make(cap, t0):
        ctl["c"] = Recording(MinLossParams(start_bps=cap / 100, capacity_bps=cap, settle_s=0.011), t0)
        return ctl["c"]

    res = run(
        topo, "s1", [Flow("h1", "h1", "h3", BIG, controller=make)], duration_s=0.06, one_way_s=0.0002, record=True
    )
    seen = ctl["c"].seen
    f = res.flow("h1")
    assert len(seen) == f.echoes > 1000
    # every delivered packet was echoed, but for the ACKs still on their way at the end (one RTT)
    assert 0 <= f.delivered - f.echoes <= 8.5e9 * 0.0004 / 72000 + 2
    # the k-th echo returns exactly the rri the node wrote into the k-th delivered packet, for the
    # packet sent at that time (ACKs are per packet, no reordering here)
    written = [(sent, rri) for _, _, sent, rri in res.deliveries]
    assert [(sent, code) for _, code, sent, _ in seen] == written[: len(seen)]
    assert any(code != 0xFFFF for _, code, _, _ in seen)
    rtt = [now - sent for now, _, sent, _ in seen]
    # two one-way delays + serialization of a 9000-byte packet on the wire (+ 14 + 4 + 20 bytes,
    # IEEE 802.3), to within the nanoseconds the switch's clock counts
    assert min(rtt) == pytest.approx(0.0004 + (9000 + 38) * 8 / 1e10, abs=2e-9)
    assert max(rtt) < 0.0004 + 0.001  # plus at most the 1 ms FIFO
    exact = allocate(topo).stream("h1").rate
    late = [rri_factor(code) * rate for now, code, sent, rate in seen if sent > 0.04]
    assert np.median(late) == pytest.approx(exact, rel=0.02)


def test_a_packet_size_beyond_the_ports_mtu_is_refused_in_one_line():
    """Jumbo packets through ports of IP MTU 1500 would be dropped by their MAC (spec §4): the run
    refuses them before it starts, naming the port."""
    t = load(TOPO)
    with pytest.raises(
        ValueError, match=r"^ip_size 9000 exceeds the IP MTU 1500 of s1\.p1 \(h1's port\): set its mtu$"
    ):
        run(t, "s1", [Flow("h1", "h1", "h3", BIG, "minloss")], duration_s=0.01, ip_size=9000)
