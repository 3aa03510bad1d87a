// SPDX-License-Identifier: Apache-2.0
/* The software switch's per-packet loop in C: a transcription of ffs/switch/pipeline.py.
 *
 * pipeline.py is the executable specification; this file repeats it function for function
 * (one C function per P4 action, the controls' apply blocks in the same order) so that trace mode
 * reaches Tofino packet rates on one core. tests/property/test_switch_fastpath.py runs thousands of random
 * packets and table states through both and requires identical frames, drops, counters,
 * registers and LPF state.
 *
 * Shared state: counters, registers and the LPF live in Python `array` buffers owned by the
 * pipeline's extern objects (ffs/switch/tna.py); the Engine holds pointers into them, so the
 * control interface reads what this code counts. Tables are compiled snapshots of the Python
 * MatchTables, recompiled by ffs/switch/fast.py when a table changes. Random<bit<16>> is CPython's
 * Mersenne Twister (getrandbits(16) = the top 16 bits of one output) started from the Python
 * generator's state, so both paths draw the same numbers for a seed.
 *
 * Build: setup.py (setuptools Extension) with -ffp-contract=off, so that the LPF's
 * `y * a + x` rounds like Python's two float operations (no fused multiply-add), and with the
 * SHA-256 of this file, which ffs/switch/fast.py compares to refuse a stale build. After editing
 * this file: pip install -e . (or python setup.py build_ext --inplace).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

/* --- constants of the contract (checked against ffs.core.constants by ffs/switch/fast.py) ------- */
#define IP_PROTO_FFS 253
#define IP_PROTO_HOPOPT 0
#define SHIM_LEN 8
#define FCS_LEN 4
#define MIN_FRAME 60
#define WIRE_OVERHEAD 20 /* preamble, start delimiter and inter-frame gap (tables.wire_len) */
/* the bytes a buffer holding a frame of n bytes needs for engine_process: padding, FCS, one shim,
 * one 802.1Q tag a host pushes */
#define MAC_ROOM(n) (((n) < MIN_FRAME ? MIN_FRAME : (n)) + FCS_LEN + SHIM_LEN + VLAN_LEN)
#define SHIM_VERSION 1
#define FLAG_RI 0x8
#define FLAG_DEFAULTED 0x2
#define FLAG_RESERVED 0x1
#define CODE_ONE 0x8000u
#define CODE_MAX 0xFFFFu
#define RF_CODE_MIN 0x7C00u
#define RF_CODE_MAX 0x8800u
#define LTAU_MAX 0x8800u
#define D_OFFSET 0x1000u
#define U16 0xFFFFu
#define NUM_PAIRS 4096
#define NUM_PORTS 512
#define TAG_CHANGED_SIZE (2 * NUM_PORTS) /* a pushed tag at the port's index, a popped one at NUM_PORTS + it */
/* every counter, register and LPF has a copy per pipe (tna.py): cell (pipe, index) is at
 * pipe * size + index; ingress objects use the ingress port's pipe, egress ones the egress port's */
#define PIPE_SHIFT 7
#define NUM_PIPES (NUM_PORTS >> PIPE_SHIFT)
#define EVENT_COUNTER_SIZE 8
#define EVENT_PARSE_ERROR 0
#define EVENT_ROUTE_MISS 1
#define EVENT_OPAQUE_SHIM 2
#define EVENT_NO_PAIR 3
#define EVENT_FFS_DROP 4
#define EVENT_NOT_INSERTED 5
#define EVENT_GUARD_DROP 6
#define EVENT_CLAIM_OVERSIZE 7
#define GUARD_RF_CODE 0x8029u
#define PKTGEN_PORT 68 /* Tofino 1's, pipe-local */
#define TIMER_APP_ID 1
#define TIMER_HEADER_LEN 6
#define SHIM_ROOM_MAX 65528u
#define IPV4_MF 0x2000u
#define FFS_STATE_NONE 0
#define FFS_STATE_VALID 1
#define FFS_STATE_OPAQUE 2
#define FCS_EITHER 0
#define FCS_COUNTED 1
#define FCS_NOT_COUNTED 2
#define L2_SAME 0
#define L2_TAG_POPPED 1
#define L2_TAG_PUSHED 2
#define ETHERTYPE_VLAN 0x8100u
#define U32 0xFFFFFFFFu

/* drop reasons returned by engine_process (as -1 - reason) */
#define R_PARSE_ERROR 0
#define R_ROUTE_MISS 1
#define R_FFS_DROP 2
#define R_MALFORMED 3
#define R_TM_DROP 4
#define R_GUARD_DROP 5
#define R_TIMER 6
#define R_OVERSIZE 7
#define R_CLAIM 8

/* the writable tables, in the order of ffs.core.p4names.TABLES (sorted by P4 name); actions in the order of
 * each table's declaration. The const-entry tables (frame_check, fate, ipv4_shim_len, port_label, ri_candidate)
 * are code below; their actions are listed for the contract check only. */
enum {
    T_EGRESS_PORTS, T_FRAME_BASIS, T_CLAIM_LIMIT, T_IPV4, T_IPV6, T_EGRESS_QUEUE, T_TIMER_PORTS, T_GAMMA, T_EGRESS_PARAMS, T_PAIRS,
    T_SHIM_ROOM, T_F_LOG, T_LEN_LOG, T_WEIGHT, T_WEIGHT_RESET, NT
};
#define NT_ALL (NT + 5)
static const char *TABLE_NAMES[NT] = {
    "FfsEgress.egress_acct.egress_ports", "FfsEgress.egress_acct.frame_basis", "FfsIngress.claim_limit",
    "FfsIngress.forwarding.ipv4_routes",
    "FfsIngress.forwarding.ipv6_routes",  "FfsIngress.guard.egress_queue",   "FfsIngress.guard.timer_ports",
    "FfsIngress.normalize.gamma",         "FfsIngress.pair_map.egress_params", "FfsIngress.pair_map.pairs",
    "FfsIngress.pair_map.shim_room",      "FfsIngress.rate_est.f_log",       "FfsIngress.rate_est.len_log",
    "FfsIngress.rate_est.weight",         "FfsIngress.rate_est.weight_reset"};
static const char *TABLE_ACTIONS[NT_ALL] = {
    "strip_shim keep_shim", "basis_arrival basis_deparsed", "set_claim_limit claim_unlimited", "route no_route", "route no_route",
    "set_queue no_queue", "set_drain no_drain", "gamma_one gamma_frac gamma_zero", "set_egress egress_unmanaged",
    "set_pair set_held_pair no_pair", "set_room room_max", "set_lf lf_zero", "set_lw set_lw_runt lw_zero",
    "set_weight weight_max", "set_weight weight_max",
    "frame_ok frame_lies",
    "parse_drop miss_drop note_no_pair ffs_drop guard_drop note_opaque rewrite_label rewrite_reset_label insert_shim_v4 "
    "insert_shim_v6 note_not_inserted forward claim_drop",
    "short_shim shim_fits", "use_label use_label_ri reset_label",
    "candidate_upstream candidate_keep candidate_congested candidate_uncongested"};
enum { A_ROUTE = 0 };
enum { A_SET_PAIR = 0, A_SET_HELD_PAIR = 1 };
enum { A_SET_EGRESS = 0 };
enum { A_SET_LW = 0, A_SET_LW_RUNT = 1 };
enum { A_SET_WEIGHT = 0 };
enum { A_SET_LF = 0 };
enum { A_GAMMA_ONE = 0, A_GAMMA_FRAC = 1, A_GAMMA_ZERO = 2 };
enum { A_STRIP_SHIM = 0 };
enum { A_BASIS_ARRIVAL = 0, A_BASIS_DEPARSED = 1 };
enum { A_SET_ROOM = 0 };
enum { A_SET_QUEUE = 0 };
enum { A_SET_DRAIN = 0 };
enum { A_SET_CLAIM_LIMIT = 0 };

static inline uint32_t sat_sub(uint32_t a, uint32_t b) { return a > b ? a - b : 0; }
static inline uint32_t umin(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t umax(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* ============================================================================================
 * Mersenne Twister MT19937, as CPython's random module runs it
 * ============================================================================================ */
#define MT_N 624
#define MT_M 397

typedef struct {
    uint32_t mt[MT_N];
    int index;
} mt_t;

static uint32_t mt_next(mt_t *s) {
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    uint32_t y;
    if (s->index >= MT_N) {
        int kk;
        for (kk = 0; kk < MT_N - MT_M; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < MT_N - 1; kk++) {
            y = (s->mt[kk] & 0x80000000u) | (s->mt[kk + 1] & 0x7fffffffu);
            s->mt[kk] = s->mt[kk + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (s->mt[MT_N - 1] & 0x80000000u) | (s->mt[0] & 0x7fffffffu);
        s->mt[MT_N - 1] = s->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
        s->index = 0;
    }
    y = s->mt[s->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* random.random(): 53 bits from two outputs */
static double mt_random(mt_t *s) {
    uint32_t a = mt_next(s) >> 5, b = mt_next(s) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* state = the middle element of random.Random.getstate(): 624 words and the index */
static int mt_from_state(mt_t *s, PyObject *state) {
    PyObject *seq = PySequence_Fast(state, "rng state must be a sequence");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != MT_N + 1) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "rng state must hold 625 integers");
        return -1;
    }
    for (int i = 0; i <= MT_N; i++) {
        unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(seq, i));
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (i < MT_N)
            s->mt[i] = (uint32_t)v;
        else
            s->index = (int)v;
    }
    Py_DECREF(seq);
    if (s->index < 0 || s->index > MT_N) {
        PyErr_SetString(PyExc_ValueError, "rng state index out of range");
        return -1;
    }
    return 0;
}

static PyObject *mt_to_state(const mt_t *s) {
    PyObject *t = PyTuple_New(MT_N + 1);
    if (!t) return NULL;
    for (int i = 0; i < MT_N; i++) PyTuple_SET_ITEM(t, i, PyLong_FromUnsignedLong(s->mt[i]));
    PyTuple_SET_ITEM(t, MT_N, PyLong_FromLong(s->index));
    return t;
}

/* ============================================================================================
 * Match tables: compiled snapshots (exact, LPM, ternary) with BF-RT lookup semantics
 * ============================================================================================ */
enum { K_EXACT = 0, K_LPM = 1, K_TERNARY = 2 };

typedef struct {
    uint8_t act;
    uint32_t p[4];
} tres; /* an action and its parameters in declaration order */

typedef struct {
    u128 mask;
    uint32_t cap; /* power of two */
    u128 *keys;
    int32_t *idx; /* index into results, -1 empty */
    int64_t order; /* LPM: prefix length */
} tgroup;

typedef struct {
    int kind, width, ngroups, nres;
    tgroup *groups;
    tres *res;      /* res[0]: the default action; res[1..]: entries in insertion order */
    int64_t *prio;  /* per result: $MATCH_PRIORITY (ternary) */
    int32_t *direct; /* width <= DIRECT_BITS: result index for every key value */
} ctable;

#define DIRECT_BITS 16

static inline uint32_t hash128(u128 v, uint32_t cap) {
    uint64_t x = (uint64_t)v ^ ((uint64_t)(v >> 64) * 0x9E3779B97F4A7C15ull);
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint32_t)x & (cap - 1);
}

static inline int32_t group_find(const tgroup *g, u128 v) {
    u128 k = v & g->mask;
    uint32_t h = hash128(k, g->cap);
    for (;;) {
        int32_t i = g->idx[h];
        if (i < 0) return -1;
        if (g->keys[h] == k) return i;
        h = (h + 1) & (g->cap - 1);
    }
}

/* lowest priority wins; among equal priorities the older entry (lower index) */
static inline int better(const ctable *t, int32_t a, int32_t b) {
    return t->prio[a] < t->prio[b] || (t->prio[a] == t->prio[b] && a < b);
}

static int32_t table_search(const ctable *t, u128 v) {
    if (t->kind == K_TERNARY) {
        int32_t best = 0;
        for (int g = 0; g < t->ngroups; g++) {
            int32_t i = group_find(&t->groups[g], v);
            if (i > 0 && (best == 0 || better(t, i, best))) best = i;
        }
        return best;
    }
    for (int g = 0; g < t->ngroups; g++) { /* exact: one group; LPM: longest prefix first */
        int32_t i = group_find(&t->groups[g], v);
        if (i > 0) return i;
    }
    return 0;
}

static inline const tres *table_lookup(const ctable *t, u128 v) {
    if (t->direct && (v >> t->width) == 0) return &t->res[t->direct[(uint32_t)v]];
    return &t->res[table_search(t, v)];
}

static void table_free(ctable *t) {
    for (int g = 0; g < t->ngroups; g++) {
        free(t->groups[g].keys);
        free(t->groups[g].idx);
    }
    free(t->groups);
    free(t->res);
    free(t->prio);
    free(t->direct);
    memset(t, 0, sizeof(*t));
}

static int cmp_lpm(const void *a, const void *b) {
    int64_t x = ((const tgroup *)a)->order, y = ((const tgroup *)b)->order;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int res_from(PyObject *seq, Py_ssize_t at, tres *r) {
    /* act, p0, p1, p2, p3 */
    long act = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, at));
    if (act == -1 && PyErr_Occurred()) return -1;
    r->act = (uint8_t)act;
    for (int i = 0; i < 4; i++) {
        unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(seq, at + 1 + i));
        if (PyErr_Occurred()) return -1;
        r->p[i] = (uint32_t)v;
    }
    return 0;
}

