# SPDX-License-Identifier: Apache-2.0
"""Numeric constants of the FFS/RI contract (docs/spec.md).

Every other module -- the label codec, the table generators, the software switch, the agent and the
tests -- imports these. The P4 program reads them from `p4src/include/constants.p4`, generated from
this module by `make constants` (ffs.core.p4constants); `tests/unit/test_constants_p4.py` fails when the
checked-in file is not what the generator writes.
"""

from __future__ import annotations

# --- the FFS/RI shim (spec §2) -------------------------------------------------------------
IP_PROTO_FFS = 253  # RFC 3692 experimental number, IPv4 protocol and IPv6 next header
IP_PROTO_HOPOPT = 0  # IPv6 Hop-by-Hop Options: must follow the IPv6 header (RFC 8200), no shim before it
IPV4_MF = 0x2000  # IPv4 MF in the flags/fragment-offset word: a fragment is MF set or a non-zero offset
SHIM_LEN = 8  # bytes
SHIM_ROOM_MAX = 0xFFFF - SHIM_LEN + 1  # an IP length from which 8 more bytes wrap its 16-bit field (spec §2)
SHIM_ROOM_SIZE = 2 * 512  # shim_room: an IPv4 and an IPv6 entry per port
CLAIM_LIMIT_SIZE = 2 * 512  # claim_limit: an IPv4 and an IPv6 entry per port (spec §4)

# frame lengths (spec §4): the estimator weighs the frame a packet's headers claim, FCS included;
# FfsEgress drops a frame whose bytes disagree with that claim
ETH_HDR_LEN = 14
VLAN_TAG_LEN = 4
IPV6_HDR_LEN = 40
FCS_LEN = 4  # counted in the estimator's len, in pkt_length and in every counter
MIN_FRAME = 60  # without FCS: shorter frames are padded on the wire
# frame_basis's fcs (spec §7.3): whether the egress's pkt_length counts the FCS, as the agent measured
# it on the chip; until it has, frame_check passes a frame of its claim or 4 bytes more
FCS_EITHER = 0  # not measured: either
FCS_COUNTED = 1  # pkt_length counts the FCS (tofino-model)
FCS_NOT_COUNTED = 2  # pkt_length does not count it
# the L2 change a host program's ingress declares in md.l2_change (docs/pipeline.md, "FFS as a P4
# library"): the frame check takes it off the arrival length, the agent off A_j and R*_j
L2_SAME = 0  # the frame leaves with the L2 header it arrived with
L2_TAG_POPPED = 1  # the host removed an 802.1Q tag: 4 bytes shorter
L2_TAG_PUSHED = 2  # the host added an 802.1Q tag: 4 bytes longer
# what a frame costs an Ethernet port beyond its bytes: preamble and start delimiter (8) and the
# inter-frame gap (12). Line rates -- port speeds, capacities, shares, targets, A_j and R*_j --
# count frame + FCS + WIRE_OVERHEAD bytes per frame (spec §4).
WIRE_OVERHEAD = 20
# the EtherTypes the parsers read on: 802.1Q, IPv4, IPv6 (anything else is not IP: no shim)
ETHERTYPE_VLAN = 0x8100
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
SHIM_VERSION = 1
FLAG_RI = 0x8  # RI requested: nodes update rri
FLAG_ECHO = 0x4  # rri_echo carries the destination's feedback
FLAG_DEFAULTED = 0x2  # rf was set from the default label (no trusted upstream label)
FLAG_RESERVED = 0x1  # must be zero; a shim with it set is "opaque"

# --- the log code (spec §3) ----------------------------------------------------------------
LOG_FRAC_BITS = 7  # f: code steps per octave = 2**f
CODE_STEPS_PER_OCTAVE = 1 << LOG_FRAC_BITS  # 128
CODE_BITS = 16
CODE_BIAS = 0x8000  # code of 1.0 (exact)
CODE_ONE = CODE_BIAS
CODE_MIN = 0  # 0 and everything below 2**-256
CODE_MAX = 0xFFFF  # saturated; as tau it means "infinite" (egress uncongested)

# --- weights and the F estimator (spec §4, §5) ---------------------------------------------
WEIGHT_SHIFT = 8  # w = len * 2**WEIGHT_SHIFT / rf
WEIGHT_KEYS = 32 * CODE_STEPS_PER_OCTAVE  # weight table keys lw in [0, 4096): w < 2**32
WEIGHT_MAX = 0xFFFFFFFF
LOG_TABLE_MANTISSA_BITS = 7  # ternary log tables: MSB position + 7 following bits

