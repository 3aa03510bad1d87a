# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/normalize.p4`: γ: the draw and the gamma table; its C twin in
`_fastpath.c`: normalize_apply."""

from __future__ import annotations

from ffs.core import p4names
from ffs.switch.header import Meta
from ffs.switch.tna import (
    MatchTable,
    Random16,
    sat_sub,
)


class Normalize:
    """`FfsIngress.normalize`: the random draw, and γ by (congested, c_cong)."""

    def __init__(self, seed: int) -> None:
        self.gamma = MatchTable(p4names.GAMMA)
        self.rng = Random16(seed)

    def draw(self, md: Meta) -> None:  # stage 3 (managed packets only draw)
        md.rnd = self.rng.get()

    @staticmethod
    def gamma_one(md: Meta) -> None:  # stage 4: d <= 0 or uncongested, γ = 1, no random compare
        md.admit_margin = 1

    @staticmethod
    def gamma_frac(md: Meta, thr: int) -> None:  # stage 4: accept iff rnd < thr
        md.admit_margin = sat_sub(thr, md.rnd)

    @staticmethod
    def gamma_zero(md: Meta) -> None:  # stage 4: γ < 2^-16, always drop
        md.admit_margin = 0

    def apply(self, md: Meta) -> None:
        self.draw(md)
        action, params = self.gamma.lookup(md.congested, md.c_cong)
        if action == "gamma_one":
            self.gamma_one(md)
        elif action == "gamma_frac":
            self.gamma_frac(md, params["thr"])
        else:
            self.gamma_zero(md)