static u128 u128_from(PyObject *hi, PyObject *lo) {
    unsigned long long h = PyLong_AsUnsignedLongLong(hi), l = PyLong_AsUnsignedLongLong(lo);
    return ((u128)h << 64) | l;
}

/* entries: sequence of (value_hi, value_lo, mask_hi, mask_lo, priority, act, p0, p1, p2, p3);
 * default_: (act, p0, p1, p2, p3) */
static int table_build(ctable *t, int kind, int width, PyObject *default_, PyObject *entries) {
    ctable n;
    memset(&n, 0, sizeof(n));
    n.kind = kind;
    n.width = width;
    PyObject *ents = PySequence_Fast(entries, "entries must be a sequence");
    if (!ents) return -1;
    PyObject *def = PySequence_Fast(default_, "default must be a sequence");
    if (!def) {
        Py_DECREF(ents);
        return -1;
    }
    Py_ssize_t ne = PySequence_Fast_GET_SIZE(ents);
    n.nres = (int)ne + 1;
    n.res = calloc(n.nres, sizeof(tres));
    n.prio = calloc(n.nres, sizeof(int64_t));
    u128 *vals = calloc(n.nres, sizeof(u128)), *masks = calloc(n.nres, sizeof(u128));
    int *grp = calloc(n.nres, sizeof(int));
    if (!n.res || !n.prio || !vals || !masks || !grp) {
        PyErr_NoMemory();
        goto fail;
    }
    if (PySequence_Fast_GET_SIZE(def) != 5 || res_from(def, 0, &n.res[0]) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "default must be (act, p0, p1, p2, p3)");
        goto fail;
    }
    /* group the entries by mask, in order of first appearance */
    n.groups = calloc(ne > 0 ? ne : 1, sizeof(tgroup));
    int *count = calloc(ne > 0 ? ne : 1, sizeof(int));
    if (!n.groups || !count) {
        free(count);
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < ne; i++) {
        PyObject *e = PySequence_Fast(PySequence_Fast_GET_ITEM(ents, i), "entry must be a sequence");
        if (!e) {
            free(count);
            goto fail;
        }
        if (PySequence_Fast_GET_SIZE(e) != 10) {
            Py_DECREF(e);
            free(count);
            PyErr_SetString(PyExc_ValueError, "entry must have 10 fields");
            goto fail;
        }
        int r = (int)i + 1;
        vals[r] = u128_from(PySequence_Fast_GET_ITEM(e, 0), PySequence_Fast_GET_ITEM(e, 1));
        masks[r] = u128_from(PySequence_Fast_GET_ITEM(e, 2), PySequence_Fast_GET_ITEM(e, 3));
        n.prio[r] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(e, 4));
        if (PyErr_Occurred() || res_from(e, 5, &n.res[r]) < 0) {
            Py_DECREF(e);
            free(count);
            goto fail;
        }
        Py_DECREF(e);
        int g;
        for (g = 0; g < n.ngroups; g++)
            if (n.groups[g].mask == masks[r]) break;
        if (g == n.ngroups) {
            n.groups[g].mask = masks[r];
            n.groups[g].order = n.prio[r];
            n.ngroups++;
        }
        grp[r] = g;
        count[g]++;
    }
    for (int g = 0; g < n.ngroups; g++) {
        uint32_t cap = 4;
        while (cap < 2u * (uint32_t)count[g] + 2u) cap <<= 1;
        n.groups[g].cap = cap;
        n.groups[g].keys = calloc(cap, sizeof(u128));
        n.groups[g].idx = malloc(cap * sizeof(int32_t));
        if (!n.groups[g].keys || !n.groups[g].idx) {
            free(count);
            PyErr_NoMemory();
            goto fail;
        }
        for (uint32_t h = 0; h < cap; h++) n.groups[g].idx[h] = -1;
    }
    free(count);
    for (int r = 1; r < n.nres; r++) {
        tgroup *g = &n.groups[grp[r]];
        u128 k = vals[r] & g->mask;
        uint32_t h = hash128(k, g->cap);
        while (g->idx[h] >= 0 && g->keys[h] != k) h = (h + 1) & (g->cap - 1);
        if (g->idx[h] < 0) {
            g->keys[h] = k;
            g->idx[h] = r;
        } else if (kind == K_TERNARY ? better(&n, r, g->idx[h]) : 1) {
            g->idx[h] = r; /* same value and mask: the better priority (ternary) */
        }
    }
    if (kind == K_LPM) {
        /* the group index stored per entry is no longer needed: sort by prefix length */
        qsort(n.groups, n.ngroups, sizeof(tgroup), cmp_lpm);
    }
    if (width <= DIRECT_BITS) {
        uint32_t size = 1u << width;
        n.direct = malloc(size * sizeof(int32_t));
        if (!n.direct) {
            PyErr_NoMemory();
            goto fail;
        }
        for (uint32_t v = 0; v < size; v++) n.direct[v] = table_search(&n, (u128)v);
    }
    free(vals);
    free(masks);
    free(grp);
    Py_DECREF(ents);
    Py_DECREF(def);
    table_free(t);
    *t = n;
    return 0;
fail:
    free(vals);
    free(masks);
    free(grp);
    Py_DECREF(ents);
    Py_DECREF(def);
    table_free(&n);
    return -1;
}

/* ============================================================================================
 * The Engine: one pipeline's compiled tables, its shared externs and its random generator
 * ============================================================================================ */
enum {
    B_PAIR_BYTES_PK, B_PAIR_BYTES_BY, B_OFFERED_PK, B_OFFERED_BY, B_PAIR_DROPS_PK, B_PAIR_DROPS_BY, B_ADMITTED_PK, B_ADMITTED_BY,
    B_EVENTS_PK, B_EVENTS_BY, B_ACCEPTED_PK, B_ACCEPTED_BY, B_MALFORMED_PK, B_MALFORMED_BY, B_PAIR_MALFORMED_PK,
    B_PAIR_MALFORMED_BY, B_F_EST, B_LPF_Y, B_LPF_LAST, B_LPF_SEEN, B_LPF_KIND, B_LPF_GAIN, B_LPF_DECAY, B_LPF_SHIFT,
    B_TM_SPEED, B_TM_BUFFER, B_TM_BACKLOG, B_TM_LAST, B_TM_DROPS, B_TM_DROP_BYTES, B_TM_ENQUEUED, B_TM_DELAY_SUM,
    B_TM_FRAME_MAX, B_TM_OVERSIZE, B_TM_OVERSIZE_BYTES, B_TM_DRAIN, B_GUARD_QUEUE, B_GUARD_TIMERS_PK, B_GUARD_TIMERS_BY, B_PKTGEN_CFG,
    B_PKTGEN_NEXT, B_PKTGEN_NOW, B_OFFERED_SHIMS, B_ADMITTED_SHIMS, B_STRIPPED, B_TM_ENQUEUED_BYTES, B_TAG_CHANGED, NB
};
static const struct {
    const char *name;
    Py_ssize_t itemsize, count;
} BUF_SPEC[NB] = {
    {"pair_bytes.packets", 8, NUM_PIPES * NUM_PAIRS}, {"pair_bytes.bytes", 8, NUM_PIPES * NUM_PAIRS},
    {"offered.packets", 8, NUM_PIPES * NUM_PORTS}, {"offered.bytes", 8, NUM_PIPES * NUM_PORTS},
    {"pair_drops.packets", 8, NUM_PIPES * NUM_PAIRS}, {"pair_drops.bytes", 8, NUM_PIPES * NUM_PAIRS},
    {"admitted.packets", 8, NUM_PIPES * NUM_PORTS}, {"admitted.bytes", 8, NUM_PIPES * NUM_PORTS},
    {"events.packets", 8, NUM_PIPES * EVENT_COUNTER_SIZE}, {"events.bytes", 8, NUM_PIPES * EVENT_COUNTER_SIZE},
    {"accepted.packets", 8, NUM_PIPES * NUM_PORTS}, {"accepted.bytes", 8, NUM_PIPES * NUM_PORTS},
    {"malformed.packets", 8, NUM_PIPES * NUM_PORTS}, {"malformed.bytes", 8, NUM_PIPES * NUM_PORTS},
    {"pair_malformed.packets", 8, NUM_PIPES * NUM_PAIRS}, {"pair_malformed.bytes", 8, NUM_PIPES * NUM_PAIRS},
    {"f_est", 4, NUM_PIPES * NUM_PAIRS}, {"f_lpf.state", 8, NUM_PIPES * NUM_PAIRS}, {"f_lpf.last", 8, NUM_PIPES * NUM_PAIRS},
    {"f_lpf.seen", 1, NUM_PIPES * NUM_PAIRS}, {"f_lpf.kind", 1, NUM_PAIRS}, {"f_lpf.gain", 8, NUM_PAIRS},
    {"f_lpf.decay", 8, NUM_PAIRS}, {"f_lpf.shift", 1, NUM_PAIRS},
    {"tm.speed", 8, NUM_PORTS}, {"tm.buffer", 8, NUM_PORTS}, {"tm.backlog", 8, NUM_PORTS}, {"tm.last", 8, NUM_PORTS},
    {"tm.drops", 8, NUM_PORTS}, {"tm.drop_bytes", 8, NUM_PORTS}, {"tm.enqueued", 8, NUM_PORTS},
    {"tm.delay_sum", 8, NUM_PORTS}, {"tm.frame_max", 8, NUM_PORTS}, {"tm.oversize", 8, NUM_PORTS},
    {"tm.oversize_bytes", 8, NUM_PORTS}, {"tm.drain", 8, NUM_PORTS},
    {"guard.queue", 4, NUM_PIPES * NUM_PORTS}, {"guard.timers.packets", 8, NUM_PIPES * NUM_PORTS},
    {"guard.timers.bytes", 8, NUM_PIPES * NUM_PORTS}, {"pktgen.cfg", 8, 4}, {"pktgen.next_ns", 8, NUM_PIPES},
    {"pktgen.now_ns", 8, 1},
    {"offered_shims.packets", 8, NUM_PIPES * NUM_PORTS}, {"admitted_shims.packets", 8, NUM_PIPES * NUM_PORTS},
    {"stripped.packets", 8, NUM_PIPES * NUM_PORTS},
    {"tm.enqueued_bytes", 8, NUM_PORTS},
    {"tag_changed.packets", 8, NUM_PIPES * TAG_CHANGED_SIZE},
};

