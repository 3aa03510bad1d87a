# SPDX-License-Identifier: Apache-2.0
"""Parser and deparser (spec §2, §7.1): where the shim is found, what happens to packets without
one, and the fates of truncated and foreign shims."""

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Raw

import expect
from base import (
    DST4,
    DST6,
    IN,
    MAC_DST,
    MAC_SRC,
    OUT,
    SCALE,
    SRC4,
    SRC6,
    FfsTest,
    byte_adjust,
    claimed_len,
    ffs_v4,
    ffs_v6,
    label_in,
    plain_v4,
    plain_v6,
)
from ffs.core import constants, p4names, tables
from ffs.core.entries import Update
from ffs.core.labels import encode
from ffs.lab.scapy_ffs import FFS

# Table II stream s1 (FFS paper; spec §11.2.1) at a congested node: tau = 4/3 and the
# normalized label rf' = 0.5, so gamma = 1, rf leaves as 0.5 and RRI = tau / rf' = 8/3.
TABLE2_S1 = expect.Egress(tau=4 / 3, congested=True)
OPTIONS = b"\x01" * 7 + b"\x00"  # 7 x NOP, EOL: IHL 7
OPTIONS_MAX = b"\x01" * 39 + b"\x00"  # IHL 15, the longest IPv4 header


class ShimRewriteCase(FfsTest):
    """Send `pkt` with the pair's share chosen so that rf' = rf · F / M = 0.5 under tau = 4/3
    (Table II, stream s1): the frame must leave with the label 0.5 (gamma = 1) and RRI = tau / rf'
    = 8/3, the paper's numbers within spec §10's budget, every other byte unchanged."""

    def rewrite(self, pkt, what: str) -> None:
        self.set_m(expect.m_for(label_in(pkt), self.f_of(pkt), 0.5))
        self.set_egress(TABLE2_S1)
        got, p, delta = self.one(pkt)
        self.assertEqual(p.gamma, 1.0, what)
        out = self.expect_emitted(got, pkt, p, what=what)
        self.assertTrue(
            expect.close(Ether(out)[FFS].rf, 0.5, expect.GAMMA_BUDGET), f"{what}: Table II s1 leaves with 0.5"
        )
        self.assertTrue(expect.close(Ether(out)[FFS].rri, 8 / 3, expect.GAMMA_BUDGET), f"{what}: Table II s1 RRI 8/3")
        self.assertEqual((delta.r.packets, delta.accepted[OUT].packets, delta.drops.packets), (1, 1, 0), what)
        self.assert_events(delta)


class FfsOverIpv4(ShimRewriteCase):
    """The shim right after the IPv4 header, with no options, 8 bytes of options and the
    longest header (IHL 15): the parser skips 4·IHL - 20 option bytes."""

    def runTest(self):
        for options in (b"", OPTIONS, OPTIONS_MAX):
            self.rewrite(ffs_v4(encode(2.0), options=options), f"IPv4 with {len(options)} option bytes")
        self.expect_nothing(timeout=0.2)


class FfsOverIpv6(ShimRewriteCase):
    """The shim right after the fixed IPv6 header; len is payload_len (spec §4)."""

    def runTest(self):
        self.rewrite(ffs_v6(encode(2.0)), "IPv6")
        self.expect_nothing(timeout=0.2)


class FfsWithVlan(ShimRewriteCase):
    """One 802.1Q tag before IPv4 and before IPv6: the tag leaves as it came."""

    def runTest(self):
        self.rewrite(ffs_v4(encode(2.0), vlan=12), "IPv4 in VLAN 12")
        self.rewrite(ffs_v6(encode(2.0), vlan=4000), "IPv6 in VLAN 4000")
        self.expect_nothing(timeout=0.2)


