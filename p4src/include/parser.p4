/* ffs-tofino: parsers and deparsers (docs/spec.md §2, §7.1).
 *
 * Every metadata field is assigned at most once along any parser path (a Tofino rule), so each
 * terminal state sets the label the pipeline will use. */
#ifndef _FFS_PARSER_P4_
#define _FFS_PARSER_P4_

#include "header.p4"

parser FfsIngressParser(packet_in pkt,
                        out headers_t hdr,
                        out ffs_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        md.port_md = port_metadata_unpack<port_metadata_t>(pkt);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: non_ip;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: non_ip;
        }
    }

    state non_ip {
        md.rf16 = CODE_ONE;
        md.rf = CODE_ONE;
        md.rri = CODE_MAX;
        transition accept;
    }

    /* IPv4: the options are extracted word by word (IHL 6..15 -> 1..10 words). */
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        md.l3_len = hdr.ipv4.total_len;
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_l4;
            6: ipv4_opt_1;
            7: ipv4_opt_2;
            8: ipv4_opt_3;
            9: ipv4_opt_4;
            10: ipv4_opt_5;
            11: ipv4_opt_6;
            12: ipv4_opt_7;
            13: ipv4_opt_8;
            14: ipv4_opt_9;
            15: ipv4_opt_10;
            default: truncated;    /* IHL < 5 */
        }
    }
    state ipv4_opt_10 { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_9; }
    state ipv4_opt_9  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_8; }
    state ipv4_opt_8  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_7; }
    state ipv4_opt_7  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_6; }
    state ipv4_opt_6  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_5; }
    state ipv4_opt_5  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_4; }
    state ipv4_opt_4  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_3; }
    state ipv4_opt_3  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_2; }
    state ipv4_opt_2  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_1; }
    state ipv4_opt_1  { pkt.extract(hdr.ipv4_options.next); transition parse_ipv4_l4; }

    state parse_ipv4_l4 {
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_FFS: check_ipv4_covers_shim;
            default: no_shim;
        }
    }

    /* The IP length must cover the header, its options and the 8-byte shim (spec §2). */
    state check_ipv4_covers_shim {
        transition select(hdr.ipv4.ihl, hdr.ipv4.total_len) {
            (5, 0 .. 27): truncated;
            (6, 0 .. 31): truncated;
            (7, 0 .. 35): truncated;
            (8, 0 .. 39): truncated;
            (9, 0 .. 43): truncated;
            (10, 0 .. 47): truncated;
            (11, 0 .. 51): truncated;
            (12, 0 .. 55): truncated;
            (13, 0 .. 59): truncated;
            (14, 0 .. 63): truncated;
            (15, 0 .. 67): truncated;
            default: parse_ffs;
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        md.l3_len = hdr.ipv6.payload_len;  /* the parser copies, it does not add (spec §4) */
        transition select(hdr.ipv6.next_hdr, hdr.ipv6.payload_len) {
            (IP_PROTO_FFS, 0 .. 7): truncated;
            (IP_PROTO_FFS, _): parse_ffs;
            default: no_shim;
        }
    }

    state no_shim {
        md.rf16 = CODE_ONE;
        md.rf = CODE_ONE;
        md.rri = CODE_MAX;
        transition accept;
    }

    /* A frame that ends inside the shim also ends here: the extract fails and the ingress
     * control sees ig_prsr_md.parser_err (both fates are the same drop). */
    state parse_ffs {
        pkt.extract(hdr.ffs);
        transition select(hdr.ffs.version, hdr.ffs.flags[0:0], md.port_md.trust) {
            (SHIM_VERSION, 0, 1): ffs_trusted;
            (SHIM_VERSION, 0, 0): ffs_reset;
            default: ffs_opaque;
        }
    }

    state ffs_trusted {
        md.ffs_state = FFS_STATE_VALID;
        md.rf16 = hdr.ffs.rf;
        md.rf = (bit<32>)hdr.ffs.rf;
        md.rri = (bit<32>)hdr.ffs.rri;
        md.ri_req = hdr.ffs.flags[3:3];
        md.rri_ge_one = hdr.ffs.rri[15:15];
        transition accept;
    }

    state ffs_reset {
        md.ffs_state = FFS_STATE_VALID;
        md.rf16 = CODE_ONE;
        md.rf = CODE_ONE;
        md.rri = (bit<32>)hdr.ffs.rri;
        transition accept;
    }

    state ffs_opaque {
        md.ffs_state = FFS_STATE_OPAQUE;
        md.rf16 = CODE_ONE;
        md.rf = CODE_ONE;
        md.rri = CODE_MAX;
        transition accept;
    }

    state truncated {
        md.parse_error = 1;
        transition accept;
    }
}

control FfsIngressDeparser(packet_out pkt,
                           inout headers_t hdr,
                           in ffs_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (md.csum_update == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                hdr.ipv4_options[0].data, hdr.ipv4_options[1].data, hdr.ipv4_options[2].data,
                hdr.ipv4_options[3].data, hdr.ipv4_options[4].data, hdr.ipv4_options[5].data,
                hdr.ipv4_options[6].data, hdr.ipv4_options[7].data, hdr.ipv4_options[8].data,
                hdr.ipv4_options[9].data});
        }
        pkt.emit(hdr);
    }
}

/* Egress re-parses the headers it may strip; it needs no ingress metadata (no bridging). */
parser FfsEgressParser(packet_in pkt,
                       out headers_t hdr,
                       out egress_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_l4;
            6: ipv4_opt_1;
            7: ipv4_opt_2;
            8: ipv4_opt_3;
            9: ipv4_opt_4;
            10: ipv4_opt_5;
            11: ipv4_opt_6;
            12: ipv4_opt_7;
            13: ipv4_opt_8;
            14: ipv4_opt_9;
            15: ipv4_opt_10;
            default: accept;
        }
    }
    state ipv4_opt_10 { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_9; }
    state ipv4_opt_9  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_8; }
    state ipv4_opt_8  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_7; }
    state ipv4_opt_7  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_6; }
    state ipv4_opt_6  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_5; }
    state ipv4_opt_5  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_4; }
    state ipv4_opt_4  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_3; }
    state ipv4_opt_3  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_2; }
    state ipv4_opt_2  { pkt.extract(hdr.ipv4_options.next); transition ipv4_opt_1; }
    state ipv4_opt_1  { pkt.extract(hdr.ipv4_options.next); transition parse_ipv4_l4; }
    state parse_ipv4_l4 {
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_FFS: parse_ffs;
            default: accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_FFS: parse_ffs;
            default: accept;
        }
    }
    state parse_ffs {
        pkt.extract(hdr.ffs);
        transition accept;
    }
}

control FfsEgressDeparser(packet_out pkt,
                          inout headers_t hdr,
                          in egress_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;

    apply {
        if (md.csum_update == 1) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                hdr.ipv4_options[0].data, hdr.ipv4_options[1].data, hdr.ipv4_options[2].data,
                hdr.ipv4_options[3].data, hdr.ipv4_options[4].data, hdr.ipv4_options[5].data,
                hdr.ipv4_options[6].data, hdr.ipv4_options[7].data, hdr.ipv4_options[8].data,
                hdr.ipv4_options[9].data});
        }
        pkt.emit(hdr);
    }
}

#endif
