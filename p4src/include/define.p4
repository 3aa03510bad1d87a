// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: the types and constants of the FFS/RI contract (docs/spec.md). The contract's numbers
 * are in constants.p4, generated from controlplane/ffs/core/constants.py by make constants; this file
 * adds the domain types they are declared with and what only the P4 program needs. */
#ifndef _FFS_DEFINE_P4_
#define _FFS_DEFINE_P4_

/* --- domain types: what a value holds, not only how wide it is --- */
typedef bit<16> code_t;         /* a log code (spec §3): CODE_ONE is 1.0, 128 steps per octave */
typedef bit<16> len_t;          /* a length in bytes: an IP length, a claimed frame */
typedef bit<32> weight_t;       /* a weighted byte count: the estimator's input w and its output F */
typedef bit<16> rnd_t;          /* a uniform draw, compared with gamma's threshold */
typedef bit<16> margin_t;       /* gamma's verdict thr |-| rnd: 0 drops, anything else admits */
typedef bit<2>  ffs_state_t;    /* FFS_STATE_*: what the parser made of the shim */
typedef bit<32> qbytes_t;       /* line-rate bytes of a virtual queue (spec §7.7) */
typedef bit<4>  shim_flags_t;   /* ffs_h.flags: FLAG_* */
typedef bit<2>  fcs_basis_t;    /* FCS_*: whether pkt_length counts the FCS (frame_basis) */

/* The L2 change a host program's ingress makes to a frame, which it declares in md.l2_change
 * (docs/pipeline.md, "FFS as a P4 library"): the egress's pkt_length is the arrival length, so the
 * frame check takes the declared change off it. Metadata the host's own actions set, never a
 * packet field: a sender cannot declare anything. L2_* in constants.p4. */
typedef bit<2> l2_change_t;

#include "constants.p4"     /* and event_t, an enum bit<3> of FfsIngress.events' cells */

typedef bit<PID_BITS> pid_t;    /* a pair's index: counters, the estimator, f_est */

/* --- sizes of what only the program holds --- */
#define F_LOG_SIZE          4096
#define GAMMA_SIZE          2050
#define IPV4_OPTION_WORDS   10

/* bridge_h: the egress counters subtract it (Counter.count's adjust_byte_count is 32 bits) */
const bit<32>     BRIDGE_LEN      = 2;

/* the pipe-local port the packet generator's packets enter on, on the chip built for */
#if __TARGET_TOFINO__ == 2 || defined(TOFINO2)
const bit<7>      PKTGEN_LOCAL_PORT = PKTGEN_PORT_TOFINO2;
#else
const bit<7>      PKTGEN_LOCAL_PORT = PKTGEN_PORT;
#endif

#endif
