/* ffs-tofino: (ingress, egress) -> pair index and log M; egress -> tau and friends (stage 1).
 * Both tables follow forwarding because they key on the chosen egress port (spec §7.2). */
#ifndef _FFS_PAIR_MAP_P4_
#define _FFS_PAIR_MAP_P4_

control PairMap(inout ffs_metadata_t md,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action set_pair(pid_t pid, bit<16> lm) {
        md.pid = pid;
        md.lm = (bit<32>)lm;
        md.managed = 1;
    }

    action no_pair() {
        md.managed = 0;
    }

    table pairs {
        key = {
            ig_intr_md.ingress_port:     exact @name("ingress_port");
            ig_tm_md.ucast_egress_port:  exact @name("egress_port");
        }
        actions = { set_pair; no_pair; }
        default_action = no_pair();
        size = NUM_PAIRS;
    }

    /* ntau = 0x10000 - ltau is derived by the agent: an action cannot subtract two immediates. */
    action set_egress(bit<16> ltau, bit<32> ntau, bit<1> congested, bit<16> lcr) {
        md.ltau = (bit<32>)ltau;
        md.ntau = ntau;
        md.congested = congested;
        md.lcr = (bit<32>)lcr;
    }

    action egress_unmanaged() {
        md.ltau = CODE_MAX;
        md.ntau = WIDE_OFFSET - CODE_MAX;
        md.congested = 0;
        md.lcr = CODE_MAX;
    }

    table egress_params {
        key = { ig_tm_md.ucast_egress_port: exact @name("egress_port"); }
        actions = { set_egress; egress_unmanaged; }
        default_action = egress_unmanaged();
        size = NUM_PORTS;
    }

    apply {
        pairs.apply();
        egress_params.apply();
    }
}

#endif
