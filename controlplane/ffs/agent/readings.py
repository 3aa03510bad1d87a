# SPDX-License-Identifier: Apache-2.0
"""The counters the agent reads, and how a reading becomes an increment and a rate.

Each counter is read as a Reading: its own baseline and time, so that an increment is what it
counted since its own last read. Increments are wrap-safe (`ffs.core.entries.counter_delta`); a
counter that went backwards was cleared by another client and decides nothing that period.
"""

from __future__ import annotations

import enum
import time

from ffs.agent.parts import AgentParts
from ffs.core import constants, p4names
from ffs.core.entries import CounterValue, counter_delta

# a counter read below its last reading wrapped (a small difference modulo 2^64) or was cleared by
# another client (a difference near 2^64): 2^63 bytes take 5.8 years at 400 Gb/s, so a difference
# of at least this much is a clear
JUMP = 1 << 63
ZERO = CounterValue(0, 0)


def add_counts(a: CounterValue, b: CounterValue) -> CounterValue:
    return CounterValue(a.packets + b.packets, a.bytes + b.bytes)


def sub_counts(a: CounterValue, b: CounterValue) -> CounterValue:
    """a − b, at least 0 (two counters read a moment apart)."""
    return CounterValue(max(0, a.packets - b.packets), max(0, a.bytes - b.bytes))


class Reading(str, enum.Enum):
    """A counter as the agent reads it, each with its own baseline (the value names it in logs and
    in the baselines; a subclass may add readings of its own under other strings)."""

    OFFERED = "O"  # R*_j per egress port: what arrived toward j (p4names.OFFERED)
    ADMITTED = "A"  # A_j per egress port: what γ admitted toward j, before the traffic manager
    MALFORMED = "X"  # per egress port: frames whose bytes disagree with their IP length (the lies at j)
    ACCEPTED = "E"  # per egress port: what reached the egress pipeline and passed its frame check
    PAIR_BYTES = "R"  # per pair: its arrivals R
    PAIR_DROPS = "D"  # per pair: what FFS dropped of it
    PAIR_MALFORMED = "M"  # per pair: its frames the egress dropped for a lying length
    FREE_BYTES = "FR"  # while a pair is held in quarantine, every period, per other pair at its egress: R
    FREE_DROPS = "FD"  # ... and its drops: τ rises there only as far as these pairs need (spec §9)
    DRAINED = "W"  # per egress port, every period where the TM's counters are read: what left the port
    # the frames among each of these the ingress inserts a shim into (or would if admitted): the
    # port sends each SHIM_LEN bytes longer than the bytes counters count it (spec §4)
    OFFERED_SHIMS = "OS"
    ADMITTED_SHIMS = "AS"
    # per egress port: the frames the egress strips the shim off, SHIM_LEN bytes each fewer than
    # R*_j and A_j counted (spec §4)
    STRIPPED = "ST"
    # per egress port: the frames whose 802.1Q tag the host's ingress pushed (at the port's index)
    # or popped (at TAG_POPPED_AT + it), as it declared: VLAN_TAG_LEN bytes more or fewer each
    TAG_CHANGED = "TC"


# the P4 counter each reading reads
COUNTER_OF: dict[Reading, str] = {
    Reading.OFFERED: p4names.OFFERED.name,
    Reading.ADMITTED: p4names.ADMITTED.name,
    Reading.MALFORMED: p4names.MALFORMED.name,
    Reading.ACCEPTED: p4names.ACCEPTED.name,
    Reading.PAIR_BYTES: p4names.PAIR_BYTES.name,
    Reading.PAIR_DROPS: p4names.PAIR_DROPS.name,
    Reading.PAIR_MALFORMED: p4names.PAIR_MALFORMED.name,
    Reading.FREE_BYTES: p4names.PAIR_BYTES.name,
    Reading.FREE_DROPS: p4names.PAIR_DROPS.name,
    Reading.DRAINED: p4names.ACCEPTED.name,
    Reading.OFFERED_SHIMS: p4names.OFFERED_SHIMS.name,
    Reading.ADMITTED_SHIMS: p4names.ADMITTED_SHIMS.name,
    Reading.STRIPPED: p4names.STRIPPED.name,
    Reading.TAG_CHANGED: p4names.TAG_CHANGED.name,
}
# TAG_CHANGED's cells: a pushed tag at the egress port, a popped one here past it (the 9-bit port
# with the declaration's low bit above it, p4src's egress_accounting.p4)
TAG_POPPED_AT = p4names.TAG_CHANGED.size // 2
# the readings that hold a port at its target count the frame the port sends: each of these adds
# SHIM_LEN bytes per frame its shim reading counts and takes SHIM_LEN off per frame STRIPPED counts
# (spec §4)
SHIMS_OF: dict[Reading, Reading] = {
    Reading.OFFERED: Reading.OFFERED_SHIMS,
    Reading.ADMITTED: Reading.ADMITTED_SHIMS,
}
EGRESS_READINGS = (
    Reading.OFFERED,
    Reading.ADMITTED,
    Reading.MALFORMED,
    Reading.ACCEPTED,
    Reading.OFFERED_SHIMS,
    Reading.ADMITTED_SHIMS,
    Reading.STRIPPED,
    Reading.TAG_CHANGED,
)
PAIR_READINGS = (Reading.PAIR_BYTES, Reading.PAIR_DROPS, Reading.PAIR_MALFORMED)


