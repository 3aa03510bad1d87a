"""Expected values for the PTF tests, from the spec and the papers' equations.

Nothing here imports the software switch: table outputs come from the generated entries of
`ffs.tables` (the entries every target is loaded with), and the per-packet results are the FFS
paper's equations (Algorithm 3 lines 1-3, Algorithm 4) evaluated on decoded labels and encoded
again with `ffs.labels`. Where the spec states a code identity (§7.2 "why these identities hold"),
the test asserts that identity exactly; the real-number form is the check that the identity is the
paper's equation.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ffs import binomial
from ffs import constants
from ffs import tables
from ffs.entries import TableEntry, Ternary
from ffs.labels import decode, encode


# --- the generated tables, looked up the way a ternary table matches --------------------------


@functools.lru_cache(maxsize=None)
def _f_log_entries() -> tuple[TableEntry, ...]:
    return tuple(tables.f_log_entries())


def lf(f: int) -> int:
    """f_log's unbiased log of an F estimator output; 0 (lf_zero) on a miss (f = 0)."""
    for e in _f_log_entries():
        k = e.key["f"]
        assert isinstance(k, Ternary)
        if f & k.mask == k.value:
            return e.params["lf"]
    return 0


Claim = tuple[int, bool, bool]  # (IP length, IPv6, 802.1Q): what len_log weighs (spec §4)


def weight(claim: Claim, rf: int) -> int:
    """w = len · 2^8 / rf through len_log and the weight table (spec §5.1, §5.2); a resetting
    port passes rf = code(1) (weight_reset)."""
    return tables.packet_weight(*claim, rf)


def forgetful_f(claim: Claim, rf: int, scale_down: int) -> int:
    """The F LPF output when the filter has forgotten every earlier packet (spec §8 with
    e^(-dt/tau) = 0): y = w, output = min(floor(y) >> s, 2^32 - 1)."""
    return min(weight(claim, rf) >> scale_down, constants.WEIGHT_MAX)


def lm_for(rf: int, f: int, rf_norm: int) -> int:
    """The pair's lm that makes a packet of label `rf` whose estimator reads `f` normalize to
    exactly `rf_norm` (rf' = rf + lf - lm, spec §7.2), checked to stay inside the code range."""
    lm = rf + lf(f) - rf_norm
    if not (0 <= lm <= constants.LM_MAX):
        raise ValueError(f"no lm gives rf'={rf_norm:#x} for rf={rf:#x}, f={f}")
    return lm


# --- Algorithm 3 and 4 (FFS paper) on one packet ---------------------------------------------


@dataclass(frozen=True)
class Egress:
    """The egress parameters a test programs: tau (None: uncongested, tau = infinity) and C/R*."""

    tau: float | None = None
    congested: bool = False
    cr: float | None = None

    def params(self) -> dict[str, int]:
        return tables.egress_params(self.tau, self.congested, self.cr)

    @property
    def ltau(self) -> int:
        return self.params()["ltau"]


@dataclass(frozen=True)
class Outcome:
    rf_norm: int  # code of rf · F / M (Algorithm 3 line 1)
    d: int  # rf_norm - ltau in code steps: gamma = 2^(-d/128) when d > 0
    accept: float  # P(forward): the gamma table's thr / 2^16, 1 for d <= 0, 0 beyond 2^-16
    rf_out: int  # min(rf_norm, tau) (line 3)
    rri_out: int | None  # Algorithm 4 with the pre-gamma label; None if RI is not requested

    @property
    def gamma(self) -> float:
        """The paper's gamma = min(1, tau / rf_norm)."""
        return 1.0 if self.d <= 0 else 2.0 ** (-self.d / constants.CODE_STEPS_PER_OCTAVE)


def outcome(rf: int, lm: int, f: int, egress: Egress, rri: int = constants.CODE_MAX, ri: bool = True) -> Outcome:
    """What Algorithm 3 (lines 1-3) and Algorithm 4 make of one packet, in codes."""
    rf_norm = max(rf - lm, 0) + lf(f)  # line 1 in logs: rf · F / M (lf, lm unbiased; spec §4)
    assert rf_norm <= constants.CODE_MAX, "test state outside the code range"
    ltau = egress.ltau
    d = rf_norm - ltau
    accept = tables.gamma_of_code_distance(d)
    rf_out = min(rf_norm, ltau)  # line 3: rf · gamma = min(rf, tau)
    rri_out = None
    if ri:
        r, x = decode(rri), decode(rf_norm)
        if rri < constants.CODE_ONE:  # line 2: congestion upstream, RRI · gamma (the exact gamma, spec §7.2)
            new = r * (2.0 ** (-max(d, 0) / constants.CODE_STEPS_PER_OCTAVE) if d <= constants.GAMMA_D_MAX else 0.0)
        elif egress.congested:  # line 5 with the pre-gamma label: min(RRI, tau / rf')
            new = min(r, decode(ltau) / x)
        else:  # lines 7-8: min(RRI, max(C / R*, 1 / rf'))
            cr = decode(egress.params()["lcr"])
            new = min(r, max(cr, 1.0 / x))
        rri_out = encode(new)
    return Outcome(rf_norm, d, accept, rf_out, rri_out)


def paper_label(rf: int, f: int, lm: int) -> float:
    """rf · F / M in real numbers: F in LPF units is f, M in the same units is 2^(lm/128)."""
    return decode(rf) * f / 2.0 ** (lm / constants.CODE_STEPS_PER_OCTAVE)


def binomial_bounds(n: int, p: float, sigmas: float = 4.0) -> tuple[float, float]:
    """n · p ± 4σ with σ = sqrt(n p (1 - p)) (spec §11.2.9)."""
    s = math.sqrt(n * p * (1 - p))
    return n * p - sigmas * s, n * p + sigmas * s



def packets_to_tell(gamma: float) -> int:
    """n such that a forwarding rate 20 % off gamma leaves the ±4σ band in 99.9 % of runs."""
    return binomial.packets_to_tell(gamma)