class NonFfsTraffic(FfsTest):
    """IP without a shim is accounted on its pair with the default label rf = 1.0 and leaves
    byte for byte (no shim inserted where the port does not say insert); a non-IP frame takes the
    forwarding miss (spec §2)."""

    def runTest(self):
        for pkt in (plain_v4(500), plain_v6(500)):
            before = self.counts()
            self.send(pkt)
            self.expect_frame(pkt, what=pkt.summary())
            delta = self.since(before)
            self.assertEqual((delta.r.packets, delta.r.bytes), (1, len(pkt) + byte_adjust()))
            self.assert_events(delta)
            # F (forgetful estimator): the claimed frame's line-rate weight with rf = 1.0, len · 2^8 >> s
            # (spec §4), within the weight's budget (spec §10)
            ideal = tables.wire_len(claimed_len(pkt)) * 2**constants.WEIGHT_SHIFT / 2**SCALE
            self.assertLessEqual(abs(self.f_est() / ideal - 1), 0.0066 + 1 / ideal, pkt.summary())
        before = self.counts()
        self.send(Ether(src=MAC_SRC, dst="ff:ff:ff:ff:ff:ff") / ARP(hwsrc=MAC_SRC, psrc=SRC4, pdst=DST4))
        self.expect_nothing()
        self.assert_events(self.since(before), route_miss=1)


class TruncatedShimDropped(FfsTest):
    """A frame that ends inside the shim, or an IP length that does not cover it, is dropped (spec
    §2). The parser reads the frame as the MAC hands it over, padded to 60 bytes and followed by its
    4-byte FCS: if that still ends inside the shim, it is a parse error at ingress; if the FCS or the
    padding completes the shim, the IP length claims bytes the frame lacks, and the egress drops the
    lie (malformed). An IP length short of the shim is a parse error at once."""

    def runTest(self):
        shim = bytes([0x18, 17]) + encode(2.0).to_bytes(2, "big") + b"\xff\xff\x00\x00"
        eth = Ether(src=MAC_SRC, dst=MAC_DST)
        cases = {}
        for kept in (0, 3, 4, 7):  # IHL 15: the shim starts at byte 74, beyond any padding
            fate = "parse_error" if kept + constants.FCS_LEN < constants.SHIM_LEN else "malformed"
            cases[f"IPv4 frame ends {8 - kept} bytes inside the shim"] = (
                eth / IP(src=SRC4, dst=DST4, proto=253, options=OPTIONS_MAX, len=168) / shim[:kept],
                fate,
            )
        # a 58-byte IPv6 frame with 4 bytes of the shim: padded to 60, its shim is read whole
        cases["IPv6 runt, payload_len 108"] = (eth / IPv6(src=SRC6, dst=DST6, nh=253, plen=108) / shim[:4], "malformed")
        cases["IPv4 total_len < 4·IHL + 8"] = (
            eth / IP(src=SRC4, dst=DST4, proto=253, len=24) / shim / bytes(100),
            "parse_error",
        )
        cases["IPv6 payload_len < 8"] = (
            eth / IPv6(src=SRC6, dst=DST6, nh=253, plen=7) / shim / bytes(100),
            "parse_error",
        )
        for what, (pkt, fate) in cases.items():
            before = self.counts()
            malformed = self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets
            self.send(pkt)
            self.expect_nothing(timeout=0.3)
            delta = self.since(before)
            lies = self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets - malformed
            if fate == "parse_error":
                self.assert_events(delta, parse_error=1)
                self.assertEqual((delta.r.packets, lies), (0, 0), what)
            else:  # parsed, counted in R with its claim, dropped by the egress's frame check
                self.assert_events(delta)
                self.assertEqual((delta.r.packets, lies), (1, 1), what)
            self.assertEqual(delta.accepted[OUT].packets, 0, what)


class OpaqueShimsPassUntouched(FfsTest):
    """version != 1 or the reserved flag: forwarded, the shim passes unchanged, and the packet is
    accounted with the default label 1.0 (spec §2): its F is that of an unlabelled packet of the
    same length. tau is set low enough that a valid shim with this label would be rewritten."""

    def runTest(self):
        f_default = self.f_of(plain_v4(500))
        self.set_m(expect.m_for(1.0, f_default, 0.5))
        self.set_egress(expect.Egress(tau=1.0, congested=True))
        for what, pkt in (
            ("version 2", ffs_v4(encode(8.0), version=2)),
            ("version 15", ffs_v4(encode(8.0), version=15)),
            ("reserved flag", ffs_v4(encode(8.0), flags=constants.FLAG_RI | constants.FLAG_RESERVED)),
        ):
            before = self.counts()
            self.send(pkt)
            self.expect_frame(pkt, what=what)
            delta = self.since(before)
            self.assert_events(delta, opaque=1)
            self.assertEqual(delta.r.packets, 1, f"{what}: accounted on its pair")
            self.assertEqual(self.f_est(), f_default, f"{what}: estimated with rf = 1.0")


