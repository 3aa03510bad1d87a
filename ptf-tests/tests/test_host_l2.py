# SPDX-License-Identifier: Apache-2.0
"""A host program that changes a frame's L2 length, composed with the FFS library (docs/pipeline.md,
"FFS as a P4 library"): p4src/examples/l2l3_acl.p4 pops the 802.1Q tag of a frame arriving on an
access port, pushes one onto an untagged frame leaving a tagging port, and declares each change in
md.l2_change. The egress's frame check compares the frame's bytes with its IP length (spec §7.3):
a declared change is the only difference it forgives, so honest frames pass and lies stay lies.

Runs on the example alone (skipped on ffs):
    make install-example && P4_PROGRAM=l2l3_acl ptf-tests/run/tofino-model/run test_host_l2
"""

from __future__ import annotations

from base import IN, MAC_DST, OTHER, OUT, PID, TEST_TABLES, FfsTest, byte_adjust, params, plain_v4
from ffs.core import constants, p4names
from ffs.core.entries import COUNTER_WRAP, Exact, TableEntry, Ternary, Update

EXAMPLE = "l2l3_acl"  # the name make install-example installs it under
FWD = "SwitchIngress.forwarding"
BD, VID_IN, VID_OUT = 1, 10, 20
MAC_OTHER = "02:00:00:00:00:03"  # bridged to OTHER, which tags what it sends
IP_LEN = 500
AT_TOTAL_LEN = constants.ETH_HDR_LEN + 2  # IPv4 total_len in an untagged frame
POPPED_AT = p4names.TAG_CHANGED.size // 2  # tag_changed: pushed at the port, popped here past it


def tagged(frame: bytes, vid: int) -> bytes:
    """The frame with an 802.1Q tag after its MAC addresses."""
    return frame[:12] + (0x8100).to_bytes(2, "big") + vid.to_bytes(2, "big") + frame[12:]


def with_total_len(frame: bytes, total_len: int) -> bytes:
    return frame[:AT_TOTAL_LEN] + total_len.to_bytes(2, "big") + frame[AT_TOTAL_LEN + 2 :]


def to_other(frame: bytes) -> bytes:
    return bytes.fromhex(MAC_OTHER.replace(":", "")) + frame[6:]


class HostL2Test(FfsTest):
    """IN is an access port of bridge domain BD: MAC_DST is bridged to OUT (the managed pair PID),
    MAC_OTHER to OTHER (unmanaged), which pushes tag VID_OUT onto the untagged frames it sends."""

    test_tables = tuple(t.name for t in TEST_TABLES if t not in (p4names.IPV4_ROUTES, p4names.IPV6_ROUTES)) + (
        f"{FWD}.port_vlan",
        f"{FWD}.l2_fdb",
        f"{FWD}.egress_vlan",
    )

    def setUp(self) -> None:
        if params().get("p4_name") != EXAMPLE:
            self.skipTest(f"runs on the example: make install-example; P4_PROGRAM={EXAMPLE} (this is ffs)")
        super().setUp()

    def forwarding_updates(self) -> list[Update]:
        def entry(table: str, key: dict, action: str, **data: int) -> Update:
            return Update("insert", TableEntry(f"{FWD}.{table}", key, action, data))

        mac = lambda m: Exact(int(m.replace(":", ""), 16))  # noqa: E731
        return [
            entry(
                "port_vlan",
                {"ingress_port": Exact(IN), "tagged": Exact(1), "vid": Ternary(VID_IN, 0xFFF)},
                "set_bd_access",
                bd=BD,
            ),
            entry(
                "port_vlan",
                {"ingress_port": Exact(IN), "tagged": Exact(0), "vid": Ternary(0, 0)},
                "set_bd_access",
                bd=BD,
            ),
            entry("l2_fdb", {"bd": Exact(BD), "dst_addr": mac(MAC_DST)}, "l2_forward", port=OUT),
            entry("l2_fdb", {"bd": Exact(BD), "dst_addr": mac(MAC_OTHER)}, "l2_forward", port=OTHER),
            entry("egress_vlan", {"egress_port": Exact(OTHER)}, "push_tag", vid=VID_OUT),
        ]

    def frame_counts(self) -> dict[str, int]:
        """Packets of the egress's counters (spec §7.3), the tags it counted pushed and popped
        (spec §4), and A_j's bytes toward OUT."""
        d = self.driver
        accepted = d.read_counters(p4names.ACCEPTED.name, [OUT, OTHER])
        malformed = d.read_counters(p4names.MALFORMED.name, [OUT, OTHER])
        tags = d.read_counters(p4names.TAG_CHANGED.name, [OTHER, POPPED_AT + OUT])
        return {
            "pushed OTHER": tags[OTHER].packets,
            "popped OUT": tags[POPPED_AT + OUT].packets,
            "accepted OUT": accepted[OUT].packets,
            "accepted OTHER": accepted[OTHER].packets,
            "malformed OUT": malformed[OUT].packets,
            "malformed OTHER": malformed[OTHER].packets,
            "pair_malformed": d.read_counters(p4names.PAIR_MALFORMED.name, [PID])[PID].packets,
            "admitted OUT bytes": d.read_counters(p4names.ADMITTED.name, [OUT])[OUT].bytes,
        }

    def delta(self, before: dict[str, int]) -> dict[str, int]:
        now = self.frame_counts()
        return {k: (now[k] - before[k]) % COUNTER_WRAP for k in now if (now[k] - before[k]) % COUNTER_WRAP}


