/* ffs-tofino: Algorithm 4 (RRI) with the pre-gamma normalized label (design brief trap 1).
 *
 *   stage 5  c_cong = 0x18000 |-| d_w   = code(tau / rf_norm)     (line 5)
 *            c_unc  = max(c_inv, lcr)    = code(max(1/rf_norm, C/R*))  (line 7)
 *   stage 6  m_cong = min(rri, c_cong);  m_unc = min(rri, c_unc)
 *   stage 7  the ri table picks the branch: rri < 1 (line 2: rri * gamma = rri - d in codes),
 *            congested (line 5) or not (lines 7-8). Dropped packets never leave, so no guard.
 */
#ifndef _FFS_RI_UPDATE_P4_
#define _FFS_RI_UPDATE_P4_

control RiUpdate(inout headers_t hdr, inout ffs_metadata_t md) {
    action candidates() {
        md.c_cong = CONG_CAND_CONST |-| md.d_w;
        md.c_unc = max(md.c_inv, md.lcr);
    }

    action limits() {
        md.m_cong = min(md.rri, md.c_cong);
        md.m_unc = min(md.rri, md.c_unc);
    }

    action ri_upstream() {
        hdr.ffs.rri = hdr.ffs.rri |-| md.d16;
    }

    action ri_congested() {
        hdr.ffs.rri = md.m_cong[15:0];
    }

    action ri_uncongested() {
        hdr.ffs.rri = md.m_unc[15:0];
    }

    action ri_keep() {
    }

    table ri {
        key = {
            md.ri_req:     exact @name("ri_req");
            md.rri_ge_one: exact @name("rri_ge_one");
            md.congested:  exact @name("congested");
        }
        actions = { ri_upstream; ri_congested; ri_uncongested; ri_keep; }
        default_action = ri_keep();
        size = 8;
        /* the same entries as ffs.tables.ri_entries (checked by tests/test_p4_schema.py) */
        const entries = {
            (1, 0, 0): ri_upstream();
            (1, 0, 1): ri_upstream();
            (1, 1, 0): ri_uncongested();
            (1, 1, 1): ri_congested();
        }
    }

    apply {
        candidates();
        limits();
        ri.apply();
    }
}

#endif