typedef struct {
    PyObject_HEAD
    ctable tables[NT];
    uint8_t port_md[NUM_PORTS][2]; /* trust, insert; an unlisted port reads zeros */
    int pkt_fcs, pkt_deparsed;     /* PktLength: the egress's pkt_length counts the FCS; is the deparsed frame */
    uint8_t host_vlan[NUM_PORTS][4]; /* HostVlan per port: access, pushes, the VID pushed (big-endian) */
    mt_t rng;
    uint32_t tables_set; /* bit per table: compiled at least once */
    Py_buffer bufs[NB];
    int nbufs;
    uint64_t *pair_bytes_pk, *pair_bytes_by, *offered_pk, *offered_by, *pair_drops_pk, *pair_drops_by;
    uint64_t *admitted_pk, *admitted_by;
    uint64_t *events_pk, *events_by, *accepted_pk, *accepted_by, *malformed_pk, *malformed_by;
    uint64_t *pair_malformed_pk, *pair_malformed_by;
    uint32_t *f_est;
    double *lpf_y, *lpf_gain, *lpf_decay;
    int64_t *lpf_last;
    uint8_t *lpf_seen, *lpf_kind, *lpf_shift;
    /* the traffic manager (ffs.switch.tm), per device port */
    double *tm_speed, *tm_buffer, *tm_backlog, *tm_delay_sum, *tm_drain; /* drain: the fraction of speed sent */
    int64_t *tm_last, *tm_frame_max; /* frame_max: a port's frame limit with FCS, 0 none */
    uint64_t *tm_drops, *tm_drop_bytes, *tm_enqueued, *tm_enqueued_bytes, *tm_oversize, *tm_oversize_bytes;
    /* the queue guard and the packet generator's timer (ffs.switch.pktgen: period, packets, app, length) */
    uint32_t *guard_queue;
    uint64_t *guard_timers_pk;
    int64_t *pktgen_cfg, *pktgen_next, *pktgen_now;
    /* ShimCount: PACKETS counters, their byte cells stay 0 */
    uint64_t *offered_shims_pk, *admitted_shims_pk;
    /* EgressAccounting.stripped: PACKETS, the frames that leave without their shim */
    uint64_t *stripped_pk;
    /* EgressAccounting.tag_changed: PACKETS, the frames whose tag the host pushed or popped */
    uint64_t *tag_changed_pk;
} Engine;

/* --- tna.py: Counter, Register, Lpf ----------------------------------------------------------- */
static inline void counter_count(uint64_t *pk, uint64_t *by, uint32_t index, uint64_t len) {
    pk[index] += 1;
    by[index] += len;
}

/* FfsIngress.events is CounterType_t.PACKETS: its byte cells stay 0, as on Tofino */
#define event_count(e, pipe, index) ((e)->events_pk[(pipe) * EVENT_COUNTER_SIZE + (index)] += 1)

/* the state of (pipe, index); the spec of index, the same in every pipe */
static uint32_t lpf_execute(Engine *e, uint32_t x, uint32_t index, int64_t t_ns, uint32_t pipe) {
    uint32_t at = pipe * NUM_PAIRS + index;
    double y = e->lpf_y[at];
    if (e->lpf_seen[at]) {
        int64_t dt = t_ns - e->lpf_last[at];
        if (dt < 0) dt = 0;
        if (e->lpf_kind[index] == 1) { /* SAMPLE */
            double tc = (double)x > y ? e->lpf_gain[index] : e->lpf_decay[index];
            double a = tc > 0 ? exp((double)(-dt) / tc) : 0.0;
            y = y * a + (double)x * (1.0 - a);
        } else { /* RATE: the decay constant (spec §8) */
            double tc = e->lpf_decay[index];
            double a = tc > 0 ? exp((double)(-dt) / tc) : 0.0;
            y = y * a + (double)x;
        }
        if (y > (double)U32) y = (double)U32; /* a 32-bit state: it saturates, the scale-down comes after */
    } else {
        y = (double)x;
        e->lpf_seen[at] = 1;
    }
    e->lpf_y[at] = y;
    e->lpf_last[at] = t_ns;
    return ((uint32_t)y) >> e->lpf_shift[index];
}

/* --- packet.py: parser and deparser on offsets ------------------------------------------------ */
typedef struct {
    size_t l3, ihl_bytes, shim;
    int ip_version, ffs_state, vlan, frag;
    uint32_t l3_len;
    u128 dst;
} parsed_t;

#define ETH_LEN 14
#define VLAN_LEN 4
#define IPV6_LEN 40

static inline uint32_t rd16(const uint8_t *f, size_t o) { return ((uint32_t)f[o] << 8) | f[o + 1]; }
static inline void wr16(uint8_t *f, size_t o, uint32_t v) {
    f[o] = (uint8_t)(v >> 8);
    f[o + 1] = (uint8_t)v;
}

/* ingress: FfsIngressParser with the ingress's length checks, as code: the parser's IPv6
 * `truncated` state and the ipv4_shim_len const table of stage 0 (ffs.core.tables.ipv4_shim_len_entries):
 * an IP length that cannot hold the shim is a parse error. FfsEgressParser (ingress = 0) extracts
 * the shim without them, and no IPv4 fragment's shim. */
static int parse_x(const uint8_t *f, size_t n, parsed_t *p, int ingress) {
    memset(p, 0, sizeof(*p));
    if (n < ETH_LEN) return -1;
    uint32_t etype = rd16(f, 12);
    size_t off = ETH_LEN;
    if (etype == 0x8100) {
        if (n < off + VLAN_LEN) return -1;
        etype = rd16(f, off + 2);
        off += VLAN_LEN;
        p->vlan = 1;
    }
    if (etype == 0x0800) {
        if (n < off + 20) return -1;
        size_t ihl = (size_t)(f[off] & 0x0F) * 4;
        if (ihl < 20 || n < off + ihl) return -1;
        p->l3 = off;
        p->ip_version = 4;
        p->ihl_bytes = ihl;
        p->l3_len = rd16(f, off + 2);
        p->dst = ((u128)f[off + 16] << 24) | ((u128)f[off + 17] << 16) | ((u128)f[off + 18] << 8) | f[off + 19];
        uint32_t frag = rd16(f, off + 6) & (IPV4_MF | 0x1FFF);
        p->frag = frag != 0;
        /* a non-first fragment's bytes are payload; the egress reads no fragment's shim (spec §2) */
        if (f[off + 9] == IP_PROTO_FFS && (ingress ? (frag == 0 || frag == IPV4_MF) : frag == 0)) {
            if (n < off + ihl + SHIM_LEN || (ingress && p->l3_len < ihl + SHIM_LEN)) return -1;
            p->shim = off + ihl;
        }
    } else if (etype == 0x86DD) {
        if (n < off + IPV6_LEN) return -1;
        p->l3 = off;
        p->ip_version = 6;
        p->l3_len = rd16(f, off + 4);
        u128 d = 0;
        for (int i = 0; i < 16; i++) d = (d << 8) | f[off + 24 + i];
        p->dst = d;
        if (f[off + 6] == IP_PROTO_FFS) {
            if (n < off + IPV6_LEN + SHIM_LEN || (ingress && p->l3_len < SHIM_LEN)) return -1;
            p->shim = off + IPV6_LEN;
        }
    }
    if (p->shim) {
        uint8_t b0 = f[p->shim];
        int ok = (b0 >> 4) == SHIM_VERSION && !(b0 & FLAG_RESERVED);
        p->ffs_state = ok ? FFS_STATE_VALID : FFS_STATE_OPAQUE;
    }
    return 0;
}
static inline int parse(const uint8_t *f, size_t n, parsed_t *p) { return parse_x(f, n, p, 1); }

#define RF_OFF 2
#define RRI_OFF 4

static uint32_t ipv4_checksum(const uint8_t *h, size_t len) {
    uint32_t s = 0;
    for (size_t i = 0; i < len; i += 2) {
        if (i == 10) continue;
        s += ((uint32_t)h[i] << 8) | h[i + 1];
    }
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return ~s & 0xFFFF;
}

static void fix_ipv4(uint8_t *f, const parsed_t *p, int delta, uint8_t proto) {
    size_t l3 = p->l3;
    wr16(f, l3 + 2, (rd16(f, l3 + 2) + (uint32_t)delta) & 0xFFFF);
    f[l3 + 9] = proto;
    wr16(f, l3 + 10, ipv4_checksum(f + l3, p->ihl_bytes));
}

static void fix_ipv6(uint8_t *f, const parsed_t *p, int delta, uint8_t nh) {
    size_t l3 = p->l3;
    wr16(f, l3 + 4, (rd16(f, l3 + 4) + (uint32_t)delta) & 0xFFFF);
    f[l3 + 6] = nh;
}

/* buf has room for SHIM_LEN more bytes */
static void insert_shim(uint8_t *f, size_t *len, parsed_t *p, uint32_t rf) {
    size_t at = p->l3 + (p->ip_version == 4 ? p->ihl_bytes : IPV6_LEN);
    size_t proto_off = p->l3 + (p->ip_version == 4 ? 9 : 6);
    uint8_t old = f[proto_off];
    memmove(f + at + SHIM_LEN, f + at, *len - at);
    f[at] = (SHIM_VERSION << 4) | FLAG_DEFAULTED;
    f[at + 1] = old;
    wr16(f, at + 2, rf);
    wr16(f, at + 4, 0xFFFF);
    wr16(f, at + 6, 0);
    *len += SHIM_LEN;
    if (p->ip_version == 4)
        fix_ipv4(f, p, SHIM_LEN, IP_PROTO_FFS);
    else
        fix_ipv6(f, p, SHIM_LEN, IP_PROTO_FFS);
    p->shim = at;
}

static void strip_shim(uint8_t *f, size_t *len, parsed_t *p) {
    uint8_t nh = f[p->shim + 1];
    memmove(f + p->shim, f + p->shim + SHIM_LEN, *len - p->shim - SHIM_LEN);
    *len -= SHIM_LEN;
    if (p->ip_version == 4)
        fix_ipv4(f, p, -SHIM_LEN, nh);
    else
        fix_ipv6(f, p, -SHIM_LEN, nh);
    p->shim = 0;
}

/* --- header.py, pipeline.py: the ingress metadata (header.p4) and the parser's terminal states --- */
/* Each section below is the twin of one P4 control, p4src/include/control/<name>.p4, and of its Python
 * module switch/control/<name>.py: one function per P4 action, named like it. */
typedef struct {
    uint32_t trust, insert;
    uint32_t ffs_state, ri_req, rri_ge_one, l3_len, runt, wlen, claim_room, routed, egress_port;
    uint32_t rf_hdr, rf, rri_n, lw, llen;
    uint32_t managed, pid, held, rf_over_m, ltau, ltau_p, congested, lcr, room, tau_over_k;
    uint32_t grows; /* fate inserts a shim into it if admitted (ShimCount) */
    uint32_t pkt_weight, f_rate, rf_norm, c_cong, rnd, admit_margin, c_ri;
    uint32_t qhi, guard;
} meta_t;

static inline uint32_t clamp_label(uint32_t rf) {
    return rf < RF_CODE_MIN ? RF_CODE_MIN : rf > RF_CODE_MAX ? RF_CODE_MAX : rf;
}

static void ingress_parser_metadata(const uint8_t *buf, const parsed_t *p, meta_t *md) {
    md->l3_len = p->l3_len;
    md->ffs_state = (uint32_t)p->ffs_state;
    if (p->ffs_state == FFS_STATE_VALID) { /* ffs_valid / ffs_below_min / ffs_above_max */
        md->rf_hdr = clamp_label(rd16(buf, p->shim + RF_OFF));
        md->ri_req = (buf[p->shim] & FLAG_RI) >> 3;
        md->rri_ge_one = rd16(buf, p->shim + RRI_OFF) >> 15;
    }
}

