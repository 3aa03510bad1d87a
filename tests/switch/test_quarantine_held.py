# SPDX-License-Identifier: Apache-2.0
"""A pair held in quarantine gets at most its share's worth, whatever τ is (spec §9, item 4):
the agent's set_held_pair entry makes its packets face τ = 1 (`PairMap.norm_cc_held`, spec §7.2),
while the free pairs at the same egress face the τ they need. Virtual time, both engines of the
software switch (the Python one is the executable spec, the C one must agree)."""

from __future__ import annotations

import math

import pytest

from ffs.agent.quarantine import Quarantine
from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, TableEntry, Update
from ffs.core.frames import ipv4_frame
from ffs.core.labels import encode
from ffs.switch import fast
from ffs.switch.pipeline import Pipeline
from ffs.switch.trace import frame_wire_len
from switchkit import DST, IN, OUT, SCALE, rig

TAU_F_NS = 10e6  # the pair's estimator: RATE, 10 ms, the rig's scale-down SCALE
SHARE_BPS = 20e6  # the held pair's share M (line rate)
RATE_BPS = 4 * SHARE_BPS  # what it sends: rf_norm = 4 at its whole share
TAU = 8.0  # the free pairs' τ: at rf_norm = 4 a free pair would pass whole
FRAME = ipv4_frame("10.0.1.1", DST, 1250)
N = 40_000  # packets, 5 s of virtual time
BUDGET = 0.014 + 0.0066  # γ's precision budget and len_log's error in the weight (spec §10)


def engines():
    out = [Pipeline]
    if fast.available():
        out.append(fast.FastPipeline)
    return out


def held_entry(level: float) -> Update:
    """The pair's entry as the agent writes it while the pair is held, `level` of its share
    withheld (ffs.agent.quarantine.Quarantine.withhold)."""
    q = Quarantine(seconds=10.0)
    q.until[5], q.level[5] = 10.0, level
    lm = tables.lm_code(SHARE_BPS, TAU_F_NS, SCALE)
    key = {"ingress_port": Exact(IN), "egress_port": Exact(OUT)}
    return q.withhold(Update("modify", TableEntry(p4names.PAIRS.name, key, "set_pair", tables.pair_params(5, lm))))


def admitted_bps(cls: type[Pipeline], entry: Update | None) -> float:
    """The pair's admitted line rate over the last N packets of a steady RATE_BPS stream, τ = TAU."""
    r = rig(seed=7, pipeline=cls)
    r.driver.set_lpf_spec(p4names.F_LPF.name, [5], LpfSpec("RATE", TAU_F_NS, TAU_F_NS, SCALE))
    if entry is None:
        r.set_pair(tables.lm_code(SHARE_BPS, TAU_F_NS, SCALE))
    else:
        r.driver.write([entry])
    r.set_egress(encode(TAU))
    wire = frame_wire_len(FRAME)
    gap_ns = round(wire * 8 / RATE_BPS * 1e9)
    for _ in range(2000):  # 25 τ_F: F has settled
        r.send(FRAME, gap_ns=gap_ns)
    kept = sum(r.send(FRAME, gap_ns=gap_ns).egress_port is not None for _ in range(N))
    return kept * wire * 8 / (N * gap_ns * 1e-9)


@pytest.mark.parametrize("cls", engines(), ids=lambda c: c.__name__)
@pytest.mark.parametrize("level", [0.0, 0.5])
def test_a_held_pair_gets_at_most_its_share_whatever_tau(cls, level):
    """The held pair sends 4× its share M' = M·(1 − level) at an egress whose τ is 8 (the free
    pairs need it). At τ = 1 γ = M'/F (spec §7.2, Algorithm 3): it is admitted at M'·R/F, its
    share's worth less the estimator's self-inclusion (evenly spaced packets Δ apart read
    F = R·(Δ/τ_F)/(1 − e^(−Δ/τ_F)), spec §10.1), within the precision budget (§10) and 4σ of the
    binomial spread of N draws; at τ = 8 it would pass at min(R, 8·M') = R. Caught: the held
    branch of norm_cc removed (τ = 8 for the held pair: admitted at R, 4× M'), in each engine.
    Fails before set_held_pair existed (the agent's entry is refused)."""
    share = SHARE_BPS * (1 - level)
    x = frame_wire_len(FRAME) * 8 / RATE_BPS / (TAU_F_NS * 1e-9)  # Δ / τ_F
    want = share * (1 - math.exp(-x)) / x
    got = admitted_bps(cls, held_entry(level))
    p = want / RATE_BPS
    sigma = math.sqrt(p * (1 - p) / N) * RATE_BPS
    assert got <= share, (got, share)  # at most its share's worth
    assert abs(got - want) <= BUDGET * want + 4 * sigma, (got, want)  # held to it, not starved


@pytest.mark.parametrize("cls", engines(), ids=lambda c: c.__name__)
def test_a_free_pair_at_the_same_tau_passes_whole(cls):
    """The control: the same stream on a free pair (set_pair) at τ = 8 has rf_norm = 4 < τ, γ = 1:
    every packet passes (Algorithm 3), so the bound above is the held pair's alone."""
    assert admitted_bps(cls, None) == pytest.approx(RATE_BPS, rel=1e-3)


def test_the_held_entry_keeps_the_share_code():
    """set_held_pair carries the same action data as set_pair (pid, nlm = −lm) with lm the code of
    M·(1 − level) (spec §5.3, §9): only the action differs from a free pair's entry."""
    e = held_entry(0.5).entry
    lm = tables.lm_code(SHARE_BPS, TAU_F_NS, SCALE)
    assert e.action_name == "set_held_pair"
    assert tables.lm_of(e.params) == lm - constants.CODE_STEPS_PER_OCTAVE  # half the share: one octave
