"""The tau rule (spec §9, FFS Appendix A) against the digest's numbers (§1.14 vector 15)."""

import math

import pytest

from ffs import constants as C
from ffs.tau import EgressTau, TauParams, egress_action_params, tau_step, tau_update
from ffs.labels import encode


@pytest.mark.parametrize(
    "tau, c, a, delta, expect",
    [(1, 10, 12, 0, 0.8333), (1, 10, 12, 1, 0.8462), (1, 10, 8, 0, 1.25), (1, 10, 10, 0, 1.0), (1.5, 100, 150, 10, 1.03125)],
)
def test_appendix_a_numbers(tau, c, a, delta, expect):
    assert tau_update(tau, c, a, delta) == pytest.approx(expect, abs=5e-5)


def test_decrease_limited_per_period():
    p = TauParams(delta_bps=0.0, tau_min=0.0)
    s = tau_step(EgressTau(4.0, True), a_bps=100.0, r_star_bps=100.0, target_bps=10.0, params=p)
    assert s.tau == pytest.approx(3.0)  # 4 * 10/100 = 0.4 wanted; at most 25 % down


def test_clamps():
    p = TauParams(delta_bps=0.0)
    assert tau_step(EgressTau(1.0, True), 20.0, 20.0, 10.0, p).tau == 1.0  # Lemma 1 floor
    assert tau_step(EgressTau(60000.0, True), 1.0, 20.0, 10.0, p).tau == C.TAU_MAX


def test_no_windup_while_uncongested():
    s = EgressTau(2.0, True)
    for _ in range(100):
        s = tau_step(s, a_bps=1.0, r_star_bps=5.0, target_bps=10.0)
    assert s.tau == 2.0 and not s.congested
    assert egress_action_params(s, 5.0, 10.0) == {"ltau": C.CODE_MAX, "ntau": 1, "congested": 0, "lcr": encode(2.0)}


def fluid(tau, streams):
    return sum(min(r, f * tau) for r, f in streams)


def converge(streams, target, periods=300):
    s = EgressTau()
    r_star = sum(r for r, _ in streams)
    for _ in range(periods):
        s = tau_step(s, fluid(s.tau, streams), r_star, target)
    return s


def test_converges_to_table_ii():
    s = converge([(3, 6), (4, 1), (16, 8)], 15.0)
    assert s.tau == pytest.approx(4 / 3, rel=0.01) and s.congested
    p = egress_action_params(s, 23.0, 15.0)
    assert p["ltau"] == encode(s.tau) and p["ntau"] == 0x10000 - p["ltau"]


def test_ffs_c85_target_moves_tau():
    streams = [(3, 6), (4, 1), (16, 8)]
    c100 = converge(streams, 15.0)
    c85 = converge(streams, 0.85 * 15.0)
    assert fluid(c85.tau, streams) == pytest.approx(0.85 * 15.0, rel=0.01)
    assert c85.tau < c100.tau


def test_rejects_bad_readings():
    with pytest.raises(ValueError):
        tau_step(EgressTau(), math.nan, 1.0, 1.0)
