# SPDX-License-Identifier: Apache-2.0
"""The software switch's control interface: the BF-Runtime operations FFS uses, on a Pipeline.

Batches are atomic: every update is validated and applied to copies of the tables it touches, and
the copies replace the live tables only when the whole batch succeeded. A refused batch leaves the
pipeline exactly as it was.

Counters and registers read as BF-RT reads them for every pipe: one value per pipe (the drivers sum
them with `ffs.driver.base.pipe_sum`); a register write and an LPF spec go to every pipe.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

from ffs.core import constants, p4names
from ffs.core.entries import Exact, LpfSpec, TableEntry, TimerSpec, Update
from ffs.core.tables import egress_params_consistent
from ffs.switch.pipeline import Pipeline
from ffs.switch.tna import ControlError, MatchTable

PORT_MD = p4names.PORT_METADATA
# counter/register cells read per hold of the packet lock (as a Tofino sync reads them: per cell, not as one snapshot)
READ_CHUNK = 256


class SwitchControl:
    def __init__(self, pipeline: Pipeline, clock: Callable[[], int] | None = None) -> None:
        """`clock`: the time in ns the pipeline's packets are stamped with (a live switch's
        monotonic clock); None in virtual time, where the last packet's time is now."""
        self.pipeline = pipeline
        self.clock = clock
        self.lock = threading.RLock()  # packet processing and control operations interleave safely
        self.program_id = uuid.uuid4().hex

    # -- tables ------------------------------------------------------------------------------
    def _table(self, name: str) -> MatchTable:
        tables = self.pipeline.tables
        if name in tables:
            return tables[name]
        hits = [t for n, t in tables.items() if n.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        raise ControlError(f"unknown table {name!r}")

    def write(self, updates: Sequence[Update]) -> None:
        with self.lock:
            staged: dict[str, MatchTable] = {}
            port_md = dict(self.pipeline.port_metadata)
            for n, u in enumerate(updates):
                try:
                    if u.entry.table in (PORT_MD.name, "$PORT_METADATA"):
                        self._port_md_update(port_md, u)
                        continue
                    live = self._table(u.entry.table)
                    if live.spec.const_entries:
                        raise ControlError(f"{live.spec.name}: entries are constant in the P4 program")
                    t = staged.get(live.spec.name)
                    if t is None:
                        t = staged[live.spec.name] = _clone(live)
                    _apply(t, u)
                except ControlError as e:
                    raise ControlError(f"update {n + 1} of {len(updates)} refused, nothing applied: {e}") from None
            for name, t in staged.items():
                self.pipeline.tables[name].__dict__.update(t.__dict__)
                self.pipeline.tables[name]._changed()
            self.pipeline.port_metadata = port_md

    def _port_md_update(self, port_md: dict[int, tuple[int, int]], u: Update) -> None:
        key = u.entry.key
        k = key.get(PORT_MD.key.name)
        if set(key) != {PORT_MD.key.name} or not isinstance(k, Exact) or not 0 <= k.value < 512:
            raise ControlError(f"{PORT_MD.name}: key must be {PORT_MD.key.name} (exact, 9 bits)")
        if u.kind == "delete":
            if k.value not in port_md:
                raise ControlError(f"{PORT_MD.name}: no entry for port {k.value}")
            del port_md[k.value]
            return
        if u.kind not in ("insert", "modify"):
            raise ControlError(f"{PORT_MD.name}: {u.kind} is not supported")
        fields = dict(PORT_MD.fields)
        if set(u.entry.params) != set(fields):
            raise ControlError(f"{PORT_MD.name}: fields must be {sorted(fields)}, got {sorted(u.entry.params)}")
        for f, width in fields.items():
            v = u.entry.params[f]
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < (1 << width):
                raise ControlError(f"{PORT_MD.name}: {f}={v!r} does not fit in {width} bits")
        if u.kind == "insert" and k.value in port_md:
            raise ControlError(f"{PORT_MD.name}: port {k.value} already has an entry")
        if u.kind == "modify" and k.value not in port_md:
            raise ControlError(f"{PORT_MD.name}: no entry for port {k.value}")
        p = u.entry.params
        port_md[k.value] = (p["trust"], p["insert"])

    def read_table(self, name: str) -> list[TableEntry]:
        with self.lock:
            if name in (PORT_MD.name, "$PORT_METADATA"):
                return [
                    TableEntry(
                        PORT_MD.name,
                        {PORT_MD.key.name: Exact(port)},
                        None,
                        {"trust": v[0], "insert": v[1]},
                    )
                    for port, v in sorted(self.pipeline.port_metadata.items())
                ]
            t = self._table(name)
            entries = list(t.entries.values())  # a snapshot: writes replace the entries, never edit them
        # converting thousands of entries happens outside the lock, and lets the packet thread run
        # between chunks (sleep(0) hands over the interpreter at once instead of after its 5 ms slice)
        out: list[TableEntry] = []
        for k in range(0, len(entries), READ_CHUNK):
            out.extend(t.to_entry(e) for e in entries[k : k + READ_CHUNK])
            time.sleep(0)
        return sorted(out, key=_entry_order)

    def read_default(self, name: str) -> TableEntry:
        with self.lock:
            t = self._table(name)
            action, params = t.default()
            return TableEntry(t.spec.name, {}, f"{t.spec.name.rsplit('.', 1)[0]}.{action}", dict(params))

    def clear_table(self, name: str) -> None:
        with self.lock:
            if name in (PORT_MD.name, "$PORT_METADATA"):
                self.pipeline.port_metadata = {}
                return
            t = self._table(name)
            if t.spec.const_entries:
                raise ControlError(f"{t.spec.name}: entries are constant in the P4 program")
            t.reset()

    # -- counters, registers, LPFs -----------------------------------------------------------
    def _indices(self, size: int, indices: Iterable[int] | None, what: str) -> list[int]:
        idx = list(range(size)) if indices is None else list(indices)
        for i in idx:
            if not isinstance(i, int) or not 0 <= i < size:
                raise ControlError(f"{what}: index {i!r} out of range 0..{size - 1}")
        return idx

    def _settle(self) -> None:
        self.pipeline.settle(None if self.clock is None else self.clock())

    def _named(self, group: dict, name: str, what: str):
        if name in group:
            return group[name]
        hits = [v for n, v in group.items() if n.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        raise ControlError(f"unknown {what} {name!r}")

    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, tuple[list[int], list[int]]]:
        """index -> (packets, bytes), each with one value per pipe."""
        with self.lock:
            c = self._named(self.pipeline.counters, name, "counter")
            self._settle()  # the timer packets due by now have run (ffs.switch.pktgen)
        idx = self._indices(c.spec.size, indices, c.spec.name)
        out: dict[int, tuple[list[int], list[int]]] = {}
        for k in range(0, len(idx), READ_CHUNK):  # the lock per chunk: forwarding goes on between chunks
            with self.lock:
                out.update((i, c.read_pipes(i)) for i in idx[k : k + READ_CHUNK])
            time.sleep(0)
        return out

    def read_tm_ports(self, ports: list[int]) -> dict[int, tuple[int, int, int]]:
        """The TM's drops, queue and sent bytes per port (`TrafficManager.port_counts`), as of now:
        a live switch's clock, else the last packet's time (virtual time)."""
        with self.lock:
            now = self.pipeline.pktgen.now_ns[0] if self.clock is None else self.clock()
            return self.pipeline.tm.port_counts(ports, now)

    def reset_counters(self, name: str) -> None:
        with self.lock:
            self._named(self.pipeline.counters, name, "counter").reset()

    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, list[int]]:
        """index -> the cell's value in each pipe."""
        with self.lock:
            r = self._named(self.pipeline.registers, name, "register")
            self._settle()
        idx = self._indices(r.spec.size, indices, r.spec.name)
        out: dict[int, list[int]] = {}
        for k in range(0, len(idx), READ_CHUNK):
            with self.lock:
                out.update((i, r.read_pipes(i)) for i in idx[k : k + READ_CHUNK])
            time.sleep(0)
        return out

    def write_register(self, name: str, index: int, value: int) -> None:
        with self.lock:
            r = self._named(self.pipeline.registers, name, "register")
            self._indices(r.spec.size, [index], r.spec.name)
            if not isinstance(value, int) or not 0 <= value <= r.top:
                raise ControlError(f"{r.spec.name}: value {value!r} does not fit in {r.spec.width} bits")
            r.write_all_pipes(index, value)

    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None:
        with self.lock:
            f = self._named(self.pipeline.lpfs, name, "LPF")
            idx = self._indices(f.spec.size, indices, f.spec.name)
            if spec.kind not in ("RATE", "SAMPLE") or not 0 <= spec.out_scale_down <= 31:
                raise ControlError(f"{f.spec.name}: bad LPF spec {spec!r}")
            if not (spec.gain_time_constant_ns > 0 and spec.decay_time_constant_ns > 0):
                raise ControlError(f"{f.spec.name}: time constants must be positive")
            if spec.kind == "RATE" and spec.gain_time_constant_ns != spec.decay_time_constant_ns:
                # tofino-model asserts it: a rate filter has one time constant (spec §4)
                raise ControlError(f"{f.spec.name}: a RATE filter's gain and decay time constants must be equal")
            for i in idx:
                f.set_spec(i, spec)

    def set_timer(self, timer: TimerSpec | None) -> None:
        """Start (or stop, None) the packet generator's timer application (ffs.switch.pktgen)."""
        if timer is not None and timer.app_id != constants.TIMER_APP_ID:
            raise ControlError(
                f"the software switch's packet generator runs the timer application ({constants.TIMER_APP_ID}) only"
            )
        with self.lock:
            self._settle()  # what was due under the old configuration has run; the new starts now
            self.pipeline.pktgen.configure(timer)

    def read_timer(self) -> TimerSpec | None:
        with self.lock:
            return self.pipeline.pktgen.spec()

    def read_lpf_spec(self, name: str, index: int) -> LpfSpec:
        with self.lock:
            f = self._named(self.pipeline.lpfs, name, "LPF")
            self._indices(f.spec.size, [index], f.spec.name)
            return f.specs[index]