class LyingLengthsAreDropped(FfsTest):
    """spec §4, §7.3: the ingress weighs the frame the IP length claims; egress drops a frame
    whose bytes disagree with it and counts it in `malformed`, not in A_j. An honest frame, and one
    padded to the Ethernet minimum, pass."""

    def malformed(self) -> int:
        return self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets

    def runTest(self):
        honest = plain_v4(500)  # no shim: it leaves byte for byte
        raw = bytes(honest)
        at = 14 + 2  # IPv4 total_len
        cases = {
            "trailing bytes": raw + bytes(700),
            "total_len says 20": raw[:at] + (20).to_bytes(2, "big") + raw[at + 2 :],
            "total_len beyond the frame": raw[:at] + (1500).to_bytes(2, "big") + raw[at + 2 :],
            "total_len 0xFFFF": raw[:at] + (0xFFFF).to_bytes(2, "big") + raw[at + 2 :],
        }
        for what, frame in cases.items():
            before, bad = self.counts(), self.malformed()
            self.send(frame)
            self.expect_nothing()
            delta = self.since(before)
            self.assertEqual(self.malformed() - bad, 1, what)
            self.assertEqual(delta.accepted[OUT].packets, 0, what)  # A_j never sees the lie
        small = plain_v4(36)  # a 50-byte frame: padded to 60 on the wire
        padded = bytes(small) + bytes(60 - len(small))
        for frame in (bytes(honest), padded):
            bad = self.malformed()
            self.send(frame)
            self.expect_frame(frame)
            self.assertEqual(self.malformed(), bad)


class FrameBasisClosesTheFcsLie(FfsTest):
    """spec §7.3: frame_basis, the agent's word on what the chip's pkt_length is. The default,
    basis_arrival(FCS_EITHER), passes an excess of 0 or 4: with the FCS counted (tofino-model, the
    software switch) a frame claiming 4 bytes more than it has passes. basis_arrival(FCS_COUNTED)
    drops it and still passes the honest frame; FCS_NOT_COUNTED, a basis unlike the target,
    drops the honest frame instead. The default is put back whatever happens."""

    def malformed(self) -> int:
        return self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets

    def check(self, frames: dict[str, bytes], passes: dict[str, bool], basis: str) -> None:
        for what, frame in frames.items():
            bad = self.malformed()
            self.send(frame)
            if passes[what]:
                self.expect_frame(frame, what=f"{basis}: {what}")
            else:
                self.expect_nothing()
            self.assertEqual(self.malformed() - bad, 0 if passes[what] else 1, f"{basis}: {what}")

    def runTest(self):
        raw = bytes(plain_v4(500))
        at = 14 + 2  # IPv4 total_len
        frames = {"honest": raw, "claims 4 more": raw[:at] + (500 + 4).to_bytes(2, "big") + raw[at + 2 :]}
        try:
            self.check(frames, {"honest": True, "claims 4 more": True}, "FCS_EITHER")
            self.driver.write([tables.frame_basis_update(constants.FCS_COUNTED, False)])
            self.check(frames, {"honest": True, "claims 4 more": False}, "FCS_COUNTED")
            # read back as the agent reads what it owns: a default, and no entry (keyless)
            d = self.driver.read_default(p4names.FRAME_BASIS.name)
            self.assertEqual((d.action_name, d.params), ("basis_arrival", {"fcs": constants.FCS_COUNTED}))
            self.assertEqual(self.driver.read_table(p4names.FRAME_BASIS.name), [])
            self.driver.write([tables.frame_basis_update(constants.FCS_NOT_COUNTED, False)])
            self.check(frames, {"honest": False, "claims 4 more": True}, "FCS_NOT_COUNTED")
        finally:
            self.driver.write([tables.frame_basis_update(constants.FCS_EITHER, False)])


