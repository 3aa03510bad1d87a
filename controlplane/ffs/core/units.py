# SPDX-License-Identifier: Apache-2.0
"""Rates as operators write them ("15Gbps", "400 Mb/s", "1.5e9") and as the project prints them; delays ("10ms")."""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9, "t": 1e12, "T": 1e12}
_RATE = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)(?:bps|b/s|bit/s)?\s*$")


def _quantity(
    text: str | int | float, what: str, pattern: re.Pattern[str], scale: Mapping[Any, float], example: str
) -> float:
    """A number as it is, or a string that `pattern` splits into a number and a unit of `scale`."""
    if isinstance(text, bool):
        raise ValueError(f"not a {what}: {text!r}")
    if isinstance(text, (int, float)):
        try:
            return float(text)
        except OverflowError:  # an int beyond the float range
            raise ValueError(f"not a finite {what}: {text!r}") from None
    m = pattern.match(str(text))
    if not m:
        raise ValueError(f"not a {what}: {text!r} (write e.g. {example})")
    return float(m.group(1)) * scale[m.group(2)]


def parse_rate(text: str | int | float) -> float:
    """A rate in bit/s. Numbers are bit/s; strings may carry k/M/G/T and bps, b/s or bit/s.

    Raises ValueError for negatives, NaN, infinity, booleans and anything unreadable.
    """
    value = _quantity(text, "rate", _RATE, _PREFIX, "15Gbps, 400Mbps, 10 Gb/s or 1e9")
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"not a finite rate: {text!r}")
    if value < 0:
        raise ValueError(f"negative rate: {text!r}")
    return value


def format_rate(bps: float) -> str:
    """3.0e9 -> '3 Gbps', 1.3333e9 -> '1.333 Gbps'."""
    if math.isnan(bps) or math.isinf(bps):
        return str(bps)
    for unit, scale in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} bps"


_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ns|us|µs|ms|s)?\s*$")
_SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}
# a delay above this would hold more frames than a link ever needs (1 s at 10 Gb/s is 1.25 GB)
MAX_DELAY_S = 1.0


def parse_delay(text: str | int | float) -> float:
    """A delay in seconds: a number (seconds) or a string with ns, us, ms or s ("10ms")."""
    value = _quantity(text, "delay", _DURATION, _SCALE, "10ms, 500us or 0.01")
    if not 0.0 <= value <= MAX_DELAY_S:  # also rejects NaN
        raise ValueError(f"delay {text!r} out of range 0..{MAX_DELAY_S:g} s")
    return value
