# SPDX-License-Identifier: Apache-2.0
"""The endpoint's pure parts: the relative indicator applied to the rate of one RTT earlier and its
median of 21 (FFS §IX, App. D), the leaky-bucket pacer packet by packet, the partial-deployment cap
(App. C), the wire format (decoded by the project's scapy layer) and the SACK transport."""

import math

import pytest

from ffs.core import constants
from ffs.core.labels import encode
from ffs.lab.endpoint.rate import (
    Echo,
    IndicatorCap,
    LeakyBucket,
    MedianWindow,
    MinLoss,
    MinLossParams,
    MinTime,
    RateHistory,
    rri_factor,
)
from ffs.lab.endpoint.transport import Receiver, Sender
from ffs.lab.endpoint.wire import OVERHEAD, Ack, Data, ack_datagram, data_datagram, parse_after_ip


def test_rri_factor_decodes_the_code_and_infinity_means_no_information():
    assert rri_factor(constants.CODE_ONE) == 1.0
    assert rri_factor(encode(0.425)) == pytest.approx(0.425, rel=0.003)  # spec §3: 0.271 % worst case
    assert rri_factor(constants.CODE_MAX) is None


def test_indicator_is_rri_times_the_rate_when_the_packet_was_sent():
    ml = MinLoss(MinLossParams(start_bps=1e6, capacity_bps=100e6, settle_s=0.1, deadband=0, headroom=0, window=1))
    ml.history.set(1.0, 4e6)  # the rate changed at t = 1 s
    # a packet sent at 0.5 s (1 Mb/s then) comes back with RRI 8: the fair rate is 8 Mb/s, not 32
    ml.on_echo(1.02, Echo(encode(8.0), 0.5))
    assert ml.indicator() == pytest.approx(8e6, rel=0.003)
    assert ml.rate(1.02) == pytest.approx(8e6, rel=0.003)
    changed = ml.history.last_change_before(2.0)
    # an echo of a packet sent within settle_s of that change is ignored
    ml.on_echo(changed + 0.06, Echo(encode(0.5), changed + 0.05))
    assert ml.tracker.ignored == 1 and ml.rate(2.0) == pytest.approx(8e6, rel=0.003)


def test_minloss_moves_on_a_full_window_only_and_collects_anew_after_a_move():
    ml = MinLoss(MinLossParams(start_bps=1e6, capacity_bps=100e6, settle_s=0, deadband=0, headroom=0))
    for k in range(20):
        ml.on_echo(1 + k / 100, Echo(encode(4.0), 0.5 + k / 100))
    assert ml.rate(2.0) == 1e6  # 20 values: not yet
    ml.on_echo(1.3, Echo(encode(4.0), 0.8))
    assert ml.rate(2.0) == pytest.approx(4e6, rel=0.003) and len(ml.tracker.window) == 0


def test_minloss_confirms_increases_but_follows_decreases_at_once():
    ml = MinLoss(
        MinLossParams(start_bps=4e6, capacity_bps=100e6, settle_s=0, deadband=0, headroom=0, window=1, confirm_s=0.1)
    )
    ml.on_echo(1.0, Echo(encode(2.0), 0.90))  # "double it", first said by a packet sent at 0.90
    ml.on_echo(1.05, Echo(encode(2.0), 0.95))
    assert ml.rate(1.1) == 4e6  # not yet confirmed for 0.1 s
    ml.on_echo(1.1, Echo(encode(2.0), 1.01))
    assert ml.rate(1.1) == pytest.approx(8e6, rel=0.003)
    ml.on_echo(2.0, Echo(encode(0.5), 1.9))  # "halve it": at once
    assert ml.rate(2.0) == pytest.approx(4e6, rel=0.003)
    ml.on_echo(2.5, Echo(encode(2.0), 2.4))  # an increase ...
    ml.on_echo(2.55, Echo(encode(1.0), 2.45))  # ... interrupted: the confirmation starts over
    ml.on_echo(2.6, Echo(encode(2.0), 2.5))
    ml.on_echo(2.65, Echo(encode(2.0), 2.55))
    assert ml.rate(2.7) == pytest.approx(4e6, rel=0.003)


def test_send_log_measures_what_left_over_the_nodes_window():
    ml = MinLoss(
        MinLossParams(start_bps=8e6, capacity_bps=100e6, settle_s=0, deadband=0, headroom=0, window=1, measure_s=0.1)
    )
    for k in range(100):  # paced at 8 Mb/s but only half of it left: 4 Mb/s actually sent
        ml.on_sent(k * 0.002, 1000)
    assert ml.sent.rate(0.15) == pytest.approx(4e6, rel=0.02)
    assert ml.sent.rate(0.05) is None  # less than one window since the first send
    ml.on_echo(0.2, Echo(encode(2.0), 0.15))  # the node saw 4 Mb/s and says "twice that"
    assert ml.rate(0.2) == pytest.approx(8e6, rel=0.03)


def test_median_of_the_21_most_recent_values():
    w = MedianWindow()
    for x in [1000.0] * 10 + list(range(1, 22)):
        w.push(float(x))
    assert len(w) == 21 and w.median() == 11.0  # the ten 1000s have left the window


def test_minloss_moves_only_beyond_the_deadband_and_respects_its_bounds():
    ml = MinLoss(MinLossParams(start_bps=1e6, capacity_bps=10e6, settle_s=0, deadband=0.02, headroom=0.01))
    ml.on_echo(0.1, Echo(encode(1.01), 0.05))  # 1.01 · 0.99 ≈ 1: inside the deadband
    assert ml.rate(0.1) == 1e6 and ml.changes == 0
    for k in range(21):
        ml.on_echo(0.2 + k / 100, Echo(encode(100.0), 0.15 + k / 100))  # 100 Mb/s > capacity
    assert ml.rate(1.0) == 10e6  # capped at the egress capacity
    assert MinTime(10e6).rate(123.0) == 10e6


