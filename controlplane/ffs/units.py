"""Rates as operators write them ("15Gbps", "400 Mb/s", "1.5e9") and as the project prints them."""

from __future__ import annotations

import math
import re

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9, "t": 1e12, "T": 1e12}
_RATE = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgGtT]?)(?:bps|b/s|bit/s)?\s*$")


def parse_rate(text: str | int | float) -> float:
    """A rate in bit/s. Numbers are bit/s; strings may carry k/M/G/T and bps, b/s or bit/s.

    Raises ValueError for negatives, NaN, infinity, booleans and anything unreadable.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a rate: {text!r}")
    if isinstance(text, (int, float)):
        try:
            value = float(text)
        except OverflowError:  # an int beyond the float range
            raise ValueError(f"not a finite rate: {text!r}") from None
    else:
        m = _RATE.match(str(text))
        if not m:
            raise ValueError(f"not a rate: {text!r} (write e.g. 15Gbps, 400Mbps, 10 Gb/s or 1e9)")
        value = float(m.group(1)) * _PREFIX[m.group(2)]
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
