# SPDX-License-Identifier: Apache-2.0
"""The τ rule of the agent (docs/spec.md §9): FFS Appendix A with the corrections spec §9 lists.

τ_j ← τ_j · (T_j + δ) / (A_j + δ) while the egress is congested, with limits on each period's
decrease and rise and clamps to [τ_min, τ_max] (Lemma 1: τ ≥ 1 wherever the egress is congested;
the controller's level may dip a bounded excursion below τ_min once congestion has settled). While
it is not congested the data plane gets τ = ∞ (γ = 1 for all) and the internal τ stays frozen, so
no windup builds up while idle; after a long idle spell a new episode starts afresh from τ_min.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ffs.core import constants


@dataclass(frozen=True)
class TauParams:
    delta_fraction: float = constants.TAU_DELTA_FRACTION  # δ = delta_fraction · T_j (used if delta_bps is None)
    delta_bps: float | None = None  # an absolute δ in bit/s
    max_decrease: float = constants.TAU_MAX_DECREASE  # a period lowers τ by at most this fraction
    tau_min: float = constants.TAU_MIN
    tau_max: float = constants.TAU_MAX
    excursion: float = 0.3  # the controller's level may dip this fraction below tau_min (see tau_step)
    settle_periods: int = 4  # ... once the egress has been congested this many periods in a row
    max_increase: float = 4.0  # a period raises τ by at most this factor
    # A ≥ pass_fraction · R* means γ dropped (almost) nothing: τ admits everyone, and the full cut
    # τ·(T+δ)/(A+δ) cannot go below the exact τ (spec §9), so max_decrease does not apply
    pass_fraction: float = 0.99
    restart_periods: int = 10  # uncongested this many periods in a row: the next episode starts at tau_min

    def __post_init__(self) -> None:
        if not (0.0 <= self.delta_fraction < math.inf) or (
            self.delta_bps is not None and not 0.0 <= self.delta_bps < math.inf
        ):
            raise ValueError("delta must be a finite non-negative value")
        if not 0.0 <= self.max_decrease < 1.0:
            raise ValueError(f"max_decrease must be in [0, 1), got {self.max_decrease!r}")
        if not 0.0 <= self.excursion < 1.0:
            raise ValueError(f"excursion must be in [0, 1), got {self.excursion!r}")
        if not 0.0 < self.pass_fraction <= 1.0:
            raise ValueError(f"pass_fraction must be in (0, 1], got {self.pass_fraction!r}")
        if not 1.0 < self.max_increase < math.inf:
            raise ValueError(f"max_increase must be a finite factor above 1, got {self.max_increase!r}")
        if self.restart_periods < 1:
            raise ValueError(f"restart_periods must be at least 1, got {self.restart_periods!r}")
        if not 0.0 <= self.tau_min <= self.tau_max < math.inf:
            raise ValueError(f"need 0 <= tau_min <= tau_max < inf, got {self.tau_min!r}, {self.tau_max!r}")

    def delta(self, target_bps: float) -> float:
        return self.delta_bps if self.delta_bps is not None else self.delta_fraction * target_bps


@dataclass(frozen=True)
class EgressTau:
    tau: float = 1.0  # the τ the data plane gets while congested (kept while uncongested), >= tau_min
    congested: bool = False
    level: float | None = None  # the controller's own value, which may sit below tau_min; None: tau
    periods: int = 0  # consecutive congested periods
    idle: int = 0  # consecutive uncongested periods


def tau_update(tau: float, target_bps: float, accepted_bps: float, delta_bps: float) -> float:
    """Appendix A, unclamped: τ · (C + δ) / (A + δ); ∞ when nothing was accepted and δ = 0
    (the step clamps it to τ_max)."""
    den = accepted_bps + delta_bps
    return tau * (target_bps + delta_bps) / den if den > 0 else math.inf


def tau_step(
    state: EgressTau,
    a_bps: float,
    r_star_bps: float,
    target_bps: float,
    params: TauParams = TauParams(),
    free: tuple[float, float] | None = None,
) -> EgressTau:
    """One control period of one egress. `free`: where a pair at the egress is held in quarantine
    (spec §9), (A, R*) of the pairs that are not, which bound the rise: see below."""
    for name, v in (("A", a_bps), ("R*", r_star_bps), ("T", target_bps)) + (
        () if free is None else (("A of the free pairs", free[0]), ("R* of the free pairs", free[1]))
    ):
        if not (v >= 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be a finite non-negative rate, got {v!r}")
    congested = r_star_bps > target_bps
    if not congested:
        return replace(state, congested=False, periods=0, idle=state.idle + 1)  # frozen: no windup while idle
    if not state.congested and state.idle >= params.restart_periods:
        # A τ frozen from an earlier episode belongs to another mix of traffic; resumed, it could
        # take dozens of capped decreases to come down, with FFS off meanwhile. τ_min isolates at
        # once (no pair above its share passes), and τ rises within a few periods where the exact
        # value is higher. A short lull (noise around the target) keeps the frozen value.
        state = EgressTau()
    level = state.tau if state.level is None else state.level
    new = tau_update(level, target_bps, a_bps, params.delta(target_bps))
    if free is not None:
        # A pair held in quarantine is charged for its lies, not served: τ rises only as far as the
        # pairs that are not held need, the rule's rise with their own A and, as the target, their
        # own R* (1 once γ drops none of them), never more than the egress's. Above that a rise
        # would only admit the held pair, up to the target: lies that fill the queue (at lm = 0 a
        # pair still gets τ·M_F = 1 of F, its light claims 1/w times that in bytes; docs/security.md).
        new = min(
            new, max(level, tau_update(level, free[1], free[0], params.delta(target_bps)) if free[1] > 0 else level)
        )
    # One reading moves τ by bounded factors (a counter read late is not the load), except down
    # while γ drops nothing: then every pair passes whole, and τ·T/A cannot undershoot the exact τ
    # (Σ_i min(R_i, τ'·M_i) ≥ T at τ' = τ·T/R*), so a τ left high by an earlier episode or a
    # restart comes down by R*/T per period instead of by a quarter.
    if a_bps < params.pass_fraction * r_star_bps:
        new = max(new, level * (1.0 - params.max_decrease))
    new = min(new, max(level, params.tau_min) * params.max_increase)
    # Where the exact τ is tau_min (Lemma 1: 1), A measured over one period is noise around T. A
    # level clamped at tau_min could only move up on that noise, so τ would wander above the exact
    # value and over-admit (+3 to +5 % with 9000-byte packets). The level may therefore go a bounded
    # `excursion` below tau_min while the data plane keeps tau_min: high readings are integrated as
    # well as low ones, and the bound keeps the recovery when τ must rise to one or two periods.
    # Not in the first periods of congestion: a transient reading there would only delay the rise.
    periods = state.periods + 1 if state.congested else 1
    floor = params.tau_min * (1.0 - params.excursion) if periods > params.settle_periods else params.tau_min
    new = min(max(new, floor), params.tau_max)
    return EgressTau(max(new, params.tau_min), True, new, periods)
