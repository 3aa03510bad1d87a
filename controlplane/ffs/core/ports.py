# SPDX-License-Identifier: Apache-2.0
"""Front-panel ports of a Tofino switch, as BF-Runtime's `$PORT` table holds them.

Nothing forwards on a Tofino until its ports are added (speed, FEC, autonegotiation) and enabled.
An interface of the topology that names its front-panel port (`fp: 1/0`) gets a port whose speed
follows from its `capacity`; FEC and autonegotiation have per-speed defaults an interface may
override (`fec`, `autoneg`); its MAC's frame limit (`$TX_MTU`, `$RX_MTU`) follows from its IP
`mtu` (`ffs.core.tables.max_frame_len`), so the port drops what the topology says it does not carry.
`$PORT_STR_INFO` maps the front-panel name to the device port.
tofino-model adds every port by itself (at 10G, disabled), the software switch has none.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffs.core.tables import max_frame_len

G = 1e9
# capacity (bit/s) -> BF-RT $SPEED: the speeds Tofino 1 ports take
SPEEDS = {
    1 * G: "BF_SPEED_1G",
    10 * G: "BF_SPEED_10G",
    25 * G: "BF_SPEED_25G",
    40 * G: "BF_SPEED_40G",
    50 * G: "BF_SPEED_50G",
    100 * G: "BF_SPEED_100G",
}
FECS = {"none": "BF_FEC_TYP_NONE", "fc": "BF_FEC_TYP_FIRECODE", "rs": "BF_FEC_TYP_REED_SOLOMON"}
AUTONEG = {"default": "PM_AN_DEFAULT", "on": "PM_AN_FORCE_ENABLE", "off": "PM_AN_FORCE_DISABLE"}
# FEC by speed unless an interface says otherwise: 100G links expect Reed-Solomon (clause 91);
# 10G and 40G have none; 25G and 50G links vary with the optics, none is the common default
DEFAULT_FEC = {100 * G: "rs"}
# a Tofino MAC's frame limit, FCS included: the SDE's default for $TX_MTU and $RX_MTU and its largest
FRAME_LIMIT_MAX = 10240


class PortError(ValueError):
    """A port the switch cannot bring up as the topology asks; the message is one line."""


@dataclass(frozen=True)
class PortSpec:
    """One `$PORT` entry: the device port, its speed, FEC and autonegotiation, enabled or not, and
    the longest frame (FCS included) its MAC receives and sends."""

    dev_port: int
    speed: str
    fec: str
    autoneg: str
    enable: bool = True
    frame_limit: int = FRAME_LIMIT_MAX


@dataclass(frozen=True)
class PortState:
    spec: PortSpec
    up: bool  # $PORT_UP: the link is up


def speed_of(capacity_bps: float) -> str:
    s = SPEEDS.get(capacity_bps)
    if s is None:
        have = ", ".join(f"{int(c / G)}G" for c in SPEEDS)
        raise PortError(f"a front-panel port runs at {have}: capacity {capacity_bps / G:g} Gbit/s is none of them")
    return s


def fec_of(capacity_bps: float, fec: str | None) -> str:
    name = fec if fec is not None else DEFAULT_FEC.get(capacity_bps, "none")
    if name not in FECS:
        raise PortError(f"fec must be one of {', '.join(FECS)}, got {name!r}")
    return FECS[name]


def autoneg_of(autoneg: str | None) -> str:
    name = autoneg if autoneg is not None else "default"
    if name not in AUTONEG:
        raise PortError(f"autoneg must be one of {', '.join(AUTONEG)}, got {name!r}")
    return AUTONEG[name]


def frame_limit_of(mtu: int | None) -> int:
    if mtu is None:
        return FRAME_LIMIT_MAX
    limit = max_frame_len(mtu)
    if limit > FRAME_LIMIT_MAX:
        raise PortError(
            f"a front-panel port carries frames up to {FRAME_LIMIT_MAX} bytes: mtu {mtu} needs {limit} "
            f"(at most mtu {mtu - (limit - FRAME_LIMIT_MAX)})"
        )
    return limit


def spec(
    dev_port: int, capacity_bps: float, fec: str | None = None, autoneg: str | None = None, mtu: int | None = None
) -> PortSpec:
    return PortSpec(
        dev_port,
        speed_of(capacity_bps),
        fec_of(capacity_bps, fec),
        autoneg_of(autoneg),
        frame_limit=frame_limit_of(mtu),
    )


def pipe_of(dev_port: int) -> int:
    """The pipe of a Tofino device port (bits 8:7): a pair's per-pair state lives in the pipe of its
    ingress port, an egress's counters in the pipe of the egress port."""
    return (dev_port >> 7) & 0x3


def valid_fp(fp: str) -> bool:
    """A front-panel name as $PORT_STR_INFO has them: connector/lane, e.g. 1/0 or 33/3."""
    parts = fp.split("/")
    return len(parts) == 2 and all(p.isdigit() for p in parts)