/* --- control/ffs_core: port_label, claim_limit (fate: in engine_process_mac) ------------------- */
/* FfsIngress.port_label: the const entries of ffs.core.tables.port_label_entries, in order */
static void port_label_apply(const uint8_t *buf, const parsed_t *p, meta_t *md) {
    if (md->trust && md->ffs_state == FFS_STATE_VALID) { /* use_label_ri */
        md->rf = md->rf_hdr;
        md->rri_n = (CODE_ONE - rd16(buf, p->shim + RRI_OFF)) & U16;
    } else if (!md->trust && md->ffs_state == FFS_STATE_VALID) { /* reset_label: RI still runs */
        md->rf = CODE_ONE;
        md->rri_n = (CODE_ONE - rd16(buf, p->shim + RRI_OFF)) & U16;
    } else { /* use_label */
        md->rf = md->rf_hdr;
    }
}

/* FfsIngress.claim_limit: claim_room = thr |-| l3_len, 0 where the claim exceeds what the ingress
 * port's MAC admits (set_claim_limit); 1 on a port without an entry (claim_unlimited), spec §4 */
static void claim_limit_apply(Engine *e, uint32_t ingress_port, meta_t *md, int ipv6) {
    const tres *r = table_lookup(&e->tables[T_CLAIM_LIMIT], ((u128)ingress_port << 1) | (u128)(ipv6 != 0));
    md->claim_room = r->act == A_SET_CLAIM_LIMIT ? sat_sub(r->p[0], md->l3_len) : 1;
}

/* --- control/forwarding ------------------------------------------------------------------------ */
static inline void route(meta_t *md, uint32_t port) {
    md->egress_port = port;
    md->routed = 1;
}
static inline void fwd_drop(meta_t *md) { md->routed = 0; }

static void forwarding_apply(Engine *e, const parsed_t *p, meta_t *md) {
    const tres *r;
    if (p->ip_version == 4)
        r = table_lookup(&e->tables[T_IPV4], p->dst);
    else if (p->ip_version == 6)
        r = table_lookup(&e->tables[T_IPV6], p->dst);
    else
        return;
    if (r->act == A_ROUTE)
        route(md, r->p[0]);
    else
        fwd_drop(md);
}

/* --- control/pair_map -------------------------------------------------------------------------- */
static inline void set_pair(meta_t *md, uint32_t pid, uint32_t nlm) {
    md->pid = pid;
    md->rf_over_m = (nlm + md->rf) & U16;
    md->managed = 1;
}
/* a pair held in quarantine (spec §9): its packets face tau = 1 (norm_cc_held) */
static inline void set_held_pair(meta_t *md, uint32_t pid, uint32_t nlm) {
    set_pair(md, pid, nlm);
    md->held = 1;
}
static inline void no_pair(meta_t *md) { md->managed = 0; }
static inline void set_egress(meta_t *md, uint32_t ltau, uint32_t ltau_p, uint32_t congested, uint32_t lcr) {
    md->ltau = ltau;
    md->ltau_p = ltau_p;
    md->congested = congested;
    md->lcr = lcr;
}
static inline void egress_unmanaged(meta_t *md) {
    md->ltau = LTAU_MAX;
    md->ltau_p = 0;
    md->congested = 0;
    md->lcr = CODE_MAX;
}

/* shim_room: 0 where no shim fits under the egress's MTU (spec §2) */
static inline void set_room(meta_t *md, uint32_t thr) { md->room = sat_sub(thr, md->l3_len); }
/* cc = code(tau / k), before the estimator's f_log reads it (PairMap.norm_cc in the P4) */
static inline void norm_cc(meta_t *md) { md->tau_over_k = (md->ltau_p - md->rf_over_m) & U16; }
static inline void norm_cc_held(meta_t *md) { md->tau_over_k = (0 - md->rf_over_m) & U16; }

static void pair_map_apply(Engine *e, uint32_t ingress_port, meta_t *md, int ipv6) {
    const tres *r = table_lookup(&e->tables[T_PAIRS], ((u128)ingress_port << 9) | md->egress_port);
    if (r->act == A_SET_PAIR)
        set_pair(md, r->p[0], r->p[1]);
    else if (r->act == A_SET_HELD_PAIR)
        set_held_pair(md, r->p[0], r->p[1]);
    else
        no_pair(md);
    r = table_lookup(&e->tables[T_EGRESS_PARAMS], md->egress_port);
    if (r->act == A_SET_EGRESS)
        set_egress(md, r->p[0], r->p[1], r->p[2], r->p[3]);
    else
        egress_unmanaged(md);
    r = table_lookup(&e->tables[T_SHIM_ROOM], ((u128)md->egress_port << 1) | (u128)(ipv6 != 0));
    set_room(md, r->act == A_SET_ROOM ? r->p[0] : SHIM_ROOM_MAX); /* set_room / room_max */
    if (md->held)
        norm_cc_held(md);
    else
        norm_cc(md);
}

/* RateEstimation */
/* --- control/rate_estimation ------------------------------------------------------------------- */
static inline void set_lw(meta_t *md, uint32_t llen, uint32_t wadd) {
    md->lw = sat_sub(llen, md->rf_hdr);
    md->llen = llen;
    md->wlen = umin(md->l3_len + wadd, U16); /* |+| at 16 bits */
}
static inline void set_lw_runt(meta_t *md, uint32_t llen, uint32_t wlen) {
    md->lw = sat_sub(llen, md->rf_hdr);
    md->llen = llen;
    md->runt = 1;
    md->wlen = wlen;
}
static inline void lw_zero(meta_t *md) {
    md->lw = 0;
    md->llen = 0;
    md->wlen = 0;
}
static inline void set_weight(meta_t *md, uint32_t w) { md->pkt_weight = w; }
static inline void weight_max(meta_t *md) { md->pkt_weight = U32; }
static inline void estimate(Engine *e, meta_t *md, int64_t t_ns, uint32_t pipe) {
    md->f_rate = lpf_execute(e, md->pkt_weight, md->pid, t_ns, pipe);
}
static inline void count_pair(Engine *e, meta_t *md, size_t frame_len, uint32_t pipe) {
    counter_count(e->pair_bytes_pk, e->pair_bytes_by, pipe * NUM_PAIRS + md->pid, frame_len);
    /* count_offered: R*_j */
    counter_count(e->offered_pk, e->offered_by, pipe * NUM_PORTS + md->egress_port, frame_len);
}
static inline void set_lf(meta_t *md, uint32_t lf, uint32_t nlf) {
    md->rf_norm = (lf + md->rf_over_m) & U16;
    md->c_cong = (nlf + md->tau_over_k) & U16;
}
static inline void lf_zero(meta_t *md) {
    md->rf_norm = md->rf_over_m;
    md->c_cong = md->tau_over_k;
}
static inline void store_f(Engine *e, meta_t *md, uint32_t pipe) { e->f_est[pipe * NUM_PAIRS + md->pid] = md->f_rate; }

/* the frame as its headers claim it, FCS included (ffs.core.tables.claimed_frame_len), saturating */
static inline uint32_t claimed_len(const parsed_t *p, uint32_t l3_len, int fcs) {
    uint32_t hdr = ETH_LEN + (p->vlan ? VLAN_LEN : 0) + (p->ip_version == 6 ? IPV6_LEN : 0) + (fcs ? FCS_LEN : 0);
    return umin(l3_len + hdr, U16);
}

/* len_log on (ipv6, vlan, l3_len), then weight (trusting port) or weight_reset (resetting port) */
static void rate_estimation_weigh(Engine *e, const parsed_t *p, meta_t *md) {
    u128 key = ((u128)(p->ip_version == 6) << 17) | ((u128)(p->vlan != 0) << 16) | md->l3_len;
    const tres *r = table_lookup(&e->tables[T_LEN_LOG], key);
    if (r->act == A_SET_LW)
        set_lw(md, r->p[0], r->p[1]);
    else if (r->act == A_SET_LW_RUNT)
        set_lw_runt(md, r->p[0], r->p[1]);
    else
        lw_zero(md);
    r = md->trust ? table_lookup(&e->tables[T_WEIGHT], md->lw) : table_lookup(&e->tables[T_WEIGHT_RESET], md->llen);
    if (r->act == A_SET_WEIGHT)
        set_weight(md, r->p[0]);
    else
        weight_max(md);
}

static void rate_estimation_apply(Engine *e, meta_t *md, size_t frame_len, int64_t t_ns, uint32_t pipe) {
    estimate(e, md, t_ns, pipe);
    count_pair(e, md, frame_len, pipe);
    const tres *r = table_lookup(&e->tables[T_F_LOG], md->f_rate);
    if (r->act == A_SET_LF)
        set_lf(md, r->p[0], r->p[1]);
    else
        lf_zero(md);
    store_f(e, md, pipe);
}

/* Normalize */
/* --- control/normalize ------------------------------------------------------------------------- */
static inline void draw(Engine *e, meta_t *md) { md->rnd = mt_next(&e->rng) >> 16; }

static void normalize_apply(Engine *e, meta_t *md) {
    draw(e, md);
    const tres *r = table_lookup(&e->tables[T_GAMMA], ((u128)md->congested << 16) | md->c_cong);
    if (r->act == A_GAMMA_ONE)
        md->admit_margin = 1;
    else if (r->act == A_GAMMA_FRAC)
        md->admit_margin = sat_sub(r->p[0], md->rnd);
    else
        md->admit_margin = 0;
}

/* RiUpdate.ri_candidate: the const entries of ffs.core.tables.ri_candidate_entries */
/* --- control/ri_update ------------------------------------------------------------------------- */
static void ri_update_apply(meta_t *md) {
    if (!md->ri_req)
        md->c_ri = CODE_MAX; /* candidate_keep (the default) */
    else if (!md->rri_ge_one)
        md->c_ri = md->congested ? sat_sub(md->c_cong, md->rri_n) : CODE_MAX;
    else
        md->c_ri = md->congested ? md->c_cong : umax(md->c_cong, md->lcr);
}

/* QueueGuard (spec §7.7): the egress's threshold; for a managed packet gamma admitted, the
 * virtual queue's verdict and its growth */
/* --- control/queue_guard ----------------------------------------------------------------------- */
static void queue_guard_apply(Engine *e, meta_t *md, uint32_t pipe) {
    const tres *r = table_lookup(&e->tables[T_EGRESS_QUEUE], md->egress_port);
    md->qhi = r->act == A_SET_QUEUE ? r->p[0] : U32; /* set_queue / no_queue */
    if (!(md->managed && md->admit_margin)) return;
    uint32_t *q = &e->guard_queue[pipe * NUM_PORTS + md->egress_port]; /* enqueue */
    md->guard = *q > md->qhi && md->rf_norm > GUARD_RF_CODE;
    if (!md->guard) *q = (uint32_t)(*q + (uint64_t)md->wlen > U32 ? U32 : *q + md->wlen);
}

/* QueueGuard.timer: a timer packet (packet_id), or k alike: drain its port's queue k times */
static void queue_guard_timer(Engine *e, uint32_t packet_id, uint32_t pipe, int64_t k) {
    const tres *r = table_lookup(&e->tables[T_TIMER_PORTS], packet_id);
    if (r->act != A_SET_DRAIN) return; /* no_drain */
    uint32_t port = r->p[0];
    uint32_t *q = &e->guard_queue[pipe * NUM_PORTS + port];
    uint64_t d = (uint64_t)r->p[1] * (uint64_t)k;
    *q = d >= *q ? 0 : (uint32_t)(*q - d);
    e->guard_timers_pk[pipe * NUM_PORTS + port] += (uint64_t)k;
}

