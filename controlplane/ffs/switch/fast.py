# SPDX-License-Identifier: Apache-2.0
"""The compiled fast path: `FastPipeline` is a `Pipeline` whose per-packet loop runs in C.

Everything but `process` is the Python pipeline: the same MatchTables, the same control interface,
the same counters, registers and LPF (the C engine counts into their buffers). The engine keeps a
compiled snapshot of each table and is told to recompile a table when it changes
(`MatchTable.on_change`); port metadata, the PktLength model and the host's VLANs (`HostVlan`) are
pushed when replaced. Random draws continue the
Python generator's Mersenne Twister state, so for a seed both pipelines draw the same numbers.

The extension is built by `pip install -e .` (setup.py). `available()` says whether it is;
`new_pipeline(seed)` gives the fast pipeline when it is and the Python one otherwise.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from ffs.core import constants, p4names
from ffs.core.entries import Exact, Lpm, Ternary
from ffs.switch.host_vlan import HostVlan
from ffs.switch.pipeline import (
    DROP_CLAIM,
    DROP_FFS,
    DROP_GUARD,
    DROP_MALFORMED,
    DROP_OVERSIZE,
    DROP_PARSE_ERROR,
    DROP_ROUTE_MISS,
    DROP_TIMER,
    DROP_TM,
    Pipeline,
    Result,
)
from ffs.switch.tna import MatchTable, PktLength

try:
    from ffs.switch import _fastpath
except ImportError as e:  # not built: pip install -e . with a C compiler
    _fastpath = None
    _IMPORT_ERROR = str(e)
else:
    _IMPORT_ERROR = ""

_REASONS = (
    DROP_PARSE_ERROR,
    DROP_ROUTE_MISS,
    DROP_FFS,
    DROP_MALFORMED,
    DROP_TM,
    DROP_GUARD,
    DROP_TIMER,
    DROP_OVERSIZE,
    DROP_CLAIM,
)
# the engine compiles the writable tables; the const-entry ones are code in _fastpath.c, checked
# against ffs.core.tables' generators by tests/property/test_switch_fastpath.py
WRITABLE = tuple(t for t in p4names.TABLES if not t.const_entries)
_KIND = {"exact": 0, "lpm": 1, "ternary": 2}
M64 = (1 << 64) - 1


def available() -> bool:
    return _fastpath is not None


def require() -> None:
    if _fastpath is None:
        raise RuntimeError(
            f"the software switch's compiled fast path is not built ({_IMPORT_ERROR}); run `pip install -e .` with gcc"
        )


def _check_contract() -> None:
    """The C code hard-codes names, orders and constants; refuse to run if they drifted, or if the
    built module is older than its source (rebuild with `pip install -e .`)."""
    if _fastpath is None:
        return
    source = Path(__file__).with_name("_fastpath.c")
    if source.exists() and hashlib.sha256(source.read_bytes()).hexdigest() != getattr(_fastpath, "SOURCE_SHA256", None):
        raise ImportError("ffs.switch._fastpath was built from another _fastpath.c: rebuild it (pip install -e .)")
    if tuple(t.name for t in WRITABLE) != _fastpath.TABLES:
        raise ImportError("ffs.switch._fastpath: table order differs from ffs.core.p4names.TABLES; rebuild it")
    for t, acts in zip(WRITABLE + p4names.CONST_TABLES, _fastpath.ACTIONS, strict=False):
        if acts.split() != [a.short for a in t.actions]:
            raise ImportError(f"ffs.switch._fastpath: actions of {t.name} differ from ffs.core.p4names; rebuild it")
    for name, value in _fastpath.CONSTANTS.items():
        if getattr(constants, name) != value:
            raise ImportError(
                f"ffs.switch._fastpath: {name} = {value} but ffs.core.constants says {getattr(constants, name)}"
            )


try:
    _check_contract()
except ImportError as e:  # a stale or mismatched build: run the Python pipeline, say why on use
    _fastpath = None
    _IMPORT_ERROR = str(e)


def _res(spec: p4names.Table, action: str, params: dict[str, int]) -> tuple[int, int, int, int, int]:
    a = spec.action(action)
    vals = [params[n] for n, _w in a.params]
    return (spec.actions.index(a), *vals, *([0] * (4 - len(vals))))


def compile_table(t: MatchTable) -> tuple[int, int, tuple, list[tuple]]:
    """(kind, key width, default, entries) of a MatchTable for `Engine.set_table`: multi-field keys
    are concatenated in declaration order (value and mask), LPM entries carry their prefix length
    and ternary entries their $MATCH_PRIORITY, in the table's insertion order."""
    spec = t.spec
    kinds = {k.match for k in spec.keys}
    if "range" in kinds:
        raise ValueError(f"{spec.name}: range keys are not compiled")
    kind = _KIND["ternary"] if "ternary" in kinds else _KIND["lpm"] if "lpm" in kinds else _KIND["exact"]
    if kind == _KIND["lpm"] and len(spec.keys) != 1:
        raise ValueError(f"{spec.name}: LPM with several key fields is not compiled")
    width = sum(k.width for k in spec.keys)
    entries = []
    for e in t.entries.values():
        value = mask = 0
        for kv, f in zip(e.key, spec.keys, strict=False):
            full = (1 << f.width) - 1
            if isinstance(kv, Exact):
                v, m = kv.value, full
            elif isinstance(kv, Ternary):
                v, m = kv.value, kv.mask
            elif isinstance(kv, Lpm):
                v, m = kv.value, full & ~((1 << (f.width - kv.prefix_len)) - 1)
            else:  # pragma: no cover — Range is refused above
                raise ValueError(f"{spec.name}: {type(kv).__name__} keys are not compiled")
            value, mask = (value << f.width) | v, (mask << f.width) | m
        prio = e.key[0].prefix_len if kind == _KIND["lpm"] else e.priority
        entries.append((value >> 64, value & M64, mask >> 64, mask & M64, prio, *_res(spec, e.action, e.params)))
    return kind, width, _res(spec, *t.default()), entries


