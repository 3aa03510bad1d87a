"""Algorithm 3 of the FFS paper on the target: the F estimate, rf' = rf · F / M, rf out =
min(rf', tau) code-exactly, gamma = 1 never drops, and drop frequencies within a binomial ±4σ
bound around the paper's gamma = min(1, tau / rf')."""

from ptf.testutils import group

import expect
from base import (
    OUT,
    PID,
    SCALE,
    FfsTest,
    byte_adjust,
    claim,
    claimed_len,
    ffs_v4,
    ffs_v6,
    packets,
    plain_v4,
    rewritten,
    target,
)
from ffs import constants
from ffs import p4names
from ffs import tables
from ffs.entries import LpfSpec
from ffs.labels import decode, encode

LABEL_BUDGET = 0.0093  # spec §10: the normalized label is within 0.93 % of rf · F / M
WEIGHT_BUDGET = 0.0066  # spec §10: len_log's error carried into w, where w >= 128


def congested_at(ltau: int) -> expect.Egress:
    """A congested egress whose tau code is exactly `ltau`."""
    e = expect.Egress(tau=decode(ltau), congested=True)
    assert e.ltau == ltau
    return e


class EstimatorReadsTheWeight(FfsTest):
    """F in LPF units (spec §4, §8). The estimator here forgets between packets, so its output is
    the packet's own weight w = wire_len · 2^8 / rf (len_log and weight tables, spec §4, §5.1-5.2:
    the claimed frame padded to 64 bytes, plus preamble and gap) shifted by s: exactly that on the
    software switch, within the weight's precision budget of wire_len / rf on every target."""

    def runTest(self):
        for ip_len in (100, 500, 1500):
            for rf in (encode(1 / 16), encode(0.5), constants.CODE_ONE, encode(2.0), encode(16.0)):
                pkt = ffs_v4(rf, flags=0, ip_len=ip_len)
                f = self.f_of(pkt)
                ideal = tables.wire_len(claimed_len(pkt)) * 2 ** constants.WEIGHT_SHIFT / decode(rf) / 2 ** SCALE
                self.assertLessEqual(abs(f / ideal - 1), WEIGHT_BUDGET + 1 / f, (ip_len, hex(rf), f, ideal))
                if target() == "model":  # spec §8's filter: the integer output exactly
                    self.assertEqual(f, expect.forgetful_f(claim(pkt), rf, SCALE), (ip_len, hex(rf)))


class LabelIsMinOfNormalizedAndTau(FfsTest):
    """For chosen states (rf' below, at and above tau, for two taus) the label leaves as
    min(rf', tau) code-exactly; rf' is rf + lf - lm, within 0.93 % of the paper's rf · F / M;
    survivors above tau carry exactly tau (Algorithm 3 line 3)."""

    def runTest(self):
        rf = encode(2.0)
        pkt = ffs_v4(rf, flags=0, echo=0x4242)
        f = self.f_of(pkt)
        for tau in (4 / 3, 8.0):
            egress = expect.Egress(tau=tau, congested=True)
            for norm in (0.25, 0.5, 1.0, decode(egress.ltau), 2 * tau, 3 * tau):
                lm = expect.lm_for(rf, f, encode(norm))
                self.set_lm(lm)
                self.set_egress(egress)
                got, o = self.first_survivor(pkt) if norm > tau else self.one(pkt)[:2]
                self.assertEqual(o.rf_norm, encode(norm), "the chosen state (F must not move between packets)")
                self.assertLessEqual(abs(decode(o.rf_norm) / expect.paper_label(rf, self.f_est(), lm) - 1), LABEL_BUDGET)
                self.assertEqual(o.rf_out, min(o.rf_norm, egress.ltau))
                self.expect_frame(rewritten(pkt, rf=o.rf_out), got=got, what=f"tau {tau:g}, rf' {norm:g}")


