# SPDX-License-Identifier: Apache-2.0
"""RI / RRI (Algorithm 4 of the FFS paper) with the pre-gamma normalized label (spec §11.1.1):
the congested and uncongested branches with the paper's numbers, a chain of updates across hops,
and the fields RI must leave alone. Expected values are the paper's real numbers, within spec
§10's budget (1.21 %: the RRI carries tau or C/R* and rf')."""

from scapy.layers.l2 import Ether

import expect
from base import FfsTest, code_value, ffs_v4
from ffs.core import constants
from ffs.core.labels import decode, encode
from ffs.lab.scapy_ffs import FFS

TAU = 4 / 3  # Table II (spec §11.2.1)


def near(code: int, x: float) -> bool:
    return expect.close(code, x, expect.GAMMA_BUDGET)


class RriCongestedTableII(FfsTest):
    """Table II: tau = 4/3 and normalized labels 0.5, 4, 2 leave with rf 0.5, 4/3, 4/3 and
    RRI = tau / rf' = 8/3, 1/3, 2/3 (Algorithm 4 line 5 with the pre-gamma label; with the
    post-gamma label the last two would be 1)."""

    def runTest(self):
        rf = 2.0
        pkt = ffs_v4(encode(rf), flags="R")
        f = self.f_of(pkt)
        egress = expect.Egress(tau=TAU, congested=True)
        for norm, rf_out, rri in ((0.5, 0.5, 8 / 3), (4.0, TAU, 1 / 3), (2.0, TAU, 2 / 3)):
            self.set_m(expect.m_for(rf, f, norm))
            self.set_egress(egress)
            got, p = self.first_survivor(pkt)
            out = Ether(self.expect_emitted(got, pkt, p, what=f"rf' = {norm:g}"))
            self.assertTrue(near(out[FFS].rf, rf_out), (norm, decode(out[FFS].rf), rf_out))
            self.assertTrue(near(out[FFS].rri, rri), (norm, decode(out[FFS].rri), rri))


class RriUncongested(FfsTest):
    """Spec §11.2.5 (Algorithm 4, uncongested): C / R* = 2 at an uncongested node. rf' = 2/3 -> RRI = max(2, 1.5) = 2;
    rf' = 1/3 -> RRI = max(2, 3) = 3; an arriving RRI of 1.5 is already smaller and stays."""

    def runTest(self):
        rf = 2.0
        egress = expect.Egress(cr=2.0)
        for norm, rri_in, rri in (
            (2 / 3, constants.CODE_MAX, 2.0),
            (1 / 3, constants.CODE_MAX, 3.0),
            (2 / 3, encode(1.5), 1.5),
        ):
            pkt = ffs_v4(encode(rf), flags="R", rri=rri_in)
            self.set_m(expect.m_for(rf, self.f_of(pkt), norm))
            self.set_egress(egress)
            got, p, _ = self.one(pkt)
            out = Ether(self.expect_emitted(got, pkt, p, what=f"rf' = {norm:g}, rri in {code_value(rri_in):g}"))
            self.assertTrue(near(out[FFS].rri, rri), (norm, decode(out[FFS].rri), rri))


class RriChainOfUpdates(FfsTest):
    """Spec §11.2.6, hop by hop through the same switch (each hop re-sends the frame the last
    one emitted, with that hop's state): a node that constrains with gamma = 1/2 turns RRI = inf
    into tau / rf' = 1/2 (line 5); the next constrains again with gamma = 1/2: 1/2 · 1/2 = 1/4
    (line 2); an unconstrained congested node leaves 1/4 (line 2 with gamma = 1)."""

    def runTest(self):
        egress = expect.Egress(tau=TAU, congested=True)
        frame = ffs_v4(encode(2.0), flags="R", rri=constants.CODE_MAX)
        for hop, ratio, rri in ((1, 2.0, 0.5), (2, 2.0, 0.25), (3, 0.5, 0.25)):
            rf = decode(frame[FFS].rf)
            self.set_m(expect.m_for(rf, self.f_of(frame), TAU * ratio))  # rf' = tau · ratio: gamma = min(1, 1/ratio)
            self.set_egress(egress)
            got, p = self.first_survivor(frame)
            out = Ether(self.expect_emitted(got, frame, p, what=f"hop {hop}"))
            # the paper's chain, compounded over the hops: each hop's budget applies to its own step
            self.assertTrue(
                expect.close(out[FFS].rri, rri, hop * expect.GAMMA_BUDGET), (hop, decode(out[FFS].rri), rri)
            )
            frame = out


class RiOnlyWhenRequestedEchoUntouched(FfsTest):
    """RI runs only for a shim with the R flag (ri_keep otherwise), and rri_echo is never changed,
    whatever the flags, the state of the egress, and the value."""

    def runTest(self):
        rf = 2.0
        for egress in (expect.Egress(tau=TAU, congested=True), expect.Egress(cr=2.0)):
            for flags in (0, constants.FLAG_ECHO, constants.FLAG_RI | constants.FLAG_ECHO):
                for echo in (0x0000, 0xBEEF, 0xFFFF):
                    pkt = ffs_v4(encode(rf), flags=flags, rri=encode(1.5), echo=echo)
                    self.set_m(expect.m_for(rf, self.f_of(pkt), 0.5))
                    self.set_egress(egress)
                    got, p, _ = self.one(pkt)
                    if not flags & constants.FLAG_RI:
                        self.assertIsNone(p.rri_out)
                    out = self.expect_emitted(got, pkt, p, what=f"flags {flags:#x}, echo {echo:#06x}")
                    self.assertEqual(Ether(out)[FFS].rri_echo, echo)
        self.expect_nothing(timeout=0.2)
