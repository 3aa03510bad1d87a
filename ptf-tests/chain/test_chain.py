# SPDX-License-Identifier: Apache-2.0
"""FFS across two compiled nodes (topologies/chain-model.yaml): the label s1 writes is the label s2
normalizes, RI/RRI compound across the hops as Algorithm 4 says, the shim s1 inserts is stripped
where the topology says, and labels are trusted on the link between the nodes and nowhere else.
Every expectation is the paper's real-valued arithmetic on what each node measured (its F, read
back) and was given (its share M_F, its egress state), within spec §10's budget per hop: never the
generators' codes. Each test sees the link between the nodes through a tap in s1's namespace."""

from chainbase import ChainTest
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

import expect
from base import code_value, ffs_v4, plain_v4, plain_v6, rewritten
from ffs.core import constants
from ffs.core.labels import decode, encode
from ffs.lab.scapy_ffs import FFS

TAU = 4 / 3  # Table II (spec §11.2.1)
DST = {"h1": "10.0.1.7", "h2": "10.0.2.7", "h3": "10.0.3.7", "h4": "10.0.4.7"}
DST6 = {"h3": "fd00:3::7", "h4": "fd00:4::7"}
D, R = constants.FLAG_DEFAULTED, constants.FLAG_RI


def shim_of(frame: bytes):
    return Ether(frame)[FFS]


class LabelWrittenAtS1IsNormalizedAtS2(ChainTest):
    """h2 sends its own label 4, which s1 does not trust: s1 resets it to 1 (flag D) and writes
    rf' = 1 · F1 / M1 = 1/2 on the link; s2 trusts the link and writes rf' = (1/2) · F2 / M2 = 3,
    F2 being what s2 weighs a packet labelled 1/2 at. Had s2 reset the label as s1 did, it would
    have written 6; had it taken h2's 4, 24."""

    def runTest(self):
        s1, s2 = self.hops["s1"], self.hops["s2"]
        pkt = ffs_v4(encode(4.0), flags=0, dst=DST["h3"])
        route = (("s1", "h2"), ("s2", "h3"))
        self.assertIsNotNone(self.through(pkt, *route)[1], "the F probe did not reach h3")
        f1 = s1.f_est("h2", "l")
        m1 = expect.m_for(1.0, f1, 0.5)
        s1.set_m("h2", "l", m1)
        link, out = self.through(pkt, *route)
        self.assertIsNotNone(link, "nothing crossed the link")
        f2 = s2.f_est("l", "h3")
        hop1 = expect.paper(1.0, f1, m1, expect.Egress())
        on_link = shim_of(link)
        self.assertTrue(expect.close(on_link.rf, hop1.rf_out, expect.LABEL_BUDGET), (decode(on_link.rf), hop1))
        self.assertEqual(link, bytes(rewritten(pkt, rf=on_link.rf, flags=D)), "s1 rewrites the label and sets D only")
        m2 = expect.m_for(decode(on_link.rf), f2, 3.0)
        s2.set_m("l", "h3", m2)
        link, out = self.through(pkt, *route)
        self.assertIsNotNone(out, "nothing reached h3")
        hop2 = expect.paper(decode(shim_of(link).rf), f2, m2, expect.Egress())
        self.assertTrue(
            expect.close(shim_of(out).rf, hop2.rf_out, expect.LABEL_BUDGET), (decode(shim_of(out).rf), hop2)
        )
        # the two hops from the paper's numbers alone: 1 · F1/M1 · F2/M2 = 1/2 · 6 = 3
        self.assertTrue(expect.close(shim_of(out).rf, 3.0, 2 * expect.LABEL_BUDGET), decode(shim_of(out).rf))
        self.assertEqual(out, bytes(rewritten(link, rf=shim_of(out).rf)), "s2 rewrites the label alone")


