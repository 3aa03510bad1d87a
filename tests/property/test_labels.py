# SPDX-License-Identifier: Apache-2.0
"""The label codes of docs/spec.md §3 and the paper's Eq. 3/4 (worked examples in docs/spec.md §11.2.8).

Exactness is checked against an independent oracle: 60-digit decimal logarithms, not the integer
power comparisons `ffs.core.labels` itself uses.
"""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ffs.core import labels
from ffs.core.constants import CODE_BIAS, CODE_MAX


def oracle_code(x) -> int:
    """round(128 · log2 x) + 0x8000, clamped, with 60-digit logarithms (no float log anywhere)."""
    with localcontext() as ctx:
        ctx.prec = 60
        n, d = (x.numerator, x.denominator) if isinstance(x, Fraction) else x.as_integer_ratio()
        t = (Decimal(n).ln() - Decimal(d).ln()) / Decimal(2).ln() * 128
        k = int(t.to_integral_value(rounding="ROUND_FLOOR"))
        code = k + (1 if t - k >= Decimal("0.5") else 0) + CODE_BIAS
    return min(max(code, 0), CODE_MAX)


def test_one_is_exact():
    assert labels.encode(1.0) == CODE_BIAS == labels.encode(1) == labels.encode(Fraction(1))
    assert labels.decode(CODE_BIAS) == 1.0


@pytest.mark.parametrize(
    "x, code", [(2.0, CODE_BIAS + 128), (0.5, CODE_BIAS - 128), (4.0, CODE_BIAS + 256), (2.0**-255, 128)]
)
def test_powers_of_two_are_exact(x, code):
    assert labels.encode(x) == code
    assert labels.decode(code) == x


def test_saturation_both_ends():
    assert labels.encode(0.0) == 0 and labels.encode(-3.0) == 0 and labels.encode(-math.inf) == 0
    assert labels.encode(2.0**-300) == 0 and labels.encode(5e-324) == 0
    assert labels.encode(2.0**-256) == 0  # the lowest code, below it clamps to 0 too
    assert (
        labels.encode(2.0**300) == CODE_MAX and labels.encode(1e308) == CODE_MAX and labels.encode(10**400) == CODE_MAX
    )
    assert labels.encode(math.inf) == CODE_MAX
    with pytest.raises(ValueError):
        labels.encode(math.nan)
    for bad in (-1, 0x10000, 1.5, True):
        with pytest.raises(ValueError):
            labels.decode(bad)


def _boundary_neighbours(k: int) -> list[float]:
    """The doubles around the boundary between codes k and k + 1 (unbiased): 2^((k + 1/2)/128)."""
    with localcontext() as ctx:
        ctx.prec = 60
        b = float((Decimal(2 * k + 1) / 256 * Decimal(2).ln()).exp())
    out = [b]
    for _ in range(3):
        out.append(math.nextafter(out[-1], math.inf))
    lo = b
    for _ in range(3):
        lo = math.nextafter(lo, 0)
        out.append(lo)
    return out


@pytest.mark.parametrize("k", [-32768, -12345, -129, -128, -1, 0, 1, 127, 128, 4095, 12345, 32766])
def test_boundaries_decided_exactly(k):
    # every double within 3 ulp of a code boundary lands on the side the exact logarithm says
    for x in _boundary_neighbours(k):
        assert labels.encode(x) == oracle_code(x), (k, x.hex())
    # and the two sides of the boundary differ: both codes are reachable right there
    codes = {labels.encode(x) for x in _boundary_neighbours(k)}
    assert codes == {max(k + CODE_BIAS, 0), k + 1 + CODE_BIAS}


@settings(max_examples=300)
@given(st.floats(min_value=2.0**-260, max_value=2.0**260))
def test_encode_matches_exact_oracle(x):
    assert labels.encode(x) == oracle_code(x)


@given(st.floats(min_value=2.0**-255.99, max_value=2.0**255.99))
def test_round_trip_within_half_a_step(x):
    y = labels.decode(labels.encode(x))
    assert abs(math.log2(y / x)) <= 0.5 / 128 + 1e-12


@given(st.floats(min_value=0, max_value=2.0**300), st.floats(min_value=0, max_value=2.0**300))
def test_monotone(a, b):
    a, b = min(a, b), max(a, b)
    assert labels.encode(a) <= labels.encode(b)


@given(st.integers(min_value=1, max_value=CODE_MAX))
def test_reciprocal_of_codes(code):
    r = labels.reciprocal(code)
    assert r == min(0x10000 - code, CODE_MAX)
    if code > 1:
        assert labels.decode(r) == pytest.approx(1 / labels.decode(code), rel=1e-12)
        assert labels.reciprocal(r) == code


@given(st.floats(min_value=2.0**-255, max_value=2.0**255))
def test_reciprocal_identity_on_values(x):
    # code(1/x) == 0x10000 - code(x), with 1/x exact (a Fraction, not a rounded double)
    assert labels.encode(1 / Fraction(x)) == labels.reciprocal(labels.encode(x))


