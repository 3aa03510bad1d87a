# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/ri_update.p4`: the rate indicator's candidate (Algorithm 4); its
C twin in `_fastpath.c`: ri_update_apply."""

from __future__ import annotations

from ffs.core import constants, p4names
from ffs.switch.header import Meta
from ffs.switch.tna import (
    const_table,
    sat_sub,
)


class RiUpdate:
    """`FfsIngress.ri_update`: Algorithm 4's candidate with the pre-γ normalized label (const
    entries), on trusting and resetting ports alike; FfsIngress.fate writes rri = min(rri, c_ri)."""

    def __init__(self) -> None:
        from ffs.core.tables import ri_candidate_entries  # the one generator of the const entries

        self.ri_candidate = const_table(p4names.RI_CANDIDATE, ri_candidate_entries())

    @staticmethod
    def candidate_upstream(md: Meta) -> None:  # stage 4: rri · γ = rri - d
        md.c_ri = sat_sub(md.c_cong, md.rri_n)

    @staticmethod
    def candidate_keep(md: Meta) -> None:
        md.c_ri = constants.CODE_MAX

    @staticmethod
    def candidate_congested(md: Meta) -> None:  # stage 4: τ / rf_norm
        md.c_ri = md.c_cong

    @staticmethod
    def candidate_uncongested(md: Meta) -> None:  # stage 4: max(1/rf_norm, C/R*)
        md.c_ri = max(md.c_cong, md.lcr)

    def apply(self, md: Meta) -> None:
        action, _ = self.ri_candidate.lookup(md.ri_req, md.rri_ge_one, md.congested)
        getattr(self, action)(md)
