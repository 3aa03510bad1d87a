# SPDX-License-Identifier: Apache-2.0
"""The FFS/RI shim as a scapy layer (spec §2), bound to IPv4 protocol and IPv6 next header 253.

    from ffs.lab.scapy_ffs import FFS
    Ether() / IP(dst="10.0.3.1") / FFS(rf=0x8000, flags="R") / UDP() / payload

`nh` (the shim's next header) is filled in from the payload when left unset, the way scapy fills
in IP's protocol, and decoding picks the payload layer from it with the IP layer's own bindings
(UDP, TCP, ICMP, ICMPv6, ...), so the shim is transparent to dissection. The PTF suite and the
tests import this one definition; `ffs.core.frames` builds the same bytes by hand.
"""

from __future__ import annotations

from scapy.fields import BitField, ByteEnumField, FlagsField, ShortField
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet, Raw, bind_layers

from ffs.core import constants

NO_NEXT_HEADER = 59  # IANA "no next header": a shim with nothing after it


class FFS(Packet):
    name = "FFS/RI"
    fields_desc = [
        BitField("version", constants.SHIM_VERSION, 4),
        # bit 0 .. bit 3 of the low nibble: reserved 0x1, D 0x2, E 0x4, R 0x8 (constants.FLAG_*)
        FlagsField("flags", 0, 4, ["reserved", "D", "E", "R"]),
        ByteEnumField("nh", None, {1: "ICMP", 6: "TCP", 17: "UDP", 58: "ICMPv6", NO_NEXT_HEADER: "none"}),
        ShortField("rf", constants.CODE_ONE),
        ShortField("rri", constants.CODE_MAX),
        ShortField("rri_echo", 0),
    ]

    def _ip_layer(self) -> type[Packet]:
        return IPv6 if isinstance(self.underlayer, IPv6) else IP

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.nh is None:  # what IP's protocol field would have said for this payload
            nh = NO_NEXT_HEADER
            if self.payload and not isinstance(self.payload, Raw):
                for layer in (self._ip_layer(), IP, IPv6):
                    over = self.payload.overload_fields.get(layer, {})
                    if "proto" in over or "nh" in over:
                        nh = int(over["proto"] if "proto" in over else over["nh"])
                        break
            pkt = pkt[:1] + bytes([nh]) + pkt[2:]
        return pkt + pay

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        # ask the IP layer under the shim what it would decode for this protocol (IPv6 has its
        # own rules, e.g. ICMPv6 by message type)
        if isinstance(self.underlayer, IPv6):
            return IPv6(nh=self.nh).guess_payload_class(payload)
        return IP(proto=self.nh).guess_payload_class(payload)

    def mysummary(self) -> str:
        return self.sprintf("FFS v%version% %flags% rf=%rf% rri=%rri%")


bind_layers(IP, FFS, frag=0, proto=constants.IP_PROTO_FFS)
bind_layers(IPv6, FFS, nh=constants.IP_PROTO_FFS)
