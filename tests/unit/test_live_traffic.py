# SPDX-License-Identifier: Apache-2.0
"""ffs.lab.traffic, the live traffic tools: exact shim datagrams, label parsing, and a paced sender
measured by the receiver over loopback (no root needed)."""

import io
import json
import threading
import types

import pytest
from scapy.layers.inet import IP, UDP

from ffs.core import constants
from ffs.core.frames import shim
from ffs.core.labels import encode
from ffs.lab import traffic
from ffs.lab.scapy_ffs import FFS


def test_shim_datagram_is_exact():
    d = traffic.ffs_datagram(100, 0x8080, constants.FLAG_RI, 4000, 5001)
    assert len(d) == 100 - 20
    assert d[:8] == shim(0x8080, constants.FLAG_RI, 17, constants.CODE_MAX, 0)
    assert d[8:16] == bytes([0x0F, 0xA0, 0x13, 0x89, 0x00, 72, 0, 0])  # ports, UDP length 8 + 64, no checksum
    assert d[16:] == bytes(64)
    p = IP(bytes(IP(src="10.0.1.1", dst="10.0.3.1", proto=253) / d))
    assert p[FFS].rf == 0x8080 and p[FFS].flags.R and p[UDP].dport == 5001 and len(p) == 100
    with pytest.raises(traffic.TrafficError, match="smaller than IPv4 \\+ shim \\+ UDP"):
        traffic.ffs_datagram(35, 0x8000, 0, 1, 2)


def test_label_argument():
    assert traffic._label_code("2.0") == encode(2.0) == 0x8080
    assert traffic._label_code("0x7f00") == 0x7F00
    assert traffic._label_code(None) is None
    for bad in ("0", "-1", "abc", "0x10000", "nan"):
        with pytest.raises(traffic.TrafficError, match="--label wants"):
            traffic._label_code(bad)


def test_paced_sender_measured_by_the_receiver_over_loopback():
    port = 47001
    out = io.StringIO()
    rx = threading.Thread(target=traffic.recv, args=(port, 0.5, 1.9), kwargs={"out": out})
    rx.start()
    # 4 Mb/s of line rate in 500-byte IP packets, each 500 + 38 bytes on an Ethernet wire (header
    # 14, FCS 4, preamble and gap 20): 929.4 packets/s for 1.2 s, 1115 packets
    rep = traffic.send("127.0.0.1", port, 4e6, 500, 1.2)
    rx.join()
    assert rep.offered_packets == int(1.2 * 4e6 / (538 * 8)) == 1115
    assert rep.sent_packets >= 1105  # a busy machine may find the socket full for a moment
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["t"] for x in lines] == [0.5, 1.0, 1.5, 2.0]
    got = sum(x["packets"].get("127.0.0.1", 0) for x in lines)
    assert got == rep.sent_packets  # loopback loses nothing the kernel took
    assert sum(x["rates_bps"].get("127.0.0.1", 0) for x in lines) * 0.5 == got * 538 * 8  # line rate
    full = lines[1]["rates_bps"]["127.0.0.1"]  # an interval inside the sending time: paced, not bursty
    assert full == pytest.approx(4e6, rel=0.25)


@pytest.mark.parametrize("catch_up", [True, False])
def test_a_stalled_sender_bursts_what_it_owes_unless_told_not_to_catch_up(monkeypatch, catch_up):
    """One packet a millisecond for 0.3 s on a clock that stalls 50 ms once, at 0.1 s: the sender
    owes 50 packets when it wakes. Catching up, it sends them in one batch; not catching up, it
    skips them (offered, not sent) and never hands the kernel more than one packet at a time."""
    clock = {"t": 0.0, "stalled": False}

    def sleep(s: float) -> None:
        clock["t"] += max(s, 1e-5)
        if clock["t"] >= 0.1 and not clock["stalled"]:
            clock["t"] += 0.050
            clock["stalled"] = True

    fake_time = types.SimpleNamespace(perf_counter=lambda: clock["t"], sleep=sleep, monotonic_ns=lambda: 0)
    batches: list[int] = []

    class Recorder:
        def __init__(self, *_args) -> None:
            self.stamped_ns = None

        def send(self, n: int) -> int:
            batches.append(n)
            return n

    monkeypatch.setattr(traffic, "time", fake_time)
    monkeypatch.setattr(traffic, "_Batcher", Recorder)
    gap = 1e-3
    rep = traffic.send("127.0.0.1", 47002, 538 * 8 / gap, 500, 0.3, catch_up=catch_up)
    assert rep.offered_packets == 300
    if catch_up:
        assert rep.sent_packets == 300 and max(batches) >= 49
    else:
        assert max(batches) == 1 and 300 - 51 <= rep.sent_packets <= 300 - 49


def test_bad_arguments_are_one_line(capsys):
    assert traffic.main(["send", "--dst", "127.0.0.1", "--rate", "1Mbps", "--size", "20"]) == 2
    assert capsys.readouterr().err == "ffs.lab.traffic: error: --size must be 28..9000 bytes\n"
    assert traffic.main(["send", "--dst", "127.0.0.1", "--rate", "fast"]) == 2
    assert capsys.readouterr().err.startswith("ffs.lab.traffic: error: ")
    assert traffic.main(["send", "--dst", "127.0.0.1", "--rate", "1Mbps", "--ri"]) == 2
    assert "--ri needs --label" in capsys.readouterr().err
    for bad in ("-1", "65536"):
        assert traffic.main(["send", "--dst", "127.0.0.1", "--rate", "1Mbps", "--ip-len", bad]) == 2
        assert (
            capsys.readouterr().err
            == f"ffs.lab.traffic: error: --ip-len must be 0..65535 (the IPv4 total length field), got {bad}\n"
        )


@pytest.mark.parametrize("label", [None, 0x0001])
def test_a_lying_frame_is_exact(label):
    """--ip-len: a 1250-byte IPv4 packet whose total length says 20, valid header checksum, the
    frame as the wire carries it (14 + 1250 bytes); with --label, the shim follows the header."""
    from ffs.core.frames import ipv4_checksum
    from ffs.switch.packet import parse

    src_mac, dst_mac = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
    f = traffic.lying_frame("10.0.2.1", "10.0.3.1", src_mac, dst_mac, 1250, 20, label, 0, 4000, 5001)
    assert len(f) == 14 + 1250 and f[:12] == dst_mac + src_mac and f[12:14] == b"\x08\x00"
    assert int.from_bytes(f[16:18], "big") == 20
    assert int.from_bytes(f[24:26], "big") == ipv4_checksum(f[14:34])
    p = IP(f[14:])
    assert p.src == "10.0.2.1" and p.dst == "10.0.3.1" and p.len == 20
    if label is None:
        assert p.proto == 17 and f[34:38] == bytes([0x0F, 0xA0, 0x13, 0x89])
    else:  # the shim lies outside the 20 bytes claimed: the switch's parser drops it (spec §2)
        assert p.proto == constants.IP_PROTO_FFS and f[34:42] == shim(label, 0, 17, constants.CODE_MAX, 0)
    small = traffic.lying_frame("10.0.2.1", "10.0.3.1", src_mac, dst_mac, 28, 0, None, 0, 1, 2)
    assert len(small) == 60 and parse(small).l3_len == 0  # padded to the Ethernet minimum
