// SPDX-License-Identifier: Apache-2.0
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

#include "include/ffs_lib.p4"
#include "include/control/forwarding.p4"

/* The FFS switch: IPv4/IPv6 LPM forwarding beside the FFS library's controls. */
FFS_INGRESS_PRAGMAS
control FfsIngress(inout headers_t hdr,
                   inout ffs_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Forwarding() forwarding;
    @name(".FfsIngress") FfsCore() ffs;

    apply {
        forwarding.apply(hdr, md, ig_tm_md);  /* stage 0: ucast_egress_port, routed */
        ffs.apply(hdr, md, ig_intr_md, ig_prsr_md, ig_dprsr_md, ig_tm_md);
    }
}

control FfsEgress(inout headers_t hdr,
                  inout egress_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    @name(".FfsEgress") FfsEgressCore() ffs;

    apply {
        ffs.apply(hdr, md, eg_intr_md, eg_dprsr_md);
    }
}

Pipeline(FfsIngressParser(),
         FfsIngress(),
         FfsIngressDeparser(),
         FfsEgressParser(),
         FfsEgress(),
         FfsEgressDeparser()) pipe;

Switch(pipe) main;