class RriAcrossTwoHops(ChainTest):
    """Algorithm 4 at each node on the RRI the last one wrote (spec §11.2.6 across two compiled
    nodes), from h2 (R flag, RRI = ∞) to h3:
    - s1 congested at γ = 1/2: τ / rf' = 1/2 (line 5); s2 congested at γ = 1/2: 1/2 · 1/2 = 1/4 (line 2);
    - s1 uncongested, C/R* = 2, rf' = 1/3: max(2, 3) = 3 (lines 7-8); s2 congested, rf' = τ/2: min(3, 2) = 2 (line 5);
    - s1 congested at γ = 1/2: 1/2; s2 uncongested: 1/2 · γ with γ = 1 stays 1/2 (line 2)."""

    CASES = (
        ((expect.Egress(tau=TAU, congested=True), 2 * TAU), (expect.Egress(tau=TAU, congested=True), 2 * TAU), 0.25),
        ((expect.Egress(cr=2.0), 1 / 3), (expect.Egress(tau=TAU, congested=True), TAU / 2), 2.0),
        ((expect.Egress(tau=TAU, congested=True), 2 * TAU), (expect.Egress(cr=2.0), 0.5), 0.5),
    )

    def runTest(self):
        s1, s2 = self.hops["s1"], self.hops["s2"]
        pkt = ffs_v4(encode(1.0), flags="R", rri=constants.CODE_MAX, dst=DST["h3"])
        route = (("s1", "h2"), ("s2", "h3"))
        for (e1, norm1), (e2, norm2), rri in self.CASES:
            s1.set_egress("l", expect.Egress())
            s2.set_egress("h3", expect.Egress())
            self.assertIsNotNone(self.through(pkt, *route)[1], "the F probe did not reach h3")
            f1 = s1.f_est("h2", "l")
            m1 = expect.m_for(1.0, f1, norm1)
            s1.set_m("h2", "l", m1)
            s1.set_egress("l", e1)
            link, out = self.through(pkt, *route, tries=60, timeout=1.0)
            self.assertIsNotNone(link, f"no packet crossed s1 (case {rri:g})")
            f2 = s2.f_est("l", "h3")  # s2's F for the label s1 writes in this state
            m2 = expect.m_for(decode(shim_of(link).rf), f2, norm2)
            s2.set_m("l", "h3", m2)
            s2.set_egress("h3", e2)
            link, out = self.through(pkt, *route, tries=60, timeout=1.0)
            self.assertIsNotNone(out, f"no packet crossed both nodes (case {rri:g})")
            hop1 = expect.paper(1.0, f1, m1, e1, rri=float("inf"))
            got1 = shim_of(link)
            self.assertTrue(expect.close(got1.rri, hop1.rri_out, expect.GAMMA_BUDGET), (rri, decode(got1.rri), hop1))
            hop2 = expect.paper(decode(got1.rf), f2, m2, e2, rri=code_value(got1.rri))
            got2 = shim_of(out)
            self.assertTrue(expect.close(got2.rri, hop2.rri_out, expect.GAMMA_BUDGET), (rri, decode(got2.rri), hop2))
            # the chain from the paper's numbers alone, each hop's budget on its own step
            self.assertTrue(expect.close(got2.rri, rri, 2 * expect.GAMMA_BUDGET), (rri, decode(got2.rri)))
            self.assertEqual(got2.rri_echo, 0x1234, "no node changes rri_echo")


