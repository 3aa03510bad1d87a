// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: (ingress, egress) -> pair index and k = rf - log M (rf_over_m); egress -> tau and
 * friends, and the room an inserted shim has under its MTU (stage 1); cc = code(tau / k)
 * (tau_over_k, stage 2), with tau = 1 for a pair held in quarantine (spec §9). The tables follow forwarding because they key on the chosen egress port
 * (spec §7.2). */
#ifndef _FFS_PAIR_MAP_P4_
#define _FFS_PAIR_MAP_P4_

control PairMap(inout ffs_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* k = code(rf / M) = rf - lm: Algorithm 3 line 1 starts here. The agent pushes nlm = -lm
     * (mod 2^16) because action data cannot be subtracted; with rf >= RF_CODE_MIN and
     * lm <= D_OFFSET the sum never wraps (k >= 0x6C00, spec §7.2). */
    action set_pair(pid_t pid, code_t nlm) {
        md.pid = pid;
        md.rf_over_m = nlm + md.rf;
        md.managed = 1;
    }

    /* a pair held in quarantine (spec §9): the same, and its packets face tau = 1 whatever the
     * egress's tau, so it is admitted at most at its (withheld) share */
    action set_held_pair(pid_t pid, code_t nlm) {
        md.pid = pid;
        md.rf_over_m = nlm + md.rf;
        md.managed = 1;
        md.held = 1;
    }

    action no_pair() {
        md.managed = 0;
    }

    table pairs {
        key = {
            ig_intr_md.ingress_port:     exact @name("ingress_port");
            ig_tm_md.ucast_egress_port:  exact @name("egress_port");
        }
        actions = { set_pair; set_held_pair; no_pair; }
        default_action = no_pair();
        /* a hash table does not fill to its last slot: bf_switchd refused the 3366th of 4096
         * pairs in a table of 4096 (RESOURCE_EXHAUSTED); a quarter more room takes them all */
        size = PAIRS_TABLE_SIZE;
    }

    /* ltau_p = ltau - CODE_ONE (128 log2 tau) while congested and 0 (tau = 1) while not: derived
     * by the agent, because an action cannot subtract two immediates (spec §5.3). */
    action set_egress(code_t ltau, code_t ltau_p, bit<1> congested, code_t lcr) {
        md.ltau = ltau;
        md.ltau_p = ltau_p;
        md.congested = congested;
        md.lcr = lcr;
    }

    /* ltau = 2^16 caps the label a managed pair takes out (spec §3.1), as set_egress does */
    action egress_unmanaged() {
        md.ltau = LTAU_MAX;
        md.ltau_p = 0;
        md.congested = 0;
        md.lcr = CODE_MAX;
    }

    table egress_params {
        key = { ig_tm_md.ucast_egress_port: exact @name("egress_port"); }
        actions = { set_egress; egress_unmanaged; }
        default_action = egress_unmanaged();
        size = NUM_PORTS;
    }

    /* room = thr |-| l3_len: 0 where a shim would take the packet beyond the egress's MTU (thr =
     * MTU - 7 for IPv4 total_len, MTU - 47 for IPv6 payload_len, pushed by the agent per port) or
     * wrap the IP length field (SHIM_ROOM_MAX, any port): fate then inserts nothing (spec §2) */
    action set_room(len_t thr) {
        md.room = thr |-| md.l3_len;
    }

    action room_max() {
        md.room = SHIM_ROOM_MAX |-| md.l3_len;
    }

    table shim_room {
        key = {
            ig_tm_md.ucast_egress_port: exact @name("egress_port");
            md.ipv6:                    exact @name("ipv6");
        }
        actions = { set_room; room_max; }
        default_action = room_max();
        size = SHIM_ROOM_SIZE;
    }

    /* cc = ltau_p - k = code(tau / k) (tau = 1 while not congested): RateEstimation.f_log reads
     * it, so it is computed here, before the estimator, in P4's program order (spec §7.2). */
    action norm_cc() {
        md.tau_over_k = md.ltau_p - md.rf_over_m;
    }

    /* a held pair: cc = code(1 / k), tau = 1 however high the free pairs need it (spec §9) */
    action norm_cc_held() {
        md.tau_over_k = 0 - md.rf_over_m;
    }

    apply {
        pairs.apply();
        egress_params.apply();
        shim_room.apply();
        if (md.held == 1) {
            norm_cc_held();
        } else {
            norm_cc();
        }
    }
}

#endif
