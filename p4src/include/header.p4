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
    shim_flags_t flags;   /* FLAG_*: R 0x8, E 0x4, D 0x2, reserved 0x1 */
    bit<8>  next_hdr;
    code_t  rf;           /* log code of r/f */
    code_t  rri;          /* log code of the relative rate indicator */
    code_t  rri_echo;     /* the destination's feedback: never changed by a node */
}

/* What the parsers look at before they extract (pkt.lookahead), so that each state selects on what
 * it extracts itself: the IPv4 header up to its fragment fields, and the shim's first word. */
header ipv4_frag_peek_h {
    bit<48> before;       /* version to identification */
    bit<1>  reserved;
    bit<1>  df;
    bit<1>  mf;           /* more fragments */
    bit<13> frag_offset;
}

header ffs_peek_h {
    bit<4>  version;
    bit<3>  flags;        /* R, E, D */
    bit<1>  reserved;     /* flags 0x1: set, the shim is not one this version reads */
    bit<8>  next_hdr;
    code_t  rf;
}

/* Ingress to egress, in front of the frame (spec §7.3): the pair, so that the egress's frame
 * check can say which pair a lying frame came from. Never leaves the switch. */
header bridge_h {
    l2_change_t l2_change; /* the host's declared L2 change (md.l2_change): L2_SAME, L2_TAG_* */
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
    bit<8> trust;
    bit<8> insert;
    @padding bit<(PORT_METADATA_SIZE - 16)> pad2;
}

/* Ingress metadata, grouped by what it describes. All code arithmetic is 16-bit (spec §7.2):
 * with the label clamped to [2^-8, 2^16] and log M, log F <= D_OFFSET no intermediate saturates
 * or wraps except where the spec says. */
#ifndef FFS_HOST_METADATA
#define FFS_HOST_METADATA
#endif

struct ffs_metadata_t {
    port_metadata_t port_md;

    /* --- the parser's reading of the packet (spec §2) --- */
    bit<1>      parse_error;  /* truncated shim, or an IPv4 length short of it: dropped and counted */
    bit<1>      frag;         /* an IPv4 fragment (MF or an offset): no shim inserted (spec §2) */
    ffs_state_t ffs_state;    /* FFS_STATE_*: none, valid or opaque */
    bit<1>      ri_req;       /* valid shim with the R flag */
    bit<1>      rri_ge_one;   /* bit 15 of the arriving rri: rri >= 1.0 */

    /* --- the claim: the frame its headers say it is (spec §4) --- */
    len_t       l3_len;       /* IPv4 total_len, IPv6 payload_len */
    bit<1>      ipv6;         /* the header class whose L2 overhead len_log adds to l3_len: */
    bit<1>      vlan;         /* IPv6 (40 more bytes), an 802.1Q tag (4 more) */
    bit<1>      runt;         /* the claim may carry padding: below 64 bytes with FCS, 68 if tagged */
    len_t       claim_room;   /* the claim's distance below the ingress port's frame limit; 0: a lie (spec §4) */

    /* --- forwarding (the host's, or Forwarding) --- */
    bit<1>      routed;       /* an egress port was chosen; 0: FFS drops it as a route miss */
    l2_change_t l2_change;    /* the L2 change the host's ingress makes (L2_SAME unless it sets it):
                               * the egress's frame check takes it off the arrival length */

    /* --- the label (spec §3.1, §6) --- */
    code_t      rf_hdr;       /* the arriving label, clamped (CODE_ONE without a valid shim) */
    code_t      rf;           /* the label entering normalization: rf_hdr on trusted ports */
    code_t      rri_n;        /* CODE_ONE - the arriving rri (used while rri < 1) */