# --- admitted labels and the 16-bit pipeline arithmetic (spec §3.1, §7.2) --------------------
# The admitted label range [2**-8, 2**8]: an arriving rf outside it is clamped before any use, so
# the weight len/rf of a packet never exceeds 2**16 times its length and an estimator sized for
# line rate at 2**-8 never saturates (spec §3.1, §4): no label buys more than the pair's share.
RF_CODE_MIN = CODE_BIAS - 8 * CODE_STEPS_PER_OCTAVE  # 0x7C00 = code(2**-8)
LTAU_MAX = CODE_BIAS + 16 * CODE_STEPS_PER_OCTAVE  # 0x8800 = code(TAU_MAX = 2**16); an uncongested egress's ltau
RF_CODE_MAX = (
    LTAU_MAX  # 0x8800 = code(2**16): what a node emits at most (rf out <= ltau), so the next hop takes it whole
)
D_OFFSET = 32 * CODE_STEPS_PER_OCTAVE  # 0x1000: log2 of a 32-bit F or M_F never exceeds 32 octaves
LM_MAX = D_OFFSET  # the largest lm the agent pushes (M_F <= 2**32)

# --- the gamma table (spec §5.4) -------------------------------------------------------------
RANDOM_BITS = 16
GAMMA_D_MAX = 16 * CODE_STEPS_PER_OCTAVE  # d in [1, 2048]: gamma down to 2**-16; beyond: drop

# --- data-plane sizes (a P4 build may override them with -D) --------------------------------
NUM_PAIRS = 4096  # pair index pid is 12 bits
PAIRS_TABLE_SIZE = 8192  # the pairs table: NUM_PAIRS in an exact-match hash table half full (Tofino cannot fill one)
PID_BITS = 12
PORT_BITS = 9
NUM_PORTS = 512  # per-port arrays are indexed by the 9-bit device port
IPV4_ROUTES = 1024
IPV6_ROUTES = 1024
LEN_LOG_SIZE = 5120  # 4 header classes (IPv4/IPv6, with/without 802.1Q) x 1280 buckets of the IP length
EVENT_COUNTER_SIZE = 8

# indices of FfsIngress.events (spec §7.6)
EVENT_PARSE_ERROR = 0  # truncated shim / parser error: dropped
EVENT_ROUTE_MISS = 1  # no route and the miss action drops
EVENT_OPAQUE_SHIM = 2  # unknown version or reserved bit: forwarded, labels untouched
EVENT_NO_PAIR = 3  # (ingress, egress) pair not managed: FFS bypassed
EVENT_FFS_DROP = 4  # dropped by the gamma decision
EVENT_NOT_INSERTED = (
    5  # an insert port forwarded a packet without a shim: a fragment, or no room under the egress MTU (spec §2)
)
EVENT_GUARD_DROP = 6  # dropped by the queue guard (spec §7.7)
EVENT_CLAIM_OVERSIZE = (
    7  # an IP length beyond the ingress port's frame limit: a lie, dropped before the estimator (spec §4)
)

# the parser's outcome for the shim (metadata ffs_state, spec §7.1)
FFS_STATE_NONE = 0  # no shim, or not IP
FFS_STATE_VALID = 1  # version 1, reserved flag clear
FFS_STATE_OPAQUE = 2  # another version, or the reserved flag set: passed untouched

# --- LPF configuration defaults (spec §4) ---------------------------------------------------
LPF_TIME_CONSTANT_NS = 1_000_000.0  # 1 ms gain and decay time constant of the F estimator
LPF_SCALE_DOWN = 4  # $LPF_SPEC_OUT_SCALE_DOWN_FACTOR: output = state >> 4

# --- tau control (spec §9) ------------------------------------------------------------------
TAU_MIN = 1.0  # Lemma 1
TAU_MAX = 65536.0
TAU_MAX_DECREASE = 0.25  # a period lowers tau by at most 25 % (CSFQ)
TAU_DELTA_FRACTION = 0.01  # delta = 1 % of the target capacity

# --- the queue guard and its timer (spec §7.7) ----------------------------------------------
# While an egress's virtual queue stands above its threshold, a packet whose pair reads above
# GUARD_RF_CODE of its share is dropped before the queue: code(1.25) = 0x8000 + round(128 log2 1.25),
# far enough above 1 that a pair sending at its share rarely reads over it on its estimator's noise
GUARD_RF_CODE = CODE_BIAS + 41
GUARD_QUEUE_FRACTION = 0.5  # the threshold: this fraction of the egress port's buffer
QHI_OFF = 0xFFFFFFFF  # no_queue's threshold: the queue is never above it (the guard is off)
MIN_WIRE = MIN_FRAME + FCS_LEN + WIRE_OVERHEAD  # 84: the line-rate bytes of the shortest frame
# The packet generator's timer packets drain the virtual queues: one application, one packet per
# managed egress each period, entering the ingress on the generator's port of each pipe
TIMER_APP_ID = 1
PKTGEN_PORT = 68  # Tofino 1 (pipe-local; Tofino 2's is 6): the device port is pipe << 7 | this
PKTGEN_PORT_TOFINO2 = 6
TIMER_HEADER_LEN = 6  # pktgen_timer_header_t: pipe, app, batch_id, packet_id
# a timer packet's length, header included: one that every chip's generator makes (Tofino 2's
# makes 65 bytes or more)
TIMER_PACKET_LEN = 80
GUARD_TIMER_NS = 100_000  # the timer's longest period (the agent sizes it per node, spec §7.7)
# the timer drains a queue in steps of drain_j = C_j · Δ_t: at most this fraction of its threshold
GUARD_TIMER_STEPS = 8
