# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/forwarding.p4`: the routes: LPM on the destination, the egress
port; its C twin in `_fastpath.c`: forwarding_apply."""

from __future__ import annotations

from ffs.core import p4names
from ffs.switch.header import Meta
from ffs.switch.packet import (
    Parsed,
)
from ffs.switch.tna import (
    MatchTable,
)


class Forwarding:
    """`FfsIngress.forwarding`: IPv4/IPv6 LPM to an egress port, with a configurable miss action."""

    def __init__(self) -> None:
        self.ipv4_routes = MatchTable(p4names.IPV4_ROUTES)
        self.ipv6_routes = MatchTable(p4names.IPV6_ROUTES)

    @staticmethod
    def route(md: Meta, port: int) -> None:  # stage 0
        md.egress_port = port
        md.routed = 1

    @staticmethod
    def no_route(md: Meta) -> None:  # the miss action: marks it; FfsIngress.fate drops and counts
        md.routed = 0

    def apply(self, p: Parsed, md: Meta) -> None:
        if p.ip_version == 4:
            action, params = self.ipv4_routes.lookup(p.dst)
        elif p.ip_version == 6:
            action, params = self.ipv6_routes.lookup(p.dst)
        else:
            return
        if action == "route":
            self.route(md, params["port"])
        else:
            self.no_route(md)
