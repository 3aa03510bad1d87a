// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: constants of the FFS/RI contract (docs/spec.md). The same values live in
 * controlplane/ffs/constants.py; tests/test_constants_p4.py checks that the two agree. */
#ifndef _FFS_DEFINE_P4_
#define _FFS_DEFINE_P4_

/* --- domain types: what a value holds, not only how wide it is --- */
typedef bit<16> code_t;         /* a log code (spec §3): CODE_ONE is 1.0, 128 steps per octave */
typedef bit<16> len_t;          /* a length in bytes: an IP length, a claimed frame */
typedef bit<32> weight_t;       /* a weighted byte count: the estimator's input w and its output F */
typedef bit<16> rnd_t;          /* a uniform draw, compared with gamma's threshold */
typedef bit<16> margin_t;       /* gamma's verdict thr |-| rnd: 0 drops, anything else admits */
typedef bit<2>  ffs_state_t;    /* FFS_STATE_*: what the parser made of the shim */
typedef bit<3>  event_t;        /* EVENT_*: a cell of FfsIngress.events */
typedef bit<32> qbytes_t;       /* line-rate bytes of a virtual queue (spec §7.7) */
typedef bit<4>  shim_flags_t;   /* ffs_h.flags: FLAG_* */

/* --- the shim (spec §2) --- */
/* @noWarn("unused"): the contract's constants that this program's code does not name itself */
const bit<8>      IP_PROTO_FFS    = 253;
const bit<8>      IP_PROTO_HOPOPT = 0;     /* IPv6 Hop-by-Hop Options */
const bit<4>      SHIM_VERSION    = 1;
@noWarn("unused") const shim_flags_t FLAG_RI        = 0x8;
@noWarn("unused") const shim_flags_t FLAG_ECHO      = 0x4;
const shim_flags_t FLAG_DEFAULTED = 0x2;
@noWarn("unused") const shim_flags_t FLAG_RESERVED  = 0x1;
/* the same flags as bit positions in ffs_h.flags, for a slice (flags[FLAG_RI_BIT:FLAG_RI_BIT]) */
const int         FLAG_RI_BIT       = 3;
const int         FLAG_RESERVED_BIT = 0;

/* --- the log code (spec §3) --- */
const code_t      CODE_ONE        = 0x8000;
const code_t      CODE_MAX        = 0xFFFF;
const int         CODE_ONE_BIT    = 15;    /* set in every code >= CODE_ONE: the value is >= 1.0 */
/* admitted labels (spec §3.1): rf is clamped to [2^-8, 2^16] as it arrives, so that no label makes
 * a packet weigh more than 2^16 times its length and the estimator never saturates; the top is
 * what a node emits at most (rf out <= ltau <= LTAU_MAX) */
const code_t      RF_CODE_MIN       = 0x7C00;
const code_t      RF_CODE_MAX       = 0x8800;
const code_t      RF_CODE_BELOW_MIN = 0x7BFF;
const code_t      RF_CODE_ABOVE_MAX = 0x8801;
/* tau = 2^16, the largest: also the ltau of an uncongested egress, so that no label leaves a node
 * above what the next accepts (spec §3.1) */
const code_t      LTAU_MAX        = 0x8800;
/* log2 of a 32-bit F, and of M_F, never exceeds 32 octaves: D_OFFSET = 32 * 128 (spec §7.2) */
@noWarn("unused") const code_t      D_OFFSET        = 0x1000;

/* --- sizes: #define, so that a build overrides them with -D and they size arrays and types --- */
#ifndef NUM_PAIRS
#define NUM_PAIRS           4096
#endif
#define PID_BITS            12
#define PAIRS_TABLE_SIZE    8192    /* NUM_PAIRS in an exact-match hash table half full */
#ifndef NUM_PORTS
#define NUM_PORTS           512
#endif
#ifndef IPV4_ROUTES
#define IPV4_ROUTES         1024
#endif
#ifndef IPV6_ROUTES
#define IPV6_ROUTES         1024
#endif
#define LEN_LOG_SIZE        5120    /* 4 header classes x 1280 buckets of the IP length */
#define WEIGHT_KEYS         4096
#define F_LOG_SIZE          4096
#define GAMMA_SIZE          2050
#define EVENT_COUNTER_SIZE  8
#define IPV4_OPTION_WORDS   10

