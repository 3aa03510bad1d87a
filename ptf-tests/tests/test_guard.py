# SPDX-License-Identifier: Apache-2.0
"""The queue guard (spec §7.7) on the target: the packet generator's timer drains each egress's
virtual queue by its drain per timer packet, saturating at 0; while a queue stands above its
threshold, a packet of a pair reading over 1.25 x its share is dropped before the queue (event 6,
pair_drops, not admitted) and every other admitted packet adds its claim's line-rate bytes; a
frame from the wire that looks like a timer packet moves nothing.

tofino-model runs a few hundred packets/s: the timer's period here is 100 ms, its batches a packet
or two, and each timer test runs it for about a second."""

from __future__ import annotations

import math
import time

import expect
from base import IN, MAC_SRC, OTHER, OUT, FfsTest, byte_adjust, ffs_v4
from ffs.core import constants, p4names
from ffs.core.entries import TimerSpec
from ffs.core.labels import encode
from ffs.core.ports import pipe_of

PERIOD_NS = 100_000_000
TIMER_LEN = constants.TIMER_PACKET_LEN  # what every chip's generator makes
DRAIN = 1000  # line-rate bytes per timer packet
SETTLE_S = 0.5  # after the timer stops: its last packets through the model's pipeline
# The generator runs on the target's clock, the bounds on the host's: tofino-model's Tofino 2 ran
# its timer 5-7 % slow against the host (61 batches in 6.41 s at 100 ms, 26 in 6.95 s at 250 ms;
# Tofino 1's: 81 in 7.99 s, 39 in 9.53 s), and a model's clock slows under load: the least count
# allows the target's clock 20 %
CLOCK_SLACK = 0.20
QUEUE = p4names.GUARD_QUEUE.name


def wire_v4(ip_len: int) -> int:
    """Spec §4: an untagged IPv4 claim on the wire is its IP length + 14 (Ethernet) + 4 (FCS) + 20
    (preamble and gap)."""
    return ip_len + 14 + 4 + 20


RUNT_WIRE = 64 + 20  # spec §4: a claim below 64 bytes goes on the wire padded to 64, plus preamble and gap


class GuardTest(FfsTest):
    """Stops the timer and empties the virtual queues the test wrote, whatever the test did."""

    def tearDown(self) -> None:
        try:
            if self.driver is not None:
                if self.driver.has_pktgen:
                    self.driver.set_timer(None)
                for port in (IN, OUT, OTHER):
                    self.driver.write_register(QUEUE, port, 0)
        finally:
            super().tearDown()

    def run_timer(self, timer: TimerSpec, seconds: float) -> tuple[float, float]:
        """Run the timer for about `seconds`; the shortest and longest time it can have run, from
        the clock around the calls that enabled and disabled it."""
        t0 = time.monotonic()
        self.driver.set_timer(timer)
        t1 = time.monotonic()
        time.sleep(seconds)
        t2 = time.monotonic()
        self.driver.set_timer(None)
        t3 = time.monotonic()
        time.sleep(SETTLE_S)
        return t2 - t1, t3 - t0

    def timers_grew(self, before: dict[int, int]) -> dict[int, int]:
        return {i: n - before.get(i, 0) for i, n in self.timer_counts().items() if n != before.get(i, 0)}

    def require_pktgen(self) -> None:
        if not self.driver.has_pktgen:
            self.fail("the target has no packet generator: the queue guard cannot drain (spec §7.7)")


