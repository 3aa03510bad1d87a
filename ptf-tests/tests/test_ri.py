"""RI / RRI (Algorithm 4 of the FFS paper) with the pre-gamma normalized label (spec §11.1.1):
the congested and uncongested branches with the paper's numbers, a chain of updates across hops,
and the fields RI must leave alone."""

import expect
from base import FfsTest, emitted, ffs_v4
from ffs import constants
from ffs.labels import decode, encode
from ffs.scapy_ffs import FFS
from scapy.layers.l2 import Ether

TAU = 4 / 3  # Table II (spec §11.2.1)


def within_a_step(code: int, x: float) -> bool:
    """code is the label x up to the rounding of the two codes it was computed from (tau, rf')."""
    return abs(code - encode(x)) <= 1


class RriCongestedTableII(FfsTest):
    """Table II: tau = 4/3 and normalized labels 0.5, 4, 2 leave with rf 0.5, 4/3, 4/3 and
    RRI = tau / rf' = 8/3, 1/3, 2/3 (Algorithm 4 line 5 with the pre-gamma label; with the
    post-gamma label the last two would be 1)."""

    def runTest(self):
        rf = encode(2.0)
        pkt = ffs_v4(rf, flags="R")
        f = self.f_of(pkt)
        egress = expect.Egress(tau=TAU, congested=True)
        for norm, rf_out, rri in ((0.5, 0.5, 8 / 3), (4.0, TAU, 1 / 3), (2.0, TAU, 2 / 3)):
            self.set_lm(expect.lm_for(rf, f, encode(norm)))
            self.set_egress(egress)
            got, o = self.first_survivor(pkt)
            self.assertEqual(o.rf_norm, encode(norm))
            self.assertEqual(o.rf_out, encode(rf_out))
            self.assertEqual(o.rri_out, egress.ltau - o.rf_norm + constants.CODE_BIAS)  # code(tau / rf'), spec §7.2
            self.assertTrue(within_a_step(o.rri_out, rri), (norm, hex(o.rri_out), rri))
            self.expect_frame(emitted(pkt, o), got=got, what=f"rf' = {norm:g}")


class RriUncongested(FfsTest):
    """Spec §11.2.5 (Algorithm 4, uncongested): C / R* = 2 at an uncongested node. rf' = 2/3 -> RRI = max(2, 1.5) = 2;
    rf' = 1/3 -> RRI = max(2, 3) = 3; an arriving RRI of 1.5 is already smaller and stays."""

    def runTest(self):
        rf = encode(2.0)
        egress = expect.Egress(cr=2.0)
        for norm, rri_in, rri in ((2 / 3, constants.CODE_MAX, 2.0), (1 / 3, constants.CODE_MAX, 3.0), (2 / 3, encode(1.5), 1.5)):
            pkt = ffs_v4(rf, flags="R", rri=rri_in)
            self.set_lm(expect.lm_for(rf, self.f_of(pkt), encode(norm)))
            self.set_egress(egress)
            got, o, _ = self.one(pkt)
            if rri_in == constants.CODE_MAX:  # code(max(C/R*, 1/rf')) = max(lcr, 0x10000 - rf'), spec §7.2
                self.assertEqual(o.rri_out, max(egress.params()["lcr"], 0x10000 - o.rf_norm))
            self.assertTrue(within_a_step(o.rri_out, rri), (norm, hex(o.rri_out), rri))
            self.expect_frame(emitted(pkt, o), got=got, what=f"rf' = {norm:g}, rri in {decode(rri_in):g}")


class RriChainOfUpdates(FfsTest):
    """Spec §11.2.6, hop by hop through the same switch (each hop re-sends the frame the last
    one emitted, with that hop's state): a node that constrains with gamma = 1/2 turns RRI = inf
    into tau / rf' = 1/2 (line 5); the next constrains again with gamma = 1/2: 1/2 · 1/2 = 1/4
    (line 2); an unconstrained congested node leaves 1/4 (line 2 with gamma = 1)."""

    def runTest(self):
        egress = expect.Egress(tau=TAU, congested=True)
        frame = ffs_v4(encode(2.0), flags="R", rri=constants.CODE_MAX)
        for hop, d, rri in ((1, 128, 0.5), (2, 128, 0.25), (3, -100, 0.25)):
            rf = frame[FFS].rf
            self.set_lm(expect.lm_for(rf, self.f_of(frame), egress.ltau + d))
            self.set_egress(egress)
            got, o = self.first_survivor(frame)
            self.assertEqual(o.rri_out, encode(rri), f"hop {hop}")
            self.assertEqual(o.rf_out, min(o.rf_norm, egress.ltau), f"hop {hop}")
            self.expect_frame(emitted(frame, o), got=got, what=f"hop {hop}")
            frame = Ether(got)


class RiOnlyWhenRequestedEchoUntouched(FfsTest):
    """RI runs only for a shim with the R flag (ri_keep otherwise), and rri_echo is never changed,
    whatever the flags, the state of the egress, and the value."""

    def runTest(self):
        rf = encode(2.0)
        for egress in (expect.Egress(tau=TAU, congested=True), expect.Egress(cr=2.0)):
            for flags in (0, constants.FLAG_ECHO, constants.FLAG_RI | constants.FLAG_ECHO):
                for echo in (0x0000, 0xBEEF, 0xFFFF):
                    pkt = ffs_v4(rf, flags=flags, rri=encode(1.5), echo=echo)
                    self.set_lm(expect.lm_for(rf, self.f_of(pkt), encode(0.5)))
                    self.set_egress(egress)
                    got, o, _ = self.one(pkt)
                    if not flags & constants.FLAG_RI:
                        self.assertIsNone(o.rri_out)
                    out = self.expect_frame(emitted(pkt, o), got=got, what=f"flags {flags:#x}, echo {echo:#06x}")
                    self.assertEqual(Ether(out)[FFS].rri_echo, echo)
        self.expect_nothing(timeout=0.2)

