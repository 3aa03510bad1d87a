"""The FFS/RI shim as a scapy layer (spec §2), bound to IPv4 protocol and IPv6 next header 253.

    from ffs.scapy_ffs import FFS
    Ether() / IP(dst="10.0.3.1") / FFS(rf=0x8000, flags="R") / UDP() / payload
"""

from __future__ import annotations

from scapy.fields import BitField, FlagsField, ShortField, ByteEnumField
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Packet, bind_layers

from ffs import constants as C


class FFS(Packet):
    name = "FFS/RI"
    fields_desc = [
        BitField("version", C.SHIM_VERSION, 4),
        FlagsField("flags", 0, 4, ["reserved", "D", "E", "R"]),  # bit 0 .. bit 3
        ByteEnumField("nh", 17, {6: "TCP", 17: "UDP"}),
        ShortField("rf", C.CODE_ONE),
        ShortField("rri", C.CODE_MAX),
        ShortField("rri_echo", 0),
    ]

    def guess_payload_class(self, payload: bytes):
        return {6: TCP, 17: UDP}.get(self.nh, Packet.guess_payload_class(self, payload))


bind_layers(IP, FFS, proto=C.IP_PROTO_FFS)
bind_layers(IPv6, FFS, nh=C.IP_PROTO_FFS)
