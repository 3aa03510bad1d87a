# SPDX-License-Identifier: Apache-2.0
"""A forged label, live (root): the dumbbell on the software switch over veth with the agent, the
flooding host's port *trusting* labels (the worst case; host ports reset them by default), the
flood at its port's line rate with a label far below the admitted range, or with lengths that lie.
Corollary 1 in every second of the attack: the well-behaved sender keeps its 8 Mb/s (≥ 95 %), and
the flood gets no more than its FFS rate (docs/security.md; the same attacks in virtual time at
line rate: tests/switch/test_attacks.py)."""

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import TOPOLOGIES
from ffs.core import constants, p4names
from ffs.lab.liverun import live_node
from ffs.switch.driver import ModelDriver


def dumbbell(tmp_path, stem: str, trusted_p2: bool = False):
    """The dumbbell topology under a name of its own (its namespaces), h2's port trusting labels if asked."""
    name = f"{stem}{os.getpid() % 100000}"
    text = (TOPOLOGIES / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}")
    if trusted_p2:
        text = text.replace(
            "p2: {capacity: 20Mbps, port: 2, insert: true, strip: true}",
            "p2: {capacity: 20Mbps, port: 2, insert: true, strip: true, trust: true}",
        )
        assert "trust: true" in text
    topo_file = tmp_path / f"{name}.yaml"
    topo_file.write_text(text)
    return topo_file


# An attack's timeline, on CLOCK_MONOTONIC (the namespaces share it): h1 sends its 8 Mb/s alone for
# LEAD seconds, then the flood runs `seconds`. h3 bins h1's packets by the time h1 sent them
# (recv --by-send-time, BIN bins) against what h1 says it sent in each, so a sender the machine
# stalls sends less and loses nothing; the attack's seconds count from the bin of its first packet.
LEAD, BIN_MS = 1.0, 100
SRC_H1, SRC_H2 = "10.0.1.1", "10.0.2.1"


@dataclasses.dataclass
class Timeline:
    lines: list[dict]  # h3's bins by send time
    sent_by_ms: dict[int, int]  # what h1 sent, per millisecond
    onset_ms: int  # the flood's first packet
    seconds: float  # the flood's duration

    def windows(self) -> list[list[dict]]:
        """h3's bins in each whole second of the attack, the first from the bin of its onset."""
        start = self.onset_ms - self.onset_ms % BIN_MS
        return [
            [x for x in self.lines if start + 1000 * k <= x["from_ms"] < start + 1000 * (k + 1)]
            for k in range(int(self.seconds))
        ]

    def kept(self) -> list[float]:
        """h1's packets delivered of those it sent, in each second of the attack."""
        out = []
        for w in self.windows():
            got = sum(x["packets"].get(SRC_H1, 0) for x in w)
            sent = sum(self.sent_by_ms.get(ms, 0) for x in w for ms in range(x["from_ms"], x["from_ms"] + BIN_MS))
            assert sent > 0, f"h1 sent nothing in a second of the attack: {self}"
            out.append(got / sent)
        return out

    def rate(self, src: str, first: int = 0) -> float:
        """`src`'s mean rate at h3 (bit/s) over the attack's seconds from `first` on."""
        bins = [x for w in self.windows()[first:] for x in w]
        return sum(x["rates_bps"].get(src, 0) for x in bins) / len(bins)

    def __str__(self) -> str:
        per_s = [
            tuple(round(sum(x["rates_bps"].get(a, 0) for x in w) / len(w) / 1e6, 2) for a in (SRC_H1, SRC_H2))
            for w in self.windows()
        ]
        return f"kept {[round(k, 3) for k in self.kept()]}, (h1, h2) Mb/s {per_s}"