def test_partial_deployment_cap_only_lowers_the_cca_rate():
    h = RateHistory(0.0, 10e6)
    cap = IndicatorCap(h, settle_s=0)
    assert cap.limit(12e6) == 12e6  # no feedback yet: the CCA alone
    cap.on_echo(Echo(encode(0.5), 0.1))  # indicator 5 Mb/s
    assert cap.limit(12e6) == pytest.approx(5e6, rel=0.003)  # overuse: lowered
    assert cap.limit(2e6) == 2e6  # underuse: the indicator never raises the CCA's rate


def test_leaky_bucket_paces_packet_by_packet_and_does_not_burst_after_idling():
    b = LeakyBucket()
    rate, size = 8e6, 1000  # 1 ms per packet
    t, times = 0.0, []
    for _ in range(5):
        t = b.due(t, size, rate)
        times.append(t)
        b.sent(t, size, rate)
    assert [round(x, 9) for x in times] == [0.0, 0.001, 0.002, 0.003, 0.004]
    assert b.due(0.0041, size, rate) == pytest.approx(0.005)  # sleep until then
    assert b.due(1.0, size, rate) == 1.0  # idle: send now ...
    b.sent(1.0, size, rate)
    assert b.due(1.0, size, rate) == pytest.approx(1.001)  # ... but no credit was saved up
    d = LeakyBucket(depth_bytes=2000)
    d.sent(0.0, size, rate)
    assert d.due(0.0, size, rate) == 0.0  # a depth of two packets lets the next one go at once
    for start in (0.0, 5.0):  # fresh, and after a long idle: depth/size + 1 = 3 back to back, then paced
        burst = 0
        while d.due(start, size, rate) <= start + 1e-9:
            d.sent(start, size, rate)
            burst += 1
        assert burst == (3 if start else 2)  # (one of the first three left above)
    # late wake-ups never let it get ahead: n packets take at least (n - 3) gaps
    e, t, times = LeakyBucket(depth_bytes=2000), 0.0, []
    while len(times) < 200:
        due = e.due(t, size, rate)
        if due <= t:
            e.sent(t, size, rate)
            times.append(t)
        else:
            t = due + (0.0007 if len(times) % 7 == 0 else 0.0)  # woken late now and then
    assert times[-1] >= (200 - 3) * 0.001 - 1e-9


def test_wire_messages_round_trip_and_the_project_scapy_layer_reads_the_shim():
    from scapy.layers.inet import IP

    from ffs.lab.scapy_ffs import FFS

    dg = data_datagram(Data(7, 3, 10_000, 1400, b"x" * 1400), 40000, 5301)
    assert len(dg) + 20 == 1400 + OVERHEAD
    d = parse_after_ip(dg)
    assert (d.msg.xfer, d.msg.seq, d.msg.total, d.msg.psize, d.msg.payload) == (7, 3, 10_000, 1400, b"x" * 1400)
    assert d.shim.flags == constants.FLAG_RI and d.shim.rri == constants.CODE_MAX
    pkt = IP(bytes(IP(src="10.0.1.1", dst="10.0.3.1", proto=constants.IP_PROTO_FFS) / dg))
    assert pkt[FFS].flags.R and pkt[FFS].rri == 0xFFFF and pkt[FFS].nh == 17
    a = ack_datagram(Ack(7, 3, 9, ((5, 8), (10, 12))), 0x7F00, 5301, 40000)
    p = parse_after_ip(a)
    assert p.msg == Ack(7, 3, 9, ((5, 8), (10, 12)))
    assert p.shim.flags == constants.FLAG_ECHO and p.shim.rri_echo == 0x7F00
    assert parse_after_ip(ack_datagram(Ack(7, 3, 9), None, 1, 2)).shim.flags == 0


def test_transport_recovers_every_loss_with_selective_acknowledgements():
    snd = Sender(100_000, 1000, MinTime(8e6))
    rcv = Receiver(keep=True)
    data = bytes(range(256)) * 400
    t, acks, lost_once = 0.0, [], set()
    while not snd.done and t < 5:
        for a in [x for x in acks if x[0] <= t]:
            acks.remove(a)
            snd.on_ack(a[0], a[1], a[2])
        snd.on_timer(t)
        due = snd.due(t)
        if due is not None and due <= t:
            seq = snd.send(t)
            if seq % 10 == 4 and seq not in lost_once:  # every tenth packet is lost once
                lost_once.add(seq)
            else:
                ack = rcv.on_data(
                    t + 0.005, snd.xfer, seq, snd.total, data[seq * 1000 : (seq + 1) * 1000], 1000, 0x8000
                )
                acks.append((t + 0.01, ack, rcv.latest_rri))
        t = round(t + 0.0001, 6)
    assert snd.done and rcv.complete and rcv.data() == data[:100_000]
    assert snd.stats.retransmitted == len(lost_once) == snd.stats.lost == 10
    assert snd.stats.echoes == 100 + 10 - 10
    assert math.isclose(snd.stats.rtt_min, 0.01, abs_tol=1e-4)


def test_receiver_blocks_name_the_latest_packet_first():
    r = Receiver()
    for s in (0, 2, 3, 6):
        a = r.on_data(0.0, 1, s, 10_000, b"", 1000, None)
    assert a.cum == 1 and a.echo_seq == 6 and a.blocks == ((6, 7), (2, 4))
    a = r.on_data(0.0, 1, 1, 10_000, b"", 1000, None)
    assert a.cum == 4 and a.blocks == ((6, 7),)