/* Pipeline.run_timers: the generator's batches of `pipe` due by t_ns, each packet_id k times
 * (ffs.switch.pktgen: the application's own packets, so their header names it) */
static void run_timers(Engine *e, uint32_t pipe, int64_t t_ns) {
    if (t_ns > e->pktgen_now[0]) e->pktgen_now[0] = t_ns;
    int64_t period = e->pktgen_cfg[0];
    if (period <= 0 || e->pktgen_next[pipe] > t_ns) return;
    int64_t k = (t_ns - e->pktgen_next[pipe]) / period + 1;
    e->pktgen_next[pipe] += k * period;
    if (e->pktgen_cfg[2] != TIMER_APP_ID) return; /* the software switch runs the timer application only */
    for (int64_t i = 0; i < e->pktgen_cfg[1]; i++) queue_guard_timer(e, (uint32_t)i, pipe, k);
}

/* --- control/egress_accounting ----------------------------------------------------------------- */
/* tna.py's arrival_change: what the ingress changed in the frame's length after it arrived */
static inline int32_t arrival_change(int grown, int l2_change) {
    return (grown ? SHIM_LEN : 0) + (l2_change == L2_TAG_POPPED ? -VLAN_LEN : l2_change == L2_TAG_PUSHED ? VLAN_LEN : 0);
}

/* EgressAccounting.lies: frame_check with the const entries of ffs.core.tables.frame_check_entries,
 * in order, on pkt_len (frame_basis's, egress_accounting_apply). pkt_length is eg_intr_md.pkt_length
 * as PktLength makes it. fcs: FCS_EITHER passes an entry of either basis. */
static int frame_lies(Engine *e, const uint8_t *buf, size_t len, uint32_t pkt_length, uint32_t pkt_len, uint32_t fcs) {
    parsed_t p;
    /* the egress parser: an IP length wrapped by an inserted shim (65528 + 8) is still checked */
    if (parse_x(buf, len, &p, 0) < 0 || !p.ip_version) return 0;
    uint32_t n = pkt_length;
    uint32_t excess = (pkt_len - claimed_len(&p, p.l3_len, 0)) & U16;
    uint32_t pad = MIN_FRAME - ETH_LEN;
    int without_fcs = (fcs & FCS_COUNTED) == 0, with_fcs = (fcs & FCS_NOT_COUNTED) == 0;
    if (without_fcs && excess == 0) return 0;
    if (with_fcs && excess == FCS_LEN) return 0;
    if (without_fcs && n == MIN_FRAME && excess >= 1 && excess <= pad) return 0;
    if (with_fcs && n == MIN_FRAME + FCS_LEN && excess >= FCS_LEN + 1 && excess <= pad + FCS_LEN) return 0;
    /* padded to 60, then tagged by a bridge: 68 bytes with FCS, 64 without, tagged frames only */
    if (with_fcs && p.vlan && n == MIN_FRAME + VLAN_LEN + FCS_LEN && excess >= FCS_LEN + 1 && excess <= pad + FCS_LEN)
        return 0;
    if (fcs == FCS_NOT_COUNTED && p.vlan && n == MIN_FRAME + VLAN_LEN && excess >= 1 && excess <= pad) return 0;
    return 1;
}

/* EgressAccounting: 0 when the frame was dropped (drop_malformed); pid < 0: no managed pair. The
 * counters count the frame as the TM holds it (*len, FCS included), in the egress port's pipe. */
static int egress_accounting_apply(Engine *e, uint8_t *buf, size_t *len, uint32_t port, int pid, uint32_t pkt_length,
                             int grown, int l2_change) {
    uint32_t pipe = port >> PIPE_SHIFT;
    /* EgressAccounting.pkt_len: frame_basis; basis_arrival adds what the ingress changed since */
    const tres *basis = table_lookup(&e->tables[T_FRAME_BASIS], 0);
    uint32_t pkt_len = (pkt_length + (basis->act == A_BASIS_ARRIVAL ? (uint32_t)arrival_change(grown, l2_change) : 0)) & U16;
    int lies = frame_lies(e, buf, *len, pkt_length, pkt_len, basis->p[0]);
    if (lies) {
        counter_count(e->malformed_pk, e->malformed_by, pipe * NUM_PORTS + port, *len);
        if (pid >= 0) counter_count(e->pair_malformed_pk, e->pair_malformed_by, pipe * NUM_PAIRS + (uint32_t)pid, *len);
    } else {
        counter_count(e->accepted_pk, e->accepted_by, pipe * NUM_PORTS + port, *len);
    }
    const tres *r = table_lookup(&e->tables[T_EGRESS_PORTS], port);
    if (r->act == A_STRIP_SHIM) { /* after FfsEgressParser */
        parsed_t p;
        if (parse_x(buf, *len, &p, 0) < 0) return !lies;
        if (p.shim && p.ffs_state == FFS_STATE_VALID) { /* spec §6 */
            /* count_stripped: a lying frame too, not one that leaves below the Ethernet minimum */
            if (*len >= MIN_FRAME + FCS_LEN + SHIM_LEN) e->stripped_pk[pipe * NUM_PORTS + port] += 1;
            strip_shim(buf, len, &p);
        }
    }
    /* count_tag_changed: every pushed tag; a popped one where the frame leaves at the Ethernet
     * minimum or above (a shorter one is padded back) */
    if (l2_change == L2_TAG_PUSHED) e->tag_changed_pk[pipe * TAG_CHANGED_SIZE + port] += 1;
    else if (l2_change == L2_TAG_POPPED && pkt_len >= MIN_FRAME + FCS_LEN)
        e->tag_changed_pk[pipe * TAG_CHANGED_SIZE + NUM_PORTS + port] += 1;
    return !lies;
}

/* --- tm.py: the traffic manager, and pipeline.py: the program ---------------------------------- */
/* TrafficManager.enqueue: when the frame's last bit leaves `port`, or -1 (tail drop) */
static int64_t tm_enqueue(Engine *e, uint32_t port, int64_t t_ns, size_t wire) {
    double speed = e->tm_speed[port];
    if (speed <= 0.0) {
        e->tm_enqueued_bytes[port] += wire;
        return t_ns;
    }
    int64_t last = e->tm_last[port];
    double backlog = e->tm_backlog[port];
    double rate = speed * e->tm_drain[port];
    if (t_ns > last) {
        backlog -= (double)(t_ns - last) * rate / 8e9;
        if (backlog < 0.0) backlog = 0.0;
        e->tm_last[port] = t_ns;
    } else {
        t_ns = last;
    }
    if (backlog + (double)wire > e->tm_buffer[port]) {
        e->tm_backlog[port] = backlog;
        e->tm_drops[port] += 1;
        e->tm_drop_bytes[port] += wire;
        return -1;
    }
    backlog += (double)wire;
    e->tm_backlog[port] = backlog;
    double delay = backlog * 8 / (rate > 0.0 ? rate : speed); /* paused: its time once the pause ends */
    e->tm_enqueued[port] += 1;
    e->tm_enqueued_bytes[port] += wire;
    e->tm_delay_sum[port] += delay;
    return t_ns + (int64_t)(delay * 1e9);
}

/* TrafficManager.oversize_drop: 1, and counted, if a frame of len bytes (FCS included) exceeds
 * the port's frame limit */
static int tm_oversize_drop(Engine *e, uint32_t port, size_t len) {
    int64_t limit = e->tm_frame_max[port];
    if (limit <= 0 || (int64_t)len <= limit) return 0;
    e->tm_oversize[port] += 1;
    e->tm_oversize_bytes[port] += len;
    return 1;
}

/* EgressAccounting.emitted_len: the frame egress_accounting_apply lets leave, without a shim it strips */
static size_t emitted_len(Engine *e, const uint8_t *buf, size_t len, uint32_t port) {
    if (table_lookup(&e->tables[T_EGRESS_PORTS], port)->act != A_STRIP_SHIM) return len;
    parsed_t p;
    if (parse_x(buf, len, &p, 0) < 0) return len;
    return p.shim && p.ffs_state == FFS_STATE_VALID ? len - SHIM_LEN : len;
}

/* --- host_vlan.py: a host program that pops or pushes 802.1Q tags (the example's) -------------- */
/* HostVlan.change: md.l2_change as the host declares it */
static inline int host_vlan_change(const Engine *e, uint32_t ingress_port, uint32_t egress_port, int tagged) {
    if (tagged && e->host_vlan[ingress_port][0]) return L2_TAG_POPPED;
    if (!tagged && e->host_vlan[egress_port][1]) return L2_TAG_PUSHED;
    return L2_SAME;
}

/* HostVlan.apply: the host's deparser; buf has room for one more tag (MAC_ROOM) */
static void host_vlan_apply(const Engine *e, uint8_t *buf, size_t *len, int change, uint32_t egress_port) {
    if (change == L2_TAG_POPPED) {
        memmove(buf + 2 * 6, buf + 2 * 6 + VLAN_LEN, *len - 2 * 6 - VLAN_LEN);
        *len -= VLAN_LEN;
    } else if (change == L2_TAG_PUSHED) {
        memmove(buf + 2 * 6 + VLAN_LEN, buf + 2 * 6, *len - 2 * 6);
        wr16(buf, 2 * 6, ETHERTYPE_VLAN);
        wr16(buf, 2 * 6 + 2, ((uint32_t)e->host_vlan[egress_port][2] << 8 | e->host_vlan[egress_port][3]) & 0xFFF);
        *len += VLAN_LEN;
    }
}

/* Pipeline._egress after the host's L2 change: the TM with the frame the egress emits (cut at the
 * port's frame limit), then FfsEgress (egress_accounting_apply), then the port's MAC; the egress
 * port or -1 - reason */
static int tm_and_egress(Engine *e, uint8_t *buf, size_t *len, uint32_t port, int pid, uint32_t frame_len, int grown,
                         uint32_t ingress_port, int tagged, int64_t t_ns, int64_t *depart) {
    int l2_change = host_vlan_change(e, ingress_port, port, tagged);
    host_vlan_apply(e, buf, len, l2_change, port);
    /* PktLength.of: the egress's pkt_length, from the frame as it arrived (FCS included) */
    uint32_t pkt_length = frame_len - (e->pkt_fcs ? 0 : FCS_LEN) + (e->pkt_deparsed ? (uint32_t)arrival_change(grown, l2_change) : 0);
    size_t sent = emitted_len(e, buf, *len, port);
    int64_t limit = e->tm_frame_max[port];
    if (limit > 0 && (int64_t)sent > limit) sent = (size_t)limit; /* TrafficManager.sent_len */
    size_t wire = (sent < MIN_FRAME + FCS_LEN ? MIN_FRAME + FCS_LEN : sent) + WIRE_OVERHEAD;
    *depart = tm_enqueue(e, port, t_ns, wire);
    if (*depart < 0) return -1 - R_TM_DROP;
    if (!egress_accounting_apply(e, buf, len, port, pid, pkt_length, grown, l2_change)) return -1 - R_MALFORMED;
    return tm_oversize_drop(e, port, *len) ? -1 - R_OVERSIZE : (int)port;
}

/* ShimCount.grows: fate's insert_shim_v4 / _v6 predicate less gamma and the guard */
static int shim_grows(const uint8_t *buf, const parsed_t *p, const meta_t *md) {
    if (md->ffs_state != FFS_STATE_NONE || !md->insert || p->frag || md->runt || md->room == 0) return 0;
    return p->ip_version == 4 || (p->ip_version == 6 && buf[p->l3 + 6] != IP_PROTO_HOPOPT);
}

