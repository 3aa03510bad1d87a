# SPDX-License-Identifier: Apache-2.0
"""The τ loop at hardware speed (spec §9): one τ step reads one cell per egress (R*_j from the
`offered` counter, A_j, the lies at j), whatever the number of pairs; the pairs' counters and F
are read on their own cadence (`telemetry_period_s`), and at once when an egress counted a lie, so
the quarantine's bound stays one period -- but a lie brings them forward at most once per telemetry
period (once more after a read that began a quarantine), so a liar cannot make every step read
them (docs/control-plane.md)."""

from __future__ import annotations

import pytest

from agentkit import DUMBBELL, LPF, wide_topology
from ffs.agent.core import Agent
from ffs.core import p4names
from ffs.core.frames import ipv4_checksum, ipv4_frame
from ffs.core.topology import load
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline


class Reads(LocalDriver):
    """A LocalDriver that counts the cells each counter and register read asks for."""

    def __init__(self, pipeline: Pipeline) -> None:
        super().__init__(pipeline)
        self.cells: dict[str, int] = {}

    def read_counters(self, name, indices=None):
        out = super().read_counters(name, indices)
        self.cells[name] = self.cells.get(name, 0) + len(out)
        return out

    def read_registers(self, name, indices=None):
        out = super().read_registers(name, indices)
        self.cells[name] = self.cells.get(name, 0) + len(out)
        return out

    def take(self) -> dict[str, int]:
        out, self.cells = self.cells, {}
        return out


def test_a_tau_step_reads_one_cell_per_egress_at_4096_pairs(tmp_path):
    topo = load(wide_topology(tmp_path, 64))
    d = Reads(Pipeline(1))
    agent = Agent(d, topo, "n", lpf=LPF, telemetry_period_s=1.0)
    agent.install(now_s=0.0)
    assert len(agent.pairs()) == 4096
    agent.step(0.0)  # the first step reads the pairs too (status has rows from the start)
    d.take()
    agent.step(0.1)
    # what left each egress (accepted), on a target with the TM's counters (spec §9, item 8), and
    # the shims R*_j and A_j add and a strip port takes off as the port sends them, and the tags a
    # host pushed and popped, two cells per egress (spec §4)
    step = {p4names.OFFERED.name: 64, p4names.ADMITTED.name: 64, p4names.MALFORMED.name: 64}
    step |= {p4names.ACCEPTED.name: 64, p4names.OFFERED_SHIMS.name: 64, p4names.ADMITTED_SHIMS.name: 64}
    step |= {p4names.STRIPPED.name: 64, p4names.TAG_CHANGED.name: 128}
    assert d.take() == step
    agent.step(1.05)  # the telemetry period is over: the pairs' four arrays once, and what left each egress
    cells = d.take()
    assert cells == step | {
        p4names.PAIR_BYTES.name: 4096,
        p4names.PAIR_DROPS.name: 4096,
        p4names.PAIR_MALFORMED.name: 4096,
        p4names.F_EST.name: 4096,
        p4names.ACCEPTED.name: 128,  # the period's and the telemetry's, each from its own baseline
    }


def dumbbell(telemetry_s: float) -> tuple[Agent, Pipeline]:
    p = Pipeline(3)
    # no traffic manager here (ports unpaced): the queue guard's queues would stand where none does
    agent = Agent(LocalDriver(p), load(DUMBBELL), "s1", lpf=LPF, telemetry_period_s=telemetry_s, guard_timer_ns=None)
    agent.install(now_s=0.0)
    agent.step(0.0)
    return agent, p


