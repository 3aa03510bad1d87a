# SPDX-License-Identifier: Apache-2.0
"""Rates as operators write them (ffs.core.units)."""

import math

import pytest

from ffs.core.units import format_rate, parse_rate


@pytest.mark.parametrize(
    "text, bps",
    [
        ("15Gbps", 15e9),
        ("400Mbps", 400e6),
        ("1.5e9", 1.5e9),
        ("10 Gb/s", 10e9),
        ("2.5 Gbit/s", 2.5e9),
        ("100kbps", 1e5),
        ("3K", 3e3),
        ("1T", 1e12),
        (" 7 Gbps ", 7e9),
        ("1e3Mbps", 1e9),
        ("0", 0.0),
        (".5Gbps", 0.5e9),
        (12, 12.0),
        (1.5e9, 1.5e9),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == pytest.approx(bps, rel=1e-15)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("-5Gbps", "negative rate"),
        (-1, "negative rate"),
        ("nan", "not a rate"),
        (math.nan, "not a finite rate"),
        ("inf", "not a rate"),
        (math.inf, "not a finite rate"),
        ("1e400", "not a finite rate"),
        (10**400, "not a finite rate"),
        ("fast", "not a rate: 'fast'"),
        ("", "not a rate"),
        ("Gbps", "not a rate"),
        ("15 GBps", "not a rate"),  # bytes per second is not a spelling we guess at
        ("15 Gbpss", "not a rate"),
        ("1.2.3Mbps", "not a rate"),
        (True, "not a rate"),
        (None, "not a rate"),
        ([1, 2], "not a rate"),
    ],
)
def test_parse_rate_rejects(text, fragment):
    with pytest.raises(ValueError, match="^" + fragment if fragment.startswith("n") else fragment) as e:
        parse_rate(text)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "bps, text",
    [
        (3e9, "3 Gbps"),
        (4e9 / 3, "1.333 Gbps"),
        (32e9 / 3, "10.67 Gbps"),
        (20e6, "20 Mbps"),
        (1500, "1.5 kbps"),
        (999, "999 bps"),
        (0, "0 bps"),
        (2e12, "2 Tbps"),
        (math.inf, "inf"),
    ],
)
def test_format_rate(bps, text):
    assert format_rate(bps) == text


@pytest.mark.parametrize("bps", [1.0, 12345.0, 7e9, 1.25e11])
def test_format_then_parse_round_trip(bps):
    assert parse_rate(format_rate(bps).replace(" ", "")) == pytest.approx(bps, rel=1e-3)