def test_log_units():
    assert (
        labels.log_units(1.0) == 0 and labels.log_units(2) == 128 and labels.log_units(3) == round(128 * math.log2(3))
    )
    assert labels.log_units(2**40) == 40 * 128
    with pytest.raises(ValueError):
        labels.log_units(0.5)


# --- Eq. 3/4 (spec §11.2.8) ----------------------------------------------------------------


def test_eq3_symmetric_8bit():
    lo, hi = 2.0**-10, 2.0**10
    assert labels.decode_eq4(1, lo, hi, 8) / labels.decode_eq4(0, lo, hi, 8) == pytest.approx(1.05587, abs=1e-5)  # step
    assert labels.encode_eq3(lo, lo, hi, 8) == 0 and labels.decode_eq4(0, lo, hi, 8) == lo
    assert labels.encode_eq3(hi, lo, hi, 8) == 255 and labels.decode_eq4(255, lo, hi, 8) == hi
    for x, code, back in [(1.0, 127, 0.97318), (2.0, 140, 1.97300), (0.5, 114, 0.48002), (4 / 3, 132, 1.27716)]:
        assert labels.encode_eq3(x, lo, hi, 8) == code
        assert labels.decode_eq4(code, lo, hi, 8) == pytest.approx(back, abs=1e-5)


def test_eq3_one_exact_range():
    lo, hi = 2.0**-12, 2.0**5
    # the float-log trap of vector 17: base-10 logs put 1.0 a hair below 180
    assert math.floor(math.log10(1.0 / lo) / math.log10(hi / lo) * 255) == 179
    assert labels.encode_eq3(1.0, lo, hi, 8) == 180
    assert labels.decode_eq4(180, lo, hi, 8) == 1.0
    assert labels.encode_eq3(0.5, lo, hi, 8) == 165 and labels.encode_eq3(2.0, lo, hi, 8) == 195
    assert labels.decode_eq4(1, lo, hi, 8) / lo == pytest.approx(1.04729, abs=1e-5)  # step ratio


def test_eq3_exact_ties_beyond_powers_of_two():
    # position = 255 · log(3^11)/log(3^33) = 85 exactly: on the boundary, floor gives 85;
    # one ulp below it gives 84
    assert labels.encode_eq3(3.0**11, 1.0, 3.0**33, 8) == 85
    assert labels.encode_eq3(math.nextafter(3.0**11, 0), 1.0, 3.0**33, 8) == 84
    # nearest: position 127.5 exactly (sqrt of the range) rounds up
    assert labels.encode_eq3_nearest(3.0, 1.0, 9.0, 8) == 128
    assert labels.encode_eq3_nearest(math.nextafter(3.0, 0), 1.0, 9.0, 8) == 127


def test_eq3_sixteen_bits():
    lo, hi = 2.0**-16, 2.0**16
    assert labels.encode_eq3(1.0, lo, hi, 16) == 32767
    assert labels.decode_eq4(32767, lo, hi, 16) == pytest.approx(0.99983, abs=1e-5)
    assert labels.encode_eq3(2.0, lo, hi, 16) == 34815
    assert labels.decode_eq4(34815, lo, hi, 16) == pytest.approx(1.99968, abs=1e-5)


def test_eq3_floor_bias_and_nearest_fix():
    lo, hi = 2.0**-10, 2.0**10
    # floor biases 1.0 down by one step (position 127.5); round-to-nearest picks the closer code
    assert labels.encode_eq3(1.0, lo, hi, 8) == 127
    assert labels.encode_eq3_nearest(1.0, lo, hi, 8) == 128
    assert labels.encode_eq3_nearest(4 / 3, lo, hi, 8) == 133


@settings(max_examples=200)
@given(st.floats(2.0**-12, 2.0**5), st.sampled_from([4, 8, 12, 16]))
def test_eq3_decodes_within_a_step(x, n):
    lo, hi = 2.0**-12, 2.0**5
    step = (hi / lo) ** (1 / ((1 << n) - 1))
    down = labels.decode_eq4(labels.encode_eq3(x, lo, hi, n), lo, hi, n)
    near = labels.decode_eq4(labels.encode_eq3_nearest(x, lo, hi, n), lo, hi, n)
    assert down <= x * (1 + 1e-12) and x < down * step * (1 + 1e-12)  # floor: at or below, within a step
    assert abs(math.log(near / x)) <= math.log(step) / 2 * (1 + 1e-9)  # nearest: within half a step


def test_eq3_clamps_and_rejects():
    assert labels.encode_eq3(1e-9, 2.0**-10, 2.0**10, 8) == 0
    assert labels.encode_eq3(1e9, 2.0**-10, 2.0**10, 8) == 255
    assert (
        labels.encode_eq3(0.0, 2.0**-10, 2.0**10, 8) == 0 and labels.encode_eq3(math.inf, 2.0**-10, 2.0**10, 8) == 255
    )
    for args in [(1.0, 2.0, 1.0, 8), (1.0, 0.0, 1.0, 8), (1.0, 0.5, 2.0, 0), (math.nan, 0.5, 2.0, 8)]:
        with pytest.raises(ValueError):
            labels.encode_eq3(*args)
    with pytest.raises(ValueError):
        labels.decode_eq4(256, 2.0**-10, 2.0**10, 8)
