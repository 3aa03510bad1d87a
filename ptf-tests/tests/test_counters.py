# SPDX-License-Identifier: Apache-2.0
"""Counters exact (spec §7.3-§7.6, §9): R_(i,j) (pair_bytes), drops (pair_drops), R*_j (offered),
A_j (admitted: the frames γ let through, counted before the traffic manager), what left each
egress (accepted) and the events cells, for a mix of managed, unmanaged and unroutable traffic.
Bytes are frame bytes as PTF sent them (plus the target's counter_byte_adjust)."""

import expect
from base import DST4_MISS, DST4_OTHER, OTHER, OUT, FfsTest, byte_adjust, ffs_v4, packets, plain_v4
from ffs.core.labels import encode


class CountersExact(FfsTest):
    """n packets on the managed pair with gamma = 1/2, k on the unmanaged pair IN -> OTHER and
    m without a route: every counter moves by exactly what was sent, forwarded and dropped."""

    def runTest(self):
        n, k, m = packets(600, 120), 7, 3
        pkt = ffs_v4(encode(2.0), flags=0)
        self.set_m(expect.m_for(2.0, self.f_of(pkt), 4.0))
        self.set_egress(expect.Egress(tau=2.0, congested=True))  # gamma = tau / rf' = 1/2
        other, miss = plain_v4(300, DST4_OTHER), plain_v4(300, DST4_MISS)
        before = self.counts()
        self.send(pkt, count=n)
        self.send(other, count=k)
        self.send(miss, count=m)
        got = self.count_received(OUT, n)
        self.assertEqual(self.count_received(OTHER, k), k)
        delta = self.since(before)
        size, size_other = len(pkt) + byte_adjust(), len(other) + byte_adjust()
        self.assertGreater(got, 0)
        self.assertLess(got, n)
        self.assertEqual((delta.r.packets, delta.r.bytes), (n, n * size), "R: every packet of the pair, as it arrived")
        self.assertEqual((delta.drops.packets, delta.drops.bytes), ((n - got), (n - got) * size), "pair_drops")
        self.assertEqual(
            (delta.offered[OUT].packets, delta.offered[OUT].bytes), (n, n * size), "R* of OUT: the pair's arrivals"
        )
        self.assertEqual(
            (delta.admitted[OUT].packets, delta.admitted[OUT].bytes),
            (got, got * size),
            "A of OUT: exactly the frames gamma let through toward it",
        )
        self.assertEqual((delta.accepted[OUT].packets, delta.accepted[OUT].bytes), (got, got * size), "what left OUT")
        # R* and A count the same traffic, FFS's: the unmanaged pair is in neither, only in what left
        self.assertEqual((delta.offered[OTHER].packets, delta.admitted[OTHER].packets), (0, 0), "R*, A of OTHER")
        self.assertEqual(
            (delta.accepted[OTHER].packets, delta.accepted[OTHER].bytes), (k, k * size_other), "what left OTHER"
        )
        self.assert_events(delta, ffs_drop=n - got, no_pair=k, route_miss=m)