class TimerDrainsItsEgressQueue(GuardTest):
    """The generator fires once a period on every pipe: over a measured run, each pipe's queue of
    the egress that packet_id 0 names came down by `drain` once per period (bounds from the host's
    clock, the target's allowed 20 %, and the period) and by exactly `drain` per timer packet
    counted; packet_id 1, without a timer_ports entry, drains no queue and is counted nowhere; no
    timer packet takes the FFS path (no event, no R, R* or A). A queue then drained past 0 stays
    at 0 (saturating), not wrapped to 2^32."""

    def runTest(self):
        self.require_pktgen()
        d = self.driver
        self.set_drain(0, OUT, DRAIN)
        full = 10**9
        for port in (IN, OUT, OTHER):
            d.write_register(QUEUE, port, full)
        pipes = len(self.queue_pipes(OUT))
        before, counts = self.timer_counts(), self.counts()
        shortest, longest = self.run_timer(TimerSpec(PERIOD_NS, packets=2, packet_len=TIMER_LEN), 1.0)
        grew = self.timers_grew(before)
        self.assertEqual(set(grew), {OUT}, "timer packets are counted only by the port packet_id 0 names")
        delta = self.since(counts)  # a timer packet skips the FFS path: no pair, no event, no A or R*
        self.assert_events(delta)
        self.assertEqual((delta.r.packets, delta.offered[OUT].packets, delta.admitted[OUT].packets), (0, 0, 0))
        drained = [full - q for q in self.queue_pipes(OUT)]
        self.assertEqual([x % DRAIN for x in drained], [0] * pipes, f"whole drains per pipe: {drained}")
        self.assertEqual(sum(drained), grew[OUT] * DRAIN, "one drain per timer packet counted")
        period_s = PERIOD_NS / 1e9
        lo, hi = math.floor(shortest / period_s / (1 + CLOCK_SLACK)), math.ceil(longest / period_s) + 1
        for pipe, x in enumerate(drained):
            self.assertTrue(
                lo <= x // DRAIN <= hi,
                f"pipe {pipe}: {x // DRAIN} timer packets in {shortest:.3f}-{longest:.3f} s of a {period_s:g} s period",
            )
        for port in (IN, OTHER):
            self.assertEqual(
                self.queue_pipes(port), [full] * pipes, f"queue of port {port}: packet_id 1 drains nothing"
            )

        d.write_register(QUEUE, OUT, 2 * DRAIN + DRAIN // 2)
        before = self.timer_counts()
        self.run_timer(TimerSpec(PERIOD_NS, packets=1, packet_len=TIMER_LEN), 0.6)
        self.assertGreaterEqual(self.timers_grew(before).get(OUT, 0), 3 * pipes, "at least 3 drains in every pipe")
        self.assertEqual(self.queue_pipes(OUT), [0] * pipes, "2.5 drains drained 3 times or more: 0, not wrapped")


class GuardDropsAPairOverItsShareWhileTheQueueStands(GuardTest):
    """With OUT's threshold qhi and its queue written to qhi (not above it), a packet of a pair
    reading 1.3 x its share passes and adds its wire bytes; the queue now stands above qhi, and the
    next such packet is dropped (event 6, pair_drops, not admitted, the queue unchanged), while
    packets reading 1.2 x and 1.0 x their shares pass and add their wire bytes (a runt: its padded
    frame's). With no_queue the guard is off: 2 x the share passes."""

    def runTest(self):
        rf, ip_len = 1.0, 500
        pkt, runt = ffs_v4(encode(rf), flags=0, ip_len=ip_len), ffs_v4(encode(rf), flags=0, ip_len=40)
        f = self.f_of(pkt)
        self.f_of(runt)  # each packet's F (the estimator forgets between packets) before a queue stands
        qhi = 100_000
        self.set_queue(OUT, qhi)
        self.driver.write_register(QUEUE, OUT, qhi)
        queue = self.queue_pipes(OUT)
        pipe = pipe_of(IN)

        def passes(p, norm: float, wire: int, what: str) -> None:
            self.set_m(expect.m_for(rf, self.f_of(p), norm))
            got, _, delta = self.one(p)
            self.assertIsNotNone(got, f"{what}: not forwarded")
            self.assertEqual(delta.admitted[OUT].packets, 1, f"{what}: admitted")
            self.assert_events(delta)
            queue[pipe] += wire
            self.assertEqual(self.queue_pipes(OUT), queue, f"{what}: its wire bytes in its pipe's queue")

        passes(pkt, 1.3, wire_v4(ip_len), "1.3 x the share, the queue at qhi")
        self.set_m(expect.m_for(rf, f, 1.3))
        got, _, delta = self.one(pkt, timeout=0.5)
        self.assertTrue(got is None, "1.3 x the share, the queue above qhi: forwarded, not dropped")
        self.assert_events(delta, guard_drop=1)
        self.assertEqual((delta.drops.packets, delta.drops.bytes), (1, len(pkt) + byte_adjust()), "pair_drops")
        self.assertEqual((delta.r.packets, delta.admitted[OUT].packets), (1, 0), "R counts it, A does not")
        self.assertEqual(self.queue_pipes(OUT), queue, "a guarded packet adds nothing")
        passes(pkt, 1.2, wire_v4(ip_len), "1.2 x the share, the queue above qhi")
        passes(runt, 1.0, RUNT_WIRE, "a runt at its share")
        self.set_queue(OUT, None)
        passes(pkt, 2.0, wire_v4(ip_len), "2 x the share, no_queue")


class WireFrameLikeATimerMovesNothing(GuardTest):
    """A frame from a front-panel port that begins like a timer packet of application 1
    (packet_id 0, which names OUT) is a frame like any other: no route, dropped as a route miss;
    no timer counted, no queue drained."""

    def runTest(self):
        self.set_drain(0, OUT, DRAIN)
        self.driver.write_register(QUEUE, OUT, 5 * DRAIN)
        queue, timers, before = self.queue_pipes(OUT), self.timer_counts(), self.counts()
        # pipe 0, app_id 1 in the first byte; batch_id 0, packet_id 0; then a source MAC and an
        # EtherType no table routes
        frame = bytes([0x01, 0, 0, 0, 0, 0]) + bytes.fromhex(MAC_SRC.replace(":", "")) + b"\x90\x00" + bytes(46)
        self.send(frame)
        self.expect_nothing()
        self.assert_events(self.since(before), route_miss=1)
        self.assertEqual(self.timer_counts(), timers, "no timer packet counted")
        self.assertEqual(self.queue_pipes(OUT), queue, "no queue drained")
