# SPDX-License-Identifier: Apache-2.0
"""Parser and deparser of the software switch (docs/spec.md §2, §7.1): offsets into the frame.

The parser never copies headers: it records where each one sits in the frame, and the controls
rewrite fields in place (a bytearray). Insertion and stripping of the shim move bytes and fix the IP
lengths and the IPv4 header checksum, exactly as the P4 deparser does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffs.core import constants
from ffs.core.frames import ipv4_checksum

ETH_LEN = 14
VLAN_LEN = 4
IPV6_LEN = 40
ETHERTYPE_VLAN = constants.ETHERTYPE_VLAN
ETHERTYPE_IPV4 = constants.ETHERTYPE_IPV4
ETHERTYPE_IPV6 = constants.ETHERTYPE_IPV6


class ParseError(Exception):
    """The frame cannot be parsed as the spec requires (a truncated shim or IP header): drop."""


@dataclass(slots=True)
class Parsed:
    l3: int = 0  # offset of the IP header, 0 for non-IP
    ip_version: int = 0  # 4, 6 or 0
    ihl_bytes: int = 0  # IPv4 header length including options
    shim: int = 0  # offset of the FFS shim, 0 when absent
    ffs_state: int = constants.FFS_STATE_NONE
    l3_len: int = 0  # the IP length field: IPv4 total_len, IPv6 payload_len (§4)
    vlan: bool = False  # an 802.1Q tag before the EtherType
    frag: bool = False  # an IPv4 fragment: MF set or a non-zero offset (spec §2)
    dst: int = 0  # destination address as an integer


def parse(frame: bytes | bytearray, ingress: bool = True) -> Parsed:
    """FfsIngressParser, or FfsEgressParser with `ingress` False: the egress parser extracts an
    IPv6 shim whatever payload_len says, and no IPv4 fragment's shim. Neither checks IPv4
    total_len: the ingress does that in its `ipv4_shim_len` table (the pipeline), the egress in `frame_check`."""
    n = len(frame)
    p = Parsed()
    if n < ETH_LEN:
        raise ParseError("frame shorter than an Ethernet header")
    off = 12
    etype = (frame[off] << 8) | frame[off + 1]
    off = ETH_LEN
    if etype == ETHERTYPE_VLAN:
        if n < off + VLAN_LEN:
            raise ParseError("truncated 802.1Q tag")
        etype = (frame[off + 2] << 8) | frame[off + 3]
        off += VLAN_LEN
        p.vlan = True
    if etype == ETHERTYPE_IPV4:
        if n < off + 20:  # like the P4 parser, the version field is not checked
            raise ParseError("truncated IPv4 header")
        ihl = (frame[off] & 0x0F) * 4
        if ihl < 20 or n < off + ihl:
            raise ParseError("IPv4 header length out of range")  # IHL < 5, or options cut off
        p.l3, p.ip_version, p.ihl_bytes = off, 4, ihl
        p.l3_len = (frame[off + 2] << 8) | frame[off + 3]
        p.dst = int.from_bytes(frame[off + 16 : off + 20], "big")
        frag = ((frame[off + 6] << 8) | frame[off + 7]) & (constants.IPV4_MF | 0x1FFF)
        p.frag = frag != 0
        # a non-first fragment's bytes are payload; the egress reads no fragment's shim, so
        # none is stripped (spec §2)
        if frame[off + 9] == constants.IP_PROTO_FFS and (frag in (0, constants.IPV4_MF) if ingress else not frag):
            if n < off + ihl + constants.SHIM_LEN:
                raise ParseError("truncated FFS shim")
            p.shim = off + ihl
    elif etype == ETHERTYPE_IPV6:
        if n < off + IPV6_LEN:
            raise ParseError("truncated IPv6 header")
        p.l3, p.ip_version = off, 6
        payload = (frame[off + 4] << 8) | frame[off + 5]
        p.l3_len = payload  # the parser copies the field; stage 0 adds the headers (spec §4)
        p.dst = int.from_bytes(frame[off + 24 : off + 40], "big")
        if frame[off + 6] == constants.IP_PROTO_FFS:
            if n < off + IPV6_LEN + constants.SHIM_LEN or (ingress and payload < constants.SHIM_LEN):
                raise ParseError("truncated FFS shim")
            p.shim = off + IPV6_LEN
    if p.shim:
        b0 = frame[p.shim]
        ok = (b0 >> 4) == constants.SHIM_VERSION and not (b0 & constants.FLAG_RESERVED)
        p.ffs_state = constants.FFS_STATE_VALID if ok else constants.FFS_STATE_OPAQUE
    return p


def shim_get16(frame: bytearray, shim: int, field_offset: int) -> int:
    return (frame[shim + field_offset] << 8) | frame[shim + field_offset + 1]


def shim_set16(frame: bytearray, shim: int, field_offset: int, value: int) -> None:
    frame[shim + field_offset] = value >> 8
    frame[shim + field_offset + 1] = value & 0xFF


RF_OFF, RRI_OFF, ECHO_OFF = 2, 4, 6


def _fix_ipv4(frame: bytearray, p: Parsed, delta: int, proto: int) -> None:
    l3 = p.l3
    total = ((frame[l3 + 2] << 8) | frame[l3 + 3]) + delta
    frame[l3 + 2], frame[l3 + 3] = (total >> 8) & 0xFF, total & 0xFF
    frame[l3 + 9] = proto
    csum = ipv4_checksum(frame[l3 : l3 + p.ihl_bytes])
    frame[l3 + 10], frame[l3 + 11] = csum >> 8, csum & 0xFF


def _fix_ipv6(frame: bytearray, p: Parsed, delta: int, nh: int) -> None:
    l3 = p.l3
    payload = ((frame[l3 + 4] << 8) | frame[l3 + 5]) + delta
    frame[l3 + 4], frame[l3 + 5] = (payload >> 8) & 0xFF, payload & 0xFF
    frame[l3 + 6] = nh


def insert_shim(frame: bytearray, p: Parsed, rf: int) -> None:
    """Put a shim right after the IP header: version 1, flag D, the old protocol, rf, rri = ∞."""
    at = p.l3 + (p.ihl_bytes if p.ip_version == 4 else IPV6_LEN)
    proto_off = p.l3 + (9 if p.ip_version == 4 else 6)
    old = frame[proto_off]
    shim = bytes([(constants.SHIM_VERSION << 4) | constants.FLAG_DEFAULTED, old, rf >> 8, rf & 0xFF, 0xFF, 0xFF, 0, 0])
    frame[at:at] = shim
    if p.ip_version == 4:
        _fix_ipv4(frame, p, constants.SHIM_LEN, constants.IP_PROTO_FFS)
    else:
        _fix_ipv6(frame, p, constants.SHIM_LEN, constants.IP_PROTO_FFS)
    p.shim = at


def strip_shim(frame: bytearray, p: Parsed) -> None:
    """Remove the shim: the IP protocol / next header takes the shim's `next header` again."""
    nh = frame[p.shim + 1]
    del frame[p.shim : p.shim + constants.SHIM_LEN]
    if p.ip_version == 4:
        _fix_ipv4(frame, p, -constants.SHIM_LEN, nh)
    else:
        _fix_ipv6(frame, p, -constants.SHIM_LEN, nh)
    p.shim = 0