def _clone(t: MatchTable) -> MatchTable:
    c = copy.copy(t)
    c.entries = dict(t.entries)
    return c


def _check_derived(t: MatchTable, action: str, params: dict[str, int]) -> None:
    """spec §5.3: ltau_p is derived from ltau, and lm within 0..LM_MAX (the data plane's 16-bit
    arithmetic relies on both; an action cannot subtract two immediates)."""
    if t.spec is p4names.EGRESS_PARAMS and action == "set_egress":
        why = egress_params_consistent(params)
        if why:
            raise ControlError(f"{t.spec.name}: set_egress: {why}")
    if (
        t.spec is p4names.PAIRS
        and action in ("set_pair", "set_held_pair")
        and not (-params["nlm"]) & constants.CODE_MAX <= constants.LM_MAX
    ):
        raise ControlError(
            f"{t.spec.name}: {action} needs nlm = -lm with lm <= {constants.LM_MAX:#x}, got nlm {params['nlm']:#x}"
        )


def _apply(t: MatchTable, u: Update) -> None:
    if u.kind == "set_default":
        if u.entry.key:
            raise ControlError(f"{t.spec.name}: a default entry has no key")
        t._default = t.check_action(u.entry.action, u.entry.params)
        _check_derived(t, *t._default)
        return
    ident, stored = t.normalize(u.entry, with_action=u.kind != "delete")
    if u.kind != "delete":
        _check_derived(t, stored.action, stored.params)
    if u.kind == "insert":
        if ident in t.entries:
            raise ControlError(f"{t.spec.name}: entry {_show(u.entry)} already exists")
        if len(t.entries) >= t.spec.size:
            raise ControlError(f"{t.spec.name}: table full ({t.spec.size} entries)")
        t.entries[ident] = stored
    elif u.kind == "modify":
        if ident not in t.entries:
            raise ControlError(f"{t.spec.name}: no entry {_show(u.entry)} to modify")
        t.entries[ident] = stored
    elif u.kind == "delete":
        if ident not in t.entries:
            raise ControlError(f"{t.spec.name}: no entry {_show(u.entry)} to delete")
        del t.entries[ident]
    else:
        raise ControlError(f"unknown update kind {u.kind!r}")


def _show(e: TableEntry) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in e.key.items()) + "}"


def _entry_order(e: TableEntry) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in e.key.items())) + (e.priority,)
