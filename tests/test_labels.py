"""The label codes of docs/spec.md §3 and the paper's Eq. 3/4 (digest §1.14 vectors 16-18)."""

import math

import pytest
from hypothesis import given, strategies as st

from ffs import labels as L
from ffs.constants import CODE_BIAS, CODE_MAX


def test_one_is_exact():
    assert L.encode(1.0) == CODE_BIAS
    assert L.decode(CODE_BIAS) == 1.0


@pytest.mark.parametrize("x, code", [(2.0, CODE_BIAS + 128), (0.5, CODE_BIAS - 128), (4.0, CODE_BIAS + 256)])
def test_powers_of_two_are_exact(x, code):
    assert L.encode(x) == code
    assert L.decode(code) == x


def test_saturation_both_ends():
    assert L.encode(0.0) == 0 and L.encode(-3.0) == 0
    assert L.encode(2.0**-300) == 0
    assert L.encode(2.0**300) == CODE_MAX
    assert L.encode(math.inf) == CODE_MAX
    with pytest.raises(ValueError):
        L.encode(math.nan)


def test_boundary_decided_exactly():
    # just below and just above the boundary between code steps 0 and 1 above 1.0
    boundary = 2 ** (0.5 / 128)
    below = math.nextafter(boundary, 0)
    above = math.nextafter(boundary, 2)
    exact_boundary_is_above = L._exact_ge_pow2(boundary, L.Fraction(1, 256))
    assert L.encode(below) == CODE_BIAS + (1 if L._exact_ge_pow2(below, L.Fraction(1, 256)) else 0)
    assert L.encode(above) == CODE_BIAS + 1
    assert L.encode(boundary) == CODE_BIAS + (1 if exact_boundary_is_above else 0)


@given(st.floats(min_value=2.0**-250, max_value=2.0**250))
def test_round_trip_within_half_a_step(x):
    y = L.decode(L.encode(x))
    assert abs(math.log2(y / x)) <= 0.5 / 128 + 1e-12


@given(st.floats(min_value=2.0**-250, max_value=2.0**250), st.floats(min_value=2.0**-250, max_value=2.0**250))
def test_monotone(a, b):
    if a <= b:
        assert L.encode(a) <= L.encode(b)


@given(st.integers(min_value=1, max_value=CODE_MAX))
def test_reciprocal(code):
    r = L.reciprocal(code)
    assert r == min(0x10000 - code, CODE_MAX)
    if code > 1:
        assert L.decode(r) == pytest.approx(1 / L.decode(code), rel=1e-12)


# --- Eq. 3/4 (digest §1.14, vectors 16-18) ------------------------------------------------


def test_eq3_symmetric_8bit():
    lo, hi = 2.0**-10, 2.0**10
    assert 2 ** (20 / 255) == pytest.approx(1.05587, abs=1e-5)
    assert L.encode_eq3(lo, lo, hi, 8) == 0 and L.decode_eq4(0, lo, hi, 8) == pytest.approx(lo)
    assert L.encode_eq3(hi, lo, hi, 8) == 255 and L.decode_eq4(255, lo, hi, 8) == pytest.approx(hi)
    for x, code, back in [(1.0, 127, 0.97318), (2.0, 140, 1.97300), (0.5, 114, 0.48002), (4 / 3, 132, 1.27716)]:
        assert L.encode_eq3(x, lo, hi, 8) == code
        assert L.decode_eq4(code, lo, hi, 8) == pytest.approx(back, abs=1e-5)


def test_eq3_one_exact_range():
    lo, hi = 2.0**-12, 2.0**5
    assert L.encode_eq3(1.0, lo, hi, 8) == 180  # float log10 would give 179
    assert L.decode_eq4(180, lo, hi, 8) == pytest.approx(1.0, abs=1e-12)
    assert L.encode_eq3(0.5, lo, hi, 8) == 165
    assert L.encode_eq3(2.0, lo, hi, 8) == 195
    assert 2 ** (17 / 255) == pytest.approx(1.04729, abs=1e-5)


def test_eq3_sixteen_bits():
    lo, hi = 2.0**-16, 2.0**16
    assert L.encode_eq3(1.0, lo, hi, 16) == 32767
    assert L.decode_eq4(32767, lo, hi, 16) == pytest.approx(0.99983, abs=1e-5)
    assert L.encode_eq3(2.0, lo, hi, 16) == 34815
    assert L.decode_eq4(34815, lo, hi, 16) == pytest.approx(1.99968, abs=1e-5)


def test_eq3_floor_bias_and_nearest_fix():
    lo, hi = 2.0**-10, 2.0**10
    # floor biases 1.0 down by one step; round-to-nearest picks the closer code
    assert L.encode_eq3(1.0, lo, hi, 8) == 127
    assert L.encode_eq3_nearest(1.0, lo, hi, 8) == 128
    assert L.encode_eq3_nearest(4 / 3, lo, hi, 8) == 133


def test_eq3_clamps_out_of_range():
    assert L.encode_eq3(1e-9, 2.0**-10, 2.0**10, 8) == 0
    assert L.encode_eq3(1e9, 2.0**-10, 2.0**10, 8) == 255
    with pytest.raises(ValueError):
        L.encode_eq3(1.0, 2.0, 1.0, 8)