class PoppedTagsAreForwarded(HostL2Test):
    """A tagged frame on the access port arrives 14 + 4 + 500 + 4 = 522 bytes long and leaves
    untagged, claiming 14 + 500: without the declared pop its excess would be 8, a lie dropped and
    counted against its pair (which the agent quarantines, spec §9). Declared, each leaves byte for
    byte without its tag, counted accepted and never malformed; A_j counts the frame as it arrived
    and tag_changed each at OUT's popped cell, which the agent takes 4 bytes a frame off A_j for
    (spec §4)."""

    def runTest(self):
        honest = bytes(plain_v4(IP_LEN))
        n = 3
        before = self.frame_counts()
        for _ in range(n):
            self.send(tagged(honest, VID_IN))
            self.expect_frame(honest, port=OUT, what="(the tag popped)")
        arrival = constants.ETH_HDR_LEN + constants.VLAN_TAG_LEN + IP_LEN + byte_adjust()
        self.assertEqual(self.delta(before), {"accepted OUT": n, "admitted OUT bytes": n * arrival, "popped OUT": n})


class LiesStayLiesWhereTheTagIsPopped(HostL2Test):
    """The declared pop forgives the tag's 4 bytes, nothing more: a popped frame with bytes beyond
    its claim, or one claiming 4 bytes less than it carries (the tag's size), is dropped and counted
    malformed and against its pair, as is the same 4-byte lie on an untagged frame, which has no tag
    to pop. The popped ones count as popped all the same (A_j counted them too)."""

    def runTest(self):
        honest = bytes(plain_v4(IP_LEN))
        cases = {
            "popped, 700 trailing bytes": (tagged(honest, VID_IN) + bytes(700), 1),
            "popped, total_len 4 short": (tagged(with_total_len(honest, IP_LEN - constants.VLAN_TAG_LEN), VID_IN), 1),
            "untagged, total_len 4 short": (with_total_len(honest, IP_LEN - constants.VLAN_TAG_LEN), 0),
        }
        for what, (frame, popped) in cases.items():
            before = self.frame_counts()
            self.send(frame)
            self.expect_nothing()
            got = self.delta(before)
            got.pop("admitted OUT bytes", None)  # γ admitted it: A_j counts the lie (spec §7.3)
            want = {"malformed OUT": 1, "pair_malformed": 1} | ({"popped OUT": 1} if popped else {})
            self.assertEqual(got, want, what)


class PushedTagsAreForwarded(HostL2Test):
    """An untagged frame bridged to OTHER leaves with tag VID_OUT, 4 bytes longer than it arrived:
    declared, it passes; a frame with 4 bytes beyond its claim, which the pushed tag's 4 bytes
    would otherwise hide (518 + 4 arrived with FCS, 518 claimed after the push), is dropped. Each
    counts in tag_changed at OTHER's pushed cell (spec §4)."""

    def runTest(self):
        honest = to_other(bytes(plain_v4(IP_LEN)))
        before = self.frame_counts()
        self.send(honest)
        self.expect_frame(tagged(honest, VID_OUT), port=OTHER, what="(a tag pushed)")
        got = self.delta(before)
        self.assertEqual(got, {"accepted OTHER": 1, "pushed OTHER": 1})
        before = self.frame_counts()
        self.send(honest + bytes(constants.VLAN_TAG_LEN))
        self.expect_nothing()
        self.assertEqual(self.delta(before), {"malformed OTHER": 1, "pushed OTHER": 1})


class PoppedTagsCountWhereTheFrameLeavesShorter(HostL2Test):
    """A popped tag shortens the frame the port sends only where it leaves at the Ethernet minimum
    or above: a 46-byte IP packet arrives tagged as 14 + 4 + 46 + 4 = 68 bytes and leaves as 64,
    counted; a 45-byte one leaves as 63, which the MAC pads back to 64 (the port sends what it
    would have), not counted (spec §4)."""

    def runTest(self):
        for ip_len, counted in ((46, 1), (45, 0)):
            before = self.frame_counts()
            self.send(tagged(bytes(plain_v4(ip_len)), VID_IN))
            self.assertEqual(self.count_received(OUT, 1), 1, ip_len)
            got = self.delta(before)
            got.pop("admitted OUT bytes", None)
            self.assertEqual(got, {"accepted OUT": 1} | ({"popped OUT": 1} if counted else {}), ip_len)
