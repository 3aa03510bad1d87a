// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: the FFS ingress and egress controls another TNA program composes with its own
 * forwarding (docs/pipeline.md, "FFS as a P4 library"). The interface:
 *
 *   needs  headers_t, ffs_metadata_t and egress_metadata_t (include/header.p4), filled by
 *          FfsIngressParser / FfsEgressParser (include/parser.p4) or parsers that set the same
 *          fields; ig_tm_md.ucast_egress_port and md.routed = 1 for a packet the host forwards
 *          (md.routed = 0: FFS drops it and counts a route miss, touching no FFS state);
 *          md.l2_change (L2_TAG_POPPED, L2_TAG_PUSHED) from the host's action that removes or
 *          adds an 802.1Q tag, which the egress's frame check forgives, nothing more; the
 *          host's ingress control named FfsIngress-style with parameters `hdr` and `md`, preceded
 *          by FFS_INGRESS_PRAGMAS.
 *   sets   ig_dprsr_md.drop_ctl (γ's drop before the queue, the queue guard's, parse errors,
 *          route misses, every timer packet), the shim's rf/rri and flags, a shim inserted on an
 *          insert port, hdr.bridge (every packet: the egress needs its pair), and in the egress: a
 *          lying frame's drop, the shim stripped on a strip port, md.csum_update for the egress
 *          deparser's IPv4 checksum.
 *   owns   the packet generator's timer application (TIMER_APP_ID) and its packets on the
 *          generator's port of each pipe (PKTGEN_LOCAL_PORT): they drain the queue guard's
 *          virtual queues and are dropped. A host must not recirculate through that port, nor
 *          run another timer application there (spec §7.7).
 *   names  instantiate as `@name(".FfsIngress") FfsCore() ffs;` and
 *          `@name(".FfsEgress") FfsEgressCore() ffs;` so that every table, counter, register and
 *          LPF keeps the BF-Runtime name ffs-agent drives (controlplane/ffs/core/p4names.py).
 */
#ifndef _FFS_CORE_P4_
#define _FFS_CORE_P4_

/* Before the host's ingress control (whose parameters must be named hdr and md):
 * @pa_auto_init_metadata: every metadata field starts at zero, so a field a path never writes
 *   reads 0 on hardware too (PHV containers are shared and hold garbage otherwise).
 * The shim's rf and rri are written by 16-bit ALU operations on 16-bit metadata: each gets its
 *   own 16-bit container so those operations need no alignment with the rest of the shim.
 * bf-p4c 9.13.4 may pack parser_err into a container the parser also fills from the packet (W0
 *   with md.ri_req, extracted as the shim's first word): the extract then overwrites parser_err
 *   and fate drops every packet as a parse error (docs/pipeline.md, "Compiler and model findings").
 * Flags written by different stage-0 tables must not share a container, or the compiler orders
 *   those tables one stage apart (the egress's too: frame_basis's fcs_basis beside the bridge's
 *   validity costs Tofino 2's egress a stage). */
#define FFS_INGRESS_PRAGMAS \
    @pa_auto_init_metadata \
    @pa_container_size("ingress", "hdr.ffs.rf", 16) \
    @pa_container_size("ingress", "hdr.ffs.rri", 16) \
    @pa_solitary("ingress", "ig_intr_md_from_prsr.parser_err") \
    @pa_solitary("ingress", "md.routed") \
    @pa_solitary("ingress", "md.runt") \
    @pa_solitary("ingress", "md.parse_error") \
    @pa_solitary("ingress", "md.managed") \
    @pa_solitary("ingress", "md.held") \
    @pa_solitary("egress", "md.fcs_basis")

