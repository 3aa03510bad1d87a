"""The τ rule (docs/spec.md §9, FFS Appendix A) against the appendix's numbers and the fluid model
of FFS Table II."""

import math

import pytest

from ffs import constants as C
from ffs.labels import encode
from ffs.tau import EgressTau, TauParams, egress_action_params, tau_step, tau_update

G = 1e9  # Gb/s in bit/s

# FFS Table II: (demand r, share f) in Gb/s; Σ f = 15 Gb/s = the target; R* = Σ r = 23 Gb/s.
TABLE_II = [(3 * G, 6 * G), (4 * G, 1 * G), (16 * G, 8 * G)]
TABLE_II_TARGET = 15 * G
TABLE_II_RSTAR = 23 * G


# ---- tau_update: Appendix A, unclamped ----------------------------------------------------------


@pytest.mark.parametrize(
    "tau, c, a, delta, expect",
    [
        (1.0, 10.0, 12.0, 0.0, 0.8333),  # 10/12
        (1.0, 10.0, 12.0, 1.0, 0.8462),  # 11/13
        (1.0, 10.0, 8.0, 0.0, 1.25),  # 10/8
        (1.5, 100.0, 150.0, 10.0, 1.03125),  # 1.5 · 110/160
    ],
)
def test_tau_update_appendix_a_numbers(tau, c, a, delta, expect):
    assert tau_update(tau, c, a, delta) == pytest.approx(expect, abs=5e-5)


@pytest.mark.parametrize("tau, c, delta", [(1.0, 10.0, 0.0), (1.0, 10.0, 1.0), (2.7, 100.0, 10.0)])
def test_tau_update_unchanged_when_accepted_equals_target(tau, c, delta):
    assert tau_update(tau, c, c, delta) == pytest.approx(tau)


def test_tau_update_is_in_any_unit():
    # Gb/s or bit/s: only the ratio matters.
    assert tau_update(1.5, 100 * G, 150 * G, 10 * G) == pytest.approx(1.03125)


# ---- tau_step: limits and clamps ----------------------------------------------------------------


def test_decrease_limited_to_25_percent_per_period():
    p = TauParams(delta_bps=0.0, tau_min=0.0)
    s = tau_step(EgressTau(4.0, True), a_bps=100.0, r_star_bps=100.0, target_bps=10.0, params=p)
    # Unlimited it would be 4 · 10/100 = 0.4; a period lowers τ by at most 25 %.
    assert C.TAU_MAX_DECREASE == 0.25
    assert s.tau == pytest.approx(3.0)
    assert s.congested


def test_small_decrease_is_not_limited():
    p = TauParams(delta_bps=0.0, tau_min=0.0)
    s = tau_step(EgressTau(4.0, True), a_bps=11.0, r_star_bps=20.0, target_bps=10.0, params=p)
    assert s.tau == pytest.approx(4.0 * 10.0 / 11.0)  # a 9 % decrease passes as is


def test_increase_is_not_limited():
    p = TauParams(delta_bps=0.0)
    s = tau_step(EgressTau(2.0, True), a_bps=2.0, r_star_bps=20.0, target_bps=10.0, params=p)
    assert s.tau == pytest.approx(10.0)


def test_clamp_to_tau_min():
    p = TauParams(delta_bps=0.0)
    # 1 · 10/20 = 0.5 (and 0.75 after the decrease limit), but Lemma 1 keeps τ ≥ 1.
    s = tau_step(EgressTau(1.0, True), a_bps=20.0, r_star_bps=20.0, target_bps=10.0, params=p)
    assert C.TAU_MIN == 1.0
    assert s.tau == 1.0 and s.congested
    # A custom floor.
    s = tau_step(EgressTau(2.0, True), 20.0, 20.0, 10.0, TauParams(delta_bps=0.0, tau_min=1.8))
    assert s.tau == 1.8


def test_clamp_to_tau_max():
    p = TauParams(delta_bps=0.0)
    s = tau_step(EgressTau(60000.0, True), a_bps=1.0, r_star_bps=20.0, target_bps=10.0, params=p)
    assert s.tau == C.TAU_MAX == 65536.0
    s = tau_step(EgressTau(5.0, True), 1.0, 20.0, 10.0, TauParams(delta_bps=0.0, tau_max=8.0))
    assert s.tau == 8.0
    # A = 0 (nothing accepted) with the default δ stays finite and clamped.
    s = tau_step(EgressTau(60000.0, True), a_bps=0.0, r_star_bps=20.0, target_bps=10.0)
    assert s.tau == C.TAU_MAX


def test_default_delta_is_one_percent_of_target():
    s = tau_step(EgressTau(1.0, True), a_bps=12.0, r_star_bps=20.0, target_bps=10.0, params=TauParams(tau_min=0.0))
    assert s.tau == pytest.approx(tau_update(1.0, 10.0, 12.0, 0.1))


# ---- tau_step: no windup while uncongested ------------------------------------------------------


