# SPDX-License-Identifier: Apache-2.0
"""Raw frames with the FFS/RI shim, built byte by byte (spec §2): the traffic of trace mode, the
live traffic generator and the tests. The scapy layer `ffs.lab.scapy_ffs` decodes the same bytes."""

from __future__ import annotations

import ipaddress
import struct

from ffs.core import constants

DEFAULT_SRC_MAC = bytes.fromhex("020000000001")
DEFAULT_DST_MAC = bytes.fromhex("020000000002")


def ipv4_checksum(header: bytes | bytearray) -> int:
    """The IPv4 header checksum of `header` (its own checksum field, bytes 10-11, skipped)."""
    s = 0
    for i in range(0, len(header), 2):
        if i == 10:
            continue
        s += (header[i] << 8) | header[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def shim(
    rf: int = constants.CODE_ONE,
    flags: int = constants.FLAG_RI,
    next_header: int = 17,
    rri: int = constants.CODE_MAX,
    rri_echo: int = 0,
    version: int = constants.SHIM_VERSION,
) -> bytes:
    return struct.pack("!BBHHH", ((version & 0xF) << 4) | (flags & 0xF), next_header, rf, rri, rri_echo)


def ipv4_frame(
    src: str,
    dst: str,
    ip_len: int,
    ffs: bytes | None = None,
    proto: int = 17,
    options: bytes = b"",
    vlan: int | None = None,
    ttl: int = 64,
    src_mac: bytes = DEFAULT_SRC_MAC,
    dst_mac: bytes = DEFAULT_DST_MAC,
    payload_byte: int = 0,
    frag: int = 0,
) -> bytes:
    """An IPv4 frame whose IP total length is `ip_len` (the shim, if any, counts in it); `frag` is
    the flags and fragment offset word (0x2000: MF)."""
    if len(options) % 4:
        raise ValueError("IPv4 options must be a multiple of 4 bytes")
    ihl = 20 + len(options)
    body_len = ip_len - ihl - (len(ffs) if ffs else 0)
    if body_len < 0:
        raise ValueError(f"ip_len {ip_len} too small for the headers")
    proto_field = constants.IP_PROTO_FFS if ffs is not None else proto
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x40 | (ihl // 4),
            0,
            ip_len,
            0,
            frag,
            ttl,
            proto_field,
            0,
            ipaddress.IPv4Address(src).packed,
            ipaddress.IPv4Address(dst).packed,
        )
        + options
    )
    csum = ipv4_checksum(hdr)
    hdr[10:12] = struct.pack("!H", csum)
    l2 = dst_mac + src_mac
    if vlan is not None:
        l2 += struct.pack("!HH", 0x8100, vlan & 0xFFF)
    l2 += b"\x08\x00"
    body = bytes([payload_byte]) * body_len
    if proto == 17 and body_len >= 8:  # a UDP header so that real hosts accept the datagram
        body = struct.pack("!HHHH", 40000, 5001, body_len, 0) + body[8:]
    frame = l2 + bytes(hdr) + (ffs or b"") + body
    return frame + bytes(max(0, 60 - len(frame)))


def lie_ip_len(frame: bytes, ip_len: int, l3: int = 14) -> bytes:
    """The IPv4 frame with its total length field set to `ip_len` whatever its size (the header
    checksum recomputed, so only the length lies): the attack of docs/security.md."""
    b = bytearray(frame)
    ihl = (b[l3] & 0xF) * 4
    b[l3 + 2 : l3 + 4] = struct.pack("!H", ip_len)
    b[l3 + 10 : l3 + 12] = b"\0\0"
    b[l3 + 10 : l3 + 12] = struct.pack("!H", ipv4_checksum(b[l3 : l3 + ihl]))
    return bytes(b)


def ipv6_frame(
    src: str,
    dst: str,
    payload_len: int,
    ffs: bytes | None = None,
    proto: int = 17,
    vlan: int | None = None,
    src_mac: bytes = DEFAULT_SRC_MAC,
    dst_mac: bytes = DEFAULT_DST_MAC,
) -> bytes:
    nh = constants.IP_PROTO_FFS if ffs is not None else proto
    body_len = payload_len - (len(ffs) if ffs else 0)
    if body_len < 0:
        raise ValueError("payload_len too small for the shim")
    hdr = struct.pack(
        "!IHBB16s16s",
        6 << 28,
        payload_len,
        nh,
        64,
        ipaddress.IPv6Address(src).packed,
        ipaddress.IPv6Address(dst).packed,
    )
    l2 = dst_mac + src_mac
    if vlan is not None:
        l2 += struct.pack("!HH", 0x8100, vlan & 0xFFF)
    l2 += b"\x86\xdd"
    frame = l2 + hdr + (ffs or b"") + bytes(body_len)
    return frame + bytes(max(0, 60 - len(frame)))