class ClaimsBeyondTheIngressPortsFrameLimit(FfsTest):
    """spec §4: a port of IP MTU 1500 receives frames of at most 14 + 4 + 1500 + 4 bytes (Ethernet
    header, one tag, FCS), so no frame through IN holds an IPv4 length above 1504 or an IPv6 payload
    length above 1464 (claim_limit, pushed per ingress port by the agent). A 500-byte frame claiming
    one byte more is dropped at the ingress, counted as claim_oversize, and weighs on no pair (R and F
    unchanged); one claiming exactly the limit weighs on its pair and the frame check drops it."""

    def malformed(self) -> int:
        return self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets

    def runTest(self):
        mtu = 1500
        self.driver.write([Update("insert", e) for e in tables.claim_limit_entries(IN, mtu)])
        frame_limit = 14 + 4 + mtu + 4
        for raw, at, longest in (
            (bytes(plain_v4(500)), 14 + 2, frame_limit - 4 - 14),
            (bytes(plain_v6(500)), 14 + 4, frame_limit - 4 - 14 - 40),
        ):
            for claim, oversize in ((longest + 1, True), (0xFFFF, True), (longest, False)):
                what = f"IP version {raw[14] >> 4}, claim {claim}"
                frame = raw[:at] + claim.to_bytes(2, "big") + raw[at + 2 :]
                before, bad, f = self.counts(), self.malformed(), self.f_est()
                self.send(frame)
                self.expect_nothing()
                delta = self.since(before)
                if oversize:
                    self.assert_events(delta, claim_oversize=1)
                    self.assertEqual((delta.r.packets, self.malformed() - bad, self.f_est()), (0, 0, f), what)
                else:
                    self.assert_events(delta)
                    self.assertEqual((delta.r.packets, self.malformed() - bad), (1, 1), what)


def bridge_tagged(frame: bytes, vid: int) -> Packet:
    """What an 802.1Q bridge makes of an untagged frame on a trunk: the frame as the MAC sent it,
    padded to the 60-byte Ethernet minimum, with a 4-byte tag after the source MAC (64 bytes, 68
    with FCS): the bridge does not take the padding out."""
    padded = frame + bytes(max(0, constants.MIN_FRAME - len(frame)))
    return Ether(padded[:12] + (0x8100).to_bytes(2, "big") + vid.to_bytes(2, "big") + padded[12:])


class TaggedRuntsPass(ShimRewriteCase):
    """spec §7.3: a small IP frame (a bare TCP ACK with a shim: IP length 32 or 34) is padded to 60
    bytes; a bridge that tags it on a VLAN trunk makes it 64 bytes, 68 with FCS, with the padding
    inside. It is honest: it leaves rewritten like any tagged frame, padding and tag as they came,
    and nothing counts it as malformed. An untagged frame of the same size was never padded, and
    bytes beyond its claim are a lie."""

    def malformed(self) -> int:
        return self.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets

    def runTest(self):
        for ip_len in (34, 32):
            small = (
                Ether(src=MAC_SRC, dst=MAC_DST)
                / IP(src=SRC4, dst=DST4, id=7, ttl=64)
                / FFS(flags="R", rf=encode(2.0), rri=constants.CODE_MAX, rri_echo=0x1234, nh=6)
                / bytes(ip_len - 28)
            )
            pkt = bridge_tagged(bytes(small), 12)
            self.assertEqual(len(pkt), constants.MIN_FRAME + 4)
            bad = self.malformed()
            self.rewrite(pkt, f"tagged runt, IP length {ip_len}")
            self.assertEqual(self.malformed(), bad, f"tagged runt, IP length {ip_len}: not malformed")
        plain = bridge_tagged(bytes(plain_v4(28)), 4000)  # IP length 28, no shim: byte for byte
        bad = self.malformed()
        self.send(plain)
        self.expect_frame(plain, what="tagged runt without a shim")
        self.assertEqual(self.malformed(), bad)
        # 64 bytes untagged (68 with FCS) claiming 48: never padded, 16 bytes beyond the claim
        raw = bytes(plain_v4(34))[:48]
        lie = raw + bytes(64 - len(raw))
        bad = self.malformed()
        self.send(lie)
        self.expect_nothing()
        self.assertEqual(self.malformed() - bad, 1, "untagged 64 bytes claiming 48")


# Payload bytes that read as a valid shim (version 1, flag R, rf = 2.0, rri = infinity): what 1 in
# 32 random first bytes of a non-first fragment look like to a parser that ignores the offset.
SHIM_LOOKALIKE = bytes([0x18, 17]) + encode(2.0).to_bytes(2, "big") + b"\xff\xff\x12\x34"