/* Pipeline.process on the frame as the MAC hands it over (mac_frame): *len counts the FCS. */
static int engine_process_mac(Engine *e, uint8_t *buf, size_t *len, uint32_t ingress_port, int64_t t_ns, int *pid_out,
                              int64_t *depart) {
    size_t frame_len = *len;
    uint32_t pipe = ingress_port >> PIPE_SHIFT; /* the ingress controls' counters, register and LPF */
    *pid_out = -1;
    run_timers(e, pipe, t_ns);
    if (tm_oversize_drop(e, ingress_port, *len)) return -1 - R_OVERSIZE; /* the receiving MAC */
    if ((ingress_port & 0x7F) == PKTGEN_PORT && *len >= TIMER_HEADER_LEN && (buf[0] & 7) == TIMER_APP_ID) {
        queue_guard_timer(e, rd16(buf, 4), pipe, 1); /* FfsIngressParser's timer path (spec §7.1) */
        return -1 - R_TIMER;
    }
    meta_t md;
    memset(&md, 0, sizeof(md)); /* @pa_auto_init_metadata */
    md.trust = e->port_md[ingress_port][0];
    md.insert = e->port_md[ingress_port][1];
    md.rf_hdr = CODE_ONE;
    *pid_out = -1;
    parsed_t p;
    if (parse(buf, *len, &p) < 0) { /* fate: parse_drop */
        event_count(e, pipe, EVENT_PARSE_ERROR);
        return -1 - R_PARSE_ERROR;
    }
    ingress_parser_metadata(buf, &p, &md);
    port_label_apply(buf, &p, &md);
    claim_limit_apply(e, ingress_port, &md, p.ip_version == 6);
    forwarding_apply(e, &p, &md);
    rate_estimation_weigh(e, &p, &md);
    if (md.routed && md.claim_room) pair_map_apply(e, ingress_port, &md, p.ip_version == 6);
    if (md.managed) {
        rate_estimation_apply(e, &md, frame_len, t_ns, pipe);
        normalize_apply(e, &md);
        ri_update_apply(&md);
        if (shim_grows(buf, &p, &md)) { /* ShimCount.apply: count_offered_shim */
            md.grows = 1;
            e->offered_shims_pk[pipe * NUM_PORTS + md.egress_port] += 1;
        }
    }
    if (md.routed) queue_guard_apply(e, &md, pipe);
    /* FfsIngress.fate: the const entries of ffs.core.tables.fate_entries, in order; beside it
     * count_pair_drop and count_admitted (A_j, before the TM) */
    if (md.managed) {
        if (md.admit_margin == 0 || md.guard) {
            counter_count(e->pair_drops_pk, e->pair_drops_by, pipe * NUM_PAIRS + md.pid, frame_len);
        } else {
            counter_count(e->admitted_pk, e->admitted_by, pipe * NUM_PORTS + md.egress_port, frame_len);
            if (md.grows) e->admitted_shims_pk[pipe * NUM_PORTS + md.egress_port] += 1; /* count_admitted_shim */
        }
    }
    if (!md.routed) { /* miss_drop */
        event_count(e, pipe, EVENT_ROUTE_MISS);
        return -1 - R_ROUTE_MISS;
    }
    if (!md.claim_room) { /* claim_drop: a lie the ingress sees, before any pair's state */
        event_count(e, pipe, EVENT_CLAIM_OVERSIZE);
        return -1 - R_CLAIM;
    }
    if (!md.managed) { /* note_no_pair */
        event_count(e, pipe, EVENT_NO_PAIR);
        return tm_and_egress(e, buf, len, md.egress_port, -1, (uint32_t)frame_len, 0, ingress_port, p.vlan, t_ns, depart);
    }
    *pid_out = (int)md.pid;
    if (md.admit_margin == 0) { /* ffs_drop */
        event_count(e, pipe, EVENT_FFS_DROP);
        return -1 - R_FFS_DROP;
    }
    if (md.guard) { /* guard_drop */
        event_count(e, pipe, EVENT_GUARD_DROP);
        return -1 - R_GUARD_DROP;
    }
    uint32_t rf_out = umin(md.rf_norm, md.ltau);
    int grown = 0;
    if (md.ffs_state == FFS_STATE_VALID) { /* rewrite_label; rewrite_reset_label also sets D */
        wr16(buf, p.shim + RF_OFF, rf_out);
        wr16(buf, p.shim + RRI_OFF, umin(rd16(buf, p.shim + RRI_OFF), md.c_ri));
        if (!md.trust)
            buf[p.shim] |= FLAG_DEFAULTED;
    } else if (md.ffs_state == FFS_STATE_OPAQUE) { /* note_opaque */
        event_count(e, pipe, EVENT_OPAQUE_SHIM);
    } else if (md.insert && p.frag) { /* note_not_inserted: a shim in one fragment breaks reassembly */
        event_count(e, pipe, EVENT_NOT_INSERTED);
    } else if (md.insert && !md.runt && md.room == 0) { /* note_not_inserted: beyond the egress's MTU */
        event_count(e, pipe, EVENT_NOT_INSERTED);
    } else if (md.insert && !md.runt &&
               (p.ip_version == 4 || (p.ip_version == 6 && buf[p.l3 + 6] != IP_PROTO_HOPOPT))) {
        /* insert_shim_v4 / _v6: never into a padded runt, never before a Hop-by-Hop header */
        insert_shim(buf, len, &p, rf_out);
        grown = 1;
    } /* else forward */
    return tm_and_egress(e, buf, len, md.egress_port, (int)md.pid, (uint32_t)frame_len, grown, ingress_port, p.vlan, t_ns,
                         depart);
}

/* Pipeline.process. buf holds *len bytes and has room for MAC_ROOM(*len) bytes. The frame is
 * padded to the Ethernet minimum and followed by a zero FCS, as the MAC hands it to the pipeline
 * (ffs.switch.tna.mac_frame); a forwarded frame leaves without its last 4 bytes (mac_output).
 * Returns the egress port, or -1 - reason; *pid_out is the pair of a managed packet, else -1. */
static int engine_process(Engine *e, uint8_t *buf, size_t *len, uint32_t ingress_port, int64_t t_ns, int *pid_out,
                          int64_t *depart) {
    if (*len < MIN_FRAME) {
        memset(buf + *len, 0, MIN_FRAME - *len);
        *len = MIN_FRAME;
    }
    memset(buf + *len, 0, FCS_LEN);
    *len += FCS_LEN;
    *depart = 0;
    int out = engine_process_mac(e, buf, len, ingress_port, t_ns, pid_out, depart);
    *len -= FCS_LEN;
    return out;
}

/* --- the Engine as a Python type --------------------------------------------------------------- */
static void Engine_dealloc(Engine *self) {
    for (int i = 0; i < NT; i++) table_free(&self->tables[i]);
    for (int i = 0; i < self->nbufs; i++) PyBuffer_Release(&self->bufs[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Engine(buffers): the NB writable buffers of BUF_SPEC, in that order */
static int Engine_init(Engine *self, PyObject *args, PyObject *kwds) {
    PyObject *bufs;
    if (!PyArg_ParseTuple(args, "O", &bufs)) return -1;
    if (self->nbufs) {
        PyErr_SetString(PyExc_RuntimeError, "Engine already initialised");
        return -1;
    }
    self->pkt_fcs = 1; /* PktLength(): tofino-model's, the arrival length with the FCS */
    PyObject *seq = PySequence_Fast(bufs, "buffers must be a sequence");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != NB) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "Engine needs %d buffers", NB);
        return -1;
    }
    for (int i = 0; i < NB; i++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, i), &self->bufs[i], PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        self->nbufs = i + 1;
        if (self->bufs[i].itemsize != BUF_SPEC[i].itemsize || self->bufs[i].len != BUF_SPEC[i].itemsize * BUF_SPEC[i].count) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "buffer %s: want %zd items of %zd bytes", BUF_SPEC[i].name,
                         BUF_SPEC[i].count, BUF_SPEC[i].itemsize);
            return -1;
        }
    }
    Py_DECREF(seq);
    void *b[NB];
    for (int i = 0; i < NB; i++) b[i] = self->bufs[i].buf;
    self->pair_bytes_pk = b[B_PAIR_BYTES_PK];
    self->pair_bytes_by = b[B_PAIR_BYTES_BY];
    self->offered_pk = b[B_OFFERED_PK];
    self->offered_by = b[B_OFFERED_BY];
    self->pair_drops_pk = b[B_PAIR_DROPS_PK];
    self->pair_drops_by = b[B_PAIR_DROPS_BY];
    self->admitted_pk = b[B_ADMITTED_PK];
    self->admitted_by = b[B_ADMITTED_BY];
    self->events_pk = b[B_EVENTS_PK];
    self->events_by = b[B_EVENTS_BY];
    self->accepted_pk = b[B_ACCEPTED_PK];
    self->accepted_by = b[B_ACCEPTED_BY];
    self->malformed_pk = b[B_MALFORMED_PK];
    self->malformed_by = b[B_MALFORMED_BY];
    self->pair_malformed_pk = b[B_PAIR_MALFORMED_PK];
    self->pair_malformed_by = b[B_PAIR_MALFORMED_BY];
    self->f_est = b[B_F_EST];
    self->lpf_y = b[B_LPF_Y];
    self->lpf_last = b[B_LPF_LAST];
    self->lpf_seen = b[B_LPF_SEEN];
    self->lpf_kind = b[B_LPF_KIND];
    self->lpf_gain = b[B_LPF_GAIN];
    self->lpf_decay = b[B_LPF_DECAY];
    self->lpf_shift = b[B_LPF_SHIFT];
    self->tm_speed = b[B_TM_SPEED];
    self->tm_buffer = b[B_TM_BUFFER];
    self->tm_backlog = b[B_TM_BACKLOG];
    self->tm_last = b[B_TM_LAST];
    self->tm_drops = b[B_TM_DROPS];
    self->tm_drop_bytes = b[B_TM_DROP_BYTES];
    self->tm_enqueued = b[B_TM_ENQUEUED];
    self->tm_enqueued_bytes = b[B_TM_ENQUEUED_BYTES];
    self->tm_delay_sum = b[B_TM_DELAY_SUM];
    self->tm_frame_max = b[B_TM_FRAME_MAX];
    self->tm_oversize = b[B_TM_OVERSIZE];
    self->tm_oversize_bytes = b[B_TM_OVERSIZE_BYTES];
    self->tm_drain = b[B_TM_DRAIN];
    self->guard_queue = b[B_GUARD_QUEUE];
    self->guard_timers_pk = b[B_GUARD_TIMERS_PK];
    self->pktgen_cfg = b[B_PKTGEN_CFG];
    self->pktgen_next = b[B_PKTGEN_NEXT];
    self->pktgen_now = b[B_PKTGEN_NOW];
    self->offered_shims_pk = b[B_OFFERED_SHIMS];
    self->admitted_shims_pk = b[B_ADMITTED_SHIMS];
    self->stripped_pk = b[B_STRIPPED];
    self->tag_changed_pk = b[B_TAG_CHANGED];
    self->rng.index = MT_N + 1; /* unusable until set_rng_state, like the tables until set_table */
    return 0;
}

static PyObject *Engine_set_table(Engine *self, PyObject *args) {
    int t, kind, width;
    PyObject *def, *entries;
    if (!PyArg_ParseTuple(args, "iiiOO", &t, &kind, &width, &def, &entries)) return NULL;
    if (t < 0 || t >= NT || kind < K_EXACT || kind > K_TERNARY || width < 0 || width > 128) {
        PyErr_SetString(PyExc_ValueError, "bad table id, kind or width");
        return NULL;
    }
    if (table_build(&self->tables[t], kind, width, def, entries) < 0) return NULL;
    self->tables_set |= 1u << t;
    Py_RETURN_NONE;
}

