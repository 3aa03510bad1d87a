# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/ffs_core.p4`: FfsCore's own tables: port_label and fate (with its
counters), and the shim counters; its C twin in `_fastpath.c`: port_label_apply, fate and the shim
counters in engine_process_mac."""

from __future__ import annotations

from ffs.core import constants, p4names
from ffs.switch.header import Meta
from ffs.switch.packet import (
    RF_OFF,
    RRI_OFF,
    Parsed,
    insert_shim,
    shim_get16,
    shim_set16,
)
from ffs.switch.tna import (
    U16,
    Counter,
    MatchTable,
    const_table,
    sat_sub,
)


class PortLabel:
    """`FfsIngress.port_label` (const entries, stage 0): the label entering normalization."""

    def __init__(self) -> None:
        from ffs.core.tables import port_label_entries  # the one generator of the const entries

        self.table = const_table(p4names.PORT_LABEL, port_label_entries())

    @staticmethod
    def use_label(md: Meta) -> None:
        md.rf = md.rf_hdr

    @staticmethod
    def use_label_ri(buf: bytearray, p: Parsed, md: Meta) -> None:
        md.rf = md.rf_hdr
        md.rri_n = (constants.CODE_ONE - shim_get16(buf, p.shim, RRI_OFF)) & U16

    @staticmethod
    def reset_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # RI still runs (spec §6)
        md.rf = constants.CODE_ONE
        md.rri_n = (constants.CODE_ONE - shim_get16(buf, p.shim, RRI_OFF)) & U16

    def apply(self, buf: bytearray, p: Parsed, md: Meta) -> None:
        action, _ = self.table.lookup(md.trust, md.ffs_state)
        if action == "use_label_ri":
            self.use_label_ri(buf, p, md)
        elif action == "reset_label":
            self.reset_label(buf, p, md)
        else:
            self.use_label(md)


class ClaimLimit:
    """`FfsIngress.claim_limit` (stage 0): claim_room = thr |-| l3_len, 0 where the claim exceeds what
    the ingress port's MAC admits (set_claim_limit); 1 on a port without an entry (spec §4)."""

    def __init__(self) -> None:
        self.table = MatchTable(p4names.CLAIM_LIMIT)

    @staticmethod
    def set_claim_limit(md: Meta, thr: int) -> None:
        md.claim_room = sat_sub(thr, md.l3_len)

    @staticmethod
    def claim_unlimited(md: Meta) -> None:
        md.claim_room = 1

    def apply(self, ingress_port: int, md: Meta, ipv6: int) -> None:
        action, params = self.table.lookup(ingress_port, ipv6)
        if action == "set_claim_limit":
            self.set_claim_limit(md, params["thr"])
        else:
            self.claim_unlimited(md)


class ShimCount:
    """FfsCore's shim counters (stages 2-6): a managed packet that fate's insert_shim_v4 / _v6 take
    if γ and the guard admit it sets `grows`, counted in `offered_shims` (egress port); Fate counts
    `admitted_shims` beside admitted. The port sends each such frame SHIM_LEN bytes longer than
    the byte counters say."""

    def __init__(self) -> None:
        self.offered_shims = Counter(p4names.OFFERED_SHIMS)
        self.admitted_shims = Counter(p4names.ADMITTED_SHIMS)

    @staticmethod
    def grows(buf: bytearray, p: Parsed, md: Meta) -> bool:
        """fate's insert predicate less γ and the guard (§7.6): no shim yet, an insert port, not a
        fragment, not a runt, room for it, not in front of an IPv6 Hop-by-Hop header."""
        if md.ffs_state != constants.FFS_STATE_NONE or not md.insert or md.frag or md.runt or md.room == 0:
            return False
        return p.ip_version == 4 or (p.ip_version == 6 and buf[p.l3 + 6] != constants.IP_PROTO_HOPOPT)

    def apply(self, buf: bytearray, p: Parsed, md: Meta, pipe: int) -> None:
        if self.grows(buf, p, md):  # count_offered_shim
            md.grows = 1
            self.offered_shims.count(md.egress_port, 0, pipe)


class Fate:
    """`FfsIngress.fate` (const entries, stage 5): one decision and at most one event per packet;
    `pair_drops` and `admitted` (A_j) beside it."""

    def __init__(self, events: Counter, shims: ShimCount) -> None:
        from ffs.core.tables import fate_entries  # the one generator of the const entries

        self.fate = const_table(p4names.FATE, fate_entries())
        self.events = events
        self.shims = shims
        self.pair_drops = Counter(p4names.PAIR_DROPS)
        self.admitted = Counter(p4names.ADMITTED)

    @staticmethod
    def rewrite_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # Algorithms 3 line 3 and 4
        shim_set16(buf, p.shim, RF_OFF, min(md.rf_norm, md.ltau))
        shim_set16(buf, p.shim, RRI_OFF, min(shim_get16(buf, p.shim, RRI_OFF), md.c_ri))

    @staticmethod
    def rewrite_reset_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # Algorithm 4 with the label set
        shim_set16(buf, p.shim, RF_OFF, min(md.rf_norm, md.ltau))
        shim_set16(buf, p.shim, RRI_OFF, min(shim_get16(buf, p.shim, RRI_OFF), md.c_ri))
        buf[p.shim] |= constants.FLAG_DEFAULTED

    def apply(self, buf: bytearray, p: Parsed, md: Meta, frame_len: int, pipe: int) -> str:
        """The fate's action name; the frame is edited in place. `pipe`: the ingress port's."""
        action, _ = self.fate.lookup(
            0,
            0,
            md.routed,
            md.managed,
            md.admit_margin,
            md.guard,
            md.ffs_state,
            md.trust,
            md.insert,
            int(p.ip_version == 4),
            int(p.ip_version == 6),
            buf[p.l3 + 6] if p.ip_version == 6 else 0,
            md.runt,
            md.frag,
            md.room,
            md.claim_room,
        )
        if md.managed:
            if md.admit_margin == 0 or md.guard:  # count_pair_drop: γ or the queue guard dropped it
                self.pair_drops.count(md.pid, frame_len, pipe)
            else:  # count_admitted: what γ let through toward the egress, before the TM (spec §9)
                self.admitted.count(md.egress_port, frame_len, pipe)
                if md.grows:  # count_admitted_shim: fate inserts its shim below
                    self.shims.admitted_shims.count(md.egress_port, 0, pipe)
        ev = _EVENT_OF.get(action)
        if ev is not None:
            self.events.count(ev, frame_len, pipe)
        if action == "rewrite_label":
            self.rewrite_label(buf, p, md)
        elif action == "rewrite_reset_label":
            self.rewrite_reset_label(buf, p, md)
        elif action in ("insert_shim_v4", "insert_shim_v6"):
            insert_shim(buf, p, min(md.rf_norm, md.ltau))
        return action


_EVENT_OF = {
    "parse_drop": constants.EVENT_PARSE_ERROR,
    "miss_drop": constants.EVENT_ROUTE_MISS,
    "note_no_pair": constants.EVENT_NO_PAIR,
    "ffs_drop": constants.EVENT_FFS_DROP,
    "guard_drop": constants.EVENT_GUARD_DROP,
    "note_opaque": constants.EVENT_OPAQUE_SHIM,
    "note_not_inserted": constants.EVENT_NOT_INSERTED,
    "claim_drop": constants.EVENT_CLAIM_OVERSIZE,
}
