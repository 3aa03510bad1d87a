# SPDX-License-Identifier: Apache-2.0
"""The τ rule (spec §9, FFS Appendix A) fed synthetic counter readings: Appendix A's numbers
(spec §11.2.7), the per-period decrease limit, the clamps, no windup while idle,
the action data pushed, and convergence on the Table II workload (FFS-C100 and FFS-C85) to the τ
of Eq. 2, with A computed from the fluid model A = Σ_s min(r_s, f_s · τ)."""

import math

import pytest

from ffs.core import constants
from ffs.core.allocator import solve_tau
from ffs.core.labels import encode
from ffs.core.tables import egress_action_params
from ffs.core.tau import EgressTau, TauParams, tau_step, tau_update

# Table II of the FFS paper: three streams through one egress, (rate r, share f) in Gb/s, T = 15
TABLE_II = [(3.0, 6.0), (4.0, 1.0), (16.0, 8.0)]
T_II = 15.0


# --- the rule itself: Appendix A's numbers with an absolute δ ----------------------------------

APPENDIX_A = [  # tau, C, A, delta -> new tau
    (1.0, 10.0, 12.0, 0.0, 10 / 12),
    (1.0, 10.0, 12.0, 1.0, 11 / 13),
    (1.0, 10.0, 8.0, 0.0, 1.25),
    (1.0, 10.0, 10.0, 0.0, 1.0),
    (1.5, 100.0, 150.0, 10.0, 1.03125),
]


@pytest.mark.parametrize("tau, c, a, delta, expect", APPENDIX_A)
def test_appendix_a_numbers(tau, c, a, delta, expect):
    assert tau_update(tau, c, a, delta) == pytest.approx(expect, rel=1e-12)
    assert round(tau_update(tau, c, a, delta), 4) == round(expect, 4)  # spec §11.2.7's 4 digits


@pytest.mark.parametrize("tau, c, a, delta, expect", APPENDIX_A[:4])
def test_tau_step_applies_the_rule_while_congested(tau, c, a, delta, expect):
    # congested means R* > T (A may be below T: the egress drops); Lemma 1's floor is lifted here
    # to see the raw rule, and none of these lowers tau by more than 25 %
    p = TauParams(delta_bps=delta, tau_min=0.0)
    s = tau_step(EgressTau(tau, True), a_bps=a, r_star_bps=c + 5, target_bps=c, params=p)
    assert s.congested and s.tau == pytest.approx(expect, rel=1e-12)


def test_delta_defaults_to_one_percent_of_the_target():
    s = tau_step(EgressTau(1.0, True), a_bps=8.0, r_star_bps=20.0, target_bps=10.0, params=TauParams(tau_min=0.0))
    assert s.tau == pytest.approx((10 + 0.1) / (8 + 0.1), rel=1e-12)


def test_decrease_limited_to_25_percent_per_period():
    # spec §11.2.7: tau 1.5, C 100, A 150, delta 10 -> 1.03125 unlimited, a 31 % cut; the step allows 25 %
    p = TauParams(delta_bps=10.0)
    s = tau_step(EgressTau(1.5, True), a_bps=150.0, r_star_bps=200.0, target_bps=100.0, params=p)
    assert s.tau == pytest.approx(1.125, rel=1e-12)
    # a larger cut while γ drops half of R*: 4 · 10/100 = 0.4 wanted, 3.0 allowed, and 2.25 next
    p = TauParams(delta_bps=0.0)
    s = tau_step(EgressTau(4.0, True), a_bps=100.0, r_star_bps=200.0, target_bps=10.0, params=p)
    assert s.tau == pytest.approx(3.0)
    assert tau_step(s, 100.0, 200.0, 10.0, p).tau == pytest.approx(2.25)
    # an increase is limited to a factor max_increase (4): 10 wanted from 1
    assert tau_step(EgressTau(1.0, True), 1.0, 20.0, 10.0, p).tau == pytest.approx(4.0)