/* set_pkt_length(fcs, deparsed): PktLength, what the egress's pkt_length is */
static PyObject *Engine_set_pkt_length(Engine *self, PyObject *args) {
    int fcs, deparsed;
    if (!PyArg_ParseTuple(args, "pp", &fcs, &deparsed)) return NULL;
    self->pkt_fcs = fcs;
    self->pkt_deparsed = deparsed;
    Py_RETURN_NONE;
}

/* set_host_vlan(bytes of NUM_PORTS * 4: access, pushes, VID big-endian per port): HostVlan */
static PyObject *Engine_set_host_vlan(Engine *self, PyObject *args) {
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    if (b.len != NUM_PORTS * 4) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "host VLAN config must be 512 * 4 bytes");
        return NULL;
    }
    memcpy(self->host_vlan, b.buf, NUM_PORTS * 4);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* set_port_md(bytes of NUM_PORTS * 2: trust, insert per port) */
static PyObject *Engine_set_port_md(Engine *self, PyObject *args) {
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "y*", &b)) return NULL;
    if (b.len != NUM_PORTS * 2) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "port metadata must be 512 * 2 bytes");
        return NULL;
    }
    memcpy(self->port_md, b.buf, NUM_PORTS * 2);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyObject *Engine_set_rng_state(Engine *self, PyObject *args) {
    PyObject *state;
    if (!PyArg_ParseTuple(args, "O", &state)) return NULL;
    if (mt_from_state(&self->rng, state) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Engine_rng_state(Engine *self, PyObject *noargs) { return mt_to_state(&self->rng); }

static int engine_ready(Engine *e) {
    if (e->rng.index > MT_N || e->tables_set != (1u << NT) - 1) {
        PyErr_SetString(PyExc_RuntimeError, "Engine: set every table and the rng state first");
        return 0;
    }
    return 1;
}

#define STACK_FRAME 2048

/* process(frame, ingress_port, t_ns) -> (egress_port | None, frame | None, reason | None, pid | None, depart_ns)
 * reason: 0 parse error, 1 route miss, 2 dropped by gamma, 3 malformed (egress frame check), 4 TM drop,
 * 5 dropped by the queue guard, 6 a timer packet (it ends in the ingress), 7 above a port's frame limit */
static PyObject *Engine_process(Engine *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "process(frame, ingress_port, t_ns)");
        return NULL;
    }
    Py_buffer in;
    if (PyObject_GetBuffer(args[0], &in, PyBUF_SIMPLE) < 0) return NULL;
    long port = PyLong_AsLong(args[1]);
    long long t_ns = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) {
        PyBuffer_Release(&in);
        return NULL;
    }
    if (port < 0 || port >= NUM_PORTS) {
        PyBuffer_Release(&in);
        PyErr_Format(PyExc_ValueError, "ingress port %ld out of range 0..%d", port, NUM_PORTS - 1);
        return NULL;
    }
    if (!engine_ready(self)) {
        PyBuffer_Release(&in);
        return NULL;
    }
    uint8_t stack[STACK_FRAME];
    size_t len = (size_t)in.len;
    uint8_t *buf = MAC_ROOM(len) <= STACK_FRAME ? stack : malloc(MAC_ROOM(len));
    if (!buf) {
        PyBuffer_Release(&in);
        return PyErr_NoMemory();
    }
    memcpy(buf, in.buf, len);
    PyBuffer_Release(&in);
    int pid;
    int64_t depart;
    int out = engine_process(self, buf, &len, (uint32_t)port, (int64_t)t_ns, &pid, &depart);
    PyObject *res;
    PyObject *pid_obj = pid >= 0 ? PyLong_FromLong(pid) : Py_NewRef(Py_None);
    if (!pid_obj) {
        if (buf != stack) free(buf);
        return NULL;
    }
    if (out >= 0)
        res = Py_BuildValue("(iy#ONL)", out, (const char *)buf, (Py_ssize_t)len, Py_None, pid_obj, (long long)depart);
    else
        res = Py_BuildValue("(OOiNL)", Py_None, Py_None, -1 - out, pid_obj, (long long)depart);
    if (buf != stack) free(buf);
    return res;
}

static PyMethodDef Engine_methods[] = {
    {"set_table", (PyCFunction)Engine_set_table, METH_VARARGS,
     "set_table(id, kind, width, default, entries): replace a compiled table"},
    {"set_port_md", (PyCFunction)Engine_set_port_md, METH_VARARGS, "set_port_md(bytes): $PORT_METADATA"},
    {"set_host_vlan", (PyCFunction)Engine_set_host_vlan, METH_VARARGS, "set_host_vlan(bytes): HostVlan"},
    {"set_pkt_length", (PyCFunction)Engine_set_pkt_length, METH_VARARGS,
     "set_pkt_length(fcs, deparsed): what the egress's pkt_length is (PktLength)"},
    {"set_rng_state", (PyCFunction)Engine_set_rng_state, METH_VARARGS, "set_rng_state(625 ints of getstate())"},
    {"rng_state", (PyCFunction)Engine_rng_state, METH_NOARGS, "the generator state as getstate()[1]"},
    {"process", (PyCFunction)(void (*)(void))Engine_process, METH_FASTCALL,
     "process(frame, ingress_port, t_ns) -> (egress_port, frame, reason, pid, depart_ns)"},
    {NULL}};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ffs.switch._fastpath.Engine",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One pipeline's compiled tables over the externs' shared buffers.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
};

/* ============================================================================================
 * Trace: trace.run's packet loop (streams -> pipelines, each with its TM -> links -> delivered bins)
 * ============================================================================================ */
typedef struct {
    int engine;      /* first node */
    uint32_t port;   /* its ingress port */
    uint8_t *frame;
    size_t len;
    int wire;        /* the line-rate bytes of one frame as the source sends it (tables.wire_len) */
    double gap, start, stop, t;
    int active;
    mt_t rng;
    double *delivered;
    Py_ssize_t nbins;
    int64_t sent, dropped;
} stream_t;

/* a frame between two nodes: it left one node's port and arrives at the next one at its departure time */
typedef struct {
    int stream, node, hops;
    uint32_t port;
    double sent; /* when its source sent it: delivered bytes are binned by it */
    size_t len;
    uint8_t *frame; /* maxlen bytes */
} flight_t;

typedef struct {
    double t;
    int k; /* < nstreams: the stream's next arrival; else the flight k - nstreams */
} hent_t;

typedef struct {
    PyObject_HEAD
    PyObject *engines; /* tuple of Engine */
    int nengines;
    int nstreams;
    stream_t *streams;
    Py_buffer *delivered_bufs;
    int ndelivered;
    int32_t *link; /* [engine][port] -> next engine * NUM_PORTS + ingress port, or -1 */
    flight_t *flights;
    int nflights, *free_flights, nfree;
    hent_t *heap;
    int nheap, heap_cap;
    int mode; /* 0 constant spacing, 1 Poisson, 2 jitter */
    double start_s, bin_s;
    int64_t packets;
    size_t maxlen;
    uint8_t *buf;
} Trace;

static inline int hless(const hent_t *a, const hent_t *b) { return a->t < b->t || (a->t == b->t && a->k < b->k); }

static int heap_push(Trace *tr, double t, int k) {
    if (tr->nheap == tr->heap_cap) {
        int cap = tr->heap_cap ? 2 * tr->heap_cap : 16;
        hent_t *h = realloc(tr->heap, sizeof(hent_t) * (size_t)cap);
        if (!h) {
            PyErr_NoMemory();
            return -1;
        }
        tr->heap = h;
        tr->heap_cap = cap;
    }
    int i = tr->nheap++;
    tr->heap[i].t = t;
    tr->heap[i].k = k;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!hless(&tr->heap[i], &tr->heap[parent])) break;
        hent_t tmp = tr->heap[i];
        tr->heap[i] = tr->heap[parent];
        tr->heap[parent] = tmp;
        i = parent;
    }
    return 0;
}

static hent_t heap_pop(Trace *tr) {
    hent_t top = tr->heap[0];
    tr->heap[0] = tr->heap[--tr->nheap];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < tr->nheap && hless(&tr->heap[l], &tr->heap[m])) m = l;
        if (r < tr->nheap && hless(&tr->heap[r], &tr->heap[m])) m = r;
        if (m == i) break;
        hent_t tmp = tr->heap[i];
        tr->heap[i] = tr->heap[m];
        tr->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* a free flight slot (its frame buffer allocated), or -1 with an exception set */
static int flight_alloc(Trace *tr) {
    if (tr->nfree > 0) return tr->free_flights[--tr->nfree];
    int n = tr->nflights + 1;
    flight_t *f = realloc(tr->flights, sizeof(flight_t) * (size_t)n);
    if (!f) goto nomem;
    tr->flights = f;
    int *fr = realloc(tr->free_flights, sizeof(int) * (size_t)n);
    if (!fr) goto nomem;
    tr->free_flights = fr;
    memset(&tr->flights[n - 1], 0, sizeof(flight_t));
    tr->flights[n - 1].frame = malloc(tr->maxlen);
    if (!tr->flights[n - 1].frame) goto nomem;
    tr->nflights = n;
    return n - 1;
nomem:
    PyErr_NoMemory();
    return -1;
}

/* trace._arrivals: the next arrival of a stream after t */
static double advance(Trace *tr, stream_t *s, double t) {
    if (tr->mode == 1) return t + (-log(1.0 - mt_random(&s->rng)) / (1 / s->gap));
    if (tr->mode == 2) return t + s->gap * (0.5 + mt_random(&s->rng));
    return t + s->gap;
}

