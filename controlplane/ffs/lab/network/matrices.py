# SPDX-License-Identifier: Apache-2.0
"""Each AS's fairness matrix as FFS §VII-B builds it, for the pairs the study's paths use."""

from __future__ import annotations

import numpy as np

from ffs.lab.network.graph import ASGraph

LOCAL_SHARE = 0.10  # §VII-B: M(local, j) = 10 % of the egress capacity


def fairness_share(g: ASGraph, p_in: np.ndarray, p_out: np.ndarray, link_cap: np.ndarray) -> np.ndarray:
    """M(i, j) for the pairs (ingress code, egress link) as §VII-B builds each AS's matrix."""
    n_e = len(g.u)
    tails = np.r_[g.u, g.v]
    cap_sum = np.bincount(tails, weights=link_cap, minlength=g.n)  # Σ C over an AS's links
    c_j = link_cap[p_out]
    others = cap_sum[tails[p_out]] - c_j  # Σ C_i over the other links (no U-turn entry)
    total = LOCAL_SHARE * c_j + others
    scale = np.where(total > c_j, c_j / total, 1.0)
    local = np.where(total > c_j, LOCAL_SHARE * c_j * scale, c_j - others)
    is_local = p_in >= 2 * n_e
    return np.where(is_local, local, link_cap[np.minimum(p_in, 2 * n_e - 1)] * scale)