typedef bit<PID_BITS> pid_t;    /* a pair's index: counters, the estimator, f_est */

const bit<16>     ETHERTYPE_IPV4  = 0x0800;
const bit<16>     ETHERTYPE_IPV6  = 0x86DD;
const bit<16>     ETHERTYPE_VLAN  = 0x8100;

/* Frame lengths (spec §4): what a packet's headers claim against the bytes it occupies */
const len_t       ETH_HDR_LEN     = 14;
const len_t       VLAN_TAG_LEN    = 4;
const len_t       IPV6_HDR_LEN    = 40;
const len_t       FCS_LEN         = 4;     /* counted in the estimator's len, in pkt_length and in every counter */
const len_t       MIN_FRAME       = 60;    /* the shortest Ethernet frame without FCS: shorter ones are padded */
const len_t       SHIM_LEN        = 8;
/* shim_room (spec §2): an IP length from which an inserted shim would wrap the 16-bit length field,
 * whatever the egress's MTU; the table holds two entries (IPv4, IPv6) per port */
const len_t       SHIM_ROOM_MAX   = 65528;
#define SHIM_ROOM_SIZE      1024
/* bridge_h: the egress counters subtract it (Counter.count's adjust_byte_count is 32 bits) */
const bit<32>     BRIDGE_LEN      = 2;

const weight_t    WEIGHT_MAX      = 0xFFFFFFFF;  /* the weight of a lw beyond the weight table */

/* --- the queue guard and its timer (spec §7.7) --- */
/* code(1.25): while its egress's virtual queue stands above qhi, a packet whose pair reads above
 * this much of its share is dropped before the queue */
const code_t      GUARD_RF_CODE   = 0x8029;
const qbytes_t    QHI_OFF         = 0xFFFFFFFF;  /* no_queue: no queue stands above it, the guard is off */
/* The packet generator's timer application (an int: its app_id is 3 bits on Tofino 1, 4 on
 * Tofino 2) and the pipe-local port its packets enter on */
const int         TIMER_APP_ID    = 1;
@noWarn("unused") const bit<7>      PKTGEN_PORT     = 68;    /* Tofino 1 */
@noWarn("unused") const bit<7>      PKTGEN_PORT_TOFINO2 = 6;
#if __TARGET_TOFINO__ == 2 || defined(TOFINO2)
const bit<7>      PKTGEN_LOCAL_PORT = PKTGEN_PORT_TOFINO2;
#else
const bit<7>      PKTGEN_LOCAL_PORT = PKTGEN_PORT;
#endif

/* --- typed constants --- */
/* the parser's outcome for the shim (md.ffs_state; spec §7.1) */
const ffs_state_t FFS_STATE_NONE   = 0;     /* no shim, or not IP */
const ffs_state_t FFS_STATE_VALID  = 1;     /* version 1, reserved flag clear */
const ffs_state_t FFS_STATE_OPAQUE = 2;     /* another version, or the reserved flag set: passed untouched */

/* FfsIngress.events cells (spec §7.6): why a packet did not take the normal path */
const event_t EVENT_PARSE_ERROR  = 0;
const event_t EVENT_ROUTE_MISS   = 1;
const event_t EVENT_OPAQUE_SHIM  = 2;
const event_t EVENT_NO_PAIR      = 3;
const event_t EVENT_FFS_DROP     = 4;
const event_t EVENT_NOT_INSERTED = 5;
const event_t EVENT_GUARD_DROP   = 6;

#endif
