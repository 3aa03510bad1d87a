// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: headers and metadata (docs/spec.md §2, §7). */
#ifndef _FFS_HEADER_P4_
#define _FFS_HEADER_P4_

#include "define.p4"

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header vlan_h {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

/* IPv4 options are kept word by word so that the deparser re-emits them unchanged. */
header ipv4_option_word_h {
    bit<32> data;
}

header ipv6_h {
    bit<4>   version;
    bit<8>   traffic_class;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

/* The FFS/RI shim: 8 bytes after the IP header (IPv4 protocol / IPv6 next header 253). */
header ffs_h {
    bit<4>  version;
    bit<4>  flags;        /* R 0x8, E 0x4, D 0x2, reserved 0x1 */
    bit<8>  next_hdr;
    bit<16> rf;           /* log code of r/f */
    bit<16> rri;          /* log code of the relative rate indicator */
    bit<16> rri_echo;     /* the destination's feedback: never changed by a node */
}

/* Ingress to egress, in front of the frame (spec §7.3): the pair, so that the egress's frame
 * check can say which pair a lying frame came from. Never leaves the switch. */
header bridge_h {
    bit<2>  pad;
    bit<1>  grown;        /* fate inserted a shim: the frame is 8 bytes longer than it arrived */
    bit<1>  managed;
    pid_t   pid;
}

struct headers_t {
    bridge_h                              bridge;
    ethernet_h                            ethernet;
    vlan_h                                vlan;
    ipv4_h                                ipv4;
    ipv4_option_word_h[IPV4_OPTION_WORDS] ipv4_options;
    ipv6_h                                ipv6;
    ffs_h                                 ffs;
}

/* Per-port parser metadata, set from the control plane ($PORT_METADATA, spec §6). It fills the
 * target's whole port metadata block (64 bits on Tofino 1, 192 on Tofino 2): the parser skips
 * exactly the header's size, and a shorter header would leave it inside the block. Each flag is a
 * byte of its own and the tables key on its bit 0: with sub-byte flags between @padding fields,
 * bf_switchd packs the BF-RT fields whole bytes apart and writes trust where the parser reads
 * nothing, and insert nowhere (measured on tofino-model, docs/pipeline.md). */
header port_metadata_t {
    bit<8> ifindex;
    bit<8> trust;
    bit<8> insert;
    @padding bit<(PORT_METADATA_SIZE - 24)> pad2;
}

/* All code arithmetic is 16-bit (spec §7.2): with the label clamped to [2^-8, 2^16] and
 * log M, log F <= D_OFFSET no intermediate saturates or wraps except where the spec says. */
#ifndef FFS_HOST_METADATA
#define FFS_HOST_METADATA
#endif

struct ffs_metadata_t {
    port_metadata_t port_md;
    bit<1>  parse_error;   /* truncated shim: dropped and counted */
    bit<1>  frag;          /* an IPv4 fragment (MF or an offset): no shim inserted (spec §2) */
    bit<2>  ffs_state;     /* FFS_STATE_* */
    bit<1>  ri_req;        /* valid shim with the R flag */
    bit<1>  rri_ge_one;    /* bit 15 of the arriving rri: rri >= 1.0 */
    bit<16> rri_n;         /* CODE_ONE - the arriving rri (used while rri < 1) */
    bit<16> l3_len;        /* IPv4 total_len, IPv6 payload_len */
    bit<1>  ipv6;          /* the header class whose L2 overhead len_log adds to l3_len: */
    bit<1>  vlan;          /* IPv6 (40 more bytes), an 802.1Q tag (4 more) */
    bit<16> rf_hdr;        /* the arriving label, clamped (CODE_ONE without a valid shim) */
    bit<16> rf;            /* the label entering normalization: rf_hdr on trusted ports */
    bit<1>  routed;
    bit<1>  managed;
    bit<3>  event;
    bit<1>  count_event;
    /* stage 0-1 */
    bit<16> lw;            /* log2(len · 2^8 / rf), the weight table's key on a trusting port */
    bit<16> llen;          /* log2(len · 2^8), the weight table's key on a resetting port */
    bit<1>  runt;          /* the headers claim a frame below 64 bytes, FCS included */
    bit<32> w;
    bit<16> rnd;
    pid_t   pid;
    bit<16> ltau;
    bit<16> ltau_p;        /* ltau - CODE_ONE (= 128 log2 tau) */
    bit<1>  congested;
    bit<16> lcr;
    bit<16> room;          /* the IP length's distance below the egress's shim limit; 0: no shim fits (spec §2) */
    bit<16> k;             /* code(rf / M) */
    /* stage 2-6 */
    bit<16> cc;            /* code(tau / k), tau = 1 while not congested */
    bit<32> f;
    bit<16> rf_norm;       /* code(rf * F / M) */
    bit<16> c_cong;        /* code(tau / rf_norm) = CODE_ONE - d, d = rf_norm - ltau; tau = 1 if not congested */
    bit<16> c_ri;          /* the RRI candidate of Algorithm 4 */
    bit<16> margin;
    /* a program composing FFS with its own forwarding adds its ingress metadata here
     * (#define FFS_HOST_METADATA before including include/ffs_lib.p4) */
    FFS_HOST_METADATA
}

struct egress_metadata_t {
    bit<1>  strip;
    bit<1>  csum_update;
    bit<16> claimed;       /* L2 header + IP length: the frame its headers claim, FCS excluded */
    bit<16> pkt_len;       /* pkt_length, plus the shim the ingress inserted (bridge.grown) */
    bit<16> excess;        /* pkt_len - claimed (mod 2^16) */
    bit<1>  lies;          /* frame_check: the bytes disagree with the claim */
}

#endif
