# SPDX-License-Identifier: Apache-2.0
"""The scapy layer and the byte builder of ffs.core.frames agree on the shim's bytes (spec §2)."""

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from ffs.core import constants
from ffs.core.frames import ipv4_frame, ipv6_frame, shim
from ffs.lab.scapy_ffs import FFS


def test_layout_and_flags():
    b = bytes(FFS(flags="R+D", nh=17, rf=0x8123, rri=0x7000, rri_echo=0xBEEF))
    assert b == bytes([0x1A, 17, 0x81, 0x23, 0x70, 0x00, 0xBE, 0xEF])
    assert b == shim(0x8123, constants.FLAG_RI | constants.FLAG_DEFAULTED, 17, 0x7000, 0xBEEF)
    # every flag at its bit of the low nibble, version in the high nibble
    assert bytes(FFS(flags="E", nh=6))[:2] == bytes([0x14, 6])
    assert bytes(FFS(flags="reserved", version=2, nh=6))[:2] == bytes([0x21, 6])
    # defaults: version 1, no flags, rf = 1.0, rri = infinity (a source's initial value)
    assert bytes(FFS(nh=17)) == bytes([0x10, 17, 0x80, 0x00, 0xFF, 0xFF, 0x00, 0x00])


def test_next_header_from_the_payload_and_ip_protocol_253():
    p = IP(src="10.0.1.1", dst="10.0.3.1") / FFS(rf=0x8080) / UDP(sport=1, dport=2) / b"x"
    raw = bytes(p)
    assert raw[9] == 253 and raw[21] == 17  # IP protocol 253; the shim's next header is UDP
    assert (raw[2] << 8 | raw[3]) == 20 + 8 + 8 + 1  # the shim counts in total_len
    assert bytes(IP() / FFS() / TCP())[21] == 6
    assert bytes(IP() / FFS() / ICMP())[21] == 1
    assert bytes(IPv6() / FFS() / UDP())[40 + 1] == 17 and bytes(IPv6() / FFS())[6] == 253
    assert bytes(IP() / FFS())[21] == 59  # nothing after the shim: "no next header"
    assert bytes(IP() / FFS() / Raw(b"abc"))[21] == 59


def test_decodes_frames_built_by_hand():
    p = Ether(ipv4_frame("10.0.1.1", "10.0.3.1", 200, shim(0x8080, constants.FLAG_RI)))
    assert p[IP].proto == 253 and p[FFS].rf == 0x8080 and p[FFS].flags.R and not p[FFS].flags.D
    assert p[FFS].nh == 17 and p[FFS].rri == constants.CODE_MAX and UDP in p
    assert len(p[UDP]) == 200 - 20 - 8
    p6 = Ether(ipv6_frame("fc00::1", "fd00::1", 200, shim(0x7F00, 0)))
    assert p6[IPv6].nh == 253 and p6[FFS].rf == 0x7F00 and UDP in p6
    tagged = Ether(ipv4_frame("10.0.1.1", "10.0.3.1", 100, shim(0x8000, constants.FLAG_DEFAULTED, 6), vlan=12))
    assert tagged[Dot1Q].vlan == 12 and tagged[FFS].flags.D and TCP in tagged


def test_payload_layer_follows_next_header():
    assert ICMP in IP(bytes(IP() / FFS() / ICMP()))
    assert ICMPv6EchoRequest in IPv6(bytes(IPv6() / FFS() / ICMPv6EchoRequest()))
    unknown = IP(bytes(IP() / FFS(nh=200) / Raw(b"\x01\x02")))
    assert unknown[FFS].nh == 200 and unknown[Raw].load == b"\x01\x02"
    # a non-first fragment is not parsed as a shim (its bytes are not a header)
    frag = IP(bytes(IP(proto=253, frag=10) / Raw(bytes(8))))
    assert FFS not in frag


def test_round_trip_is_byte_exact():
    frame = ipv4_frame(
        "10.0.2.1", "10.0.3.1", 1250, shim(0x7A31, constants.FLAG_RI | constants.FLAG_ECHO, 17, 0x8123, 0x9000)
    )
    assert bytes(Ether(frame)) == frame