class ShimInsertedAtS1StrippedAtS2(ChainTest):
    """h1 is a legacy host behind an inserting port: s1 inserts the shim (IPv4 protocol 253 and
    total length + 8, IPv6 next header 253 and payload length + 8; version 1, flag D, the old
    protocol as next header, rf' = 1 · F1 / M1, RRI ∞, echo 0), the link carries it, and h4's
    port, where the packet leaves the domain, strips it: h4 gets the very bytes h1 sent. Toward
    h3, an FFS-aware host, the shim stays, with the label s2 normalized."""

    def runTest(self):
        s1 = self.hops["s1"]
        for plain, dsts in ((plain_v4, DST), (plain_v6, DST6)):
            for dst in ("h4", "h3"):
                pkt = plain(dst=dsts[dst])
                route = (("s1", "h1"), ("s2", dst))
                self.assertIsNotNone(self.through(pkt, *route)[1], f"the F probe did not reach {dst}")
                f1 = s1.f_est("h1", "l")
                m1 = expect.m_for(1.0, f1, 0.5)
                s1.set_m("h1", "l", m1)
                link, out = self.through(pkt, *route)
                self.assertIsNotNone(out, f"nothing reached {dst}")
                got = Ether(link)
                ip = got[IP] if IP in got else got[IPv6]
                want_len = (pkt[IP].len if IP in pkt else pkt[IPv6].plen) + constants.SHIM_LEN
                self.assertEqual((ip.len if IP in got else ip.plen), want_len)
                self.assertEqual((ip.proto if IP in got else ip.nh), constants.IP_PROTO_FFS)
                sh = got[FFS]
                self.assertEqual((sh.version, int(sh.flags), sh.nh, sh.rri, sh.rri_echo),
                                 (constants.SHIM_VERSION, D, 17, constants.CODE_MAX, 0))  # fmt: skip
                hop1 = expect.paper(1.0, f1, m1, expect.Egress())
                self.assertTrue(expect.close(sh.rf, hop1.rf_out, expect.LABEL_BUDGET), (decode(sh.rf), hop1))
                if dst == "h4":
                    self.assertEqual(out, bytes(pkt), "h4 gets the frame h1 sent, the shim stripped")
                else:
                    self.assertEqual(len(out), len(link), "the shim stays toward h3")
                    self.assertEqual(Ether(out)[FFS].nh, 17)


class TrustOnlyOnTheLink(ChainTest):
    """The other way, h3 -> h2: h3's label 4 is reset at s2 (a host port: rf = 1, flag D), s2
    writes rf' = 1 · F2 / M2 = 2 on the link, and s1, on the link's port, takes that 2, not its
    default 1 nor h3's 4: rf' = 2 · F1 / M1 = 1/4."""

    def runTest(self):
        s1, s2 = self.hops["s1"], self.hops["s2"]
        pkt = ffs_v4(encode(4.0), flags=0, dst=DST["h2"])
        route = (("s2", "h3"), ("s1", "h2"))
        self.assertIsNotNone(self.through(pkt, *route)[1], "the F probe did not reach h2")
        f2 = s2.f_est("h3", "l")
        m2 = expect.m_for(1.0, f2, 2.0)
        s2.set_m("h3", "l", m2)
        link, out = self.through(pkt, *route)
        self.assertIsNotNone(link, "nothing crossed the link")
        f1 = s1.f_est("l", "h2")
        on_link = shim_of(link)
        hop2 = expect.paper(1.0, f2, m2, expect.Egress())
        self.assertTrue(expect.close(on_link.rf, hop2.rf_out, expect.LABEL_BUDGET), (decode(on_link.rf), hop2))
        self.assertEqual(int(on_link.flags), D)
        m1 = expect.m_for(decode(on_link.rf), f1, 0.25)
        s1.set_m("l", "h2", m1)
        link, out = self.through(pkt, *route)
        self.assertIsNotNone(out, "nothing reached h2")
        hop1 = expect.paper(decode(shim_of(link).rf), f1, m1, expect.Egress())
        self.assertTrue(
            expect.close(shim_of(out).rf, hop1.rf_out, expect.LABEL_BUDGET), (decode(shim_of(out).rf), hop1)
        )
        self.assertTrue(expect.close(shim_of(out).rf, 0.25, 2 * expect.LABEL_BUDGET), decode(shim_of(out).rf))
        self.assertEqual(int(shim_of(out).flags), D, "D stays: the label was defaulted at the first node")
