// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: Algorithm 4 (RRI) with the normalized label from before the gamma rewrite (spec §7.2:
 * in the paper's literal order RRI could never fall below 1).
 *
 *   stage 0  rri_n = CODE_ONE - rri
 *   stage 4  c_ri, by branch (RI requested; CODE_MAX, no change, otherwise). A resetting port runs
 *            it with the label it set (App. C/D: the first node initialises the labels), so an
 *            FFS-aware host gets feedback from its first hop:
 *              rri < 1, congested (line 2, rri * gamma):  c_cong |-| rri_n = rri - d
 *              rri < 1, not congested (gamma = 1):        CODE_MAX
 *              rri >= 1, congested (line 5):              c_cong = code(tau / rf_norm)
 *              rri >= 1, not congested (lines 7-8):       max(c_cong, lcr) = code(max(1/rf_norm, C/R*))
 *   stage 5  FfsIngress.fate writes rri = min(rri, c_ri) with the rewritten label.
 * In the first branch, d <= 0 (gamma = 1) gives c_ri >= rri and the min keeps rri, as line 2
 * says. The shim's rri is written by one instruction from one field: Tofino cannot place the PHV
 * when several instructions with different sources write it. Dropped packets never leave, so no
 * guard against gamma's decision is needed.
 */
#ifndef _FFS_RI_UPDATE_P4_
#define _FFS_RI_UPDATE_P4_

control RiUpdate(inout headers_t hdr, inout ffs_metadata_t md) {
    action candidate_upstream() {
        md.c_ri = md.c_cong |-| md.rri_n;
    }

    action candidate_keep() {
        md.c_ri = CODE_MAX;
    }

    action candidate_congested() {
        md.c_ri = md.c_cong;
    }

    action candidate_uncongested() {
        md.c_ri = max(md.c_cong, md.lcr);
    }

    table ri_candidate {
        key = {
            md.ri_req:        exact @name("ri_req");
            md.rri_ge_one:    exact @name("rri_ge_one");
            md.congested:     exact @name("congested");
        }
        actions = { candidate_upstream; candidate_keep; candidate_congested; candidate_uncongested; }
        default_action = candidate_keep();
        size = 8;  /* three one-bit keys */
        /* the same entries as ffs.core.tables.ri_candidate_entries (tests/unit/test_p4_schema.py) */
        const entries = {
            (1, 0, 0): candidate_keep();
            (1, 0, 1): candidate_upstream();
            (1, 1, 0): candidate_uncongested();
            (1, 1, 1): candidate_congested();
        }
    }

    apply {
        ri_candidate.apply();
    }
}

#endif
