"""The scapy layer and the byte builder of ffs.frames agree on the shim's bytes (spec §2)."""

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from ffs import constants as C
from ffs.frames import ipv4_frame, ipv6_frame, shim
from ffs.scapy_ffs import FFS


def test_layout_and_flags():
    b = bytes(FFS(flags="R+D", nh=17, rf=0x8123, rri=0x7000, rri_echo=0xBEEF))
    assert b == bytes([0x1A, 17, 0x81, 0x23, 0x70, 0x00, 0xBE, 0xEF])
    assert b == shim(0x8123, C.FLAG_RI | C.FLAG_DEFAULTED, 17, 0x7000, 0xBEEF)


def test_decodes_frames_built_by_hand():
    p = Ether(ipv4_frame("10.0.1.1", "10.0.3.1", 200, shim(0x8080, C.FLAG_RI)))
    assert p[IP].proto == 253 and p[FFS].rf == 0x8080 and p[FFS].flags.R and UDP in p
    p6 = Ether(ipv6_frame("fc00::1", "fd00::1", 200, shim(0x7F00, 0)))
    assert p6[IPv6].nh == 253 and p6[FFS].rf == 0x7F00
