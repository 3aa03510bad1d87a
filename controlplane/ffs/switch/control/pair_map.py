# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/pair_map.p4`: the pair and its egress: pid, k, τ and the shim's
room; its C twin in `_fastpath.c`: pair_map_apply."""

from __future__ import annotations

from ffs.core import constants, p4names
from ffs.switch.header import Meta
from ffs.switch.tna import (
    U16,
    MatchTable,
    sat_sub,
)


class PairMap:
    """`FfsIngress.pair_map`: (ingress, egress) -> pair index and k = rf - lm; egress -> τ and
    friends, and the room an inserted shim has under the egress's MTU; cc = code(τ/k)."""

    def __init__(self) -> None:
        self.pairs = MatchTable(p4names.PAIRS)
        self.egress_params = MatchTable(p4names.EGRESS_PARAMS)
        self.shim_room = MatchTable(p4names.SHIM_ROOM)

    @staticmethod
    def set_pair(md: Meta, pid: int, nlm: int) -> None:  # stage 1: k = nlm + rf never wraps (§7.2)
        md.pid, md.rf_over_m, md.managed = pid, (nlm + md.rf) & U16, 1

    @staticmethod
    def set_held_pair(md: Meta, pid: int, nlm: int) -> None:  # stage 1: a pair held in quarantine (§9)
        md.pid, md.rf_over_m, md.managed, md.held = pid, (nlm + md.rf) & U16, 1, 1

    @staticmethod
    def no_pair(md: Meta) -> None:
        md.managed = 0

    @staticmethod
    def set_egress(md: Meta, ltau: int, ltau_p: int, congested: int, lcr: int) -> None:  # stage 1
        md.ltau, md.ltau_p, md.congested, md.lcr = ltau, ltau_p, congested, lcr

    @staticmethod
    def egress_unmanaged(md: Meta) -> None:
        md.ltau, md.ltau_p, md.congested, md.lcr = constants.LTAU_MAX, 0, 0, constants.CODE_MAX

    @staticmethod
    def set_room(md: Meta, thr: int) -> None:  # stage 1: 0 where no shim fits (spec §2)
        md.room = sat_sub(thr, md.l3_len)

    @staticmethod
    def room_max(md: Meta) -> None:
        md.room = sat_sub(constants.SHIM_ROOM_MAX, md.l3_len)

    def apply(self, ingress_port: int, md: Meta, ipv6: int = 0) -> None:
        action, params = self.pairs.lookup(ingress_port, md.egress_port)
        if action == "set_pair":
            self.set_pair(md, params["pid"], params["nlm"])
        elif action == "set_held_pair":
            self.set_held_pair(md, params["pid"], params["nlm"])
        else:
            self.no_pair(md)
        action, params = self.egress_params.lookup(md.egress_port)
        if action == "set_egress":
            self.set_egress(md, params["ltau"], params["ltau_p"], params["congested"], params["lcr"])
        else:
            self.egress_unmanaged(md)
        action, params = self.shim_room.lookup(md.egress_port, ipv6)
        if action == "set_room":
            self.set_room(md, params["thr"])
        else:
            self.room_max(md)
        if md.held == 1:
            self.norm_cc_held(md)
        else:
            self.norm_cc(md)

    @staticmethod
    def norm_cc(md: Meta) -> None:  # stage 2: 16-bit wrap; never wraps below 0 (§7.2)
        md.tau_over_k = (md.ltau_p - md.rf_over_m) & U16

    @staticmethod
    def norm_cc_held(md: Meta) -> None:  # stage 2: τ = 1 for a held pair, whatever the egress's τ (§9)
        md.tau_over_k = (0 - md.rf_over_m) & U16
