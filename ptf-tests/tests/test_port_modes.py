# SPDX-License-Identifier: Apache-2.0
"""Port modes (spec §6): trust, reset, insert at ingress; strip at egress; lengths and IPv4
header checksums (the expected checksums are scapy's, computed from the expected headers)."""

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

import expect
from base import (
    IN,
    MAC_DST,
    MAC_SRC,
    OUT,
    FfsTest,
    ffs_v4,
    ffs_v6,
    plain_v4,
    plain_v6,
)
from ffs.core import constants, tables
from ffs.core.entries import Update
from ffs.core.labels import decode, encode
from ffs.lab.scapy_ffs import FFS

CONGESTED = expect.Egress(tau=4 / 3, congested=True)


def with_shim(plain, rf: int):
    """`plain` as an insert port must emit it (spec §2): protocol/next header 253, length + 8,
    IPv4 checksum recomputed, shim version 1, flags D, next header = the old protocol,
    rf = the rewritten label, rri = infinity, rri_echo = 0."""
    old = plain[IP].proto if IP in plain else plain[IPv6].nh
    shim = FFS(flags="D", nh=old, rf=rf, rri=constants.CODE_MAX, rri_echo=0)
    if IP in plain:
        ip = plain[IP]
        out = Ether(src=MAC_SRC, dst=MAC_DST) / IP(src=ip.src, dst=ip.dst, id=ip.id, ttl=ip.ttl) / shim / plain[UDP]
    else:
        ip6 = plain[IPv6]
        out = Ether(src=MAC_SRC, dst=MAC_DST) / IPv6(src=ip6.src, dst=ip6.dst, hlim=ip6.hlim) / shim / plain[UDP]
    return Ether(bytes(out))


def without_shim(pkt):
    """`pkt` as a strip port must emit it: the shim's next header back in IP, length - 8, IPv4
    checksum recomputed."""
    if IP in pkt:
        ip = pkt[IP]
        out = Ether(src=MAC_SRC, dst=MAC_DST) / IP(src=ip.src, dst=ip.dst, id=ip.id, ttl=ip.ttl) / pkt[UDP]
    else:
        ip6 = pkt[IPv6]
        out = Ether(src=MAC_SRC, dst=MAC_DST) / IPv6(src=ip6.src, dst=ip6.dst, hlim=ip6.hlim) / pkt[UDP]
    return Ether(bytes(out))


class TrustUsesTheArrivingLabel(FfsTest):
    """On a trusted port the shim's rf is the label: F is estimated with w = len / rf and the
    label normalized from it (Algorithm 3 line 1), so rf = 64 and rf = 1 give different F, and the
    packet leaves with the paper's rf' · gamma and RRI = tau / rf' (Table II's s1: 0.5, 8/3)."""

    def runTest(self):
        pkt = ffs_v4(encode(64.0))
        f64, f1 = self.f_of(pkt), self.f_of(plain_v4(500))
        self.assertLess(f64, f1, "w = len/rf: a larger label weighs less")
        self.assertLessEqual(abs(f1 / f64 / 64 - 1), 0.02, "F scales as 1/rf (spec §4)")
        self.set_m(expect.m_for(64.0, f64, 0.5))
        self.set_egress(CONGESTED)
        got, p, _ = self.one(pkt)
        out = self.expect_emitted(got, pkt, p)
        self.assertTrue(expect.close(Ether(out)[FFS].rf, 0.5, expect.GAMMA_BUDGET))
        self.assertTrue(expect.close(Ether(out)[FFS].rri, 8 / 3, expect.GAMMA_BUDGET))


class ResetDefaultsTheLabel(FfsTest):
    """trust = 0: whatever arrives, the label is 1.0 (F as for an unlabelled packet), the rewrite
    sets D, and the label leaves as the paper's 1.0 · F / M (0.5 here). Algorithm 4 runs with the
    label the port set (spec §6; App. C/D: the first node initialises the labels): the host's
    first hop, congested at tau = 4/3, writes RRI = tau / rf' = 8/3, as for Table II's s1."""

    def runTest(self):
        self.set_port(IN, trust=0)
        f1 = self.f_of(plain_v4(500))
        self.set_m(expect.m_for(1.0, f1, 0.5))
        self.set_egress(CONGESTED)
        pkt = ffs_v4(encode(64.0), flags="R", rri=constants.CODE_MAX)
        got, p, _ = self.one(pkt, trust=False)
        self.assertEqual(self.f_est(), f1, "the reset label is 1.0")
        out = self.expect_emitted(got, pkt, p, flags=constants.FLAG_RI | constants.FLAG_DEFAULTED)
        self.assertTrue(expect.close(Ether(out)[FFS].rf, 0.5, expect.GAMMA_BUDGET))
        self.assertTrue(expect.close(Ether(out)[FFS].rri, 8 / 3, expect.GAMMA_BUDGET), "RI with the label the port set")