    /* --- the pair and its egress (PairMap, spec §5.3) --- */
    bit<1>      managed;      /* (ingress, egress) is a pair the agent manages */
    pid_t       pid;
    bit<1>      held;         /* the pair is held in quarantine: its packets face tau = 1 (spec §9) */
    code_t      rf_over_m;    /* code(rf / M) = rf - lm: the label over the pair's share (k in spec §7.2) */
    code_t      ltau;         /* code(tau) of the egress */
    code_t      ltau_p;       /* ltau - CODE_ONE (= 128 log2 tau) while congested, 0 (tau = 1) while not */
    bit<1>      congested;
    code_t      lcr;          /* code(C / R*) of the egress: Algorithm 4's uncongested bound (set_egress's lcr) */
    len_t       room;         /* the IP length's distance below the egress's shim limit; 0: no shim fits (spec §2) */
    bit<1>      grows;        /* fate inserts a shim into it if admitted: the port sends 8 bytes more (spec §4) */
    code_t      tau_over_k;   /* code(tau / k), tau = 1 while not congested (PairMap.norm_cc; cc in spec §7.2) */

    /* --- the estimator (RateEstimation, spec §5.1, §5.2) --- */
    code_t      lw;           /* log2(len · 2^8 / rf), the weight table's key on a trusting port */
    code_t      llen;         /* log2(len · 2^8), the weight table's key on a resetting port */
    weight_t    pkt_weight;   /* the packet's weight w = len / rf, the LPF's input */
    weight_t    f_rate;       /* F_(i,j), the pair's weighted rate: the LPF's output */
    code_t      rf_norm;      /* code(rf * F / M) = k + log F */
    code_t      c_cong;       /* code(tau / rf_norm) = CODE_ONE - d, d = rf_norm - ltau; tau = 1 if not congested */

    /* --- gamma (Normalize, spec §5.4) --- */
    rnd_t       rnd;          /* the packet's uniform draw */
    margin_t    admit_margin; /* gamma's verdict, thr |-| rnd: 0 drops before the queue (fate), anything else admits */

    /* --- RI (RiUpdate, Algorithm 4) --- */
    code_t      c_ri;         /* the RRI candidate */

    /* --- the queue guard (QueueGuard, spec §7.7) --- */
    bit<1>      timer;        /* a timer packet of the packet generator: it drains, nothing else */
    bit<16>     timer_id;     /* its packet_id: which egress it drains (guard.timer_ports) */
    len_t       wlen;         /* the claim's line-rate bytes (len_log, spec §5.1) */
    /* guard.queue's 32-bit operand: a packet's threshold qhi (QHI_OFF: the guard is off), a timer
     * packet's drain. One field for both: a stateful ALU takes at most two PHV operands over all
     * its actions, and wlen is the other. */
    qbytes_t    qbytes;
    code_t      over_guard;   /* rf_norm - (GUARD_RF_CODE + 1): bit 15 clear iff over 1.25 x the share */
    bit<1>      guard;        /* the queue stands and the pair reads over 1.25 x its share: dropped */

    /* a program composing FFS with its own forwarding adds its ingress metadata here
     * (#define FFS_HOST_METADATA before including include/ffs_lib.p4) */
    FFS_HOST_METADATA
}

struct egress_metadata_t {
    bit<1>  strip;
    bit<1>  csum_update;
    len_t   claimed;       /* L2 header + IP length: the frame its headers claim, FCS excluded */
    len_t   arrival_change; /* bytes the ingress added (mod 2^16): a shim it inserted (bridge.grown),
                             * the host's declared L2 change (bridge.l2_change); set by the parser */
    len_t   pkt_len;       /* the frame as the egress holds it: pkt_length, + arrival_change where
                            * pkt_length is the arrival length (frame_basis) */
    fcs_basis_t fcs_basis; /* FCS_*: whether pkt_length counts the FCS (frame_basis) */
    len_t   excess;        /* pkt_len - claimed (mod 2^16) */
    bit<1>  lies;          /* frame_check: the bytes disagree with the claim */
    bit<1>  stripped;      /* strip_v4 / strip_v6 took the shim off */
}

#endif