def test_a_tau_that_drops_nothing_is_cut_whole():
    """spec §9: A = R* means γ dropped nothing, every pair passes whole at this τ, and the exact τ
    solves Σ_i min(R_i, τ·M_i) = T ≤ τ_now · T/R* (at τ' = τ_now·T/R* each term is at least
    R_i·T/R*): the cut τ·(T+δ)/(A+δ) cannot undershoot, so the 25 % limit does not hold it back."""
    p = TauParams(delta_bps=0.0)
    s = tau_step(EgressTau(65536.0, True), a_bps=700.0, r_star_bps=700.0, target_bps=100.0, params=p)
    assert s.tau == pytest.approx(65536.0 / 7)
    # rates in [M] of one egress: shares 50, 50, R = 40 and 600: the exact τ is 60/50 = 1.2
    shares, rates = (50.0, 50.0), (40.0, 600.0)
    tau, steps = 65536.0, 0
    while True:
        a = sum(min(r, tau * m) for r, m in zip(rates, shares, strict=False))
        if a < 0.99 * sum(rates):
            break
        tau = tau_step(EgressTau(tau, True), a, sum(rates), 100.0, p).tau
        steps += 1
        assert tau >= 1.2  # never below the exact τ
    assert steps <= 6  # 65536 down to where γ acts in log(65536/12)/log(6.4) periods, not 38


def test_clamps():
    p = TauParams(delta_bps=0.0)
    assert tau_step(EgressTau(1.0, True), 20.0, 20.0, 10.0, p).tau == constants.TAU_MIN  # Lemma 1: tau >= 1
    assert tau_step(EgressTau(1.2, True), 13.0, 20.0, 10.0, p).tau == 1.0  # 1.2 · 10/13 = 0.92 -> 1
    assert tau_step(EgressTau(60000.0, True), 1.0, 20.0, 10.0, p).tau == constants.TAU_MAX  # 600000 -> 65536
    assert tau_step(EgressTau(9.0, True), 0.0, 20.0, 10.0, p).tau == 36.0  # nothing admitted (A = 0): a bounded rise
    q = TauParams(delta_bps=0.0, tau_min=2.0, tau_max=4.0)
    assert tau_step(EgressTau(3.0, True), 30.0, 40.0, 10.0, q).tau == 2.25  # the 25 % limit, above tau_min
    assert tau_step(EgressTau(2.2, True), 30.0, 40.0, 10.0, q).tau == 2.0
    assert tau_step(EgressTau(3.0, True), 1.0, 40.0, 10.0, q).tau == 4.0


def test_no_windup_while_uncongested():
    s = EgressTau(2.0, True)
    for _ in range(9):  # a lull: A far below T would raise tau every period if the rule ran
        s = tau_step(s, a_bps=1.0, r_star_bps=5.0, target_bps=10.0)
    assert s.tau == 2.0 and not s.congested
    assert egress_action_params(s, 5.0, 10.0) == {
        "ltau": constants.LTAU_MAX,
        "ltau_p": 0,
        "congested": 0,
        "lcr": encode(2.0),
    }
    # R* = T exactly is not congested (spec §9: congested iff R* > T)
    assert not tau_step(s, 10.0, 10.0, 10.0).congested
    # congestion returns after a lull: the rule resumes from the frozen 2.0, not from a wound-up value
    s = tau_step(s, a_bps=12.0, r_star_bps=30.0, target_bps=10.0, params=TauParams(delta_bps=0.0))
    assert s.congested and s.tau == pytest.approx(2.0 * 10 / 12)
    p = egress_action_params(s, 30.0, 10.0)
    assert p == {"ltau": encode(s.tau), "ltau_p": encode(s.tau) - 0x8000, "congested": 1, "lcr": encode(1 / 3)}


def test_a_new_episode_after_a_long_idle_spell_starts_at_tau_min():
    """spec §9: uncongested for restart_periods (10) in a row, the frozen τ belongs to traffic that is
    gone; the next episode starts at τ_min (1: Lemma 1), where no pair passes above its share."""
    s = EgressTau(300.0, True)
    for _ in range(10):
        s = tau_step(s, a_bps=1.0, r_star_bps=5.0, target_bps=10.0)
    assert s.tau == 300.0 and not s.congested and s.idle == 10
    s = tau_step(s, a_bps=12.0, r_star_bps=30.0, target_bps=10.0, params=TauParams(delta_bps=0.0))
    assert s.congested and s.tau == 1.0  # from 1: 1 · 10/12, held at τ_min


