// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino example: FFS composed with a richer forwarding program, to show the library's
 * interface (p4src/include/control/ffs_core.p4) and to measure what FFS adds to a switch that
 * already forwards (docs/pipeline.md, "FFS as a P4 library").
 *
 * Forwarding: 802.1Q port/VLAN to bridge domain, L2 bridging by (bd, destination MAC), L3
 * routing (IPv4/IPv6 LPM to a next hop that rewrites the MACs and decrements the TTL / hop
 * limit) for frames addressed to the router MAC of their bd, and an ingress ACL. Build with
 * -DNO_FFS for the forwarding alone:
 *
 *     bf-p4c --target tofino --arch tna p4src/examples/l2l3_acl.p4            (with FFS)
 *     bf-p4c --target tofino --arch tna -DNO_FFS p4src/examples/l2l3_acl.p4   (without)
 *     make example TARGET=tofino2                                               (both, T2NA)
 *
 * Access ports: a frame that arrives tagged on one is bridged untagged (its tag popped), and
 * a port may push a tag onto the untagged frames it sends (egress_vlan). Both change the frame's
 * length after it arrived, which the program declares to FFS in md.l2_change (docs/pipeline.md,
 * "FFS as a P4 library"): FFS's egress checks each frame's bytes against its IP length.
 *
 * Unknown unicast is dropped, not flooded (a flood needs multicast groups; nothing here
 * depends on them). The egress deparser rewrites the IPv4 checksum of every IPv4 frame: routed
 * frames have a new TTL, and FFS may have inserted a shim.
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2 || defined(TOFINO2)
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#define FFS_HOST_METADATA \
    bit<12> bd;           /* bridge domain of the ingress port and VLAN */ \
    bit<16> nexthop; \
    bit<1>  acl_deny; \
    bit<1>  access;       /* an access port: a tag its frames arrive with is popped */

#include "../include/ffs_lib.p4"

typedef bit<16> nexthop_t;

control L2L3Acl(inout headers_t hdr,
                inout ffs_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) acl_counter;

    /* --- ports and VLANs ------------------------------------------------------------------ */
    action set_bd(bit<12> bd) {
        md.bd = bd;
    }

    action port_vlan_miss() {
        md.bd = 0;
    }

    action set_bd_access(bit<12> bd) {
        md.bd = bd;
        md.access = 1;
    }

    table port_vlan {
        key = {
            ig_intr_md.ingress_port: exact @name("ingress_port");
            hdr.vlan.isValid():      exact @name("tagged");
            hdr.vlan.vid:            ternary @name("vid");
        }
        actions = { set_bd; set_bd_access; port_vlan_miss; }
        default_action = port_vlan_miss();
        size = 1024;
    }

    /* the frame leaves 4 bytes shorter than it arrived: declared, so FFS's frame check agrees */
    action pop_tag() {
        hdr.ethernet.ether_type = hdr.vlan.ether_type;
        hdr.vlan.setInvalid();
        md.l2_change = L2_TAG_POPPED;
    }

    /* an untagged arrival leaves tagged, 4 bytes longer: declared likewise */
    action push_tag(bit<12> vid) {
        hdr.vlan.setValid();
        hdr.vlan.pcp = 0;
        hdr.vlan.dei = 0;
        hdr.vlan.vid = vid;
        hdr.vlan.ether_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = ETHERTYPE_VLAN;
        md.l2_change = L2_TAG_PUSHED;
    }

    action no_tag() {
    }

    table egress_vlan {
        key = { ig_tm_md.ucast_egress_port: exact @name("egress_port"); }
        actions = { push_tag; no_tag; }
        default_action = no_tag();
        size = 512;
    }


    /* --- L2 ------------------------------------------------------------------------------- */
    action l2_forward(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        md.routed = 1;
    }

    action l2_miss() {
        md.routed = 0;  /* unknown unicast: dropped (no flooding in this example) */
    }

    table l2_fdb {
        key = {
            md.bd:                exact @name("bd");
            hdr.ethernet.dst_addr: exact @name("dst_addr");
        }
        actions = { l2_forward; l2_miss; }
        default_action = l2_miss();
        size = 4096;
    }

    table router_macs {
        key = {
            md.bd:                 exact @name("bd");
            hdr.ethernet.dst_addr: exact @name("dst_addr");
        }
        actions = { NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* --- L3 ------------------------------------------------------------------------------- */
    action set_nexthop(nexthop_t nexthop) {
        md.nexthop = nexthop;
    }

    action l3_miss() {
        md.nexthop = 0;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm @name("dst_addr"); }
        actions = { set_nexthop; l3_miss; }
        default_action = l3_miss();
        size = 4096;
    }

    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr: lpm @name("dst_addr"); }
        actions = { set_nexthop; l3_miss; }
        default_action = l3_miss();
        size = 1024;
    }

    action route_v4(PortId_t port, bit<48> smac, bit<48> dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        md.routed = 1;
    }

    action route_v6(PortId_t port, bit<48> smac, bit<48> dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
        md.routed = 1;
    }

    action nexthop_miss() {
        md.routed = 0;
    }

    table nexthops {
        key = {
            md.nexthop:         exact @name("nexthop");
            hdr.ipv4.isValid(): exact @name("ipv4");
        }
        actions = { route_v4; route_v6; nexthop_miss; }
        default_action = nexthop_miss();
        size = 1024;
    }

    /* --- ACL ------------------------------------------------------------------------------ */
    action permit() {
        acl_counter.count();
    }

    action deny() {
        acl_counter.count();
        md.acl_deny = 1;
    }

    table acl {
        key = {
            ig_intr_md.ingress_port: ternary @name("ingress_port");
            hdr.ethernet.ether_type: ternary @name("ether_type");
            hdr.ipv4.src_addr:       ternary @name("ipv4_src");
            hdr.ipv4.dst_addr:       ternary @name("ipv4_dst");
            hdr.ipv4.protocol:       ternary @name("ipv4_protocol");
            hdr.ipv6.next_hdr:       ternary @name("ipv6_next_hdr");
        }
        actions = { permit; deny; }
        default_action = permit();
        counters = acl_counter;
        size = 512;
    }

    apply {
        port_vlan.apply();
        acl.apply();
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        } else if (hdr.ipv6.isValid()) {
            ipv6_lpm.apply();
        }
        /* a denied packet is not forwarded: routed stays 0 and FFS counts it with no state */
        if (md.acl_deny == 0) {
            if (router_macs.apply().hit) {
                /* TTL or hop limit 1 expires here: not forwarded (no ICMP in this example) */
                if ((hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) || (hdr.ipv6.isValid() && hdr.ipv6.hop_limit > 1)) {
                    nexthops.apply();
                }
            } else {
                l2_fdb.apply();
            }
        }
        /* a tag is popped or pushed only where the frame has one to pop or none yet (md.vlan: it
         * arrived tagged): the declared change is the change made */
        if (md.access == 1 && hdr.vlan.isValid()) {
            pop_tag();
        } else if (md.vlan == 0) {
            egress_vlan.apply();
        }
    }
}

