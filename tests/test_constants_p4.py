# SPDX-License-Identifier: Apache-2.0
"""p4src/include/define.p4 and ffs.constants carry the same numbers (one contract, two languages)."""

from pathlib import Path

from ffs import constants
from p4schema import read

P4 = Path(__file__).resolve().parent.parent / "p4src"

SHARED = [
    "IP_PROTO_FFS",
    "IP_PROTO_HOPOPT",
    "SHIM_VERSION",
    "FLAG_RI",
    "FLAG_ECHO",
    "FLAG_DEFAULTED",
    "FLAG_RESERVED",
    "CODE_MAX",
    "RF_CODE_MIN",
    "RF_CODE_MAX",
    "D_OFFSET",
    "NUM_PAIRS",
    "PID_BITS",
    "NUM_PORTS",
    "IPV4_ROUTES",
    "IPV6_ROUTES",
    "WEIGHT_KEYS",
    "EVENT_COUNTER_SIZE",
    "EVENT_PARSE_ERROR",
    "EVENT_ROUTE_MISS",
    "EVENT_OPAQUE_SHIM",
    "EVENT_NO_PAIR",
    "EVENT_FFS_DROP",
    "EVENT_NOT_INSERTED",
    "FFS_STATE_NONE",
    "FFS_STATE_VALID",
    "FFS_STATE_OPAQUE",
    "ETH_HDR_LEN",
    "VLAN_TAG_LEN",
    "IPV6_HDR_LEN",
    "FCS_LEN",
    "MIN_FRAME",
    "SHIM_LEN",
    "PAIRS_TABLE_SIZE",
    "SHIM_ROOM_MAX",
    "SHIM_ROOM_SIZE",
    "LTAU_MAX",
    "EVENT_GUARD_DROP",
    "GUARD_RF_CODE",
    "QHI_OFF",
    "TIMER_APP_ID",
    "PKTGEN_PORT",
    "PKTGEN_PORT_TOFINO2",
]


def test_runt_mask_is_the_ethernet_minimum():
    assert (constants.MIN_FRAME + constants.FCS_LEN) & (
        constants.MIN_FRAME + constants.FCS_LEN - 1
    ) == 0  # a power of two


def test_defines_match_constants():
    d = read(P4).defines
    for name in SHARED:
        assert int(d[name], 0) == getattr(constants, name), name
    assert int(d["CODE_ONE"], 0) == constants.CODE_ONE