class CounterReadings(AgentParts):
    def baseline(self, now_s: float | None = None) -> None:
        """Read every counter once, so the first period after a (re)start measures a full interval
        and updates τ like any other (a restart does not skip a τ step)."""
        pids = [p.pid for p in self.pairs()]
        ports = self._egress_ports()
        for reading in EGRESS_READINGS:
            if reading is Reading.TAG_CHANGED:
                self._read_tags(ports, now_s)
            else:
                self._read(reading, ports, now_s)
        self._since_telemetry = {}
        for reading in PAIR_READINGS:
            self._read(reading, pids, now_s)
        self._last_telemetry = now_s if now_s is not None else time.monotonic()

    def _read(self, reading: Reading, indices: list[int], now_s: float | None) -> tuple[dict[int, CounterValue], float]:
        """`_measure` of a Reading's own counter."""
        return self._measure(reading, COUNTER_OF[reading], indices, now_s)

    def _read_tags(self, ports: list[int], now_s: float | None) -> dict[int, tuple[int, int]]:
        """TAG_CHANGED's increments per egress port: (pushed, popped). A cell that went backwards
        marks its port jumped."""
        cells, _ = self._read(Reading.TAG_CHANGED, ports + [TAG_POPPED_AT + p for p in ports], now_s)
        name = Reading.TAG_CHANGED
        self._jumped[name] = {i % TAG_POPPED_AT for i in self._jumped.get(name, set())}
        return {p: (cells.get(p, ZERO).packets, cells.get(TAG_POPPED_AT + p, ZERO).packets) for p in ports}

    def _egress_change(self, ports: list[int], now_s: float | None) -> dict[int, int]:
        """Per egress port, the bytes the port sends this period beyond what the ingress counted
        of the same frames: SHIM_LEN fewer per frame the egress stripped, VLAN_TAG_LEN more per
        tag the host pushed and fewer per tag it popped (spec §4). Read once for R*_j and A_j."""
        stripped, _ = self._read(Reading.STRIPPED, ports, now_s)
        tags = self._read_tags(ports, now_s)
        return {
            p: constants.VLAN_TAG_LEN * (tags[p][0] - tags[p][1]) - constants.SHIM_LEN * stripped.get(p, ZERO).packets
            for p in ports
        }

    def _sent(
        self,
        reading: Reading,
        counts: dict[int, CounterValue],
        indices: list[int],
        now_s: float | None,
        change: dict[int, int],
    ) -> dict[int, CounterValue]:
        """`counts` (increments of `reading`) as the port sends the frames: SHIM_LEN bytes more for
        each the ingress inserted a shim into, read from the reading's shim counter, and what the
        egress changed since (`change`, `_egress_change`) (spec §4). The reads are moments apart; a
        frame counted in between lands next period."""
        shims, _ = self._read(SHIMS_OF[reading], indices, now_s)
        return {
            i: CounterValue(
                c.packets, max(0, c.bytes + constants.SHIM_LEN * shims.get(i, ZERO).packets + change.get(i, 0))
            )
            for i, c in counts.items()
        }

    def _measure(
        self, name: str, counter: str, indices: list[int], now_s: float | None
    ) -> tuple[dict[int, CounterValue], float]:
        """Increments of one counter since its last read, and the seconds between the two reads.
        Live, each read is timed at the middle of its own RPC, so a slow or starved read (a loaded
        switch answers late) stretches its interval with it instead of inflating the rate; in
        virtual time every read is at `now_s`."""
        t0 = time.monotonic()
        values = self.driver.read_counters(counter, indices) if indices else {}  # none: no read (a driver reads all)
        t = (t0 + time.monotonic()) / 2 if now_s is None else now_s
        prev = self._last_t.get(name)
        self._last_t[name] = t
        return self._delta(name, values, counter), (0.0 if prev is None else t - prev)

    def _delta(self, name: str, now: dict[int, CounterValue], counter: str = "") -> dict[int, CounterValue]:
        """Per-index counter increments since the last read, modulo 2^64 (a counter may wrap).
        An index read for the first time (a pair or egress a matrix change added) has no baseline
        yet and counts 0 for this period. An index that went backwards (another client cleared the
        counter; JUMP) is left out, re-baselined and listed in `_jumped[name]` (the step logs them
        in one line): nothing is decided on it this period."""
        last = self._last.get(name, {})
        self._last[name] = now
        out = {}
        jumped = set()
        for i, v in now.items():
            b = last.get(i)
            if b is None:
                out[i] = ZERO
                continue
            d = counter_delta(v, b)
            if d.packets >= JUMP or d.bytes >= JUMP:
                jumped.add(i)
            else:
                out[i] = d
        self._jumped[name] = jumped
        if jumped:
            self._jump_notes.append(f"{(counter or name).rsplit('.', 1)[-1]} at {len(jumped)} of {len(now)}")
        return out

    def _jumped_in(self, *readings: Reading) -> set[int]:
        """The indices that went backwards at the last read of any of these readings."""
        out: set[int] = set()
        for reading in readings:
            out |= self._jumped.get(reading, set())
        return out

    def _bps(self, c: CounterValue, dt: float) -> float:
        return (c.bytes + self.wire_overhead * c.packets) * 8 / dt if dt > 0 else 0.0
