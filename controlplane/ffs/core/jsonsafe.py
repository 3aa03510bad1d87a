# SPDX-License-Identifier: Apache-2.0
"""JSON has no infinity or NaN: the project writes them as null (e.g. τ = ∞ while uncongested)."""

from __future__ import annotations

import math
from typing import Any


def finite(v: Any) -> Any:
    """A copy of `v` (dicts, lists, tuples, scalars) with every non-finite float replaced by None."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v
