# SPDX-License-Identifier: Apache-2.0
"""Forwarding (spec §7.2 stage 0-1): longest-prefix routes for IPv4 and IPv6, the configurable
miss action, and pairs the node does not manage."""

import expect
from base import (
    DST4,
    DST4_MISS,
    DST4_OTHER,
    DST6,
    DST6_MISS,
    OTHER,
    OUT,
    FfsTest,
    byte_adjust,
    ffs_v4,
    plain_v4,
    plain_v6,
)
from ffs.core import p4names
from ffs.core.entries import Exact, TableEntry, Update
from ffs.core.labels import encode


class RoutesAndLongestPrefix(FfsTest):
    def runTest(self):
        for pkt, port in ((plain_v4(200, DST4), OUT), (plain_v4(200, DST4_OTHER), OTHER), (plain_v6(200, DST6), OUT)):
            self.send(pkt)
            self.expect_frame(pkt, port=port, what=pkt.summary())
        # a longer prefix inside 10.0.2.0/24 wins for its addresses only
        self.driver.write([self.route_update("10.0.2.128/25", OTHER)])
        self.send(plain_v4(200, "10.0.2.200"))
        self.expect_frame(plain_v4(200, "10.0.2.200"), port=OTHER, what="10.0.2.200 via /25")
        self.send(plain_v4(200, DST4))
        self.expect_frame(plain_v4(200, DST4), port=OUT, what=f"{DST4} via /24")
        self.driver.write([self.route_update("fd00:2:0:1::/64", OTHER)])
        self.send(plain_v6(200, "fd00:2:0:1::9"))
        self.expect_frame(plain_v6(200, "fd00:2:0:1::9"), port=OTHER, what="fd00:2:0:1::9 via /64")
        self.expect_nothing(timeout=0.2)


class RouteMissDropsByDefault(FfsTest):
    """No route: dropped and counted (EVENT_ROUTE_MISS); the miss action is the table's default
    entry, so setting it to route(port) forwards misses (tearDown puts no_route back)."""

    def runTest(self):
        before = self.counts()
        self.send(plain_v4(200, DST4_MISS))
        self.send(plain_v6(200, DST6_MISS))
        self.expect_nothing()
        self.assert_events(self.since(before), route_miss=2)
        self.driver.write([Update("set_default", TableEntry(p4names.IPV4_ROUTES.name, {}, "route", {"port": OTHER}))])
        before = self.counts()
        self.send(plain_v4(200, DST4_MISS))
        self.expect_frame(plain_v4(200, DST4_MISS), port=OTHER, what="IPv4 miss with default route(OTHER)")
        self.send(plain_v6(200, DST6_MISS))  # the IPv6 table still drops
        self.expect_nothing()
        self.assert_events(self.since(before), route_miss=1, no_pair=1)  # IN -> OTHER is not a managed pair


class UnmanagedPairBypassesFfs(FfsTest):
    """IN -> OTHER has no pairs entry (no_pair): FFS is bypassed, so a labelled packet with the R
    flag leaves unchanged toward an egress that is congested at tau = 1, where the same packet on a
    managed pair is dropped (gamma = tau / rf' < 2^-12 with lm = 0, Eq. 1-2). Counted as
    EVENT_NO_PAIR and in what left OTHER, not in any pair's R nor in OTHER's R* or A."""

    def runTest(self):
        congested = expect.Egress(tau=1.0, congested=True)
        self.driver.write(
            [
                Update(
                    "insert",
                    TableEntry(
                        p4names.EGRESS_PARAMS.name, {"egress_port": Exact(OTHER)}, "set_egress", congested.params()
                    ),
                )
            ]
        )
        pkt = ffs_v4(encode(64.0))
        # the managed pair toward an egress in the same state: rf' = 64 · F / M far above tau = 1
        f = self.f_of(pkt)
        self.set_lm(0)
        self.set_egress(congested)
        gamma = expect.paper(64.0, f, self.m, congested).gamma  # M_F = 2^0
        self.assertLess(gamma, 2.0**-12)
        before = self.counts()
        self.send(pkt, count=5)
        self.assertLessEqual(
            self.count_received(OUT, 5, timeout=0.5), 1, "a managed pair at this egress state is dropped"
        )
        self.assertGreaterEqual(self.since(before).drops.packets, 4)
        pkt = ffs_v4(encode(64.0), dst=DST4_OTHER)
        before = self.counts()
        for _ in range(5):
            self.send(pkt)
            self.expect_frame(pkt, port=OTHER)
        delta = self.since(before)
        self.assert_events(delta, no_pair=5)
        self.assertEqual(delta.r.packets, 0)
        self.assertEqual((delta.offered[OTHER].packets, delta.admitted[OTHER].packets), (0, 0))
        self.assertEqual(
            (delta.accepted[OTHER].packets, delta.accepted[OTHER].bytes), (5, 5 * (len(pkt) + byte_adjust()))
        )
