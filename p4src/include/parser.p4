// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: parsers and deparsers (docs/spec.md §2, §7.1).
 *
 * The parsers only extract headers and take decisions on bytes of the header they are looking at:
 * a Tofino parser cannot branch on data it read several states earlier when different paths lead
 * to the same state. So the IPv4 protocol is tested together with IHL (one state per option
 * length, fixed stack indices), and the port's trust bit is applied in the MAU (spec §7.2).
 * Metadata starts at zero (@pa_auto_init_metadata, FFS_INGRESS_PRAGMAS in control/ffs_core.p4);
 * each parser path sets a field at most once. */
#ifndef _FFS_PARSER_P4_
#define _FFS_PARSER_P4_

#include "header.p4"

/* IPv4 options, one state per IHL: fixed indices (Tofino 1 cannot write one stack slot from
 * states entered at different depths). */
#define OPT_1  pkt.extract(hdr.ipv4_options[0]);
#define OPT_2  OPT_1 pkt.extract(hdr.ipv4_options[1]);
#define OPT_3  OPT_2 pkt.extract(hdr.ipv4_options[2]);
#define OPT_4  OPT_3 pkt.extract(hdr.ipv4_options[3]);
#define OPT_5  OPT_4 pkt.extract(hdr.ipv4_options[4]);
#define OPT_6  OPT_5 pkt.extract(hdr.ipv4_options[5]);
#define OPT_7  OPT_6 pkt.extract(hdr.ipv4_options[6]);
#define OPT_8  OPT_7 pkt.extract(hdr.ipv4_options[7]);
#define OPT_9  OPT_8 pkt.extract(hdr.ipv4_options[8]);
#define OPT_10 OPT_9 pkt.extract(hdr.ipv4_options[9]);

/* parse_ipv4's select: IHL 5..15 with the shim (protocol 253) or without. */
#define IPV4_IHL_CASES(FFS, PLAIN) \
    (5, IP_PROTO_FFS): FFS##0;  (5, _): PLAIN;  \
    (6, IP_PROTO_FFS): FFS##1;  (6, _): ipv4_opts_1;  \
    (7, IP_PROTO_FFS): FFS##2;  (7, _): ipv4_opts_2;  \
    (8, IP_PROTO_FFS): FFS##3;  (8, _): ipv4_opts_3;  \
    (9, IP_PROTO_FFS): FFS##4;  (9, _): ipv4_opts_4;  \
    (10, IP_PROTO_FFS): FFS##5; (10, _): ipv4_opts_5; \
    (11, IP_PROTO_FFS): FFS##6; (11, _): ipv4_opts_6; \
    (12, IP_PROTO_FFS): FFS##7; (12, _): ipv4_opts_7; \
    (13, IP_PROTO_FFS): FFS##8; (13, _): ipv4_opts_8; \
    (14, IP_PROTO_FFS): FFS##9; (14, _): ipv4_opts_9; \
    (15, IP_PROTO_FFS): FFS##10; (15, _): ipv4_opts_10;

#define IPV4_OPTION_STATES(FFS, AFTER_FFS, AFTER) \
    state FFS##1  { OPT_1  transition AFTER_FFS; } \
    state FFS##2  { OPT_2  transition AFTER_FFS; } \
    state FFS##3  { OPT_3  transition AFTER_FFS; } \
    state FFS##4  { OPT_4  transition AFTER_FFS; } \
    state FFS##5  { OPT_5  transition AFTER_FFS; } \
    state FFS##6  { OPT_6  transition AFTER_FFS; } \
    state FFS##7  { OPT_7  transition AFTER_FFS; } \
    state FFS##8  { OPT_8  transition AFTER_FFS; } \
    state FFS##9  { OPT_9  transition AFTER_FFS; } \
    state FFS##10 { OPT_10 transition AFTER_FFS; } \
    state ipv4_opts_1  { OPT_1  transition AFTER; } \
    state ipv4_opts_2  { OPT_2  transition AFTER; } \
    state ipv4_opts_3  { OPT_3  transition AFTER; } \
    state ipv4_opts_4  { OPT_4  transition AFTER; } \
    state ipv4_opts_5  { OPT_5  transition AFTER; } \
    state ipv4_opts_6  { OPT_6  transition AFTER; } \
    state ipv4_opts_7  { OPT_7  transition AFTER; } \
    state ipv4_opts_8  { OPT_8  transition AFTER; } \
    state ipv4_opts_9  { OPT_9  transition AFTER; } \
    state ipv4_opts_10 { OPT_10 transition AFTER; }

