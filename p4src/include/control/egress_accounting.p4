/* ffs-tofino: A_j, counted where only accepted packets arrive (egress), and the strip port mode. */
#ifndef _FFS_EGRESS_ACCOUNTING_P4_
#define _FFS_EGRESS_ACCOUNTING_P4_

control EgressAccounting(inout headers_t hdr,
                         inout egress_metadata_t md,
                         in egress_intrinsic_metadata_t eg_intr_md) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) accepted;

    action strip_shim() {
        md.strip = 1;
    }

    action keep_shim() {
        md.strip = 0;
    }

    table egress_ports {
        key = { eg_intr_md.egress_port: exact @name("egress_port"); }
        actions = { strip_shim; keep_shim; }
        default_action = keep_shim();
        size = NUM_PORTS;
    }

    action count_accepted() {
        accepted.count(eg_intr_md.egress_port);
    }

    action strip_v4() {
        hdr.ipv4.protocol = hdr.ffs.next_hdr;
        hdr.ipv4.total_len = hdr.ipv4.total_len - 8;
        hdr.ffs.setInvalid();
        md.csum_update = 1;
    }

    action strip_v6() {
        hdr.ipv6.next_hdr = hdr.ffs.next_hdr;
        hdr.ipv6.payload_len = hdr.ipv6.payload_len - 8;
        hdr.ffs.setInvalid();
    }

    apply {
        count_accepted();
        egress_ports.apply();
        /* only a shim this program understands is removed: another version passes untouched */
        if (md.strip == 1 && hdr.ffs.isValid() && hdr.ffs.version == SHIM_VERSION && hdr.ffs.flags[0:0] == 0) {
            if (hdr.ipv4.isValid()) {
                strip_v4();
            } else if (hdr.ipv6.isValid()) {
                strip_v6();
            }
        }
    }
}

#endif