def test_no_traffic_pushes_uncongested_with_lcr_saturated():
    s = tau_step(EgressTau(), 0.0, 0.0, 10.0)
    assert egress_action_params(s, 0.0, 10.0) == {
        "ltau": constants.LTAU_MAX,
        "ltau_p": 0,
        "congested": 0,
        "lcr": 0xFFFF,
    }


@pytest.mark.parametrize("bad", [(math.nan, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, math.inf)])
def test_rejects_bad_readings(bad):
    with pytest.raises(ValueError):
        tau_step(EgressTau(), *bad)


# --- convergence on the Table II workload (fluid model readings) ----------------------------


def fluid(tau, streams):
    return sum(min(r, f * tau) for r, f in streams)


def run(streams, target, tau0=1.0, periods=400):
    s = EgressTau(tau0)
    r_star = sum(r for r, _ in streams)
    trace = []
    for _ in range(periods):
        s = tau_step(s, fluid(s.tau, streams), r_star, target)
        trace.append(s.tau)
    return s, trace


def test_converges_to_four_thirds_on_table_ii():
    assert solve_tau([r for r, _ in TABLE_II], [f for _, f in TABLE_II], T_II) == pytest.approx(4 / 3)
    s, trace = run(TABLE_II, T_II)
    assert s.congested and s.tau == pytest.approx(4 / 3, rel=2e-3)  # δ = 1 % leaves a tiny offset
    assert fluid(s.tau, TABLE_II) == pytest.approx(T_II, rel=1e-2)
    assert all(t >= 1.0 for t in trace)
    p = egress_action_params(s, 23.0, T_II)
    assert p["ltau"] == encode(4 / 3) and p["ltau_p"] == p["ltau"] - 0x8000 and p["lcr"] == encode(15 / 23)


def test_converges_from_above_through_the_decrease_limit():
    s, trace = run(TABLE_II, T_II, tau0=1000.0)
    delta = 0.01 * T_II
    # fluid A = R* = 23 at tau 1000 (every stream passes whole): the cut is whole, (T+δ)/(A+δ) per period
    assert trace[0] == pytest.approx(1000.0 * (T_II + delta) / (23 + delta))
    passing = [t for t in trace if fluid(t, TABLE_II) >= 0.99 * 23]
    # once γ drops (A < R*), a period cuts at most 25 %
    acting = trace[len(passing) :]
    assert all(b >= 0.75 * a * (1 - 1e-12) for a, b in zip(acting, acting[1:], strict=False))
    assert all(t >= 4 / 3 for t in passing)
    assert s.tau == pytest.approx(4 / 3, rel=2e-3)


def test_ffs_c85_target():
    # FFS-C85 (spec §9): T = 0.85 · Σ M and the data plane enforces shares scaled to T, f · 0.85
    target = 0.85 * T_II
    scaled = [(r, 0.85 * f) for r, f in TABLE_II]
    exact = solve_tau([r for r, _ in scaled], [f for _, f in scaled], target)
    assert exact == pytest.approx((target - 3.0) / (0.85 * 9))  # streams 2 and 3 constrained
    s, trace = run(scaled, target)
    assert s.tau == pytest.approx(exact, rel=2e-3) and s.tau >= 1.0  # Lemma 1 holds with scaled shares
    assert fluid(s.tau, scaled) == pytest.approx(target, rel=1e-2)  # A settles at 85 % of the line
    c100, _ = run(TABLE_II, T_II)
    assert fluid(s.tau, scaled) < 0.86 * fluid(c100.tau, TABLE_II)


@pytest.mark.parametrize(
    "kw", [{"max_decrease": 1.0}, {"delta_fraction": -0.1}, {"tau_min": 5.0, "tau_max": 2.0}, {"delta_bps": math.nan}]
)
def test_rejects_bad_params(kw):
    with pytest.raises(ValueError):
        TauParams(**kw)


