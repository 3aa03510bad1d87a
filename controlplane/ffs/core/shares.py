# SPDX-License-Identifier: Apache-2.0
"""The smallest fairness-matrix entry the data plane can enforce as written (docs/spec.md §3, §4, §9).

A non-zero M(i, j) must be
- at least `MIN_SHARE_FRACTION` = 1/τ_max = 2^-16 of its column Σ_i M(i, j): when the other
  ingresses fall silent, τ must grow to T_j / M(i, j) for the pair to use the whole egress (work
  conservation, FFS Lemma 1), and the agent clamps τ to τ_max = 65536 (spec §9); the γ table
  likewise ends at 2^-16 (spec §5.4);
- at least `MIN_SHARE_BPS` = 1 kbit/s: the pair's `lm` is the log code of M in F-estimator units
  (spec §4), which with the default estimator (τ_F = 1 ms, scale-down 4) reaches code 0 at 500 bit/s;
  below it every smaller M, down to subnormal floats, would be enforced as the same share.
Zero stays allowed: it means no share.
"""

from __future__ import annotations

from ffs.core import constants
from ffs.core.units import format_rate

MIN_SHARE_FRACTION = 1.0 / constants.TAU_MAX
MIN_SHARE_BPS = 1e3


def share_problem(ingress: str, egress: str, rate: float, column_total: float) -> str | None:
    """Why M(ingress, egress) = rate cannot be enforced in a column summing to column_total, or None."""
    if rate == 0:
        return None
    if rate < MIN_SHARE_BPS:
        return (
            f"M({ingress},{egress}) = {format_rate(rate)} is below the smallest share, {format_rate(MIN_SHARE_BPS)} "
            f"(write 0 for no share)"
        )
    if rate < MIN_SHARE_FRACTION * column_total:
        return (
            f"M({ingress},{egress}) = {format_rate(rate)} is below 1/{round(1 / MIN_SHARE_FRACTION)} of the "
            f"{format_rate(column_total)} toward {egress}, the smallest fraction tau can scale to the whole egress "
            f"(write 0 for no share)"
        )
    return None