@group("many-packets")
class GammaOneNeverDrops(FfsTest):
    """d = rf' - tau <= 0 takes the gamma = 1 bypass (no random compare): every packet is
    forwarded, at d = 0 exactly, well below tau, and with tau = infinity (uncongested)."""

    def runTest(self):
        n = packets(1000, 150)
        rf = encode(2.0)
        pkt = ffs_v4(rf, flags=0)
        f = self.f_of(pkt)
        for what, norm, egress in (("d = 0", rf, congested_at(rf)),
                                   ("d = -256", rf, congested_at(rf + 256)),
                                   ("tau = infinity", encode(64.0), expect.Egress())):
            self.set_lm(expect.lm_for(rf, f, norm))
            self.set_egress(egress)
            self.assertLessEqual(norm - egress.ltau, 0)
            before = self.counts()
            self.send(pkt, count=n)
            got = self.count_received(OUT, n)
            delta = self.since(before)
            self.assertEqual((delta.r.packets, delta.drops.packets, delta.accepted[OUT].packets, got), (n, 0, n, n), what)
            self.assert_events(delta)


@group("many-packets")
class DropFrequencyIsGamma(FfsTest):
    """gamma = 2^(-d/128) at d = 128 (1/2: only bit 15 of the random number decides), 203 (1/3,
    spec §11.2.9; threshold 0x5547) and 297 (1/5, threshold 0x3342): thresholds with low bits set, so
    that every bit of the draw decides: each with n large enough that a forwarding rate 20 % off gamma
    leaves the ±4σ band in 99.9 % of runs (expect.packets_to_tell, the same n on every target);
    R, drops, A and the drop event agree exactly."""

    def runTest(self):
        rf = encode(2.0)
        pkt = ffs_v4(rf, flags=0, ip_len=100)
        norm = encode(8.0)  # rf' = 8, so tau = 8 · gamma stays >= 1 (Lemma 1)
        f = self.f_of(pkt)
        self.set_lm(expect.lm_for(rf, f, norm))
        for d, gamma in ((128, 1 / 2), (203, 1 / 3), (297, 1 / 5)):
            o = expect.outcome(rf, self.lm, f, congested_at(norm - d), ri=False)
            self.assertEqual(o.d, d)
            self.assertLessEqual(abs(o.gamma / gamma - 1), 0.003, "gamma = tau / rf' of the chosen codes")
            self.assertLessEqual(abs(o.accept - o.gamma), 2.0 ** -17, "gamma table threshold (spec §5.4)")
            n = expect.packets_to_tell(o.gamma)
            self.set_egress(congested_at(norm - d))
            before = self.counts()
            self.send(pkt, count=n)
            got = self.count_received(OUT, n)
            delta = self.since(before)
            lo, hi = expect.binomial_bounds(n, o.gamma)
            self.assertTrue(lo <= got <= hi, f"d = {d}: {got} of {n} forwarded, want {lo:.0f}..{hi:.0f} (gamma {o.gamma:.4f})")
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
        self.set_lm(expect.lm_for(constants.CODE_ONE, self.f_of(pkt), encode(2.0)))
        self.set_egress(expect.Egress(tau=1.0, congested=True))
        before = self.counts()
        self.send(pkt, count=n)
        got = 0
        while (frame := self.recv(OUT, timeout=1.0)) is not None:
            self.assertEqual(frame, bytes(pkt))
            got += 1
        lo, hi = expect.binomial_bounds(n, 0.5)
        self.assertTrue(lo <= got <= hi, f"{got} of {n} forwarded, want {lo:.0f}..{hi:.0f}")
        delta = self.since(before)
        self.assertEqual((delta.r.packets, delta.r.bytes), (n, n * (len(pkt) + byte_adjust())))
        self.assert_events(delta, ffs_drop=n - got)


class GammaZeroAlwaysDrops(FfsTest):
    """d beyond GAMMA_D_MAX (gamma < 2^-16) misses the gamma table: gamma_zero drops every packet,
    IPv4 and IPv6 alike, and counts each in pair_drops and the drop event. With labels admitted only
    in [2^-8, 2^8] (spec §3.1) and tau >= 1, such a d takes a large F against the smallest share: the
    smallest label (each byte weighs 2^16), the estimator at scale-down 0 (F is the packet's whole
    weight, lf ~ 3200 codes) and lm = 0, so rf' = rf + lf exceeds tau = 1 by more than 2048 codes."""

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
            o = expect.outcome(rf, self.lm, self.f_est(), self.egress, ri=False)
            self.assertGreater(o.d, constants.GAMMA_D_MAX)
            self.assertEqual((delta.r.packets, delta.drops.packets, delta.accepted[OUT].packets), (20, 20, 0))
            self.assert_events(delta, ffs_drop=20)
