# SPDX-License-Identifier: Apache-2.0
"""The twin of a host program that changes a frame's L2 length: p4src/examples/l2l3_acl.p4's
access ports (a frame that arrives tagged on one leaves untagged: its tag popped) and its
`egress_vlan` (a port that pushes a tag onto the frames that arrived untagged), both declared in
md.l2_change, which FfsCore bridges to the egress (docs/pipeline.md, "FFS as a P4 library").

ffs.p4 changes no L2 header: with no access port and no push, nothing here runs. The software
switch applies the change where the ingress deparser emits the frame, after FfsIngress (the
estimator, A_j and R*_j weigh the frame as it arrived, spec §4); its C twin in `_fastpath.c`:
host_vlan_apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from ffs.core import constants

TAG_AT = 2 * 6  # the 802.1Q tag follows the two MAC addresses


@dataclass
class HostVlan:
    """Replaced whole, never edited in place: the compiled fast path takes it on assignment
    (`Pipeline.host_vlan = HostVlan(...)`), as it takes the port metadata."""

    access: set[int] = field(default_factory=set)  # ingress ports whose tagged arrivals are popped
    push: dict[int, int] = field(default_factory=dict)  # egress port -> the VID pushed onto untagged frames

    def change(self, ingress_port: int, egress_port: int, tagged: bool) -> int:
        """The host's declaration (md.l2_change): a tag popped only where the frame arrived with
        one, pushed only where it arrived with none."""
        if tagged and ingress_port in self.access:
            return constants.L2_TAG_POPPED
        if not tagged and egress_port in self.push:
            return constants.L2_TAG_PUSHED
        return constants.L2_SAME

    def apply(self, buf: bytearray, change: int, egress_port: int) -> None:
        """The frame as the deparser emits it (`buf`, with its FCS), the declared change made."""
        if change == constants.L2_TAG_POPPED:
            del buf[TAG_AT : TAG_AT + constants.VLAN_TAG_LEN]
        elif change == constants.L2_TAG_PUSHED:
            tag = constants.ETHERTYPE_VLAN.to_bytes(2, "big") + (self.push[egress_port] & 0xFFF).to_bytes(2, "big")
            buf[TAG_AT:TAG_AT] = tag
