/* ffs-tofino: FFS (Fractional Fair Shares) bandwidth isolation for Tofino 1 (TNA) and
 * Tofino 2 (T2NA, build with -DTOFINO2 or bf-p4c --target tofino2).
 *
 * Data flow (docs/spec.md §1, stage plan in docs/pipeline.md):
 *   parser (shim, port metadata) -> forwarding -> pair/egress params -> rate estimation
 *   -> normalize + gamma + drop before the queue -> RI update -> TM -> egress accounting (A_j, strip)
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2 || defined(TOFINO2)
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "include/define.p4"
#include "include/header.p4"
#include "include/parser.p4"
#include "include/control/forwarding.p4"
#include "include/control/pair_map.p4"
#include "include/control/rate_estimation.p4"
#include "include/control/normalize.p4"
#include "include/control/ri_update.p4"
#include "include/control/egress_accounting.p4"

control FfsIngress(inout headers_t hdr,
                   inout ffs_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Forwarding() forwarding;
    PairMap() pair_map;
    RateEstimation() rate_est;
    Normalize() normalize;
    RiUpdate() ri_update;

    /* Why packets did not take the normal path (spec §7.6); at most one cell per packet. */
    Counter<bit<32>, bit<3>>(EVENT_COUNTER_SIZE, CounterType_t.PACKETS) events;

    action parse_drop() {
        ig_dprsr_md.drop_ctl = 1;
        md.event = EVENT_PARSE_ERROR;
        md.count_event = 1;
    }

    action miss_drop() {
        ig_dprsr_md.drop_ctl = 1;
        md.event = EVENT_ROUTE_MISS;
        md.count_event = 1;
    }

    action note_no_pair() {
        md.event = EVENT_NO_PAIR;
        md.count_event = 1;
    }

    action note_opaque() {
        md.event = EVENT_OPAQUE_SHIM;
        md.count_event = 1;
    }

    action count_event() {
        events.count(md.event);
    }

    apply {
        if (md.parse_error == 1 || ig_prsr_md.parser_err != 0) {
            parse_drop();
        } else {
            forwarding.apply(hdr, md, ig_tm_md);
            if (md.routed == 1) {
                pair_map.apply(md, ig_intr_md, ig_tm_md);
            }
            rate_est.apply(md);
            if (md.routed == 0) {
                miss_drop();
            } else if (md.managed == 0) {
                note_no_pair();
            } else {
                normalize.apply(hdr, md, ig_dprsr_md);
                ri_update.apply(hdr, md);
                if (md.margin != 0 && md.ffs_state == FFS_STATE_OPAQUE) {
                    note_opaque();
                }
            }
        }
        if (md.count_event == 1) {
            count_event();
        }
    }
}

control FfsEgress(inout headers_t hdr,
                  inout egress_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    EgressAccounting() egress_acct;

    apply {
        egress_acct.apply(hdr, md, eg_intr_md);
    }
}

Pipeline(FfsIngressParser(),
         FfsIngress(),
         FfsIngressDeparser(),
         FfsEgressParser(),
         FfsEgress(),
         FfsEgressDeparser()) pipe;

Switch(pipe) main;
