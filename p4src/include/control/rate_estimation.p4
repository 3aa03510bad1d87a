// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: the weighted-bytes estimator F_(i,j) and the R_(i,j) counter (spec §4, §5.1, §5.2).
 *
 *   stage 0  len_log  (IPv6, VLAN, IP length) -> llen = log of L2 header + IP length + FCS
 *                     (spec §4), lw = llen |-| rf_hdr, whether the claim is a runt, and its
 *                     line-rate bytes wlen (the queue guard's, spec §7.7)
 *   stage 1  weight   lw -> pkt_weight w = 2^(lw/128) on a trusting port, weight_reset llen -> w on a
 *                     resetting one (rf = 1)             (exact tables: no multiply on Tofino)
 *   stage 2  f_lpf    F (f_rate) <- Lpf(w)[pid]; pair_bytes[pid] counts R_(i,j) with the labels as they arrive,
 *                     offered[egress port] their sum R*_j
 *   stage 3  f_log    lf = log F (disjoint ternary buckets), applied at once (Algorithm 3 line 1):
 *                     rf_norm = k + lf, c_cong = cc - lf (k: rf_over_m, cc: tau_over_k); f_est[pid] <- F for the agent
 * Neither sum saturates or wraps: k, cc lie in [0x6C00, 0x9C00] and lf <= D_OFFSET (spec §7.2),
 * so plain adds do it; nlf = -lf (mod 2^16) comes with lf because action data cannot be
 * subtracted.
 */
#ifndef _FFS_RATE_ESTIMATION_P4_
#define _FFS_RATE_ESTIMATION_P4_

control RateEstimation(inout ffs_metadata_t md,
                       in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Lpf<weight_t, pid_t>(size=NUM_PAIRS) f_lpf;
    Counter<bit<64>, pid_t>(NUM_PAIRS, CounterType_t.PACKETS_AND_BYTES) pair_bytes;
    /* R*_j = the sum over i of R_(i,j), per egress port: the agent's tau step reads one cell per
     * egress instead of one per pair (spec §9) */
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) offered;
    Register<weight_t, pid_t>(NUM_PAIRS) f_est;
    RegisterAction<weight_t, pid_t, weight_t>(f_est) f_est_store = {
        void apply(inout weight_t value) {
            value = md.f_rate;
        }
    };

    /* llen = log of the frame the headers claim (L2 header + IP length + FCS, spec §4), looked up
     * on the IP length and the header class, so that no stage adds the L2 overhead first: the
     * generator adds it to each bucket. lw divides by the clamped arriving label; a resetting
     * port weighs by llen alone (rf = 1.0), through weight_reset. wlen, the claim's line-rate
     * bytes for the queue guard, adds the class's header, FCS, preamble and gap (wadd) to the IP
     * length (spec §5.1). */
    action set_lw(code_t llen, len_t wadd) {
        md.lw = llen |-| md.rf_hdr;
        md.llen = llen;
        md.wlen = md.l3_len |+| wadd;
    }

    /* the same for a claim below 64 bytes (68 if tagged): fate inserts no shim in front of padding,
     * and the wire carries the padded frame (wlen: one length per bucket, given whole) */
    action set_lw_runt(code_t llen, len_t wlen) {
        md.lw = llen |-| md.rf_hdr;
        md.llen = llen;
        md.runt = 1;
        md.wlen = wlen;
    }

    action lw_zero() {
        md.lw = 0;
        md.llen = 0;
    }

    table len_log {
        key = {
            md.ipv6:   exact @name("ipv6");
            md.vlan:   exact @name("vlan");
            md.l3_len: ternary @name("l3_len");
        }
        actions = { set_lw; set_lw_runt; lw_zero; }
        default_action = lw_zero();
        size = LEN_LOG_SIZE;
    }

    action set_weight(weight_t w) {
        md.pkt_weight = w;
    }

    action weight_max() {
        md.pkt_weight = WEIGHT_MAX;
    }

    table weight {
        key = { md.lw: exact @name("lw"); }
        actions = { set_weight; weight_max; }
        default_action = weight_max();
        size = WEIGHT_KEYS;
    }

    /* w = 2^((llen - code(1))/128) for a resetting port: trust picks the table, not a stage */
    table weight_reset {
        key = { md.llen: exact @name("llen"); }
        actions = { set_weight; weight_max; }
        default_action = weight_max();
        size = WEIGHT_KEYS;
    }

    action estimate() {
        md.f_rate = f_lpf.execute(md.pkt_weight, md.pid);
    }

    action count_pair() {
        pair_bytes.count(md.pid);
    }

    action count_offered() {
        offered.count(ig_tm_md.ucast_egress_port);
    }

    action set_lf(code_t lf, code_t nlf) {
        md.rf_norm = lf + md.rf_over_m;
        md.c_cong = nlf + md.tau_over_k;
    }

    action lf_zero() {
        md.rf_norm = md.rf_over_m;
        md.c_cong = md.tau_over_k;
    }

    table f_log {
        key = { md.f_rate: ternary @name("f"); }
        actions = { set_lf; lf_zero; }
        default_action = lf_zero();
        size = F_LOG_SIZE;
    }

    action store_f() {
        f_est_store.execute(md.pid);
    }

    apply {
        len_log.apply();
        if (md.port_md.trust[0:0] == 1) {
            weight.apply();
        } else {
            weight_reset.apply();
        }
        if (md.managed == 1) {
            estimate();
            count_pair();
            count_offered();
            f_log.apply();
            store_f();
        }
    }
}

#endif
