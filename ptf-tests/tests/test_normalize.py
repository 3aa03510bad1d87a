# SPDX-License-Identifier: Apache-2.0
"""Algorithm 3 of the FFS paper on the target: the F estimate, rf' = rf · F / M, rf out =
min(rf', tau), gamma = 1 never drops, and drop frequencies within a binomial ±4σ bound around the
paper's gamma = min(1, tau / rf'). Every expectation is the paper's real-valued formula, with the
tolerance spec §10 allows the log code."""

from ptf.testutils import group
from scapy.layers.l2 import Ether

import expect
from base import (
    OUT,
    PID,
    SCALE,
    FfsTest,
    byte_adjust,
    claimed_len,
    ffs_v4,
    ffs_v6,
    packets,
    plain_v4,
)
from ffs.core import constants, p4names, tables
from ffs.core.entries import LpfSpec
from ffs.core.labels import decode, encode
from ffs.lab.scapy_ffs import FFS

WEIGHT_BUDGET = 0.0066  # spec §10: len_log's error carried into w, where w >= 128


class EstimatorReadsTheWeight(FfsTest):
    """F in LPF units (spec §4, §8). The estimator here forgets between packets, so its output is
    the packet's own weight w = wire_len · 2^8 / rf (the claimed frame padded to 64 bytes, plus
    preamble and gap) shifted by s, within the weight's precision budget on every target."""

    def runTest(self):
        for ip_len in (100, 500, 1500):
            for rf in (1 / 16, 0.5, 1.0, 2.0, 16.0):
                pkt = ffs_v4(encode(rf), flags=0, ip_len=ip_len)
                f = self.f_of(pkt)
                ideal = tables.wire_len(claimed_len(pkt)) * 2**constants.WEIGHT_SHIFT / rf / 2**SCALE
                self.assertLessEqual(abs(f / ideal - 1), WEIGHT_BUDGET + 1 / f, (ip_len, rf, f, ideal))


class LabelIsMinOfNormalizedAndTau(FfsTest):
    """For shares chosen so that rf' = rf · F / M lies below, near and above tau (two taus), the
    label leaves as min(rf', tau) within spec §10's budget (0.93 % while uncongested, 1.21 % where
    tau enters), and the survivors above tau carry tau (Algorithm 3 line 3)."""

    def runTest(self):
        rf = 2.0
        pkt = ffs_v4(encode(rf), flags=0, echo=0x4242)
        f = self.f_of(pkt)
        for norm in (0.25, 0.5, 3.0):  # uncongested: rf out = rf' itself
            self.set_m(expect.m_for(rf, f, norm))
            self.set_egress(expect.Egress())
            got, p, _ = self.one(pkt)
            self.assertEqual(p.rf_out, p.rf_norm)
            self.expect_emitted(got, pkt, p, what=f"uncongested, rf' {norm:g}")
        for tau in (4 / 3, 8.0):
            egress = expect.Egress(tau=tau, congested=True)
            for norm in (0.25, 0.5, 1.0, tau / 1.03, 2 * tau, 3 * tau):
                self.set_m(expect.m_for(rf, f, norm))
                self.set_egress(egress)
                got, p = self.first_survivor(pkt) if norm > tau else self.one(pkt)[:2]
                out = self.expect_emitted(got, pkt, p, what=f"tau {tau:g}, rf' {norm:g}")
                if norm > tau:  # every survivor carries tau
                    self.assertTrue(expect.close(Ether(out)[FFS].rf, tau, expect.GAMMA_BUDGET))


@group("many-packets")
class GammaOneNeverDrops(FfsTest):
    """rf' <= tau takes the gamma = 1 bypass (no random compare): every packet is forwarded with
    rf' 3 % below tau (more than the budget of spec §10), far below tau, and with tau = infinity
    (uncongested)."""

    def runTest(self):
        n = packets(1000, 150)
        rf = 2.0
        pkt = ffs_v4(encode(rf), flags=0)
        f = self.f_of(pkt)
        for what, norm, egress in (
            ("rf' = tau / 1.03", 2.0 / 1.03, expect.Egress(tau=2.0, congested=True)),
            ("rf' = tau / 4", 0.5, expect.Egress(tau=2.0, congested=True)),
            ("tau = infinity", 64.0, expect.Egress()),
        ):
            self.set_m(expect.m_for(rf, f, norm))
            self.set_egress(egress)
            self.assertEqual(expect.paper(rf, f, self.m, egress).gamma, 1.0)
            before = self.counts()
            self.send(pkt, count=n)
            # every frame must come: wait out a stall of the model (a second at times) before counting
            got = self.count_received(OUT, n, timeout=5.0)
            delta = self.since(before)
            self.assertEqual(
                (delta.r.packets, delta.drops.packets, delta.accepted[OUT].packets, got), (n, 0, n, n), what
            )
            self.assert_events(delta)


@group("many-packets")
class DropFrequencyIsGamma(FfsTest):
    """gamma = min(1, tau / rf') with rf' = 8 and tau = 4, 5.6, 8/3: gamma = 1/2 (threshold
    about 0x8000, where bit 15 of the random number decides), 0.7 (about 0xB312) and 1/3 (about
    0x5547): thresholds with low bits set, so that every bit of the draw decides. Each with n large enough that a
    forwarding rate 20 % off gamma leaves the ±4σ band (widened by spec §10's 1.4 %) in 99.9 % of
    runs (expect.packets_to_tell, the same n on every target); R, drops, A and the drop event agree
    exactly."""

    def runTest(self):
        rf = 2.0
        pkt = ffs_v4(encode(rf), flags=0, ip_len=100)
        f = self.f_of(pkt)
        self.set_m(expect.m_for(rf, f, 8.0))  # rf' = 8, so tau = 8 · gamma stays >= 1 (Lemma 1)
        for gamma in (1 / 2, 0.7, 1 / 3):
            egress = expect.Egress(tau=8.0 * gamma, congested=True)
            p = expect.paper(rf, f, self.m, egress)
            n = expect.packets_to_tell(p.gamma)
            self.set_egress(egress)
            before = self.counts()
            got = self.send_counted(pkt, n)
            delta = self.since(before)
            lo, hi = expect.forwarding_bounds(n, p.gamma)
            self.assertTrue(lo <= got <= hi, f"gamma {p.gamma:.4f}: {got} of {n} forwarded, want {lo:.0f}..{hi:.0f}")
            self.assertEqual((delta.r.packets, delta.drops.packets, delta.accepted[OUT].packets), (n, n - got, got))
            self.assertEqual(delta.admitted[OUT].packets, got)
            self.assert_events(delta, ffs_drop=n - got)