def test_level_dips_below_tau_min_once_congestion_settled():
    # Where the exact τ is 1, readings of A above T must count as much as readings below it: the
    # controller's level goes below tau_min (bounded) while the data plane keeps tau_min
    p = TauParams(delta_bps=0.0)
    s = EgressTau(1.0, True, periods=0)
    for _ in range(p.settle_periods):  # the first periods of congestion clamp as before
        s = tau_step(s, 11.0, 20.0, 10.0, p)
        assert s.tau == constants.TAU_MIN and s.level == constants.TAU_MIN
    s = tau_step(s, 11.0, 20.0, 10.0, p)
    assert s.level == pytest.approx(10 / 11) and s.tau == constants.TAU_MIN
    for _ in range(20):  # persistent over-admission: bounded below
        s = tau_step(s, 15.0, 20.0, 10.0, p)
    assert s.level == pytest.approx(constants.TAU_MIN * (1 - p.excursion)) and s.tau == constants.TAU_MIN
    # recovery: a low reading raises τ from the level in one period (0.7 · 10/4 = 1.75)
    s = tau_step(s, 4.0, 20.0, 10.0, p)
    assert s.tau == pytest.approx((1 - p.excursion) * 10 / 4) and s.tau == s.level
    # idle resets the count: the next congestion starts clamped again
    s = tau_step(s, 5.0, 5.0, 10.0, p)
    assert not s.congested and s.periods == 0
    s = tau_step(EgressTau(1.0, False), 12.0, 20.0, 10.0, p)
    assert s.level == constants.TAU_MIN and s.periods == 1


def test_level_bounds_are_validated():
    with pytest.raises(ValueError, match="excursion"):
        TauParams(excursion=1.0)


def test_a_held_pair_gets_no_rise_the_free_pairs_do_not_need():
    """spec §9: where a pair is held in quarantine, τ rises only as far as the other (free) pairs
    need: the rule's rise with their own A and R*, (R*_f + δ)/(A_f + δ), never more than the
    egress's (T + δ)/(A + δ). The live dumbbell: T = 20 Mb/s, the liar's 20 Mb/s held (γ drops it
    all), h1's 8 Mb/s passing whole: A = 8, R* = 28."""
    p = TauParams(max_increase=1e9)  # δ = 0.2 Mb/s; the rise limit out of the way
    held = EgressTau(1.0, True, 1.0, 10)
    # no pair held: the rule raises τ by (20 + 0.2)/(8 + 0.2), into whatever asks more
    assert tau_step(held, 8.0, 28.0, 20.0, p).tau == pytest.approx(20.2 / 8.2, rel=1e-12)
    # h1 passes whole: nothing to rise for
    assert tau_step(held, 8.0, 28.0, 20.0, p, free=(8.0, 8.0)).tau == 1.0
    # h1 asking 12 of its 10 Mb/s share gets 10 at τ = 1: the rise it needs, 12.2/10.2, no more
    assert tau_step(held, 10.0, 32.0, 20.0, p, free=(10.0, 12.0)).tau == pytest.approx(12.2 / 10.2, rel=1e-12)
    # ... and never more than the egress's own rise: 20 Mb/s of free demand at A = 16 (T = 20)
    assert tau_step(held, 16.0, 40.0, 20.0, p, free=(10.0, 30.0)).tau == pytest.approx(20.2 / 16.2, rel=1e-12)
    # a cut is the egress's: the held pair admitted beyond T is cut by (T + δ)/(A + δ) as before
    cut = tau_step(EgressTau(4.0, True, 4.0, 10), 24.0, 40.0, 20.0, p, free=(8.0, 8.0))
    assert cut.tau == pytest.approx(4.0 * 20.2 / 24.2, rel=1e-12)
    # no free pair, or none with a reading yet: no rise
    assert tau_step(held, 0.5, 20.0, 20.0, p, free=(0.0, 0.0)).tau == 1.0
    with pytest.raises(ValueError):
        tau_step(held, 8.0, 28.0, 20.0, p, free=(math.nan, 8.0))
