"""Counters exact (R, drops, A, events) and RI per Algorithm 4 with the pre-gamma label."""

import ptf.testutils as tu

from ffs import constants as C
from ffs import p4names as N
from ffs.labels import encode
from ffs.scapy_ffs import FFS
from base import IN, OUT, FfsTest, packets


class CountersExact(FfsTest):
    def runTest(self):
        n = packets(100, 600)
        self.set_lm(self.lm_for(encode(2.0), encode(2.0), 500))
        self.set_tau(encode(1.0))  # gamma = 1/2
        pkt = self.ffs_pkt(encode(2.0), flags=0)
        for _ in range(n):
            tu.send_packet(self, IN, pkt)
        got = self.count_received(OUT, n)
        size = len(pkt)
        r = self.counter(N.PAIR_BYTES.name, 5)
        d = self.counter(N.PAIR_DROPS.name, 5)
        a = self.counter(N.ACCEPTED.name, OUT)
        assert (r.packets, r.bytes) == (n, n * size)
        assert (d.packets, d.bytes) == (n - got, (n - got) * size)
        assert (a.packets, a.bytes) == (got, got * size)
        assert self.counter(N.EVENTS.name, C.EVENT_FFS_DROP).packets == n - got


def first_survivor(test, pkt, tries=50):
    for _ in range(tries):
        tu.send_packet(test, IN, pkt)
        r = tu.dp_poll(test, port_number=OUT, timeout=0.5)
        if isinstance(r, test.dataplane.PollSuccess):
            return FFS(bytes(r.packet)[34:42])
    raise AssertionError("no packet survived")


class RriCongestedTableII(FfsTest):
    """tau = 4/3; rf' = 0.5, 4, 2 -> RRI = tau/rf' = 8/3, 1/3, 2/3 (digest §1.14 vector 1)."""

    def runTest(self):
        self.set_tau(encode(4 / 3))
        for rf_norm in (0.5, 4.0, 2.0):
            self.set_lm(self.lm_for(encode(2.0), encode(rf_norm), 500))
            got = first_survivor(self, self.ffs_pkt(encode(2.0)))
            assert got.rri == encode(4 / 3) - encode(rf_norm) + C.CODE_BIAS, (rf_norm, got.rri)


class RriUncongested(FfsTest):
    def runTest(self):
        self.set_tau(C.CODE_MAX, congested=0, lcr=encode(2.0))  # C/R* = 2
        for rf_norm, expect in ((0.25, 4.0), (1.0, 2.0)):
            self.set_lm(self.lm_for(encode(2.0), encode(rf_norm), 500))
            got = first_survivor(self, self.ffs_pkt(encode(2.0)))
            assert got.rri == encode(expect)


class RriChainOfTwoUpdates(FfsTest):
    def runTest(self):
        self.set_lm(self.lm_for(encode(2.0), encode(2.0), 500))
        self.set_tau(encode(1.0))  # gamma = 1/2 at this node
        rri = encode(0.5)  # upstream congestion already signalled
        for _ in range(2):
            rri = first_survivor(self, self.ffs_pkt(encode(2.0), rri=rri)).rri
        assert rri == encode(0.125)