@group("many-packets")
class DefaultLabelIsNormalizedToo(FfsTest):
    """Packets without a shim carry the implicit label 1.0 (spec §11.2.4: an unlabelled
    aggregate with rf' = 2 under tau = 1 is forwarded with gamma = 1/2): the forwarded count is
    binomial around n/2, and every survivor leaves byte for byte (nothing inserted)."""

    def runTest(self):
        n = packets(1000, 200)
        pkt = plain_v4(500)
        self.set_m(expect.m_for(1.0, self.f_of(pkt), 2.0))
        self.set_egress(expect.Egress(tau=1.0, congested=True))
        before = self.counts()
        self.send(pkt, count=n)
        got = 0
        while (frame := self.recv(OUT, timeout=1.0)) is not None:
            self.assertEqual(frame, bytes(pkt))
            got += 1
        lo, hi = expect.forwarding_bounds(n, 0.5)
        self.assertTrue(lo <= got <= hi, f"{got} of {n} forwarded, want {lo:.0f}..{hi:.0f}")
        delta = self.since(before)
        self.assertEqual((delta.r.packets, delta.r.bytes), (n, n * (len(pkt) + byte_adjust())))
        self.assert_events(delta, ffs_drop=n - got)


class GammaZeroAlwaysDrops(FfsTest):
    """gamma below 2^-16 (spec §5.4) drops every packet, IPv4 and IPv6 alike, and counts each in
    pair_drops and the drop event. With labels admitted only in [2^-8, 2^8] (spec §3.1) and tau >=
    1, such a gamma takes a large F against the smallest share: the smallest label (each byte
    weighs 2^16), the estimator at scale-down 0 (F is the packet's whole weight) and M_F = 1, so
    that rf' = rf · F / M exceeds tau = 1 by more than 2^16."""

    def runTest(self):
        rf = constants.RF_CODE_MIN
        self.driver.set_lpf_spec(p4names.F_LPF.name, [PID], LpfSpec("RATE", 1.0, 1.0, 0))
        for pkt in (ffs_v4(rf, flags=0), ffs_v6(rf, flags=0)):
            self.set_lm(0)
            self.set_egress(expect.Egress(tau=1.0, congested=True))
            before = self.counts()
            self.send(pkt, count=20)
            self.expect_nothing(timeout=0.3)
            delta = self.since(before)
            p = expect.paper(decode(rf), self.f_est(), self.m, self.egress)
            self.assertLess(p.gamma, 2.0**-16 / (1 + expect.DROP_BUDGET))
            self.assertEqual((delta.r.packets, delta.drops.packets, delta.accepted[OUT].packets), (20, 20, 0))
            self.assert_events(delta, ffs_drop=20)


class LabelsLeaveAtMostWhatTheNextHopAdmits(FfsTest):
    """spec §3.1, across two hops through the target (each hop re-sends the frame the last one
    emitted): a stream 2^18.6 times over its share at an uncongested hop (rf = 1, F the whole
    1500-byte line-rate weight at scale-down 0, M_F = 1) leaves labelled 2^16, the largest label a
    node admits; a stream 2^10 over its share leaves labelled 2^10, and the next hop weighs it as
    2^10 (w = wire_len · 2^8 / 2^10), not as a label clamped lower."""

    def runTest(self):
        pkt = ffs_v4(encode(1.0), flags=0, ip_len=1500)
        self.driver.set_lpf_spec(p4names.F_LPF.name, [PID], LpfSpec("RATE", 1.0, 1.0, 0))
        self.set_lm(0)
        got, p, _ = self.one(pkt)
        self.assertGreater(p.rf_norm, 4 * expect.LABEL_MAX, "the paper's rf' = rf · F / M")
        out = Ether(self.expect_emitted(got, pkt, p, what="rf' above 2^16"))
        self.assertTrue(expect.close(out[FFS].rf, expect.LABEL_MAX, expect.LABEL_BUDGET), decode(out[FFS].rf))
        self.driver.set_lpf_spec(p4names.F_LPF.name, [PID], LpfSpec("RATE", 1.0, 1.0, SCALE))
        self._f_cache.clear()
        self.set_m(expect.m_for(1.0, self.f_of(pkt), 2.0**10))
        got, p, _ = self.one(pkt)
        hop2 = Ether(self.expect_emitted(got, pkt, p, what="rf' = 2^10"))
        label = decode(hop2[FFS].rf)
        self.assertLessEqual(abs(label / 2**10 - 1), expect.LABEL_BUDGET)
        f = self.f_of(hop2)  # the next hop: this frame, as it arrives
        ideal = tables.wire_len(claimed_len(hop2)) * 2**constants.WEIGHT_SHIFT / label / 2**SCALE
        self.assertLessEqual(
            abs(f / ideal - 1), WEIGHT_BUDGET + 1 / f, f"weighed as {label:g}: F {f}, want {ideal:.1f}"
        )
