# SPDX-License-Identifier: Apache-2.0
"""What the transfer puts on the wire after the IPv4 header: the FFS/RI shim (docs/spec.md §2, built
by `ffs.core.frames.shim`), a UDP header, and one of two messages:

    DATA  type 1 | pad | packet payload (16) | transfer id (32) | seq (32) | total bytes (64) | payload
    ACK   type 2 | n blocks | pad (16)        | transfer id (32) | cum (32) | echo seq (32)
          | n × (start (32), end (32))

`packet payload` is the transfer's payload per packet (the last packet may carry less), so a
receiver knows the packet count from any packet; `seq` numbers packets from 0; `cum` says every packet below it arrived;
blocks are half-open ranges
[start, end) above `cum` that arrived (selective acknowledgements). `echo seq` names the data packet
whose `rri` the ACK's shim returns in `rri_echo` with flag E, so the source knows when it sent it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ffs.core import constants
from ffs.core.frames import shim

IP_HDR = 20
UDP_HDR = 8
DATA = 1
ACK = 2
_DATA = struct.Struct("!BxHIIQ")
_ACK = struct.Struct("!BBxxIII")
_BLOCK = struct.Struct("!II")
DATA_HDR = _DATA.size  # 20
MAX_BLOCKS = 4
OVERHEAD = IP_HDR + constants.SHIM_LEN + UDP_HDR + DATA_HDR  # IP bytes of a data packet beyond its payload


class WireError(ValueError):
    """A datagram that is not one of ours."""


@dataclass(frozen=True)
class Shim:
    flags: int
    next_header: int
    rf: int
    rri: int
    rri_echo: int


def parse_shim(b: bytes) -> Shim:
    if len(b) < constants.SHIM_LEN:
        raise WireError("truncated shim")
    vf, nh, rf, rri, echo = struct.unpack_from("!BBHHH", b)
    if vf >> 4 != constants.SHIM_VERSION:
        raise WireError(f"shim version {vf >> 4}")
    return Shim(vf & 0xF, nh, rf, rri, echo)


@dataclass(frozen=True)
class Data:
    xfer: int
    seq: int
    total: int  # bytes of the whole transfer
    psize: int  # payload bytes per packet (all but the last)
    payload: bytes


@dataclass(frozen=True)
class Ack:
    xfer: int
    cum: int
    echo_seq: int
    blocks: tuple[tuple[int, int], ...] = ()


def udp(sport: int, dport: int, body: bytes) -> bytes:
    """A UDP header (checksum 0: none, legal over IPv4) and the body."""
    return struct.pack("!HHHH", sport, dport, UDP_HDR + len(body), 0) + body


def data_datagram(d: Data, sport: int, dport: int) -> bytes:
    """Shim (R flag: nodes update rri, initialised to ∞) + UDP + DATA: what follows the IPv4 header."""
    body = _DATA.pack(DATA, d.psize, d.xfer, d.seq, d.total) + d.payload
    return shim(constants.CODE_ONE, constants.FLAG_RI, 17) + udp(sport, dport, body)


def ack_datagram(a: Ack, rri_echo: int | None, sport: int, dport: int) -> bytes:
    """Shim (flag E with the echoed rri when there is one; no R: the reverse path is not asked) +
    UDP + ACK."""
    blocks = a.blocks[:MAX_BLOCKS]
    body = _ACK.pack(ACK, len(blocks), a.xfer, a.cum, a.echo_seq) + b"".join(_BLOCK.pack(s, e) for s, e in blocks)
    flags = constants.FLAG_ECHO if rri_echo is not None else 0
    return shim(constants.CODE_ONE, flags, 17, rri_echo=rri_echo or 0) + udp(sport, dport, body)


@dataclass(frozen=True)
class Datagram:
    src: str
    sport: int
    dport: int
    shim: Shim
    msg: Data | Ack


def parse_ip(packet: bytes, src: str) -> Datagram:
    """An IPv4 packet as a raw socket of protocol 253 hands it over (IP header included)."""
    if len(packet) < IP_HDR or packet[0] >> 4 != 4:
        raise WireError("not IPv4")
    ihl = (packet[0] & 0xF) * 4
    if packet[9] != constants.IP_PROTO_FFS:
        raise WireError("no shim")
    return parse_after_ip(packet[ihl:], src)


def parse_after_ip(b: bytes, src: str = "") -> Datagram:
    sh = parse_shim(b)
    if sh.next_header != 17 or len(b) < constants.SHIM_LEN + UDP_HDR + 1:
        raise WireError("not UDP after the shim")
    sport, dport = struct.unpack_from("!HH", b, constants.SHIM_LEN)
    body = b[constants.SHIM_LEN + UDP_HDR :]
    kind = body[0]
    if kind == DATA and len(body) >= DATA_HDR:
        _, n, xfer, seq, total = _DATA.unpack_from(body)
        msg: Data | Ack = Data(xfer, seq, total, n, body[DATA_HDR:])
    elif kind == ACK and len(body) >= _ACK.size:
        _, nb, xfer, cum, echo = _ACK.unpack_from(body)
        if len(body) < _ACK.size + nb * _BLOCK.size:
            raise WireError("truncated ACK")
        blocks = tuple(_BLOCK.unpack_from(body, _ACK.size + k * _BLOCK.size) for k in range(nb))
        msg = Ack(xfer, cum, echo, blocks)
    else:
        raise WireError("not a transfer message")
    return Datagram(src, sport, dport, sh, msg)
