"""Forwarding: LPM to an egress port, and the configurable miss action."""

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ffs import constants as C
from ffs import p4names as N
from ffs.driver.base import TableEntry, Update
from base import IN, OTHER, OUT, FfsTest


class RouteAndMiss(FfsTest):
    def runTest(self):
        hit = Ether() / IP(src="10.0.1.1", dst="10.0.2.9") / UDP(chksum=0) / bytes(64)
        miss = Ether() / IP(src="10.0.1.1", dst="192.0.2.1") / UDP(chksum=0) / bytes(64)
        tu.send_packet(self, IN, hit)
        tu.verify_packet(self, hit, OUT)
        tu.send_packet(self, IN, miss)
        tu.verify_no_other_packets(self, timeout=1)
        assert self.counter(N.EVENTS.name, C.EVENT_ROUTE_MISS).packets == 1
        self.driver.write([Update("set_default", TableEntry(N.IPV4_ROUTES.name, {}, "route", {"port": OTHER}))])
        tu.send_packet(self, IN, miss)
        tu.verify_packet(self, miss, OTHER)
        tu.verify_no_other_packets(self)
