"""Algorithm 3 in codes: rf out = min(rf', tau) exactly, gamma = 1 never drops, and the drop
frequency of gamma < 1 within a binomial 4-sigma bound."""

import ptf.testutils as tu

from ffs import tables as T
from ffs.labels import encode
from ffs.scapy_ffs import FFS
from base import IN, OUT, FfsTest, binomial_bounds, packets


class LabelIsMinOfNormalizedAndTau(FfsTest):
    def runTest(self):
        self.set_tau(encode(4 / 3))
        for rf_norm in (0.25, 0.5, 1.0):  # all below tau: gamma = 1, the label is rf'
            self.set_lm(self.lm_for(encode(2.0), encode(rf_norm), 500))
            pkt = self.ffs_pkt(encode(2.0), flags=0)
            exp = pkt.copy()
            exp[FFS].rf = encode(rf_norm)
            tu.send_packet(self, IN, pkt)
            tu.verify_packet(self, exp, OUT)
        self.set_lm(self.lm_for(encode(2.0), encode(8.0), 500))  # above tau: rewritten to tau if it survives
        kept = 0
        for _ in range(40):
            tu.send_packet(self, IN, self.ffs_pkt(encode(2.0), flags=0, echo=0x4242))
            r = tu.dp_poll(self, port_number=OUT, timeout=0.5)
            if isinstance(r, self.dataplane.PollSuccess):
                got = FFS(bytes(r.packet)[34:42])
                assert got.rf == encode(4 / 3) and got.rri_echo == 0x4242
                kept += 1
        assert 0 < kept < 40


class GammaOneNeverDrops(FfsTest):
    def runTest(self):
        n = packets(100, 1000)
        self.set_lm(self.lm_for(encode(2.0), encode(2.0), 500))
        self.set_tau(encode(2.0))  # rf' == tau: d = 0, the bypass
        pkt = self.ffs_pkt(encode(2.0), flags=0)
        for _ in range(n):
            tu.send_packet(self, IN, pkt)
        assert self.count_received(OUT, n) == n


class DropFrequencyIsGamma(FfsTest):
    def runTest(self):
        n = packets(400, 3000)
        self.set_lm(self.lm_for(encode(2.0), encode(2.0), 500))
        d = 128  # one octave: gamma = 1/2
        self.set_tau(encode(2.0) - d)
        p = T.gamma_of_code_distance(d)
        pkt = self.ffs_pkt(encode(2.0), flags=0)
        for _ in range(n):
            tu.send_packet(self, IN, pkt)
        got = self.count_received(OUT, n)
        lo, hi = binomial_bounds(n, p)
        assert lo <= got <= hi, (got, lo, hi)