def test_no_windup_while_uncongested():
    s = EgressTau(2.0, True)
    for _ in range(1000):
        # R* ≤ T: not congested; A far below T would push τ up without bound if it were integrated.
        s = tau_step(s, a_bps=1.0, r_star_bps=5.0, target_bps=10.0)
        assert s.tau == 2.0 and not s.congested
    # R* = T exactly is not congestion either.
    s = tau_step(s, a_bps=1.0, r_star_bps=10.0, target_bps=10.0)
    assert s.tau == 2.0 and not s.congested
    # Congestion returns: τ resumes from its frozen value.
    p = TauParams(delta_bps=0.0)
    s = tau_step(s, a_bps=8.0, r_star_bps=20.0, target_bps=10.0, params=p)
    assert s.congested and s.tau == pytest.approx(2.0 * 10.0 / 8.0)


# ---- egress_action_params -----------------------------------------------------------------------


def test_action_params_uncongested_ltau_infinite():
    for s in (EgressTau(), EgressTau(3.0, False), tau_step(EgressTau(3.0, True), 1.0, 5.0, 10.0)):
        p = egress_action_params(s, 5.0, 10.0)
        assert p["ltau"] == 0xFFFF == C.CODE_MAX
        assert p["ntau"] == 0x10000 - 0xFFFF
        assert p["congested"] == 0
        assert p["lcr"] == encode(2.0)  # code(T/R*)


def test_action_params_uncongested_without_traffic():
    p = egress_action_params(EgressTau(), 0.0, 10.0)
    assert p["ltau"] == 0xFFFF and p["congested"] == 0 and p["lcr"] == C.CODE_MAX


def test_action_params_congested():
    s = EgressTau(4 / 3, True)
    p = egress_action_params(s, 23.0, 15.0)
    assert p["ltau"] == encode(4 / 3) != 0xFFFF
    assert p["ntau"] == 0x10000 - p["ltau"]
    assert p["congested"] == 1


# ---- convergence on the fluid model of FFS Table II ---------------------------------------------


def fluid(tau, streams):
    """Accepted rate of the fluid model: each stream gets min(r, f · τ)."""
    return sum(min(r, f * tau) for r, f in streams)


def run(streams, target, r_star, periods=200):
    s = EgressTau()
    for _ in range(periods):
        s = tau_step(s, fluid(s.tau, streams), r_star, target)
    return s


def test_fluid_model_at_table_ii_equilibrium():
    assert fluid(4 / 3, TABLE_II) == pytest.approx(TABLE_II_TARGET)
    assert sum(r for r, _ in TABLE_II) == TABLE_II_RSTAR
    assert sum(f for _, f in TABLE_II) == TABLE_II_TARGET


def test_converges_to_table_ii_tau():
    s = run(TABLE_II, TABLE_II_TARGET, TABLE_II_RSTAR, periods=200)
    assert s.congested
    assert s.tau == pytest.approx(4 / 3, rel=0.01)
    assert fluid(s.tau, TABLE_II) == pytest.approx(TABLE_II_TARGET, rel=0.01)
    p = egress_action_params(s, TABLE_II_RSTAR, TABLE_II_TARGET)
    assert p["congested"] == 1 and p["ltau"] == encode(s.tau) and p["ntau"] == 0x10000 - p["ltau"]


def test_converges_from_above_too():
    s = EgressTau(50.0, True)
    for _ in range(200):
        s = tau_step(s, fluid(s.tau, TABLE_II), TABLE_II_RSTAR, TABLE_II_TARGET)
    assert s.tau == pytest.approx(4 / 3, rel=0.01)


def test_ffs_c85_target_gives_a_different_tau():
    sum_m = sum(f for _, f in TABLE_II)
    target = 0.85 * sum_m  # FFS-C85: T = 0.85 · Σ M = 12.75 Gb/s
    # The data plane enforces the shares scaled to the target (spec §9 step 2).
    scaled = [(r, f * target / sum_m) for r, f in TABLE_II]
    c85 = run(scaled, target, TABLE_II_RSTAR)
    line = run(TABLE_II, TABLE_II_TARGET, TABLE_II_RSTAR)
    assert c85.congested and line.congested
    # Equilibrium: 3 + 0.85 · 9 · τ = 12.75  ->  τ = 9.75 / 7.65 ≈ 1.2745, not 4/3.
    assert c85.tau == pytest.approx(9.75 / 7.65, rel=0.01)
    assert fluid(c85.tau, scaled) == pytest.approx(target, rel=0.01)
    assert c85.tau < line.tau
    assert not math.isclose(c85.tau, line.tau, rel_tol=0.01)
    assert egress_action_params(c85, TABLE_II_RSTAR, target)["ltau"] != egress_action_params(
        line, TABLE_II_RSTAR, TABLE_II_TARGET
    )["ltau"]


# ---- bad readings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, r_star, target",
    [(math.nan, 1.0, 1.0), (-1.0, 1.0, 1.0), (1.0, math.inf, 1.0), (1.0, 1.0, -5.0)],
)
def test_rejects_bad_readings(a, r_star, target):
    with pytest.raises(ValueError):
        tau_step(EgressTau(), a, r_star, target)
