// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: the frame check, what reached the egress (accepted; the lies in malformed and
 * pair_malformed) and the strip port mode (spec §7.3).
 *
 * The ingress weighs a packet by the frame its headers claim (spec §4): it has no frame length on
 * Tofino. Here the real length is known, so a frame whose bytes disagree with its IP length field
 * is dropped before it leaves: a lying length delivers nothing. The ingress already counted it in
 * A_j (admitted), so the agent learns of it here, from malformed (docs/security.md). Allowed:
 * exact agreement or 4 bytes more (the FCS, as frame_basis says pkt_length counts it or not), and
 * Ethernet padding of a claim below 60 bytes, also where a bridge tagged the padded frame
 * afterwards (802.1Q: 64 bytes, 68 with FCS). What pkt_length is on the chip (the FCS; the arrival
 * length or the ingress deparser's) the agent measures and writes to frame_basis; its default is
 * tofino-model's arrival length, with or without the FCS (docs/hardware.md). */
#ifndef _FFS_EGRESS_ACCOUNTING_P4_
#define _FFS_EGRESS_ACCOUNTING_P4_

control EgressAccounting(inout headers_t hdr,
                         inout egress_metadata_t md,
                         in egress_intrinsic_metadata_t eg_intr_md,
                         inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) accepted;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS_AND_BYTES) malformed;
    /* the same frames by the pair they came from (bridged): the agent quarantines a lying pair */
    Counter<bit<64>, pid_t>(NUM_PAIRS, CounterType_t.PACKETS_AND_BYTES) pair_malformed;
    /* the frames that leave without the shim they arrived with: the port sends each SHIM_LEN bytes
     * fewer than A_j and R*_j counted (spec §4); a lying frame too (not waiting for frame_check
     * keeps Tofino 2's egress at 4 stages) */
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) stripped;
    /* the frames whose 802.1Q tag the host pushed (at the egress port's index) or popped (at
     * NUM_PORTS + the port), as it declared in md.l2_change: the port sends each VLAN_TAG_LEN
     * bytes more or fewer than A_j and R*_j counted (spec §4). One counter for both: one read */
    Counter<bit<64>, bit<10>>(2 * NUM_PORTS, CounterType_t.PACKETS) tag_changed;

    action frame_ok() {
        md.lies = 0;
    }

    action frame_lies() {
        md.lies = 1;
    }

    /* Beside frame_check: an action addresses each indirect counter with one expression only.
     * Every counter counts the frame with its FCS, as the ingress's do: the TM's packet also
     * carries bridge_h, which adjust_byte_count takes off. */
    action count_accepted() {
        accepted.count(eg_intr_md.egress_port, BRIDGE_LEN);
    }

    action drop_malformed() {
        eg_dprsr_md.drop_ctl = 1;
        malformed.count(eg_intr_md.egress_port, BRIDGE_LEN);
    }

    action count_pair_malformed() {
        pair_malformed.count(hdr.bridge.pid, BRIDGE_LEN);
    }

    /* pkt_length is the length the packet arrived with (tofino-model; docs/pipeline.md): the
     * egress parser set what the ingress changed since (a shim, a declared L2 change), so a frame
     * that lies about its IP length lies by as much after the correction. Where pkt_length follows
     * the ingress deparser, the change is in it already. */
    action basis_arrival(fcs_basis_t fcs) {
        md.pkt_len = eg_intr_md.pkt_length + md.arrival_change;
        md.fcs_basis = fcs;
    }

    action basis_deparsed(fcs_basis_t fcs) {
        md.pkt_len = eg_intr_md.pkt_length;
        md.fcs_basis = fcs;
    }

    /* keyless: the agent sets the default to what its bring-up measured (spec §7.3) */
    table frame_basis {
        actions = { basis_arrival; basis_deparsed; }
        default_action = basis_arrival(FCS_EITHER);
        size = 1;
    }

    /* First match wins. The same entries as ffs.core.tables.frame_check_entries (tests/unit/test_p4_schema.py).
     * fcs: FCS_EITHER (value 0) passes both the FCS's entry and the one without. */
    table frame_check {
        key = {
            md.excess:              range @name("excess");
            eg_intr_md.pkt_length:  ternary @name("pkt_length");
            hdr.vlan.isValid():     ternary @name("vlan");
            md.fcs_basis:           ternary @name("fcs");
        }
        actions = { frame_ok; frame_lies; }
        default_action = frame_lies();
        size = 6;
        const entries = {
            (0 .. 0, _, _, 0 &&& 1): frame_ok();
            (FCS_LEN .. FCS_LEN, _, _, 0 &&& 2): frame_ok();
            (1 .. MIN_FRAME - ETH_HDR_LEN, MIN_FRAME, _, 0 &&& 1): frame_ok();
            (FCS_LEN + 1 .. MIN_FRAME + FCS_LEN - ETH_HDR_LEN, MIN_FRAME + FCS_LEN, _, 0 &&& 2): frame_ok();
            /* a claim below 60 bytes untagged, padded to 60 and then tagged by a bridge (802.1Q):
             * 68 bytes with FCS, 64 without. Only a tagged frame: an untagged one of 68 bytes needs
             * no padding. */
            (FCS_LEN + 1 .. MIN_FRAME + FCS_LEN - ETH_HDR_LEN, MIN_FRAME + VLAN_TAG_LEN + FCS_LEN, true, 0 &&& 2): frame_ok();
            (1 .. MIN_FRAME - ETH_HDR_LEN, MIN_FRAME + VLAN_TAG_LEN, true, FCS_NOT_COUNTED): frame_ok();
        }
    }

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

    action strip_v4() {
        hdr.ipv4.protocol = hdr.ffs.next_hdr;
        hdr.ipv4.total_len = hdr.ipv4.total_len - SHIM_LEN;
        hdr.ffs.setInvalid();
        md.csum_update = 1;
        md.stripped = 1;
    }

    action strip_v6() {
        hdr.ipv6.next_hdr = hdr.ffs.next_hdr;
        hdr.ipv6.payload_len = hdr.ipv6.payload_len - SHIM_LEN;
        hdr.ffs.setInvalid();
        md.stripped = 1;
    }

    action count_stripped() {
        stripped.count(eg_intr_md.egress_port);
    }

    /* L2_TAG_PUSHED (2) at the port's index, L2_TAG_POPPED (1) at NUM_PORTS + it */
    action count_tag_changed() {
        tag_changed.count(hdr.bridge.l2_change[0:0] ++ eg_intr_md.egress_port);
    }

    apply {
        if (hdr.ipv6.isValid()) {
            if (hdr.vlan.isValid()) {
                md.claimed = hdr.ipv6.payload_len |+| (len_t)(ETH_HDR_LEN + VLAN_TAG_LEN + IPV6_HDR_LEN);
            } else {
                md.claimed = hdr.ipv6.payload_len |+| (len_t)(ETH_HDR_LEN + IPV6_HDR_LEN);
            }
        } else if (hdr.vlan.isValid()) {
            md.claimed = hdr.ipv4.total_len |+| (len_t)(ETH_HDR_LEN + VLAN_TAG_LEN);
        } else {
            md.claimed = hdr.ipv4.total_len |+| (len_t)ETH_HDR_LEN;
        }
        frame_basis.apply();
        md.excess = md.pkt_len - md.claimed;
        if (hdr.ipv4.isValid() || hdr.ipv6.isValid()) {
            frame_check.apply();
        } else {
            frame_ok();  /* not IP: no length field to disagree with */
        }
        if (md.lies == 1) {
            drop_malformed();
            if (hdr.bridge.managed == 1) {
                count_pair_malformed();
            }
        } else {
            count_accepted();
        }
        egress_ports.apply();
        /* only a shim this program understands is removed: another version passes untouched */
        if (md.strip == 1 && hdr.ffs.isValid() && hdr.ffs.version == SHIM_VERSION && hdr.ffs.flags[FLAG_RESERVED_BIT:FLAG_RESERVED_BIT] == 0) {
            if (hdr.ipv4.isValid()) {
                strip_v4();
            } else if (hdr.ipv6.isValid()) {
                strip_v6();
            }
        }
        /* only a frame that leaves at the Ethernet minimum or above: a shorter one is padded back
         * and sends fewer than SHIM_LEN bytes less (uncounted: the port runs short of them, never
         * over). A condition of its own: the strip's gateway has no room for pkt_len; a gateway
         * compares at most 12 bits by range, so pkt_len >= 72 is split at bit 7. */
        if (md.stripped == 1 && (md.pkt_len[15:7] != 0 || md.pkt_len[6:0] >= (bit<7>)(MIN_FRAME + FCS_LEN + SHIM_LEN))) {
            count_stripped();
        }
        /* a pushed tag lengthens every frame; a popped one shortens only a frame that leaves at the
         * Ethernet minimum or above (pkt_len, the frame as the ingress sent it, >= 64: bits 15:6) */
        if (hdr.bridge.l2_change == L2_TAG_PUSHED || (hdr.bridge.l2_change == L2_TAG_POPPED && md.pkt_len[15:6] != 0)) {
            count_tag_changed();
        }
    }
}

#endif
