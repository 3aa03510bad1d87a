# SPDX-License-Identifier: Apache-2.0
"""Counters exact (spec §7.3-§7.6, §9): R_(i,j) (pair_bytes), drops (pair_drops), R*_j (offered),
A_j (admitted: the frames γ let through, counted before the traffic manager), what left each
egress (accepted) and the events cells, for a mix of managed, unmanaged and unroutable traffic.
Bytes are frame bytes as PTF sent them (plus the target's counter_byte_adjust)."""

import expect
from base import DST4_MISS, DST4_OTHER, IN, OTHER, OUT, FfsTest, byte_adjust, ffs_v4, ffs_v6, packets, plain_v4
from ffs.core import constants, p4names
from ffs.core.entries import COUNTER_WRAP
from ffs.core.labels import encode

SHIM_COUNTERS = (
    (p4names.OFFERED_SHIMS.name, OUT),
    (p4names.ADMITTED_SHIMS.name, OUT),
)


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


class ShimsCountedWhereTheIngressInsertsThem(FfsTest):
    """spec §4: the port sends a frame the ingress inserts a shim into 8 bytes longer than it
    arrived, and FFS counts what the port sends. n packets without a shim on an insert port with
    gamma = 1/2: offered_shims (R*_j) counts all n, admitted_shims (A_j) exactly those that left
    OUT with their shim; A_j's bytes plus 8 per admitted shim are the bytes that left OUT. Then k
    packets that arrive with a shim (none inserted) move neither."""

    def shims(self) -> list[int]:
        return [self.driver.read_counters(name, [i])[i].packets for name, i in SHIM_COUNTERS]

    def runTest(self):
        n, k = packets(600, 120), 5
        self.set_port(IN, trust=1, insert=1)
        plain = plain_v4(300)
        self.set_m(expect.m_for(1.0, self.f_of(plain), 4.0))
        self.set_egress(expect.Egress(tau=2.0, congested=True))  # gamma = tau / rf' = 1/2
        before, shims0 = self.counts(), self.shims()
        self.send(plain, count=n)
        sent = self.lengths_received(OUT, n)
        delta = self.since(before)
        offered, admitted = ((b - a) % COUNTER_WRAP for a, b in zip(shims0, self.shims(), strict=True))
        self.assertGreater(len(sent), 0)
        self.assertLess(len(sent), n)
        self.assertEqual(set(sent), {len(plain) + constants.SHIM_LEN + byte_adjust()}, "each left with its shim")
        self.assertEqual(offered, n, "R*_j: every packet fate inserts a shim into if admitted")
        self.assertEqual(admitted, len(sent), "A_j: the shims inserted")
        self.assertEqual(delta.admitted[OUT].packets, len(sent))
        self.assertEqual(
            delta.admitted[OUT].bytes + constants.SHIM_LEN * admitted, sum(sent), "A_j as the port sends it"
        )
        self.set_egress(expect.Egress())  # gamma = 1
        shims1 = self.shims()
        self.send(ffs_v4(encode(2.0), flags=0), count=k)
        self.assertEqual(self.count_received(OUT, k), k)
        self.assertEqual(self.shims(), shims1, "a packet that arrived with a shim gets none")


class StrippedCountedWhereTheEgressStripsThem(FfsTest):
    """spec §4: a strip port sends a frame that arrived with a shim 8 bytes shorter, and FFS counts
    what the port sends. n IPv4 packets with a shim toward a strip port with gamma = 1/2: stripped
    counts exactly those that left OUT, and A_j's bytes less 8 per stripped frame are the bytes that
    left OUT. Then k IPv6 packets with a shim count too; k without one, and k that leave below the
    Ethernet minimum once stripped (padded back: fewer than 8 bytes less), move nothing."""

    def stripped(self) -> int:
        return self.driver.read_counters(p4names.STRIPPED.name, [OUT])[OUT].packets

    def runTest(self):
        n, k = packets(600, 120), 5
        self.set_port(IN, trust=1, insert=0)
        self.set_strip(OUT)
        pkt = ffs_v4(encode(2.0), flags=0)
        self.set_m(expect.m_for(2.0, self.f_of(pkt), 4.0))
        self.set_egress(expect.Egress(tau=2.0, congested=True))  # gamma = tau / rf' = 1/2
        before, stripped0 = self.counts(), self.stripped()
        self.send(pkt, count=n)
        sent = self.lengths_received(OUT, n)
        delta = self.since(before)
        stripped = (self.stripped() - stripped0) % COUNTER_WRAP
        self.assertGreater(len(sent), 0)
        self.assertLess(len(sent), n)
        self.assertEqual(set(sent), {len(pkt) - constants.SHIM_LEN + byte_adjust()}, "each left without its shim")
        self.assertEqual(stripped, len(sent), "the frames the port sent stripped")
        self.assertEqual(delta.admitted[OUT].packets, len(sent))
        self.assertEqual(
            delta.admitted[OUT].bytes - constants.SHIM_LEN * stripped, sum(sent), "A_j as the port sends it"
        )
        self.set_egress(expect.Egress())  # gamma = 1
        stripped1 = self.stripped()
        self.send(ffs_v6(encode(2.0), flags=0), count=k)
        self.assertEqual(self.count_received(OUT, k), k)
        self.assertEqual((self.stripped() - stripped1) % COUNTER_WRAP, k, "IPv6: stripped too")
        self.send(plain_v4(300), count=k)
        self.assertEqual(self.count_received(OUT, k), k)
        self.assertEqual((self.stripped() - stripped1) % COUNTER_WRAP, k, "no shim: nothing stripped")
        # 14 + 48 + 4 = 66 bytes, 58 stripped: padded back to 64, fewer than 8 bytes less
        self.send(ffs_v4(encode(2.0), flags=0, ip_len=48), count=k)
        self.assertEqual(self.count_received(OUT, k), k)
        self.assertEqual(
            (self.stripped() - stripped1) % COUNTER_WRAP, k, "below the minimum once stripped: not counted"
        )