def fragment(offset: int, mf: bool, data: bytes, proto: int = 253):
    """An IPv4 fragment (offset in 8-byte units) of a protocol-`proto` datagram."""
    return Ether(
        bytes(
            Ether(src=MAC_SRC, dst=MAC_DST)
            / IP(src=SRC4, dst=DST4, id=99, ttl=64, proto=proto, flags="MF" if mf else 0, frag=offset)
            / Raw(data)
        )
    )


class FragmentsArePayload(FfsTest):
    """spec §2: a non-first IPv4 fragment of a protocol-253 datagram holds payload, never a shim:
    whatever its first bytes, it leaves byte for byte on a trusting, a resetting and an insert port
    and through a strip port, counted on its pair (R) with the default label 1.0 (its F is that of
    an unlabelled packet of its length); an insert port counts it as not inserted. A last fragment
    shorter than a shim is forwarded, not dropped. The first fragment's shim is the datagram's: its
    label is rewritten, but a strip port leaves it, and an insert port gives a first fragment
    without one none (its protocol would differ from the later fragments')."""

    def runTest(self):
        later = fragment(185, True, SHIM_LOOKALIKE + bytes(472))
        last = fragment(370, False, SHIM_LOOKALIKE + bytes(100))
        f_plain = self.f_of(plain_v4(len(later[IP])))
        for mode in ("trust", "reset", "insert", "strip"):
            self.set_port(IN, trust=int(mode != "reset"), insert=int(mode == "insert"))
            if mode == "strip":
                self.set_strip(OUT)
            for what, pkt in (("middle fragment", later), ("last fragment", last)):
                before = self.counts()
                self.send(pkt)
                self.expect_frame(pkt, what=f"{what}, {mode}")
                delta = self.since(before)
                self.assertEqual(delta.r.packets, 1, f"{what}, {mode}: counted on its pair")
                if mode == "insert":
                    self.assert_events(delta, not_inserted=1)
                else:
                    self.assert_events(delta)
            self.send(later)
            self.expect_frame(later)
            self.assertEqual(self.f_est(), f_plain, f"{mode}: weighed with the default label")
        # a last fragment with fewer data bytes than a shim (the port trusts, OUT strips)
        for n in (1, 4, 7):
            short = bytes(fragment(370, False, SHIM_LOOKALIKE[:n]))
            short += bytes(60 - len(short))  # below the Ethernet minimum: padded on the wire
            before = self.counts()
            self.send(short)
            self.expect_frame(short, what=f"{n}-byte last fragment")
            self.assert_events(self.since(before))
        self.expect_nothing(timeout=0.2)


class FirstFragmentKeepsItsShim(FfsTest):
    """spec §2: the first fragment (MF set, offset 0) carries the datagram's shim: its label is
    rewritten as Algorithm 3 says (rf' = 0.5 chosen through lm, so it leaves with 0.5), and a strip
    port leaves the shim and the protocol in place; an insert port forwards a first fragment
    without a shim unchanged and counts it."""

    def runTest(self):
        first = Ether(
            bytes(
                Ether(src=MAC_SRC, dst=MAC_DST)
                / IP(src=SRC4, dst=DST4, id=99, ttl=64, flags="MF")
                / FFS(flags="R", rf=encode(2.0), rri=constants.CODE_MAX, rri_echo=0x1234)
                / Raw(bytes(472))
            )
        )
        self.assertIn(FFS, first)
        self.set_strip(OUT)
        self.set_m(expect.m_for(2.0, self.f_of(first), 0.5))
        self.set_egress(TABLE2_S1)
        got, p, delta = self.one(first)
        out = self.expect_emitted(got, first, p, what="first fragment at a strip port")
        self.assertTrue(expect.close(Ether(out)[FFS].rf, 0.5, expect.GAMMA_BUDGET))
        self.assert_events(delta)
        plain_first = fragment(0, True, bytes(480), proto=17)
        self.set_port(IN, trust=1, insert=1)
        before = self.counts()
        self.send(plain_first)
        self.expect_frame(plain_first, what="first fragment at an insert port")
        self.assert_events(self.since(before), not_inserted=1)
        self.expect_nothing(timeout=0.2)