def test_pair_rates_reach_status_on_the_telemetry_period_and_tau_uses_the_egress_counter():
    agent, p = dumbbell(1.0)
    frame = ipv4_frame("10.0.1.1", "10.0.3.1", 1000)
    t = 0
    for step in range(1, 21):  # 2 s of 0.1 s periods; 100 packets of 1000 bytes per period from p1
        for _ in range(100):
            t += 100_000
            p.process(frame, 1, t)
        snap = agent.step(step * 0.1)
        p3 = next(e for e in snap.egresses if e.egress == "p3")
        # R*_3 every period, from `offered`: 100 packets of 1000 IP bytes in 0.1 s, at line rate (each
        # frame 14 + 1000 + FCS 4, preamble and gap 20: spec §4), as p3 sends them: p1 inserts the
        # 8-byte shim (offered_shims) and p3 strips it (stripped), so they leave as they arrived
        assert p3.offered_bps == pytest.approx(100 * (1038 + 8 - 8) * 8 / 0.1, rel=1e-9)
        pair = next(s for s in snap.pairs if (s.ingress, s.egress) == ("p1", "p3"))
        if step < 10:
            assert pair.rate_bps == 0.0  # the pairs were last read at t = 0
        if step == 10:
            assert pair.rate_bps == pytest.approx(
                100 * 1038 * 8 / 0.1, rel=1e-9
            )  # read at t = 1 s, over the whole second, as the frames arrived (the quarantine's unit)


def test_a_lie_at_an_egress_reads_the_pairs_at_once_and_quarantines_within_one_period():
    agent, p = dumbbell(10.0)
    liar = bytearray(ipv4_frame("10.0.2.1", "10.0.3.1", 1250))
    liar[16:18] = (1500 + 4).to_bytes(2, "big")  # the heaviest claim p2 admits (spec §4): λ alone decides
    liar[24:26] = ipv4_checksum(liar[14:34]).to_bytes(2, "big")
    t = 0
    for _ in range(50):
        t += 100_000
        assert p.process(bytes(liar), 2, t).drop_reason == "malformed"
    snap = agent.step(0.1)  # long before the telemetry period: the lie triggers it
    pair = next(s for s in snap.pairs if (s.ingress, s.egress) == ("p2", "p3"))
    assert pair.malformed == 50 and pair.quarantined
    nlm = {
        e.key["ingress_port"].value: e.params["nlm"]
        for e in agent.driver.read_table(p4names.PAIRS.name)
        if e.key["egress_port"].value == 3
    }
    assert nlm[2] == 0  # lm = 0: the share is withdrawn
    assert next(e for e in snap.egresses if e.egress == "p3").malformed == 50


def test_a_lie_every_period_reads_the_pairs_once_a_telemetry_period():
    """One lying frame per 0.1 s period for 2 s with a 1 s telemetry period. One lie is no evidence
    (spec §9: a quarantine needs 3 lying frames over the pair's last 3 judgements), but it makes the
    pair a suspect, whose next lie is read at once: the first lie brings the pairs' telemetry forward,
    so do the second and the third, which begins the quarantine; the read after that one counts the
    onset's queued lies (Quarantine.begun); later lies wait for the cadence, a telemetry period after
    the last read. The pair arrays are read at steps 1, 2, 3, 4 and 14: 5 reads in 2 s, where every
    period's would be 20. Caught: a quarantine on one frame (step 1), or lies read every period."""
    p = Pipeline(3)
    d = Reads(p)
    agent = Agent(d, load(DUMBBELL), "s1", lpf=LPF, telemetry_period_s=1.0)
    agent.install(now_s=0.0)
    agent.step(0.0)
    d.take()
    liar = bytearray(ipv4_frame("10.0.2.1", "10.0.3.1", 1250))
    liar[16:18] = (20).to_bytes(2, "big")
    liar[24:26] = ipv4_checksum(liar[14:34]).to_bytes(2, "big")
    reads, held = [], []
    for step in range(1, 21):
        assert p.process(bytes(liar), 2, int((step * 0.1 - 0.05) * 1e9)).drop_reason == "malformed"
        snap = agent.step(step * 0.1)
        # every pair's cell (a step reads the cells of the free pairs beside a held one too)
        if d.take().get(p4names.PAIR_BYTES.name, 0) >= len(agent.pairs()):
            reads.append(step)
        if next(s for s in snap.pairs if (s.ingress, s.egress) == ("p2", "p3")).quarantined:
            held.append(step)
    assert reads == [1, 2, 3, 4, 14], reads
    assert held[0] == 3, held
