/* ffs-tofino: the weighted-bytes estimator F_(i,j) and the R_(i,j) counter (spec §4, §5.1, §5.2).
 *
 *   stage 0  len_log  l3_len -> lw = llen |-| rf      (log of len * 2^8 / rf)
 *   stage 1  weight   lw -> w = 2^(lw/128)            (exact table: no multiply on Tofino)
 *   stage 2  f_lpf    F <- Lpf(w)[pid]; pair_bytes[pid] counts R_(i,j) with the labels as they arrive
 *   stage 3  f_log    lf = log F (disjoint ternary buckets); f_est[pid] <- F for the agent
 */
#ifndef _FFS_RATE_ESTIMATION_P4_
#define _FFS_RATE_ESTIMATION_P4_

control RateEstimation(inout ffs_metadata_t md) {
    Lpf<bit<32>, pid_t>(size=NUM_PAIRS) f_lpf;
    Counter<bit<64>, pid_t>(NUM_PAIRS, CounterType_t.PACKETS_AND_BYTES) pair_bytes;
    Register<bit<32>, pid_t>(NUM_PAIRS) f_est;
    RegisterAction<bit<32>, pid_t, bit<32>>(f_est) f_est_store = {
        void apply(inout bit<32> value) {
            value = md.f;
        }
    };

    action set_lw(bit<16> llen) {
        md.lw = llen |-| md.rf16;
    }

    action lw_zero() {
        md.lw = 0;
    }

    table len_log {
        key = { md.l3_len: ternary @name("l3_len"); }
        actions = { set_lw; lw_zero; }
        default_action = lw_zero();
        size = LEN_LOG_SIZE;
    }

    action set_weight(bit<32> w) {
        md.w = w;
    }

    action weight_max() {
        md.w = 0xFFFFFFFF;
    }

    table weight {
        key = { md.lw: exact @name("lw"); }
        actions = { set_weight; weight_max; }
        default_action = weight_max();
        size = WEIGHT_KEYS;
    }

    action estimate() {
        md.f = f_lpf.execute(md.w, md.pid);
    }

    action count_pair() {
        pair_bytes.count(md.pid);
    }

    action set_lf(bit<16> lf) {
        md.lf = (bit<32>)lf;
    }

    action lf_zero() {
        md.lf = 0;
    }

    table f_log {
        key = { md.f: ternary @name("f"); }
        actions = { set_lf; lf_zero; }
        default_action = lf_zero();
        size = F_LOG_SIZE;
    }

    action store_f() {
        f_est_store.execute(md.pid);
    }

    apply {
        len_log.apply();
        weight.apply();
        if (md.managed == 1) {
            estimate();
            count_pair();
            f_log.apply();
            store_f();
        }
    }
}

#endif