class FastPipeline(Pipeline):
    """A Pipeline whose `process` runs in C, with identical results (tests/property/test_switch_fastpath.py)."""

    def __init__(self, seed: int = 1) -> None:
        require()
        self._dirty: set[int] = set()
        self._port_md_dirty = True
        self._pkt_length_dirty = True
        self._host_vlan_dirty = True
        super().__init__(seed)
        rate, norm, eg = self.rate_est, self.normalize, self.egress_acct
        lpf = rate.f_lpf
        drops, admitted, tm = self.fate.pair_drops, self.fate.admitted, self.tm
        buffers = (
            rate.pair_bytes.packets,
            rate.pair_bytes.bytes,
            rate.offered.packets,
            rate.offered.bytes,
            drops.packets,
            drops.bytes,
            admitted.packets,
            admitted.bytes,
            self.events.packets,
            self.events.bytes,
            eg.accepted.packets,
            eg.accepted.bytes,
            eg.malformed.packets,
            eg.malformed.bytes,
            eg.pair_malformed.packets,
            eg.pair_malformed.bytes,
            rate.f_est.cells,
            lpf.state,
            lpf.last,
            lpf.seen,
            lpf.kind,
            lpf.gain,
            lpf.decay,
            lpf.shift,
            tm.speed,
            tm.buffer,
            tm.backlog,
            tm.last,
            tm.drops,
            tm.drop_bytes,
            tm.enqueued,
            tm.delay_sum,
            tm.frame_max,
            tm.oversize,
            tm.oversize_bytes,
            tm.drain,
            self.guard.queue.cells,
            self.guard.timers.packets,
            self.guard.timers.bytes,
            self.pktgen.cfg,
            self.pktgen.next_ns,
            self.pktgen.now_ns,
            self.shims.offered_shims.packets,
            self.shims.admitted_shims.packets,
            eg.stripped.packets,
            tm.enqueued_bytes,
            eg.tag_changed.packets,
        )  # the order of _fastpath.BUFFERS
        self.engine = _fastpath.Engine(buffers)
        self.engine.set_rng_state(norm.rng.getstate()[1])
        # the engine's table ids are the writable tables' positions in p4names.TABLES (WRITABLE)
        self._writable = [t for t in self.tables.values() if not t.spec.const_entries]
        self._table_ids = {}
        for i, t in enumerate(self._writable):
            self._table_ids[t.spec.name] = i
            t.on_change = functools.partial(self._dirty.add, i)
            self._dirty.add(i)
        self.sync()

    # The control interface replaces the whole dict (atomic batches); mark it for the engine.
    @property
    def port_metadata(self) -> dict[int, tuple[int, int]]:
        return self._port_md

    @port_metadata.setter
    def port_metadata(self, value: dict[int, tuple[int, int]]) -> None:
        self._port_md = value
        self._port_md_dirty = True

    @property
    def pkt_length_model(self) -> PktLength:
        return self._pkt_length

    @pkt_length_model.setter
    def pkt_length_model(self, value: PktLength) -> None:
        self._pkt_length = value
        self._pkt_length_dirty = True

    @property
    def host_vlan(self) -> HostVlan:
        return self._host_vlan

    @host_vlan.setter
    def host_vlan(self, value: HostVlan) -> None:
        self._host_vlan = value
        self._host_vlan_dirty = True

    def sync(self) -> None:
        """Recompile what changed since the last packet."""
        if self._dirty:
            for i in sorted(self._dirty):
                self.engine.set_table(i, *compile_table(self._writable[i]))
            self._dirty.clear()
        if self._port_md_dirty:
            md = bytearray(constants.NUM_PORTS * 2)
            for port, (trust, insert) in self._port_md.items():
                md[2 * port : 2 * port + 2] = bytes((trust & 1, insert & 1))  # p4src keys on bit 0
            self.engine.set_port_md(bytes(md))
            self._port_md_dirty = False
        if self._pkt_length_dirty:
            self.engine.set_pkt_length(self._pkt_length.fcs, self._pkt_length.deparsed)
            self._pkt_length_dirty = False
        if self._host_vlan_dirty:
            cfg = bytearray(constants.NUM_PORTS * 4)
            for port in self._host_vlan.access:
                cfg[4 * port] = 1
            for port, vid in self._host_vlan.push.items():
                cfg[4 * port + 1 : 4 * port + 4] = bytes((1,)) + (vid & 0xFFF).to_bytes(2, "big")
            self.engine.set_host_vlan(bytes(cfg))
            self._host_vlan_dirty = False

    def process(self, frame: bytes | bytearray, ingress_port: int, t_ns: int) -> Result:
        if self.admission is not None:
            # an evaluation baseline decides in Python before the TM; FFS is off under a baseline,
            # so no random draw is taken that the engine's generator would then miss
            return Pipeline.process(self, frame, ingress_port, t_ns)
        if self._dirty or self._port_md_dirty or self._pkt_length_dirty or self._host_vlan_dirty:
            self.sync()
        port, out, reason, pid, depart = self.engine.process(frame, ingress_port, t_ns)
        if port is None:
            return Result(None, None, _REASONS[reason], pid, depart)
        return Result(port, out, None, pid, depart)

    def rng_state(self) -> tuple:
        """The Random extern's generator state (as random.Random.getstate()[1])."""
        return self.engine.rng_state()


def new_pipeline(seed: int = 1, engine: str = "auto") -> Pipeline:
    """engine: "auto" (compiled when built), "c" (compiled, or an error), "python" (the reference)."""
    if engine == "python" or (engine == "auto" and not available()):
        return Pipeline(seed)
    if engine not in ("auto", "c"):
        raise ValueError(f"engine must be auto, c or python, not {engine!r}")
    return FastPipeline(seed)
