"""Port modes (spec §6): trust, reset, insert, strip — with lengths and IPv4 checksums."""

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ffs import constants as C
from ffs import p4names as N
from ffs.driver.base import Exact, TableEntry, Update
from ffs.labels import encode
from ffs.scapy_ffs import FFS
from base import DST, IN, OUT, FfsTest


class ResetPortDefaultsTheLabel(FfsTest):
    def runTest(self):
        self.driver.write([self.port(IN, trust=0, kind="modify")])
        self.set_lm(self.lm_for(C.CODE_ONE, encode(0.5), 500))  # the label entering is 1.0, whatever arrives
        self.set_tau(encode(4.0))
        pkt = self.ffs_pkt(encode(64.0), rri=encode(0.5))
        exp = pkt.copy()
        exp[FFS].rf = encode(0.5)
        exp[FFS].flags = "R+D"
        tu.send_packet(self, IN, pkt)
        tu.verify_packet(self, exp, OUT)  # rri unchanged: no RI for a defaulted label


class InsertThenStrip(FfsTest):
    def runTest(self):
        self.driver.write([self.port(IN, trust=1, insert=1, kind="modify")])
        self.set_lm(self.lm_for(C.CODE_ONE, encode(0.5), 500))
        plain = Ether() / IP(src="10.0.1.1", dst=DST, id=7) / UDP(sport=1, dport=2, chksum=0) / bytes(472)
        exp = Ether(bytes(plain))
        exp[IP].remove_payload()
        exp = exp / FFS(flags="D", nh=17, rf=encode(0.5), rri=C.CODE_MAX, rri_echo=0) / plain[UDP]
        exp[IP].proto, exp[IP].len, exp[IP].chksum = 253, 508, None
        exp = Ether(bytes(exp))  # scapy recomputes the IPv4 checksum: the switch must match it
        tu.send_packet(self, IN, plain)
        tu.verify_packet(self, exp, OUT)
        self.driver.write([Update("insert", TableEntry(N.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])
        tu.send_packet(self, IN, plain)
        tu.verify_packet(self, plain, OUT)  # stripped at egress: the original bytes, checksum included
        tu.verify_no_other_packets(self)