#ifndef NO_FFS
FFS_INGRESS_PRAGMAS
#else
@pa_auto_init_metadata
#endif
control SwitchIngress(inout headers_t hdr,
                      inout ffs_metadata_t md,
                      in ingress_intrinsic_metadata_t ig_intr_md,
                      in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    L2L3Acl() forwarding;
#ifndef NO_FFS
    @name(".FfsIngress") FfsCore() ffs;
#endif

    apply {
        forwarding.apply(hdr, md, ig_intr_md, ig_tm_md);
#ifndef NO_FFS
        ffs.apply(hdr, md, ig_intr_md, ig_prsr_md, ig_dprsr_md, ig_tm_md);
#else
        if (md.routed == 0 || ig_prsr_md.parser_err != 0) {
            ig_dprsr_md.drop_ctl = 1;
        }
        hdr.bridge.setValid();  /* the same bridge the FFS egress parser reads */
        hdr.bridge.l2_change = L2_SAME;
        hdr.bridge.grown = 0;
        hdr.bridge.managed = 0;
        hdr.bridge.pid = 0;
#endif
    }
}

control SwitchEgress(inout headers_t hdr,
                     inout egress_metadata_t md,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                     inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
#ifndef NO_FFS
    @name(".FfsEgress") FfsEgressCore() ffs;
#endif

    apply {
#ifndef NO_FFS
        ffs.apply(hdr, md, eg_intr_md, eg_dprsr_md);
#else
        hdr.bridge.setInvalid();
#endif
    }
}

/* Every IPv4 frame's checksum is rewritten: routing changed its TTL, FFS may have inserted a shim. */
control SwitchEgressDeparser(packet_out pkt,
                             inout headers_t hdr,
                             in egress_metadata_t md,
                             in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        hdr.ipv4.hdr_checksum = ipv4_checksum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
            hdr.ipv4_options[0].data, hdr.ipv4_options[1].data, hdr.ipv4_options[2].data,
            hdr.ipv4_options[3].data, hdr.ipv4_options[4].data, hdr.ipv4_options[5].data,
            hdr.ipv4_options[6].data, hdr.ipv4_options[7].data, hdr.ipv4_options[8].data,
            hdr.ipv4_options[9].data});
        pkt.emit(hdr);
    }
}

Pipeline(FfsIngressParser(),
         SwitchIngress(),
         FfsIngressDeparser(),
         FfsEgressParser(),
         SwitchEgress(),
         SwitchEgressDeparser()) pipe;

Switch(pipe) main;
