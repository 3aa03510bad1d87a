// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: the queue guard (spec §7.7). A Tofino ingress cannot read its egress queues, so each
 * pipe keeps a virtual queue per egress port in line-rate bytes: what γ admits toward the port
 * fills it, the packet generator's timer packets drain it at the port's speed. While it stands
 * above the port's threshold, a packet of a pair that reads over 1.25 x its share is dropped
 * before the queue, so a flood that its estimator has not caught yet cannot take the queue from
 * the pairs within their shares.
 *
 *   (any stage from 1)  egress_queue (egress port) -> qhi; timer_ports (packet_id) -> port, drain
 *   stage 4  over_guard = rf_norm - (GUARD_RF_CODE + 1)   (beside gamma; rf_norm is stage 3's)
 *   stage 5  queue[port]: an admitted packet of a pair over 1.25 x its share fills it unless
 *            guard = queue > qhi, any other admitted packet fills it; a timer drains it
 */
#ifndef _FFS_QUEUE_GUARD_P4_
#define _FFS_QUEUE_GUARD_P4_

control QueueGuard(inout ffs_metadata_t md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* per ingress pipe: each pipe sees what it admitted itself (spec §7.7, "Limits") */
    Register<qbytes_t, PortId_t>(NUM_PORTS) queue;
    Counter<bit<32>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) timers;

    /* guard = queue > qhi for a pair over 1.25 x its share; its bytes go in only if it passes */
    RegisterAction<qbytes_t, PortId_t, bit<1>>(queue) fill_or_guard = {
        void apply(inout qbytes_t value, out bit<1> guard) {
            if (value > md.qbytes) {
                guard = 1;
            } else {
                value = value |+| (qbytes_t) md.wlen;
                guard = 0;
            }
        }
    };

    /* a pair within 1.25 x its share is never guarded */
    RegisterAction<qbytes_t, PortId_t, bit<1>>(queue) fill = {
        void apply(inout qbytes_t value) {
            value = value |+| (qbytes_t) md.wlen;
        }
    };

    RegisterAction<qbytes_t, PortId_t, bit<1>>(queue) drain_queue = {
        void apply(inout qbytes_t value) {
            value = value |-| md.qbytes;
        }
    };

    action set_queue(qbytes_t qhi) {
        md.qbytes = qhi;
    }

    action no_queue() {
        md.qbytes = QHI_OFF;
    }

    /* rf_norm > GUARD_RF_CODE as one bit for stage 5's gateway, which cannot compare 16 bits with
     * a constant: rf_norm - (GUARD_RF_CODE + 1) is negative (bit 15 set) exactly when the pair
     * reads within 1.25 x its share, since rf_norm lies in [0x6C00, 0x9800] (spec §7.2) */
    action share_margin() {
        md.over_guard = md.rf_norm - (GUARD_RF_CODE + 1);
    }

    table egress_queue {
        key = { ig_tm_md.ucast_egress_port: exact @name("egress_port"); }
        actions = { set_queue; no_queue; }
        default_action = no_queue();
        size = NUM_PORTS;
    }

    /* A timer packet names its egress the way every packet does, in ucast_egress_port, so that
     * the queue has one index; it is dropped all the same. */
    action set_drain(PortId_t port, qbytes_t drain) {
        ig_tm_md.ucast_egress_port = port;
        md.qbytes = drain;
    }

    action no_drain() {
    }

    /* bf-p4c's placement on Tofino 2 otherwise puts it in stage 5 (the drain and the fills follow
     * it in the queue's stage, fate after them: an eighth stage); stage 4 on both chips */
    @stage(4)
    table timer_ports {
        key = { md.timer_id: exact @name("packet_id"); }
        actions = { set_drain; no_drain; }
        default_action = no_drain();
        size = NUM_PORTS;
    }

    action guarded_fill() {
        md.guard = fill_or_guard.execute(ig_tm_md.ucast_egress_port);
    }

    action plain_fill() {
        fill.execute(ig_tm_md.ucast_egress_port);
    }

    action drain() {
        drain_queue.execute(ig_tm_md.ucast_egress_port);
        timers.count(ig_tm_md.ucast_egress_port);
    }

    apply {
        if (md.timer == 1) {
            ig_dprsr_md.drop_ctl = 1;
            if (timer_ports.apply().hit) {
                drain();
            }
        } else {
            egress_queue.apply();
            share_margin();
            /* a packet γ drops touches nothing */
            if (md.managed == 1 && md.admit_margin != 0) {
                if (md.over_guard[15:15] == 0) {
                    guarded_fill();
                } else {
                    plain_fill();
                }
            }
        }
    }
}

#endif