class InsertShim(FfsTest):
    """insert = 1: IPv4 and IPv6 packets without a shim leave with one carrying the default label
    as Algorithm 3 rewrites it (1.0 · F / M = 0.5 here); a packet that already has one is not given
    a second."""

    def runTest(self):
        self.set_port(IN, trust=1, insert=1)
        for plain in (plain_v4(500), plain_v6(500)):
            self.set_m(expect.m_for(1.0, self.f_of(plain), 0.5))  # f_of also checks it is forwarded
            self.set_egress(CONGESTED)
            got, p, _ = self.one(plain)
            self.assertIsNotNone(got)
            rf = Ether(got)[FFS].rf
            self.assertTrue(expect.close(rf, p.rf_out, expect.GAMMA_BUDGET), f"{plain.summary()}: rf {decode(rf):.4g}")
            self.assertTrue(expect.close(rf, 0.5, expect.GAMMA_BUDGET))
            self.expect_frame(with_shim(plain, rf), got=got, what=f"{plain.summary()} inserted")
        pkt = ffs_v4(encode(2.0))
        self.set_m(expect.m_for(2.0, self.f_of(pkt), 0.5))
        self.set_egress(CONGESTED)
        got, p, _ = self.one(pkt)
        self.expect_emitted(got, pkt, p, what="arrived with a shim")
        self.expect_nothing(timeout=0.2)


class InsertRespectsTheEgressMtu(FfsTest):
    """spec §2: a shim goes in only where the packet, 8 bytes longer, still fits the egress's IP MTU
    (shim_room, pushed per port). With an MTU of 508 on OUT, IPv4 and IPv6 packets of 500 bytes get
    their shim and leave at 508 bytes; packets of 501 leave as they came (DF set or not), counted
    as not inserted, and on their pair."""

    def runTest(self):
        self.set_port(IN, trust=1, insert=1)
        self.driver.write([Update("insert", e) for e in tables.shim_room_entries(OUT, 508)])
        df = Ether(bytes(plain_v4(501)))
        df[IP].flags = "DF"
        for fits, too_big in (
            (plain_v4(500), plain_v4(501)),
            (plain_v4(500), Ether(bytes(df))),
            (plain_v6(460), plain_v6(461)),
        ):
            self.send(fits)
            got = self.recv(OUT)
            self.assertIsNotNone(got)
            self.assertEqual(len(got), len(fits) + constants.SHIM_LEN, f"{fits.summary()}: 508 bytes fit the MTU")
            before = self.counts()
            self.send(too_big)
            self.expect_frame(too_big, what=f"{too_big.summary()}: 509 bytes do not fit")
            delta = self.since(before)
            self.assert_events(delta, not_inserted=1)
            self.assertEqual(delta.r.packets, 1)
        self.expect_nothing(timeout=0.2)


def bridge_tagged(frame: bytes, vid: int = 12) -> Ether:
    """An untagged frame as the MAC sent it, padded to 60 bytes, then tagged by an 802.1Q bridge."""
    padded = frame + bytes(max(0, constants.MIN_FRAME - len(frame)))
    return Ether(padded[:12] + (0x8100).to_bytes(2, "big") + vid.to_bytes(2, "big") + padded[12:])


class InsertSkipsWhatMayBePadded(FfsTest):
    """spec §6, §7.6: an insert port puts no shim in front of Ethernet padding, which would stay
    behind the grown IP packet and read as a lie at the next FFS hop. Padding can be there when
    the claim is below the 60-byte minimum (64 with FCS) untagged, or below 64 (68) tagged: a frame
    padded to 60 and then tagged by a bridge is 64 bytes. Those leave as they came; a tagged claim
    of 64 bytes carries no padding and gets its shim."""

    def runTest(self):
        self.set_port(IN, trust=1, insert=1)
        self.set_egress(expect.Egress())
        untagged = Ether(bytes(plain_v4(28)) + bytes(constants.MIN_FRAME - 42))
        for ip_len in (42, 45):
            tagged = bridge_tagged(bytes(plain_v4(ip_len)))
            self.assertEqual(len(tagged), constants.MIN_FRAME + constants.VLAN_TAG_LEN)
            for pkt in (untagged, tagged):
                self.send(pkt)
                self.expect_frame(pkt, what=f"{len(pkt)} bytes, IP length {ip_len}: no shim before padding")
        fits = bridge_tagged(bytes(plain_v4(46)))
        self.send(fits)
        got = self.recv(OUT)
        self.assertIsNotNone(got)
        self.assertEqual(len(got), len(fits) + constants.SHIM_LEN, "tagged claim of 64 bytes: its shim")
        self.assertEqual(Ether(got)[FFS].version, constants.SHIM_VERSION)
        self.expect_nothing(timeout=0.2)


class StripShim(FfsTest):
    """strip_shim on the egress: the shim leaves the FFS domain (IPv4 and IPv6, checksum and
    lengths restored); insert at ingress plus strip at egress gives back the original bytes."""

    def runTest(self):
        self.set_strip(OUT)
        for pkt in (ffs_v4(encode(2.0)), ffs_v6(encode(2.0))):
            self.send(pkt)
            self.expect_frame(without_shim(pkt), what=f"{pkt.summary()} stripped")
        self.set_port(IN, trust=1, insert=1)
        for plain in (plain_v4(500), plain_v6(500)):
            self.send(plain)
            self.expect_frame(plain, what=f"{plain.summary()} inserted, then stripped")
        self.expect_nothing(timeout=0.2)
