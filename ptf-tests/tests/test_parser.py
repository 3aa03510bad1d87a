"""Parser and deparser fates (spec §2, §7.1) on the target."""

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from ffs import constants as C
from ffs import p4names as N
from ffs.labels import encode
from ffs.frames import ipv4_frame, shim
from ffs.scapy_ffs import FFS
from base import DST, IN, OUT, FfsTest


class FfsOverIpv4(FfsTest):
    """With and without IPv4 options: the label is rewritten to min(rf', tau), nothing else changes."""

    def runTest(self):
        self.set_lm(self.lm_for(encode(2.0), encode(0.5), 500))
        self.set_tau(encode(4 / 3))
        for options in (b"", b"\x01\x01\x01\x00" * 2):
            pkt = Ether(ipv4_frame("10.0.1.1", DST, 500, shim(encode(2.0), C.FLAG_RI, 17, C.CODE_MAX, 0x1234), options=options))
            exp = pkt.copy()
            exp[FFS].rf = encode(0.5)
            exp[FFS].rri = encode(4 / 3) - encode(0.5) + C.CODE_BIAS  # tau / rf' (Algorithm 4, pre-gamma)
            tu.send_packet(self, IN, pkt)
            tu.verify_packet(self, exp, OUT)
        tu.verify_no_other_packets(self)


class FfsOverIpv6AndVlan(FfsTest):
    def runTest(self):
        self.set_lm(0xFFFF)  # a huge share: everything normalizes far below tau, nothing drops
        self.set_tau(encode(1.0))
        v6 = Ether() / IPv6(src="fc00::1", dst="fd00::9") / FFS(rf=encode(4.0), flags=0) / UDP(chksum=0) / bytes(100)
        tu.send_packet(self, IN, v6)
        r = tu.dp_poll(self, port_number=OUT, timeout=2)
        assert isinstance(r, self.dataplane.PollSuccess), "IPv6 shim packet not forwarded"
        got = Ether(r.packet)
        assert got[FFS].version == 1 and got[FFS].rf != encode(4.0) and got[IPv6].plen == Ether(bytes(v6))[IPv6].plen
        vlan = Ether() / Dot1Q(vlan=12) / IP(src="10.0.1.1", dst=DST) / FFS(rf=encode(4.0), flags=0) / UDP(chksum=0) / bytes(100)
        tu.send_packet(self, IN, vlan)
        r = tu.dp_poll(self, port_number=OUT, timeout=2)
        assert isinstance(r, self.dataplane.PollSuccess), "VLAN shim packet not forwarded"
        assert Ether(r.packet)[Dot1Q].vlan == 12


class NonFfsTraffic(FfsTest):
    def runTest(self):
        pkt = Ether() / IP(src="10.0.1.1", dst=DST) / UDP(chksum=0) / bytes(200)
        tu.send_packet(self, IN, pkt)
        tu.verify_packet(self, pkt, OUT)  # default label 1.0, no shim inserted without `insert`
        tu.verify_no_other_packets(self)


class TruncatedShimDropped(FfsTest):
    def runTest(self):
        pkt = Ether() / IP(src="10.0.1.1", dst=DST, proto=253, len=24) / b"\x10\x11\x80\x00"
        tu.send_packet(self, IN, pkt)
        tu.verify_no_other_packets(self, timeout=1)
        assert self.counter(N.EVENTS.name, C.EVENT_PARSE_ERROR).packets == 1


class UnknownVersionAndReservedBitsPassUntouched(FfsTest):
    def runTest(self):
        self.set_lm(self.lm_for(encode(1.0), encode(0.5), 500))
        for version, flags in ((2, 0), (1, 1)):
            pkt = self.ffs_pkt(encode(8.0))
            pkt[FFS].version, pkt[FFS].flags = version, flags
            tu.send_packet(self, IN, pkt)
            tu.verify_packet(self, pkt, OUT)
        assert self.counter(N.EVENTS.name, C.EVENT_OPAQUE_SHIM).packets == 2
