# SPDX-License-Identifier: Apache-2.0
"""The FFS label codes (docs/spec.md §3): the data plane's 16-bit log code, and the paper's Eq. 3/4.

The data plane code is `round(128 · log2 x) + 0x8000`, saturating at 0 and 0xFFFF. Every rounding
decision is exact: a float log2 only *proposes* an answer; whenever it lies near a rounding boundary
the answer is decided by comparing integer powers (x^256 against 2^(2k+1) for the code), so no input
lands on the wrong side of a boundary because of a float error (docs/spec.md §3). The same holds
for the paper's Eq. 3, where a float log10 gives 179 instead of 180 for 1.0 in [2^-12, 2^5]
(docs/spec.md §11.2.8).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from numbers import Rational
from typing import Union

from ffs.core.constants import CODE_BIAS, CODE_MAX, CODE_MIN, CODE_STEPS_PER_OCTAVE

_STEPS = CODE_STEPS_PER_OCTAVE
# A float log2 has a relative error of a few ulp (< 1e-12 code steps here); answers this close to a
# rounding boundary are re-decided exactly. The margin is generous: exact checks cost microseconds.
_NEAR = 1e-6

Real = Union[float, int, Fraction]  # not `float | int | ...`: the bfshell scripts import this on Python 3.8


def _ratio(x: Real) -> tuple[int, int]:
    """x as an exact fraction n/d (floats are dyadic rationals, so this loses nothing)."""
    if isinstance(x, Rational):
        return x.numerator, x.denominator
    return x.as_integer_ratio()


def _log2(x: Real) -> float:
    """log2 of a positive float, int or Fraction of any magnitude (ints beyond the float range too)."""
    if isinstance(x, Fraction):
        return math.log2(x.numerator) - math.log2(x.denominator)
    return math.log2(x)


def _ge_pow2(x: Real, num: int, den: int) -> bool:
    """Exactly: x >= 2^(num/den) for x > 0, den > 0, i.e. x^den >= 2^num, in integers."""
    n, d = _ratio(x)
    if num >= 0:
        return bool(n**den >= d**den << num)
    return bool(n**den << -num >= d**den)


def round_log(x: Real, steps: int = _STEPS) -> int:
    """round(steps · log2 x) for finite x > 0 (float, int or Fraction of any size), decided exactly.

    There are no ties: a boundary 2^((k + 1/2)/steps) is irrational, so no rational x sits on one.
    """
    if not (x > 0 and (not isinstance(x, float) or math.isfinite(x))):
        raise ValueError(f"round_log needs a finite positive number, got {x!r}")
    t = steps * _log2(x)
    k = math.floor(t)
    frac = t - k
    if abs(frac - 0.5) > _NEAR:
        return k + 1 if frac > 0.5 else k
    # near the boundary between k and k + 1: is x >= 2^((2k + 1)/(2 steps))?
    return k + 1 if _ge_pow2(x, 2 * k + 1, 2 * steps) else k


def encode(x: Real) -> int:
    """The 16-bit code of a positive ratio (spec §3): 1.0 -> 0x8000, saturating at both ends;
    x <= 0 -> 0, +inf -> 0xFFFF, NaN -> ValueError."""
    if isinstance(x, float) and math.isnan(x):
        raise ValueError("cannot encode NaN")
    if x <= 0:
        return CODE_MIN
    if isinstance(x, float) and math.isinf(x):
        return CODE_MAX
    code = round_log(x) + CODE_BIAS
    return min(max(code, CODE_MIN), CODE_MAX)


def decode(code: int) -> float:
    """The value a code stands for: 2^((code - 0x8000)/128). 0xFFFF decodes to its finite value;
    callers that treat it as infinity (tau) say so explicitly."""
    _check_code(code)
    return float(2.0 ** ((code - CODE_BIAS) / _STEPS))


def reciprocal(code: int) -> int:
    """code(1/x) from code(x): 0x10000 - code, saturated (code 0, i.e. 0, maps to 0xFFFF).

    Exact for codes 1..0xFFFF: round(-t) = -round(t) because t is never a tie."""
    _check_code(code)
    return min(0x10000 - code, CODE_MAX)


def log_units(x: Real) -> int:
    """round(128 · log2 x), unbiased, for x >= 1 (the units of lm and of the log tables)."""
    if not (x >= 1):
        raise ValueError(f"log_units needs x >= 1, got {x!r}")
    return round_log(x) if x > 1 else 0


def _check_code(code: int) -> None:
    if not (isinstance(code, int) and not isinstance(code, bool) and CODE_MIN <= code <= CODE_MAX):
        raise ValueError(f"not a 16-bit code: {code!r}")


# --- the paper's general form (Appendix D, Eq. 3 and 4) -------------------------------------
#
# Eq. 3 is B = floor(log(x/lo) / log(hi/lo) · (2^n - 1)); the base cancels. Every decision
# "B <= position" is the sign of  p·log a - q·log c  for rationals a = x/lo, c = hi/lo and integers
# p, q, which `_log_cmp` settles exactly.


def _log_cmp(a: Fraction, p: int, c: Fraction, q: int) -> int:
    """The sign of p·log(a) - q·log(c) for rationals a, c > 0 and integers p, q >= 0, exactly.

    50-digit logarithms settle it unless the two sides agree to ~1e-30; then a^p and c^q are compared
    as integers, after dividing p and q by their gcd (so exact ties such as 1.0 in [2^-12, 2^5],
    where 255·log 2^12 = 180·log 2^17, cost a few hundred bits, not thousands)."""
    with localcontext() as ctx:
        ctx.prec = 50
        diff = p * (Decimal(a.numerator).ln() - Decimal(a.denominator).ln()) - q * (
            Decimal(c.numerator).ln() - Decimal(c.denominator).ln()
        )
    if abs(diff) > Decimal("1e-30"):
        return 1 if diff > 0 else -1
    g = math.gcd(p, q) or 1
    p, q = p // g, q // g
    lhs = a.numerator**p * c.denominator**q
    rhs = c.numerator**q * a.denominator**p
    return int(lhs > rhs) - int(lhs < rhs)


def _check_range(lo: float, hi: float, n_bits: int) -> None:
    if not (0.0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < RF_min < RF_max < inf, got [{lo}, {hi}]")
    if not (isinstance(n_bits, int) and 1 <= n_bits <= 32):
        raise ValueError(f"n_bits must be an integer in 1..32, got {n_bits!r}")


def encode_eq3(x: float, lo: float, hi: float, n_bits: int, nearest: bool = False) -> int:
    """Eq. 3: B = floor(log(x/lo)/log(hi/lo) · (2^n - 1)) as printed, or round-to-nearest with
    `nearest` (the fix for floor's downward bias; a position exactly half-way rounds up).
    Out-of-range inputs clamp to 0 and 2^n - 1; NaN raises ValueError."""
    _check_range(lo, hi, n_bits)
    if isinstance(x, float) and math.isnan(x):
        raise ValueError("cannot encode NaN")
    top = (1 << n_bits) - 1
    if x <= lo:
        return 0
    if x >= hi:
        return top
    a, c = Fraction(x) / Fraction(lo), Fraction(hi) / Fraction(lo)
    # p·log a >= q·log c decides "b <= position" (floor) or "b <= position + 1/2" (nearest)
    p = 2 * top if nearest else top

    def q(b: int) -> int:
        return 2 * b - 1 if nearest else b

    guess = _log2(a) / _log2(c) * top + (0.5 if nearest else 0.0)
    b = min(max(math.floor(guess), 0), top)
    while b > 0 and _log_cmp(a, p, c, q(b)) < 0:  # b is above the answer
        b -= 1
    while b < top and _log_cmp(a, p, c, q(b + 1)) >= 0:  # b + 1 is still at or below it
        b += 1
    return b


def encode_eq3_nearest(x: float, lo: float, hi: float, n_bits: int) -> int:
    return encode_eq3(x, lo, hi, n_bits, nearest=True)


def decode_eq4(b: int, lo: float, hi: float, n_bits: int) -> float:
    """Eq. 4: RF = 2^(B · (log hi - log lo)/(2^n - 1) + log lo)."""
    _check_range(lo, hi, n_bits)
    top = (1 << n_bits) - 1
    if not (isinstance(b, int) and 0 <= b <= top):
        raise ValueError(f"code {b!r} outside 0..{top}")
    llo, lhi = math.log2(lo), math.log2(hi)
    return float(2.0 ** (b * (lhi - llo) / top + llo))
