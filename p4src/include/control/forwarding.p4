// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: IPv4 / IPv6 LPM to an egress port, with a configurable miss action (stage 0). */
#ifndef _FFS_FORWARDING_P4_
#define _FFS_FORWARDING_P4_

control Forwarding(in headers_t hdr,
                   inout ffs_metadata_t md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action route(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        md.routed = 1;
    }

    /* The default miss action: it only marks the packet unrouted (routed = 0). The drop itself
     * happens in FfsIngress.fate, which counts why (miss_drop). */
    action no_route() {
        md.routed = 0;
    }

    table ipv4_routes {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { route; no_route; }
        default_action = no_route();
        size = IPV4_ROUTES;
    }

    table ipv6_routes {
        key = { hdr.ipv6.dst_addr: lpm @name("dst_addr"); }
        actions = { route; no_route; }
        default_action = no_route();
        size = IPV6_ROUTES;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_routes.apply();
        } else if (hdr.ipv6.isValid()) {
            ipv6_routes.apply();
        }
    }
}

#endif
