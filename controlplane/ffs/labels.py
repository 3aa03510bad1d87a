"""The FFS label codes (docs/spec.md §3): the data plane's 16-bit log code, and the paper's Eq. 3/4.

The data plane code is `round(128 · log2 x) + 0x8000`, saturating at 0 and 0xFFFF. Rounding is
decided exactly: a float log2 is only trusted when it is far from a rounding boundary; near one the
decision is made by comparing x with the boundary value 2^((k + 1/2)/128) in high-precision decimal
arithmetic, so no input ever lands on the wrong side because of a float error (design brief trap:
"never trust float log at a code boundary").
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

from ffs.constants import CODE_BIAS, CODE_MAX, CODE_MIN, CODE_STEPS_PER_OCTAVE

_STEPS = CODE_STEPS_PER_OCTAVE
_NEAR = 1e-6  # a float log2 this close (in code steps) to a .5 boundary is re-checked exactly
_CTX_PREC = 60


def _pow2_decimal(exponent: Fraction) -> Decimal:
    """2**exponent to 60 significant digits."""
    getcontext().prec = _CTX_PREC
    return (Decimal(exponent.numerator) / Decimal(exponent.denominator) * Decimal(2).ln()).exp()


def _exact_ge_pow2(x: float | int, exponent: Fraction) -> bool:
    """x >= 2**exponent, decided with 60-digit arithmetic (x is an exact binary float or an int)."""
    return Decimal(x) >= _pow2_decimal(exponent)


def round_log(x: float | int, steps: int = _STEPS) -> int:
    """round(steps · log2 x) for finite x > 0 (a float, or an int of any size), with ties and
    near-ties decided exactly.

    Ties go up (x exactly on a boundary cannot happen for x rational and a non-integer exponent,
    but the rule is stated for completeness).
    """
    if not (x > 0 and (isinstance(x, int) or math.isfinite(x))):
        raise ValueError(f"round_log needs a finite positive number, got {x!r}")
    t = steps * math.log2(x)
    k = math.floor(t)
    frac = t - k
    if abs(frac - 0.5) > _NEAR:
        return k + 1 if frac > 0.5 else k
    # near the boundary between k and k+1: is x >= 2**((k + 1/2)/steps)?
    return k + 1 if _exact_ge_pow2(x, Fraction(2 * k + 1, 2 * steps)) else k


def encode(x: float) -> int:
    """The 16-bit code of a positive ratio (spec §3): 1.0 -> 0x8000, saturating at both ends."""
    if math.isnan(x):
        raise ValueError("cannot encode NaN")
    if x <= 0.0:
        return CODE_MIN
    if math.isinf(x):
        return CODE_MAX
    code = round_log(x) + CODE_BIAS
    return min(max(code, CODE_MIN), CODE_MAX)


def decode(code: int) -> float:
    """The value a code stands for: 2^((code - 0x8000)/128). 0xFFFF decodes to its finite value;
    callers that treat it as infinity (tau) say so explicitly."""
    _check_code(code)
    return 2.0 ** ((code - CODE_BIAS) / _STEPS)


def reciprocal(code: int) -> int:
    """code(1/x) from code(x): 0x10000 - code, saturated (code 0, i.e. 0, maps to 0xFFFF)."""
    _check_code(code)
    return min(0x10000 - code, CODE_MAX)


def log_units(x: float) -> int:
    """round(128 · log2 x), unbiased, for x >= 1 (the units of lm and of the log tables)."""
    if not (x >= 1.0):
        raise ValueError(f"log_units needs x >= 1, got {x!r}")
    return round_log(x) if x > 1.0 else 0


def _check_code(code: int) -> None:
    if not (isinstance(code, int) and CODE_MIN <= code <= CODE_MAX):
        raise ValueError(f"not a 16-bit code: {code!r}")


# --- the paper's general form (Appendix D, Eq. 3 and 4) -------------------------------------


def _check_range(lo: float, hi: float, n_bits: int) -> None:
    if not (0.0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"need 0 < RF_min < RF_max, got [{lo}, {hi}]")
    if not (1 <= n_bits <= 32):
        raise ValueError(f"n_bits must be 1..32, got {n_bits}")


def _eq3_position(x: float, lo: float, hi: float, n_bits: int) -> Fraction | float:
    """(log x - log lo)/(log hi - log lo) · (2^n - 1), exact when lo, hi, x are powers of two."""
    top = (1 << n_bits) - 1
    lx, llo, lhi = math.log2(x), math.log2(lo), math.log2(hi)
    if all(v == int(v) for v in (lx, llo, lhi)):
        return Fraction(int(lx) - int(llo), int(lhi) - int(llo)) * top
    return (lx - llo) / (lhi - llo) * top


def encode_eq3(x: float, lo: float, hi: float, n_bits: int, nearest: bool = False) -> int:
    """Eq. 3: B = floor(normalised log position · (2^n - 1)) as printed, or round-to-nearest with
    `nearest` (the fix for floor's downward bias); out-of-range inputs clamp."""
    _check_range(lo, hi, n_bits)
    top = (1 << n_bits) - 1
    if not x > lo:
        return 0
    if x >= hi:
        return top
    pos = _eq3_position(x, lo, hi, n_bits)
    if nearest:
        pos = pos + (Fraction(1, 2) if isinstance(pos, Fraction) else 0.5)
    b = math.floor(pos)
    # a float position a hair below an integer is the float error the paper's vector 17 warns of
    if not isinstance(pos, Fraction) and pos - b > 1 - 1e-9:
        b += 1
    return min(max(b, 0), top)


def encode_eq3_nearest(x: float, lo: float, hi: float, n_bits: int) -> int:
    return encode_eq3(x, lo, hi, n_bits, nearest=True)


def decode_eq4(b: int, lo: float, hi: float, n_bits: int) -> float:
    """Eq. 4: RF = 2^(B · (log hi - log lo)/(2^n - 1) + log lo)."""
    _check_range(lo, hi, n_bits)
    top = (1 << n_bits) - 1
    if not (0 <= b <= top):
        raise ValueError(f"code {b} outside 0..{top}")
    llo, lhi = math.log2(lo), math.log2(hi)
    return 2.0 ** (b * (lhi - llo) / top + llo)