static void Trace_dealloc(Trace *self) {
    for (int i = 0; i < self->nstreams; i++) free(self->streams[i].frame);
    for (int i = 0; i < self->ndelivered; i++) PyBuffer_Release(&self->delivered_bufs[i]);
    for (int i = 0; i < self->nflights; i++) free(self->flights[i].frame);
    free(self->flights);
    free(self->free_flights);
    free(self->delivered_bufs);
    free(self->streams);
    free(self->link);
    free(self->heap);
    free(self->buf);
    Py_XDECREF(self->engines);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Trace(engines, streams, links, mode, start_s, bin_s)
 *   streams: (engine, port, frame, wire, gap, start, stop, rng_state, delivered_array)
 *   links:   (engine, port, next_engine, next_port) */
static int Trace_init(Trace *self, PyObject *args, PyObject *kwds) {
    PyObject *engines, *streams, *links;
    int mode;
    double start_s, bin_s;
    if (!PyArg_ParseTuple(args, "O!OOidd", &PyTuple_Type, &engines, &streams, &links, &mode, &start_s, &bin_s))
        return -1;
    if (self->engines) {
        PyErr_SetString(PyExc_RuntimeError, "Trace already initialised");
        return -1;
    }
    int ne = (int)PyTuple_GET_SIZE(engines);
    for (int i = 0; i < ne; i++) {
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(engines, i), &EngineType)) {
            PyErr_SetString(PyExc_TypeError, "engines must be Engine objects");
            return -1;
        }
    }
    self->engines = Py_NewRef(engines);
    self->nengines = ne;
    self->mode = mode;
    self->start_s = start_s;
    self->bin_s = bin_s;
    self->link = malloc(sizeof(int32_t) * NUM_PORTS * (ne ? ne : 1));
    if (!self->link) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < NUM_PORTS * ne; i++) self->link[i] = -1;

    PyObject *ss = PySequence_Fast(streams, "streams must be a sequence");
    if (!ss) return -1;
    int ns = (int)PySequence_Fast_GET_SIZE(ss);
    self->streams = calloc(ns ? ns : 1, sizeof(stream_t));
    self->delivered_bufs = calloc(ns ? ns : 1, sizeof(Py_buffer));
    if (!self->streams || !self->delivered_bufs) {
        Py_DECREF(ss);
        PyErr_NoMemory();
        return -1;
    }
    self->maxlen = 64;
    for (int i = 0; i < ns; i++) {
        stream_t *s = &self->streams[i];
        PyObject *state, *delivered;
        Py_ssize_t flen;
        const char *fbytes;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(ss, i), "iIy#iddd" "OO", &s->engine, &s->port, &fbytes, &flen,
                              &s->wire, &s->gap, &s->start, &s->stop, &state, &delivered)) {
            Py_DECREF(ss);
            return -1;
        }
        self->nstreams = i + 1;
        if (s->engine < 0 || s->engine >= ne || s->port >= NUM_PORTS) {
            Py_DECREF(ss);
            PyErr_SetString(PyExc_ValueError, "stream engine or port out of range");
            return -1;
        }
        s->frame = malloc((size_t)flen);
        if (!s->frame) {
            Py_DECREF(ss);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(s->frame, fbytes, (size_t)flen);
        s->len = (size_t)flen;
        if (s->len > self->maxlen) self->maxlen = s->len;
        if (mt_from_state(&s->rng, state) < 0) {
            Py_DECREF(ss);
            return -1;
        }
        if (PyObject_GetBuffer(delivered, &self->delivered_bufs[i], PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            Py_DECREF(ss);
            return -1;
        }
        self->ndelivered = i + 1;
        Py_buffer *db = &self->delivered_bufs[i];
        if (db->itemsize != 8 || !db->format || strcmp(db->format, "d") != 0 || db->len < 8) {
            Py_DECREF(ss);
            PyErr_SetString(PyExc_ValueError, "delivered must be a non-empty float64 array");
            return -1;
        }
        s->delivered = db->buf;
        s->nbins = db->len / 8;
        /* the generator's first value: a random phase within one gap */
        s->t = s->start + mt_random(&s->rng) * s->gap;
        s->active = s->t < s->stop;
        if (s->active && heap_push(self, s->t, i) < 0) {
            Py_DECREF(ss);
            return -1;
        }
    }
    Py_DECREF(ss);

    PyObject *ls = PySequence_Fast(links, "links must be a sequence");
    if (!ls) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(ls); i++) {
        int a, p, b, q;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(ls, i), "iiii", &a, &p, &b, &q)) {
            Py_DECREF(ls);
            return -1;
        }
        if (a < 0 || a >= ne || b < 0 || b >= ne || p < 0 || p >= NUM_PORTS || q < 0 || q >= NUM_PORTS) {
            Py_DECREF(ls);
            PyErr_SetString(PyExc_ValueError, "link out of range");
            return -1;
        }
        self->link[a * NUM_PORTS + p] = b * NUM_PORTS + q;
    }
    Py_DECREF(ls);
    self->maxlen = MAC_ROOM(self->maxlen) + (size_t)SHIM_LEN * (size_t)(ne + 1);
    self->buf = malloc(self->maxlen);
    if (!self->buf) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* run_until(limit): every packet arriving before `limit` (virtual seconds); returns the arrival
 * time of the next packet, or None when every stream has ended. */
static PyObject *Trace_run_until(Trace *self, PyObject *arg) {
    double limit = PyFloat_AsDouble(arg);
    if (limit == -1.0 && PyErr_Occurred()) return NULL;
    Engine **eng = (Engine **)&PyTuple_GET_ITEM(self->engines, 0);
    for (int i = 0; i < self->nengines; i++)
        if (!engine_ready(eng[i])) return NULL;
    while (self->nheap > 0 && self->heap[0].t < limit) {
        hent_t h = heap_pop(self);
        double t = h.t;
        int64_t t_ns = (int64_t)((self->start_s + t) * 1e9);
        uint8_t *buf = self->buf;
        size_t len;
        int node, hops, k;
        uint32_t port;
        double sent;
        stream_t *s;
        if (h.k < self->nstreams) { /* a stream's next frame enters its first node */
            k = h.k;
            s = &self->streams[k];
            s->sent += 1;
            self->packets += 1;
            node = s->engine;
            port = s->port;
            memcpy(buf, s->frame, s->len);
            len = s->len;
            hops = 0;
            sent = t;
            double tn = advance(self, s, t);
            if (tn < s->stop && heap_push(self, tn, k) < 0) return NULL;
        } else { /* a frame that left a node arrives at the next one */
            int fi = h.k - self->nstreams;
            flight_t *f = &self->flights[fi];
            k = f->stream;
            s = &self->streams[k];
            node = f->node;
            port = f->port;
            len = f->len;
            hops = f->hops;
            sent = f->sent;
            memcpy(buf, f->frame, len);
            self->free_flights[self->nfree++] = fi;
        }
        if (MAC_ROOM(len) > self->maxlen) { /* cannot happen: one shim per hop at most */
            PyErr_SetString(PyExc_RuntimeError, "frame grew beyond the trace buffer");
            return NULL;
        }
        int pid;
        int64_t depart;
        int out = engine_process(eng[node], buf, &len, port, t_ns, &pid, &depart);
        if (out < 0) {
            s->dropped += 1;
            continue;
        }
        double td = (double)depart / 1e9 - self->start_s; /* its last bit leaves the port */
        int32_t nxt = self->link[node * NUM_PORTS + out];
        if (nxt < 0) {
            Py_ssize_t bin = (Py_ssize_t)(sent / self->bin_s);
            if (bin < 0 || bin >= s->nbins) {
                PyErr_SetString(PyExc_IndexError, "sending time beyond the result bins");
                return NULL;
            }
            s->delivered[bin] += s->wire;
            continue;
        }
        if (++hops > 4 * self->nengines + 4) {
            PyErr_SetString(PyExc_RuntimeError, "forwarding loop between nodes");
            return NULL;
        }
        int fi = flight_alloc(self);
        if (fi < 0) return NULL;
        flight_t *f = &self->flights[fi];
        f->stream = k;
        f->node = nxt / NUM_PORTS;
        f->port = (uint32_t)(nxt % NUM_PORTS);
        f->hops = hops;
        f->sent = sent;
        f->len = len; /* the frame that left (rewritten in buf) is the one that enters the next node */
        memcpy(f->frame, buf, len);
        if (heap_push(self, td, self->nstreams + fi) < 0) return NULL;
    }
    if (self->nheap == 0) Py_RETURN_NONE;
    return PyFloat_FromDouble(self->heap[0].t);
}

/* counts() -> (packets, [sent per stream], [dropped per stream]) */
static PyObject *Trace_counts(Trace *self, PyObject *noargs) {
    PyObject *sent = PyList_New(self->nstreams), *dropped = PyList_New(self->nstreams);
    if (!sent || !dropped) {
        Py_XDECREF(sent);
        Py_XDECREF(dropped);
        return NULL;
    }
    for (int i = 0; i < self->nstreams; i++) {
        PyList_SET_ITEM(sent, i, PyLong_FromLongLong(self->streams[i].sent));
        PyList_SET_ITEM(dropped, i, PyLong_FromLongLong(self->streams[i].dropped));
    }
    return Py_BuildValue("(LNN)", (long long)self->packets, sent, dropped);
}

static PyMethodDef Trace_methods[] = {
    {"run_until", (PyCFunction)Trace_run_until, METH_O, "run_until(limit_s) -> next arrival time or None"},
    {"counts", (PyCFunction)Trace_counts, METH_NOARGS, "(packets, sent per stream, dropped per stream)"},
    {NULL}};

static PyTypeObject TraceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ffs.switch._fastpath.Trace",
    .tp_basicsize = sizeof(Trace),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "trace.run's packet loop over Engines in virtual time.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Trace_init,
    .tp_dealloc = (destructor)Trace_dealloc,
    .tp_methods = Trace_methods,
};

/* ============================================================================================ */
static struct PyModuleDef fastpath_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_fastpath",
    .m_doc = "The software switch's per-packet loop in C (see pipeline.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__fastpath(void) {
    if (PyType_Ready(&EngineType) < 0 || PyType_Ready(&TraceType) < 0) return NULL;
    PyObject *m = PyModule_Create(&fastpath_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Engine", (PyObject *)&EngineType) < 0 ||
        PyModule_AddObjectRef(m, "Trace", (PyObject *)&TraceType) < 0)
        goto fail;
    PyObject *names = PyTuple_New(NT), *actions = PyTuple_New(NT_ALL), *bufs = PyTuple_New(NB);
    if (!names || !actions || !bufs) goto fail;
    for (int i = 0; i < NT; i++) PyTuple_SET_ITEM(names, i, PyUnicode_FromString(TABLE_NAMES[i]));
    for (int i = 0; i < NT_ALL; i++) PyTuple_SET_ITEM(actions, i, PyUnicode_FromString(TABLE_ACTIONS[i]));
    for (int i = 0; i < NB; i++) PyTuple_SET_ITEM(bufs, i, PyUnicode_FromString(BUF_SPEC[i].name));
    PyModule_AddObject(m, "TABLES", names);
    PyModule_AddObject(m, "ACTIONS", actions);
    PyModule_AddObject(m, "BUFFERS", bufs);
    PyObject *c = Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}",
        "IP_PROTO_FFS",
        IP_PROTO_FFS, "SHIM_LEN", SHIM_LEN, "SHIM_VERSION", SHIM_VERSION, "FLAG_RI", FLAG_RI, "FLAG_DEFAULTED",
        FLAG_DEFAULTED, "FLAG_RESERVED", FLAG_RESERVED, "CODE_ONE", CODE_ONE, "CODE_MAX", CODE_MAX, "RF_CODE_MIN",
        RF_CODE_MIN, "RF_CODE_MAX", RF_CODE_MAX, "D_OFFSET", D_OFFSET, "NUM_PAIRS", NUM_PAIRS, "NUM_PORTS",
        NUM_PORTS, "EVENT_COUNTER_SIZE", EVENT_COUNTER_SIZE, "EVENT_PARSE_ERROR", EVENT_PARSE_ERROR, "EVENT_ROUTE_MISS",
        EVENT_ROUTE_MISS, "EVENT_OPAQUE_SHIM", EVENT_OPAQUE_SHIM, "EVENT_NO_PAIR", EVENT_NO_PAIR, "EVENT_FFS_DROP",
        EVENT_FFS_DROP, "EVENT_NOT_INSERTED", EVENT_NOT_INSERTED, "IPV4_MF", IPV4_MF, "SHIM_ROOM_MAX", SHIM_ROOM_MAX, "FFS_STATE_NONE", FFS_STATE_NONE, "FFS_STATE_VALID", FFS_STATE_VALID, "FFS_STATE_OPAQUE",
        FFS_STATE_OPAQUE, "ETH_HDR_LEN", ETH_LEN, "VLAN_TAG_LEN", VLAN_LEN, "IPV6_HDR_LEN", IPV6_LEN, "FCS_LEN", FCS_LEN,
        "MIN_FRAME", MIN_FRAME, "WIRE_OVERHEAD", WIRE_OVERHEAD, "EVENT_GUARD_DROP", EVENT_GUARD_DROP, "EVENT_CLAIM_OVERSIZE", EVENT_CLAIM_OVERSIZE, "GUARD_RF_CODE",
        GUARD_RF_CODE, "PKTGEN_PORT", PKTGEN_PORT, "TIMER_APP_ID", TIMER_APP_ID, "TIMER_HEADER_LEN", TIMER_HEADER_LEN,
        "FCS_EITHER", FCS_EITHER, "FCS_COUNTED", FCS_COUNTED, "FCS_NOT_COUNTED", FCS_NOT_COUNTED, "L2_SAME", L2_SAME,
        "L2_TAG_POPPED", L2_TAG_POPPED, "L2_TAG_PUSHED", L2_TAG_PUSHED, "ETHERTYPE_VLAN", ETHERTYPE_VLAN);
    if (!c || PyModule_AddObject(m, "CONSTANTS", c) < 0) goto fail;
#ifndef FFS_SOURCE_SHA256
#define FFS_SOURCE_SHA256 ""
#endif
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", FFS_SOURCE_SHA256) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