def timeline(live, flood_argv: list[str], seconds: float) -> tuple[Timeline, dict]:
    """h3 receives, h1 sends its 8 Mb/s for LEAD + `seconds`, `flood_argv` runs in h2 after LEAD
    and prints a JSON report with `started_ms` (CLOCK_MONOTONIC); the timeline and that report."""
    rx = live.receive("h3", LEAD + seconds + 1.5, f"--interval={BIN_MS / 1e3}", "--by-send-time")
    time.sleep(0.3)
    h1 = live.send("h1", "10.0.3.1", "8Mbps", LEAD + seconds + 0.5, "--stamp", report=True)
    time.sleep(LEAD)
    flood = live.spawn(live.exec_args("h2", *flood_argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = flood.communicate(timeout=seconds + 15)
    assert flood.returncode == 0, err
    report = json.loads(out)
    lines = [json.loads(x) for x in rx.stdout]
    rx.wait()
    sent_by_ms = {int(k): v for k, v in json.loads(h1.communicate()[0])["sent_by_ms"].items()}
    return Timeline(lines, sent_by_ms, report["started_ms"], seconds), report


def flood_argv(*args: str, seconds: float) -> list[str]:
    """h2's flood at its port's 20 Mb/s line rate: `ffs.lab.traffic send` with `args`."""
    return [
        sys.executable,
        "-m",
        "ffs.lab.traffic",
        "send",
        "--dst=10.0.3.1",
        "--rate=20Mbps",
        *args,
        f"--duration={seconds}",
    ]


def lies_counted(live) -> tuple[int, dict[int, int], int]:
    """The switch's `malformed` count at p3, `pair_malformed` by pair (the cells that moved), and the
    claims its ingress dropped beyond a port's frame limit (EVENT_CLAIM_OVERSIZE)."""
    drv = ModelDriver(live.switch_address)
    drv.connect(5)
    try:
        port3 = live.topology.node("s1").interfaces["p3"].port
        malformed = drv.read_counters(p4names.MALFORMED.name, [port3])[port3].packets
        by_pair = {i: v.packets for i, v in drv.read_counters(p4names.PAIR_MALFORMED.name).items() if v.packets}
        oversize = drv.read_counters(p4names.EVENTS.name, [constants.EVENT_CLAIM_OVERSIZE])
        return malformed, by_pair, oversize[constants.EVENT_CLAIM_OVERSIZE].packets
    finally:
        drv.close()


# Corollary 1 in every second of an attack: h1 keeps ≥ 95 % of what it sent. The forged label
# from its first packet (the queue guard drops the flood before the queue, spec §7.7). A lying
# length from its second: its lies pass γ on their claims and the guard's virtual queue counts
# what they claim, so until the agent quarantines the pair (one period, 100 ms, spec §9) they may
# fill the queue; the first second keeps ≥ 95 % of the other 900 ms. Once held, the pair faces
# τ = 1 (spec §9).
KEPT, PERIOD_S, LIE_SECONDS = 0.95, 0.1, 8.5


def assert_every_second(t: Timeline, first: float = KEPT) -> None:
    kept = t.kept()
    assert len(kept) == int(t.seconds), str(t)
    assert kept[0] >= first and min(kept[1:]) >= KEPT, str(t)


def assert_lies_bounded(
    malformed: int, by_pair: dict[int, int], sent: int, well: float, seconds: float = LIE_SECONDS
) -> None:
    """Lying frames reach the frame check and are counted there, all on the flood's pair, until the
    agent quarantines that pair (one 100 ms period); then γ admits them only into what h1 leaves of
    the 20 Mb/s target, because A_j counts them: at most that leftover plus two periods' worth."""
    assert len(by_pair) == 1 and sum(by_pair.values()) == malformed, (by_pair, malformed)
    leftover = 1.05 * (20e6 - well) * seconds / (8 * 1264)
    assert 0 < malformed <= min(sent, leftover + 2 * 0.1 / seconds * sent), (malformed, sent, leftover)


COUNT = """
import socket, sys, time
seconds, ethertype, at, address = float(sys.argv[1]), int(sys.argv[2], 0), int(sys.argv[3]), bytes.fromhex(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
s.bind(("eth0", 0))
s.settimeout(0.2)
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    try:
        f, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    # arriving (not sent by this host) with `address` at `at`: the flood's frames only
    if addr[2] != socket.PACKET_OUTGOING and f[at : at + len(address)] == address:
        n += 1
print(n)
"""


def count_arrivals(live, ethertype: int, at: int, address: bytes, seconds: float):
    """A sniffer on h3's link: the frames of `ethertype` with `address` at byte `at` that arrive
    (whatever h3's kernel then makes of a frame that lies about its length)."""
    argv = live.exec_args("h3", sys.executable, "-c", COUNT, str(seconds), hex(ethertype), str(at), address.hex())
    return live.spawn(argv, stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("label", ["0x0001", "0x4000"])
def test_a_forged_label_from_a_trusted_port_buys_nothing_live(tmp_path, label):
    with live_node(dumbbell(tmp_path, "liveatk", trusted_p2=True), tmp_path) as live:
        t, _ = timeline(live, flood_argv(f"--label={label}", "--stamp", seconds=6.5), 6.5)
    assert_every_second(t)
    # the egress's target is 20 Mb/s: the flood's FFS rate is what h1 leaves, 12 Mb/s
    assert t.rate(SRC_H2, first=1) <= 1.05 * 12e6, str(t)


@pytest.mark.parametrize("ip_len", [20, 0xFFFF])
def test_a_lying_length_delivers_nothing_live(tmp_path, ip_len):
    """h2 floods 1250-byte frames whose IPv4 total length says `ip_len` (a packet socket, so the
    kernel leaves the field alone) at its port's 20 Mb/s line rate. The switch weighs the claimed
    frame (spec §4) and its egress drops every frame whose bytes disagree (spec §7.3), counting it
    in `malformed` and `pair_malformed`; the agent quarantines the pair: h1 keeps its 8 Mb/s, no
    frame of the flood reaches h3's link. 65535 is beyond what p2's MAC admits (IP MTU 1500: at most
    1504, spec §4): the ingress drops every one before it weighs on the pair, so h1 keeps its 8 Mb/s
    from the flood's first second and nothing reaches the frame check."""
    beyond = ip_len > 1500 + 4
    with live_node(dumbbell(tmp_path, "livelen"), tmp_path) as live:
        sniff = count_arrivals(live, 0x0800, 26, socket.inet_aton(SRC_H2), LIE_SECONDS + LEAD + 1.0)
        t, report = timeline(live, flood_argv(f"--ip-len={ip_len}", seconds=LIE_SECONDS), LIE_SECONDS)
        arrived = int(sniff.communicate(timeout=10)[0])
        malformed, by_pair, oversize = lies_counted(live)
    assert_every_second(t, first=KEPT if beyond else KEPT * (1 - PERIOD_S))
    sent = report["sent_packets"]
    assert sent >= 0.9 * 20e6 * LIE_SECONDS / (8 * 1250), sent  # the flood was offered at line rate
    assert arrived == 0, arrived
    if beyond:
        assert (malformed, by_pair) == (0, {}) and 0.99 * sent <= oversize <= sent, (malformed, oversize, sent)
    else:
        assert oversize == 0, oversize
        assert_lies_bounded(malformed, by_pair, sent, t.rate(SRC_H1))


INJECT_V6 = """
import json, socket, sys, time
from ffs.core.frames import ipv6_frame
claim, rate, seconds = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
f = bytearray(ipv6_frame("fd00:2::1", "fd00:3::1", 1210))  # 1264 bytes on the wire
f[18:20] = claim.to_bytes(2, "big")  # the payload length lies
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
gap, t, n, end = len(f) * 8 / rate, time.monotonic(), 0, time.monotonic() + seconds
started_ms = time.monotonic_ns() // 1_000_000
while t < end:
    try:
        s.send(f)
        n += 1
    except BlockingIOError:
        pass
    t += gap
    time.sleep(max(0.0, t - time.monotonic()))
print(json.dumps({"sent_packets": n, "started_ms": started_ms}))
"""


@pytest.mark.parametrize("claim", [0, 20])
def test_a_lying_ipv6_length_delivers_nothing_live(tmp_path, claim):
    """IPv6 over veth: h2 writes 1264-byte IPv6 frames whose payload length says `claim` at its
    port's 20 Mb/s line rate (a packet socket), routed to p3 (an IPv6 route added to the dumbbell).
    h1's 8 Mb/s of IPv4 keeps its share in every second as in the IPv4 case, no IPv6 frame reaches
    h3, the lies are counted on h2's pair and bounded as in the IPv4 case (spec §4, §7.3, §9)."""
    topo_file = dumbbell(tmp_path, "livev6")
    text = topo_file.read_text()
    route = "      - {prefix: 10.0.3.0/24, interface: p3}"
    assert route in text
    topo_file.write_text(text.replace(route, route + '\n      - {prefix: "fd00:3::/64", interface: p3}'))
    with live_node(topo_file, tmp_path) as live:
        dst = socket.inet_pton(socket.AF_INET6, "fd00:3::1")
        sniff = count_arrivals(live, 0x86DD, 38, dst, LIE_SECONDS + LEAD + 1.0)
        argv = [sys.executable, "-c", INJECT_V6, str(claim), "20e6", str(LIE_SECONDS)]
        t, report = timeline(live, argv, LIE_SECONDS)
        arrived = int(sniff.communicate(timeout=10)[0])
        malformed, by_pair, _ = lies_counted(live)
    assert_every_second(t, first=KEPT * (1 - PERIOD_S))
    sent = report["sent_packets"]
    assert sent >= 0.9 * 20e6 * LIE_SECONDS / (8 * 1264), sent
    assert arrived == 0, arrived
    assert_lies_bounded(malformed, by_pair, sent, t.rate(SRC_H1))