parser FfsIngressParser(packet_in pkt,
                        out headers_t hdr,
                        out ffs_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    /* A packet of the generator's timer application enters on the generator's port of its pipe
     * (no frame from the wire does): the queue guard's drain, its packet_id names the egress
     * (spec §7.7). Another application's packets on that port parse as frames. */
    state start {
        pkt.extract(ig_intr_md);
        md.port_md = port_metadata_unpack<port_metadata_t>(pkt);
        transition select(ig_intr_md.ingress_port[6:0], pkt.lookahead<pktgen_timer_header_t>().app_id) {
            (PKTGEN_LOCAL_PORT, TIMER_APP_ID): parse_timer;
            default: parse_ethernet;
        }
    }

    state parse_timer {
        md.timer = 1;
        md.timer_id = pkt.lookahead<pktgen_timer_header_t>().packet_id;
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: no_shim;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan);
        md.vlan = 1;
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: no_shim;
        }
    }

    /* The IP length must cover the header, its options and the 8-byte shim (spec §2): that
     * check needs IHL and total_len together, so it is a table in stage 0 (ipv4_shim_len). */
    /* A fragment's IP protocol says what the datagram carries, not what follows this header: a
     * non-first fragment (offset > 0) holds payload bytes and is never read as a shim; any
     * fragment (MF set too) is flagged, since a shim inserted into or stripped from one fragment
     * would change the protocol of that fragment alone and break reassembly (spec §2). The
     * flags and offset are looked at before the header is extracted, so that each state selects
     * on what it extracts itself. */
    state parse_ipv4 {
        transition select(pkt.lookahead<ipv4_frag_peek_h>().mf, pkt.lookahead<ipv4_frag_peek_h>().frag_offset) {
            (0, 0): parse_ipv4_header;
            (1, 0): ipv4_first_fragment;
            default: ipv4_later_fragment;
        }
    }
    state ipv4_first_fragment {
        md.frag = 1;
        transition parse_ipv4_header;
    }
    state parse_ipv4_header {
        pkt.extract(hdr.ipv4);
        md.l3_len = hdr.ipv4.total_len;
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            IPV4_IHL_CASES(ipv4_ffs_, no_shim)
            default: truncated;    /* IHL < 5 */
        }
    }
    state ipv4_ffs_0 { transition parse_ffs; }
    IPV4_OPTION_STATES(ipv4_ffs_, parse_ffs, no_shim)
    state ipv4_later_fragment {
        pkt.extract(hdr.ipv4);
        md.l3_len = hdr.ipv4.total_len;
        md.frag = 1;
        transition select(hdr.ipv4.ihl) {
            5: no_shim;
            6: ipv4_opts_1;
            7: ipv4_opts_2;
            8: ipv4_opts_3;
            9: ipv4_opts_4;
            10: ipv4_opts_5;
            11: ipv4_opts_6;
            12: ipv4_opts_7;
            13: ipv4_opts_8;
            14: ipv4_opts_9;
            15: ipv4_opts_10;
            default: truncated;    /* IHL < 5 */
        }
    }

    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        md.l3_len = hdr.ipv6.payload_len;  /* the parser copies, it does not add (spec §4) */
        md.ipv6 = 1;
        transition select(hdr.ipv6.next_hdr, hdr.ipv6.payload_len) {
            (IP_PROTO_FFS, 0 .. 7): truncated;
            (IP_PROTO_FFS, _): parse_ffs;
            default: no_shim;
        }
    }

    /* No shim (or not IP): the default label rf = 1.0 (Appendix C). */
    state no_shim {
        md.rf_hdr = CODE_ONE;
        transition accept;
    }

    /* The shim's fate is chosen on its first word before it is extracted (version 1, reserved
     * flag 0, and where rf lies against the admitted range), so that each terminal state reads
     * only the header it extracts itself: several paths lead here. The label is clamped to
     * [RF_MIN, RF_MAX] before any use (spec §3.1). A frame that ends inside the shim fails the
     * extract: the ingress control sees ig_prsr_md.parser_err and drops it like a short one. */
    state parse_ffs {
        transition select(pkt.lookahead<ffs_peek_h>().version, pkt.lookahead<ffs_peek_h>().reserved,
                          pkt.lookahead<ffs_peek_h>().rf) {
            (SHIM_VERSION, 0, 0 .. RF_CODE_BELOW_MIN): ffs_below_min;
            (SHIM_VERSION, 0, RF_CODE_ABOVE_MAX .. 0xFFFF): ffs_above_max;
            (SHIM_VERSION, 0, _): ffs_valid;
            default: ffs_opaque;
        }
    }

    state ffs_valid {
        pkt.extract(hdr.ffs);
        md.ffs_state = FFS_STATE_VALID;
        md.rf_hdr = hdr.ffs.rf;
        md.ri_req = hdr.ffs.flags[FLAG_RI_BIT:FLAG_RI_BIT];
        md.rri_ge_one = hdr.ffs.rri[CODE_ONE_BIT:CODE_ONE_BIT];
        transition accept;
    }

    state ffs_below_min {
        pkt.extract(hdr.ffs);
        md.ffs_state = FFS_STATE_VALID;
        md.rf_hdr = RF_CODE_MIN;
        md.ri_req = hdr.ffs.flags[FLAG_RI_BIT:FLAG_RI_BIT];
        md.rri_ge_one = hdr.ffs.rri[CODE_ONE_BIT:CODE_ONE_BIT];
        transition accept;
    }

    state ffs_above_max {
        pkt.extract(hdr.ffs);
        md.ffs_state = FFS_STATE_VALID;
        md.rf_hdr = RF_CODE_MAX;
        md.ri_req = hdr.ffs.flags[FLAG_RI_BIT:FLAG_RI_BIT];
        md.rri_ge_one = hdr.ffs.rri[CODE_ONE_BIT:CODE_ONE_BIT];
        transition accept;
    }

    state ffs_opaque {
        pkt.extract(hdr.ffs);
        md.ffs_state = FFS_STATE_OPAQUE;
        md.rf_hdr = CODE_ONE;
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
    /* No checksum here: a shim inserted into IPv4 changes protocol and total_len, and the
     * egress deparser, which sees the bridge's grown bit, rewrites the checksum (docs/pipeline.md). */
    apply {
        pkt.emit(hdr);
    }
}