control FfsCore(inout headers_t hdr,
                inout ffs_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    PairMap() pair_map;
    RateEstimation() rate_est;
    Normalize() normalize;
    RiUpdate() ri_update;
    QueueGuard() guard;

    /* Why packets did not take the normal path (spec §7.6); at most one cell per packet. */
    Counter<bit<32>, event_t>(EVENT_COUNTER_SIZE, CounterType_t.PACKETS) events;
    Counter<bit<64>, pid_t>(NUM_PAIRS, CounterType_t.PACKETS_AND_BYTES) pair_drops;
    /* A_j (spec §9): the managed packets γ let through toward each egress port, counted here,
     * before the traffic manager. Counted after the TM (in egress) it could never exceed what a
     * saturated port drains, and τ could not see FFS over-admit. */
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) admitted;
    /* The frames the ingress inserts a shim into (or would, if admitted; spec §4): the port sends
     * each SHIM_LEN bytes longer than `offered` and `admitted` count it, and a TNA counter adds one
     * byte adjustment to all its counts, so the agent adds SHIM_LEN per frame counted here:
     * offered_shims to R*_j, admitted_shims to A_j. Per egress port only: stage 6 has no stats
     * ALU left for a per-pair one on Tofino 1 (events, pair_drops, admitted, admitted_shims). */
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) offered_shims;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) admitted_shims;

    /* Stage 0, one table: which label enters normalization (the port's trust bit, spec §6) and
     * rri_n for Algorithm 4. */
    action use_label() {
        md.rf = md.rf_hdr;
    }

    action use_label_ri() {
        md.rf = md.rf_hdr;
        md.rri_n = CODE_ONE - hdr.ffs.rri;
    }

    /* the label replaced; RI still runs, with the label set here (spec §6) */
    action reset_label() {
        md.rf = CODE_ONE;
        md.rri_n = CODE_ONE - hdr.ffs.rri;
    }

    table port_label {
        key = {
            md.port_md.trust[0:0]: ternary @name("trust");
            md.ffs_state:          ternary @name("ffs_state");
        }
        actions = { use_label; use_label_ri; reset_label; }
        default_action = use_label();
        size = 8;
        /* the same entries as ffs.core.tables.port_label_entries (tests/unit/test_p4_schema.py) */
        const entries = {
            (1, FFS_STATE_VALID): use_label_ri();
            (0, FFS_STATE_VALID): reset_label();
        }
    }

    /* IPv4 total_len must cover the header, its options and the shim (spec §2). */
    action short_shim() {
        md.parse_error = 1;
    }

    action shim_fits() {
    }

    table ipv4_shim_len {
        key = {
            hdr.ipv4.ihl:       exact @name("ihl");
            hdr.ipv4.total_len: range @name("total_len");
        }
        actions = { short_shim; shim_fits; }
        default_action = shim_fits();
        size = 16;
        /* the same entries as ffs.core.tables.ipv4_shim_len_entries (tests/unit/test_p4_schema.py) */
        const entries = {
            (5, 0 .. 27): short_shim();
            (6, 0 .. 31): short_shim();
            (7, 0 .. 35): short_shim();
            (8, 0 .. 39): short_shim();
            (9, 0 .. 43): short_shim();
            (10, 0 .. 47): short_shim();
            (11, 0 .. 51): short_shim();
            (12, 0 .. 55): short_shim();
            (13, 0 .. 59): short_shim();
            (14, 0 .. 63): short_shim();
            (15, 0 .. 67): short_shim();
        }
    }

    /* The longest IP length a frame that arrived through this port can claim: its MAC admits no
     * longer frame (the port's frame limit, with the shortest L2 header), so a longer claim is a lie
     * the ingress sees before it weighs on any pair's estimator (spec §4). claim_room = thr |-| l3_len,
     * thr the longest IP length + 1, pushed per port by the agent; 0: fate drops it. A port without
     * an entry limits nothing (claim_room = 1). */
    action set_claim_limit(len_t thr) {
        md.claim_room = thr |-| md.l3_len;
    }

    action claim_unlimited() {
        md.claim_room = 1;
    }

    table claim_limit {
        key = {
            ig_intr_md.ingress_port: exact @name("ingress_port");
            md.ipv6:                 exact @name("ipv6");
        }
        actions = { set_claim_limit; claim_unlimited; }
        default_action = claim_unlimited();
        size = CLAIM_LIMIT_SIZE;
    }

    /* The packet's fate, decided once in one table (spec §7.6): at most one event per packet, and
     * each action counts its own cell, so no stage waits for an event index. */
    action parse_drop() {
        ig_dprsr_md.drop_ctl = 1;
        events.count(event_t.PARSE_ERROR);
    }

    action miss_drop() {
        ig_dprsr_md.drop_ctl = 1;
        events.count(event_t.ROUTE_MISS);
    }

    action claim_drop() {
        ig_dprsr_md.drop_ctl = 1;
        events.count(event_t.CLAIM_OVERSIZE);
    }

    action note_no_pair() {
        events.count(event_t.NO_PAIR);
    }

    action ffs_drop() {
        ig_dprsr_md.drop_ctl = 1;
        events.count(event_t.FFS_DROP);
    }

    /* γ admitted it, but the egress's virtual queue stands and its pair reads over 1.25 x its
     * share (spec §7.7) */
    action guard_drop() {
        ig_dprsr_md.drop_ctl = 1;
        events.count(event_t.GUARD_DROP);
    }

    /* Beside fate: an action addresses each indirect counter with one expression only. */
    action count_pair_drop() {
        pair_drops.count(md.pid);
    }

    action count_admitted() {
        admitted.count(ig_tm_md.ucast_egress_port);
    }

    /* fate's insert_shim_v4 / _v6 predicate, known once room is (stage 1): set md.grows */
    action count_offered_shim() {
        md.grows = 1;
        offered_shims.count(ig_tm_md.ucast_egress_port);
    }

    action count_admitted_shim() {
        admitted_shims.count(ig_tm_md.ucast_egress_port);
    }

    action note_opaque() {
        events.count(event_t.OPAQUE_SHIM);
    }

    /* an insert port forwards a packet without a shim: a fragment (one fragment's protocol changed
     * alone would keep the datagram from being reassembled), or one the shim would take beyond the
     * egress's MTU (spec §2) */
    action note_not_inserted() {
        events.count(event_t.NOT_INSERTED);
    }

    /* rf <- min(rf_norm, tau): Algorithm 3 line 3; rri <- min(rri, c_ri): Algorithm 4 */
    action rewrite_label() {
        hdr.ffs.rf = min(md.rf_norm, md.ltau);
        hdr.ffs.rri = min(hdr.ffs.rri, md.c_ri);
    }

    /* A reset port rewrites the label it replaced and says so (flag D); Algorithm 4 runs with that
     * label, so a host's first hop gives it feedback (spec §6). */
    action rewrite_reset_label() {
        hdr.ffs.rf = min(md.rf_norm, md.ltau);
        hdr.ffs.rri = min(hdr.ffs.rri, md.c_ri);
        hdr.ffs.flags = hdr.ffs.flags | FLAG_DEFAULTED;
    }

    /* The IPv4 header checksum is rewritten by the egress deparser (bridge.grown): here it would
     * need a stage after this one for the deparser's update condition. */
    action insert_shim_v4() {
        hdr.ffs.setValid();
        hdr.ffs.version = SHIM_VERSION;
        hdr.ffs.flags = FLAG_DEFAULTED;
        hdr.ffs.next_hdr = hdr.ipv4.protocol;
        hdr.ipv4.protocol = IP_PROTO_FFS;
        hdr.ipv4.total_len = hdr.ipv4.total_len + SHIM_LEN;
        hdr.ffs.rf = min(md.rf_norm, md.ltau);
        hdr.ffs.rri = CODE_MAX;
        hdr.ffs.rri_echo = 0;
        hdr.bridge.grown = 1;
    }

    action insert_shim_v6() {
        hdr.ffs.setValid();
        hdr.ffs.version = SHIM_VERSION;
        hdr.ffs.flags = FLAG_DEFAULTED;
        hdr.ffs.next_hdr = hdr.ipv6.next_hdr;
        hdr.ffs.rf = min(md.rf_norm, md.ltau);
        hdr.ffs.rri = CODE_MAX;
        hdr.ffs.rri_echo = 0;
        hdr.ipv6.next_hdr = IP_PROTO_FFS;
        hdr.ipv6.payload_len = hdr.ipv6.payload_len + SHIM_LEN;
        hdr.bridge.grown = 1;
    }

    action forward() {
    }

    /* the host's declared L2 change, bridged apart from bridge_pair: a copy of md.l2_change there
     * moved bridge_pair and the queue guard's fill a stage later on Tofino 2 (8 ingress stages);
     * constants behind a gateway, which a program that never declares anything drops, do not */
    action bridge_tag_popped() {
        hdr.bridge.l2_change = L2_TAG_POPPED;
    }

    action bridge_tag_pushed() {
        hdr.bridge.l2_change = L2_TAG_PUSHED;
    }

    /* Every packet carries its pair to the egress (spec §7.3), whether the ingress grew it by a
     * shim (set by fate's insert actions, which follow) and the L2 change the host declared
     * (bridge_tag_*, which follow): the egress's pkt_length is the length the packet arrived with,
     * not what the ingress deparser emitted. */
    action bridge_pair() {
        hdr.bridge.setValid();
        hdr.bridge.l2_change = L2_SAME;
        hdr.bridge.grown = 0;
        hdr.bridge.managed = md.managed;
        hdr.bridge.pid = md.pid;
    }

    /* First match wins; anything not listed (a parse error) takes the default. The same entries
     * as ffs.core.tables.fate_entries (tests/unit/test_p4_schema.py). */
    table fate {
        key = {
            md.parse_error:           ternary @name("parse_error");
            ig_prsr_md.parser_err:    ternary @name("parser_err");
            md.routed:                ternary @name("routed");
            md.managed:               ternary @name("managed");
            md.admit_margin:          ternary @name("admit_margin");
            md.guard:                 ternary @name("guard");
            md.ffs_state:             ternary @name("ffs_state");
            md.port_md.trust[0:0]:         ternary @name("trust");
            md.port_md.insert[0:0]:        ternary @name("insert");
            hdr.ipv4.isValid():       ternary @name("ipv4");
            hdr.ipv6.isValid():       ternary @name("ipv6");
            hdr.ipv6.next_hdr:        ternary @name("ipv6_next_hdr");
            md.runt:                  ternary @name("runt");
            md.frag:                  ternary @name("frag");
            md.room:                  ternary @name("room");
            md.claim_room:            ternary @name("claim_room");
        }
        actions = { parse_drop; miss_drop; note_no_pair; ffs_drop; guard_drop; note_opaque; rewrite_label;
                    rewrite_reset_label; insert_shim_v4; insert_shim_v6; note_not_inserted; forward; claim_drop; }
        default_action = parse_drop();
        size = 16;
        const entries = {
            (0, 0, 0, _, _, _, _, _, _, _, _, _, _, _, _, _): miss_drop();
            /* a claim beyond the ingress port's frame limit: a lie, before it weighs on any pair (spec §4) */
            (0, 0, 1, _, _, _, _, _, _, _, _, _, _, _, _, 0): claim_drop();
            (0, 0, 1, 0, _, _, _, _, _, _, _, _, _, _, _, _): note_no_pair();
            (0, 0, 1, 1, 0, _, _, _, _, _, _, _, _, _, _, _): ffs_drop();
            (0, 0, 1, 1, _, 1, _, _, _, _, _, _, _, _, _, _): guard_drop();
            (0, 0, 1, 1, _, _, FFS_STATE_VALID, 1, _, _, _, _, _, _, _, _): rewrite_label();
            (0, 0, 1, 1, _, _, FFS_STATE_VALID, 0, _, _, _, _, _, _, _, _): rewrite_reset_label();
            (0, 0, 1, 1, _, _, FFS_STATE_OPAQUE, _, _, _, _, _, _, _, _, _): note_opaque();
            /* a fragment: spec §2 */
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, _, _, _, _, 1, _, _): note_not_inserted();
            /* a runt (a claim below 64 bytes with FCS, 68 if tagged, len_log) may have reached us padded:
             * a shim in front of its padding would leave the padding behind the IP packet, which
             * the next FFS hop's frame check cannot tell from a lie (spec §6) */
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, _, _, _, 1, _, _, _): forward();
            /* a shim would take it beyond the egress's MTU, or wrap its IP length (spec §2) */
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, _, _, _, _, _, 0, _): note_not_inserted();
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, true, _, _, _, _, _, _): insert_shim_v4();
            /* a Hop-by-Hop Options header must stay right after the IPv6 header (RFC 8200 §4.1):
             * no shim goes in front of it */
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, false, true, IP_PROTO_HOPOPT, _, _, _, _): forward();
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, 1, false, true, _, _, _, _, _): insert_shim_v6();
            (0, 0, 1, 1, _, _, FFS_STATE_NONE, _, _, _, _, _, _, _, _, _): forward();
        }
    }

    apply {
        /* a timer packet of the packet generator only drains the queue guard's queues */
        if (md.timer == 0) {
            /* stage 0: nothing here depends on anything else (the host's forwarding runs beside it) */
            port_label.apply();
            claim_limit.apply();
            if (hdr.ipv4.isValid() && hdr.ffs.isValid()) {
                ipv4_shim_len.apply();
            }
            /* stages 1-4: FFS state is touched only by routed, well-formed packets of a managed pair
             * whose claim fits the ingress port (spec §4) */
            if (md.routed == 1 && md.parse_error == 0 && ig_prsr_md.parser_err == 0 && md.claim_room != 0) {
                pair_map.apply(md, ig_intr_md, ig_tm_md);
            }
            rate_est.apply(md, ig_tm_md);
            /* here, not beside fate: it needs only the pair (stage 1), and bf-p4c places it in
             * program order, where it would push fate into an eighth stage on Tofino 2 */
            bridge_pair();
            if (md.l2_change == L2_TAG_POPPED) {
                bridge_tag_popped();
            } else if (md.l2_change == L2_TAG_PUSHED) {
                bridge_tag_pushed();
            }
            if (md.managed == 1) {
                normalize.apply(hdr, md);
                ri_update.apply(hdr, md);
                /* the packets fate's insert_shim_v4 / _v6 take if γ and the guard admit them (§7.6):
                 * no shim yet, an insert port, not a fragment, not a runt, room for it, and not in
                 * front of an IPv6 Hop-by-Hop header */
                if (md.ffs_state == FFS_STATE_NONE && md.port_md.insert[0:0] == 1 && md.frag == 0 &&
                    md.runt == 0 && md.room != 0) {
                    if (hdr.ipv4.isValid() || (hdr.ipv6.isValid() && hdr.ipv6.next_hdr != IP_PROTO_HOPOPT)) {
                        count_offered_shim();
                    }
                }
            }
        }
        /* stage 5: an admitted packet fills its egress's virtual queue or is guarded; a timer drains */
        guard.apply(md, ig_dprsr_md, ig_tm_md);
        if (md.timer == 0) {
            /* stage 6: the packet's fate */
            fate.apply();
            if (md.managed == 1) {
                if (md.admit_margin == 0 || md.guard == 1) {
                    count_pair_drop();
                } else {
                    count_admitted();
                    if (md.grows == 1) {
                        count_admitted_shim();
                    }
                }
            }
        }
    }
}

/* The egress half: the frame check, A_j, the strip port mode, and the bridge removed. */
control FfsEgressCore(inout headers_t hdr,
                      inout egress_metadata_t md,
                      in egress_intrinsic_metadata_t eg_intr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    EgressAccounting() egress_acct;

    apply {
        egress_acct.apply(hdr, md, eg_intr_md, eg_dprsr_md);
        hdr.bridge.setInvalid();  /* the bridged pair never leaves the switch */
    }
}

#endif
