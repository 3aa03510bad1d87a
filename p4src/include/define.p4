// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: constants of the FFS/RI contract (docs/spec.md). The same values live in
 * controlplane/ffs/constants.py; tests/test_constants_p4.py checks that the two agree. */
#ifndef _FFS_DEFINE_P4_
#define _FFS_DEFINE_P4_

/* --- the shim (spec §2) --- */
#define IP_PROTO_FFS        253
#define IP_PROTO_HOPOPT     0       /* IPv6 Hop-by-Hop Options */
#define SHIM_VERSION        1
#define FLAG_RI             0x8
#define FLAG_ECHO           0x4
#define FLAG_DEFAULTED      0x2
#define FLAG_RESERVED       0x1
/* the same flags as bit positions in ffs_h.flags, for a slice (flags[FLAG_RI_BIT:FLAG_RI_BIT]) */
#define FLAG_RI_BIT         3
#define FLAG_RESERVED_BIT   0

/* --- the log code (spec §3) --- */
#define CODE_ONE            0x8000
#define CODE_MAX            0xFFFF
#define CODE_ONE_BIT        15      /* set in every code >= CODE_ONE: the value is >= 1.0 */
/* admitted labels (spec §3.1): rf is clamped to [2^-8, 2^16] as it arrives, so that no label makes
 * a packet weigh more than 2^16 times its length and the estimator never saturates; the top is
 * what a node emits at most (rf out <= ltau <= LTAU_MAX) */
#define RF_CODE_MIN         0x7C00
#define RF_CODE_MAX         0x8800
#define RF_CODE_BELOW_MIN   0x7BFF
#define RF_CODE_ABOVE_MAX   0x8801
/* tau = 2^16, the largest: also the ltau of an uncongested egress, so that no label leaves a node
 * above what the next accepts (spec §3.1) */
#define LTAU_MAX            0x8800
/* log2 of a 32-bit F, and of M_F, never exceeds 32 octaves: D_OFFSET = 32 * 128 (spec §7.2) */
#define D_OFFSET            0x1000

/* --- sizes (override with -D at build time) --- */
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

#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_IPV6      0x86DD
#define ETHERTYPE_VLAN      0x8100

/* Frame lengths (spec §4): what a packet's headers claim against the bytes it occupies */
#define ETH_HDR_LEN         14
#define VLAN_TAG_LEN        4
#define IPV6_HDR_LEN        40
#define FCS_LEN             4       /* counted in the estimator's len, in pkt_length and in every counter */
#define MIN_FRAME           60      /* the shortest Ethernet frame without FCS: shorter ones are padded */
#define SHIM_LEN            8
/* shim_room (spec §2): an IP length from which an inserted shim would wrap the 16-bit length field,
 * whatever the egress's MTU; the table holds two entries (IPv4, IPv6) per port */
#define SHIM_ROOM_MAX       65528
#define SHIM_ROOM_SIZE      1024
#define BRIDGE_LEN          2       /* bridge_h: the egress counters subtract it (adjust_byte_count) */

#define WEIGHT_MAX          0xFFFFFFFF  /* the weight of a lw beyond the weight table */

/* --- the queue guard and its timer (spec §7.7) --- */
/* code(1.25): while its egress's virtual queue stands above qhi, a packet whose pair reads above
 * this much of its share is dropped before the queue */
#define GUARD_RF_CODE       0x8029
#define QHI_OFF             0xFFFFFFFF  /* no_queue: no queue stands above it, the guard is off */
/* The packet generator's timer application and the pipe-local port its packets enter on */
#define TIMER_APP_ID        1
#define PKTGEN_PORT         68      /* Tofino 1 */
#define PKTGEN_PORT_TOFINO2 6
#if __TARGET_TOFINO__ == 2 || defined(TOFINO2)
#define PKTGEN_LOCAL_PORT   PKTGEN_PORT_TOFINO2
#else
#define PKTGEN_LOCAL_PORT   PKTGEN_PORT
#endif

/* --- domain types: what a value holds, not only how wide it is --- */
typedef bit<PID_BITS> pid_t;    /* a pair's index: counters, the estimator, f_est */
typedef bit<16> code_t;         /* a log code (spec §3): CODE_ONE is 1.0, 128 steps per octave */
typedef bit<16> len_t;          /* a length in bytes: an IP length, a claimed frame */
typedef bit<32> weight_t;       /* a weighted byte count: the estimator's input w and its output F */
typedef bit<16> rnd_t;          /* a uniform draw, compared with gamma's threshold */
typedef bit<2>  ffs_state_t;    /* FFS_STATE_*: what the parser made of the shim */
typedef bit<3>  event_t;        /* EVENT_*: a cell of FfsIngress.events */
typedef bit<32> qbytes_t;       /* line-rate bytes of a virtual queue (spec §7.7) */

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
