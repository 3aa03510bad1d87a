# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/egress_accounting.p4`: the frame check, A_j after the TM, the
strip mode; its C twin in `_fastpath.c`: egress_accounting_apply."""

from __future__ import annotations

from ffs.core import constants, p4names
from ffs.core.tables import claimed_frame_len
from ffs.switch.packet import (
    ParseError,
    parse,
    strip_shim,
)
from ffs.switch.tna import (
    PIPE_SHIFT,
    Counter,
    MatchTable,
    arrival_change,
    const_table,
)


class EgressAccounting:
    """`FfsEgress.egress_acct`: A_j (every packet reaching egress) and the strip port mode."""

    def __init__(self) -> None:
        from ffs.core.tables import frame_check_entries  # the one generator of the const entries

        self.accepted = Counter(p4names.ACCEPTED)
        self.malformed = Counter(p4names.MALFORMED)
        self.pair_malformed = Counter(p4names.PAIR_MALFORMED)
        # PACKETS: the frames that leave without their shim, SHIM_LEN bytes fewer than A_j counted
        self.stripped = Counter(p4names.STRIPPED)
        # PACKETS: the frames whose tag the host pushed (at the port) or popped (at half the size + it)
        self.tag_changed = Counter(p4names.TAG_CHANGED)
        self.egress_ports = MatchTable(p4names.EGRESS_PORTS)
        # keyless, its default written by the agent: what the chip's pkt_length is (spec §7.3)
        self.frame_basis = MatchTable(p4names.FRAME_BASIS, {"fcs": constants.FCS_EITHER})
        self.frame_check = const_table(p4names.FRAME_CHECK, frame_check_entries())

    def count_accepted(self, port: int, frame_len: int) -> None:
        self.accepted.count(port, frame_len, port >> PIPE_SHIFT)

    def pkt_len(self, pkt_length: int, grown: bool, l2_change: int) -> tuple[int, int]:
        """frame_basis: md.pkt_len, the frame as the ingress emitted it (`pkt_length` is
        eg_intr_md.pkt_length, `PktLength` says what the chip makes it: basis_arrival adds what
        the ingress changed since, a shim inserted (`grown`) and the host's declared L2 change,
        both bridged; basis_deparsed takes it as it is), and the basis's fcs."""
        basis, params = self.frame_basis.lookup()
        change = arrival_change(grown, l2_change) if basis == "basis_arrival" else 0
        return (pkt_length + change) & 0xFFFF, params["fcs"]

    def lies(self, buf: bytearray, pkt_length: int, pkt_len: int, fcs: int) -> bool:
        """frame_check (spec §7.3): do the frame's bytes (`pkt_len`) disagree with its IP
        length field? The basis's fcs picks frame_check's entries. FfsEgressParser extracts the
        shim whatever the IP length says, so a length that an inserted shim wrapped
        (65528..65535 + 8) is checked, not passed as unreadable."""
        try:
            p = parse(buf, ingress=False)
        except ParseError:  # the egress parser accepts what it cannot read: not checked
            return False
        if not p.ip_version:
            return False
        excess = (pkt_len - claimed_frame_len(p.l3_len, p.ip_version == 6, p.vlan, fcs=False)) & 0xFFFF
        action, _ = self.frame_check.lookup(excess, pkt_length, int(p.vlan), fcs)
        return action == "frame_lies"

    def emitted_len(self, buf: bytearray, port: int) -> int:
        """The length of the frame `apply` lets leave `port`: without the shim where the port strips
        it, what the port drains (spec §4). `apply` is the one that strips and counts."""
        if self.egress_ports.lookup(port)[0] != "strip_shim":
            return len(buf)
        try:
            p = parse(buf, ingress=False)
        except ParseError:
            return len(buf)
        return len(buf) - constants.SHIM_LEN if p.shim and p.ffs_state == constants.FFS_STATE_VALID else len(buf)

    @staticmethod
    def strip(buf: bytearray) -> bool:  # strip_v4 / strip_v6 after the egress parser; True: stripped
        try:
            p = parse(buf, ingress=False)
        except ParseError:  # the egress parser accepts what it cannot read: nothing to strip
            return False
        if p.shim and p.ffs_state == constants.FFS_STATE_VALID:  # a shim it does not understand stays (spec §6)
            strip_shim(buf, p)
            return True
        return False

    def apply(
        self,
        buf: bytearray,
        port: int,
        pkt_length: int,
        pid: int | None = None,
        grown: bool = False,
        l2_change: int = constants.L2_SAME,
    ) -> bool:
        """False: the frame was dropped (drop_malformed), counted in `malformed` and, for a managed
        pair (`pid`, bridged from the ingress), in `pair_malformed`. The counters count the frame
        as the TM holds it (`buf`, FCS included), in the egress port's pipe; `stripped` the frames
        the strip mode took a shim off, `tag_changed` those whose tag the host pushed or popped."""
        pipe = port >> PIPE_SHIFT
        pkt_len, fcs = self.pkt_len(pkt_length, grown, l2_change)
        lies = self.lies(buf, pkt_length, pkt_len, fcs)
        if lies:
            self.malformed.count(port, len(buf), pipe)
            if pid is not None:
                self.pair_malformed.count(pid, len(buf), pipe)
        else:
            self.count_accepted(port, len(buf))
        action, _ = self.egress_ports.lookup(port)
        # count_stripped does not wait for frame_check: a lying frame is counted too, as the P4
        # program does; a frame that leaves below the Ethernet minimum (padded back) is not
        sent_min = len(buf) >= constants.MIN_FRAME + constants.FCS_LEN + constants.SHIM_LEN
        if action == "strip_shim" and self.strip(buf) and sent_min:
            self.stripped.count(port, 0, pipe)
        # count_tag_changed: every pushed tag; a popped one where the frame leaves at the Ethernet
        # minimum or above (a shorter one is padded back)
        popped_at = self.tag_changed.spec.size // 2
        if l2_change == constants.L2_TAG_PUSHED:
            self.tag_changed.count(port, 0, pipe)
        elif l2_change == constants.L2_TAG_POPPED and pkt_len >= constants.MIN_FRAME + constants.FCS_LEN:
            self.tag_changed.count(popped_at + port, 0, pipe)
        return not lies
