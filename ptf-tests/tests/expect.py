# SPDX-License-Identifier: Apache-2.0
"""Expected values for the PTF tests, from the FFS paper's real-valued equations and the spec's
precision budget, never from the code arithmetic they check.

A test picks real quantities -- a label rf, a share M in the estimator's units (M_F, spec §4), τ,
C/R* -- programs them with the control plane's encodings (lm = round(128 · log2 M_F) of spec §4,
the egress parameters of `ffs.core.tables.egress_params`), reads F as the node measured it (f_est), and
expects what Algorithm 3 (lines 1-3, Eq. 1-2) and Algorithm 4 make of those real numbers, within
the tolerance spec §10 allows the 16-bit log code. Nothing here evaluates a table entry, a P4
expression or a generator of `ffs.core.tables`: the encodings program the target and no expectation
reads them back; the label codes the device writes are decoded and compared with real numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ffs.core import constants, tables
from ffs.core.labels import decode
from ffs.lab import binomial

# spec §10: the normalized label rf' within 0.93 % of rf · F / M; anything that also carries τ or
# C/R* (γ, rf out when τ binds, RRI) within 1.21 %; the forwarding probability within 1.4 %
LABEL_BUDGET = 0.0093
GAMMA_BUDGET = 0.0121
DROP_BUDGET = 0.014
LABEL_MAX = 2.0**16  # spec §3.1: no node emits a label above 2^16, and the next admits it whole
LABEL_MIN = 2.0**-8  # spec §3.1: a label below is admitted as 2^-8
# spec §10: the weight the node's tables give a packet, within len_log's bucket and rounding (0.0095
# octave) of w = wire_len · 2^8 / rf, plus half a unit for the integer weight
WEIGHT_BUDGET = 2.0**0.0095 - 1


def lm_of(m_f: float) -> int:
    """The pair's lm for a share of M_F estimator units (spec §4): clamp(round(128 · log2 M_F), 0, 0x1000)."""
    return min(max(round(constants.CODE_STEPS_PER_OCTAVE * math.log2(m_f)), 0), constants.LM_MAX)


def m_for(rf: float, f: int, rf_norm: float) -> float:
    """The share M_F (estimator units) for which a packet of label `rf` whose estimator reads `f`
    normalizes to `rf_norm` (Algorithm 3 line 1: rf' = rf · F / M, solved for M), checked to be one
    the control plane can push."""
    m = rf * f / rf_norm
    if not 1.0 <= m <= 2.0 ** (constants.LM_MAX / constants.CODE_STEPS_PER_OCTAVE):
        raise ValueError(f"no share M_F gives rf' = {rf_norm:g} for rf = {rf:g}, F = {f}")
    return m


# --- Algorithm 3 and 4 (FFS paper) on one packet, in real numbers --------------------------------


@dataclass(frozen=True)
class Egress:
    """The egress parameters a test programs: τ (None: uncongested, τ = ∞), congested, C/R*
    (None: R* = 0, C/R* = ∞)."""

    tau: float | None = None
    congested: bool = False
    cr: float | None = None

    def params(self) -> dict[str, int]:
        """set_egress's parameters: the control plane's encoding (spec §5.3), used to program only."""
        return tables.egress_params(self.tau, self.congested, self.cr)

    @property
    def tau_real(self) -> float:
        """τ of Eq. 2 as the test chose it, ∞ while uncongested (γ = 1 whatever ltau holds, spec
        §5.3); its code's rounding (1/256 octave) is within the budgets that carry τ (spec §10)."""
        if not self.congested:
            return math.inf
        if self.tau is None:
            raise ValueError("a congested egress needs a tau")
        return self.tau


@dataclass(frozen=True)
class Paper:
    rf_norm: float  # rf · F / M (Algorithm 3 line 1)
    gamma: float  # min(1, τ / rf') (Eq. 2, line 2)
    rf_out: float  # rf' · γ = min(rf', τ) (line 3), at most LABEL_MAX
    rri_out: float | None  # Algorithm 4 with the pre-γ label (spec §11.1.1); None if RI is not requested


def paper(rf: float, f: float, m_f: float, egress: Egress, rri: float = math.inf, ri: bool = True) -> Paper:
    """What Algorithms 3 and 4 make of one packet: label `rf`, the pair's F as measured (`f`) and
    share `m_f` in the same units, at `egress`; `rri` as it arrives."""
    rf_norm = rf * f / m_f
    tau = egress.tau_real
    gamma = min(1.0, tau / rf_norm)
    rri_out = None
    if ri:
        if rri < 1.0:  # line 2: congestion upstream, RRI · γ
            rri_out = rri * gamma
        elif egress.congested:  # line 5: min(RRI, τ / rf')
            rri_out = min(rri, tau / rf_norm)
        else:  # lines 7-8: min(RRI, max(C / R*, 1 / rf'))
            cr = math.inf if egress.cr is None else egress.cr
            rri_out = min(rri, max(cr, 1.0 / rf_norm))
    return Paper(rf_norm, gamma, min(rf_norm * gamma, LABEL_MAX), rri_out)


def close(code: int, x: float, budget: float) -> bool:
    """The label code `code` stands for x within the relative `budget` (∞ is the code 0xFFFF)."""
    if math.isinf(x):
        return code == constants.CODE_MAX
    return abs(decode(code) / x - 1) <= budget


def forwarding_bounds(n: int, gamma: float, sigmas: float = 4.0) -> tuple[float, float]:
    """n · γ ± 4σ (spec §11.2.9), widened by the 1.4 % the code allows γ (spec §10)."""
    return binomial.bounds(n, gamma, sigmas, slack=DROP_BUDGET)


def packets_to_tell(gamma: float) -> int:
    """n such that a forwarding rate 20 % off γ leaves the widened ±4σ band in 99.9 % of runs."""
    return binomial.packets_to_tell(gamma, slack=DROP_BUDGET)


Claim = tuple[int, bool, bool]  # (IP length, IPv6, 802.1Q): what len_log weighs (spec §4)


def weight(claim: Claim, rf: int) -> float:
    """The estimator's input for a packet of label code `rf` in real numbers, w = wire_len · 2^8 / rf
    (spec §4): the frame its headers claim (14 bytes of Ethernet header, 4 more with an 802.1Q tag,
    the IPv6 header's 40 beside its payload length, the IP length, 4 of FCS; at most 65535), padded
    to Ethernet's 64 bytes, plus 20 of preamble and inter-frame gap; the label admitted within
    [2^-8, 2^16] (spec §3.1). The node's tables give it within `weighs`'s budget (spec §10)."""
    l3_len, ipv6, vlan = claim
    frame = min(14 + 4 * vlan + 40 * ipv6 + l3_len + 4, 0xFFFF)
    return (max(frame, 64) + 20) * 2.0**8 / min(max(decode(rf), LABEL_MIN), LABEL_MAX)


def weighs(got: int, w: float) -> bool:
    """An estimator input (or a forgetful estimator's reading) `got` is the real weight w within
    spec §10's budget: len_log's 0.66 % and half a unit of the integer weight."""
    return abs(got / w - 1) <= WEIGHT_BUDGET + 0.5 / w