/* Egress reads the bridged pair, then re-parses the headers it checks and may strip. */
parser FfsEgressParser(packet_in pkt,
                       out headers_t hdr,
                       out egress_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        md.stripped = 0;
        transition select(hdr.bridge.grown, hdr.bridge.l2_change) {
            (1, L2_TAG_POPPED): grown_popped;
            (1, L2_TAG_PUSHED): grown_pushed;
            (1, _):             grown;
            (0, L2_TAG_POPPED): popped;
            (0, L2_TAG_PUSHED): pushed;
            default:            as_arrived;
        }
    }
    /* What the ingress changed in the frame's length after it arrived (pkt_length is the arrival
     * length): a shim it inserted, an 802.1Q tag the host declared it popped or pushed. Set here,
     * one constant per state, so that the frame check's pkt_len is one addition. A shim inserted
     * into IPv4 changed protocol and total_len: the deparser rewrites the checksum (csum_update,
     * set here so that the condition needs no stage of its own). */
    state as_arrived {
        md.arrival_change = 0;
        transition parse_ethernet;
    }
    state popped {
        md.arrival_change = -VLAN_TAG_LEN;
        transition parse_ethernet;
    }
    state pushed {
        md.arrival_change = VLAN_TAG_LEN;
        transition parse_ethernet;
    }
    state grown {
        md.csum_update = 1;
        md.arrival_change = SHIM_LEN;
        transition parse_ethernet;
    }
    state grown_popped {
        md.csum_update = 1;
        md.arrival_change = SHIM_LEN - VLAN_TAG_LEN;
        transition parse_ethernet;
    }
    state grown_pushed {
        md.csum_update = 1;
        md.arrival_change = SHIM_LEN + VLAN_TAG_LEN;
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
    /* a fragment's shim is never stripped (spec §2): it is not extracted */
    state parse_ipv4 {
        transition select(pkt.lookahead<ipv4_frag_peek_h>().mf, pkt.lookahead<ipv4_frag_peek_h>().frag_offset) {
            (0, 0): parse_ipv4_header;
            default: ipv4_fragment;
        }
    }
    state ipv4_fragment {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
    state parse_ipv4_header {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            IPV4_IHL_CASES(ipv4_ffs_, accept)
            default: accept;
        }
    }
    state ipv4_ffs_0 { transition parse_ffs; }
    IPV4_OPTION_STATES(ipv4_ffs_, parse_ffs, accept)
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
