"""The quarantine of pairs whose frames lie about their length (spec §7.3, docs/security.md).

On Tofino the egress drops a lying frame only after it queued, so a pair whose lies exceed a
fraction of its bytes in a telemetry period loses its share for `seconds` (0: never): its set_pair
entry carries lm = 0 (M_F = 1), and γ drops its packets while the egress is congested. The state is
the pids and the time each quarantine ends, on the agent's clock; the agent turns what changes into
set_pair modifications of its batches.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Iterable

from ffs import p4names
from ffs.agent.program import Pair, short_action
from ffs.entries import CounterValue, TableEntry, Update
from ffs.tables import pair_params

log = logging.getLogger("ffs.agent")

ZERO = CounterValue(0, 0)


class Quarantine:
    def __init__(self, seconds: float = 10.0, fraction: float = 0.01) -> None:
        self.seconds = seconds
        self.fraction = fraction
        self.until: dict[int, float] = {}  # pid -> when its quarantine ends

    def __contains__(self, pid: object) -> bool:
        return pid in self.until

    def resume(self, held: Iterable[TableEntry], shared: set[int], now_s: float) -> None:
        """A set_pair entry the switch holds with lm = 0 where the pair has a share (`shared`) is a
        quarantine a predecessor left (an agent restart must not hand a liar its share back): it
        runs again for a full `seconds`."""
        if self.seconds <= 0:
            return
        for entry in held:
            pid = entry.params.get("pid")
            if short_action(entry.action) == "set_pair" and pid in shared and entry.params.get("nlm") == 0:
                self.until[pid] = now_s + self.seconds
                log.warning("quarantine resumed: pair pid=%d held no share on the switch; %gs more", pid, self.seconds)

    def withhold(self, u: Update) -> Update:
        """A set_pair entry of a quarantined pair carries lm = 0 (no share); everything else passes
        unchanged."""
        e = u.entry
        if e.table != p4names.PAIRS.name or u.kind == "delete" or e.params.get("pid") not in self.until:
            return u
        return dataclasses.replace(u, entry=dataclasses.replace(e, params=pair_params(e.params["pid"], 0)))

    def release(self, now_s: float) -> set[int]:
        """The pairs whose quarantine time is up (their share comes back), no longer quarantined."""
        over = {pid for pid, until in self.until.items() if until <= now_s}
        for pid in sorted(over):
            del self.until[pid]
            log.info("quarantine over: pair pid=%d gets its share back", pid)
        return over

    def judge(self, pairs: Iterable[Pair], lies: dict[int, CounterValue], arrived: dict[int, CounterValue],
              now_s: float) -> set[int]:
        """Quarantine the pairs whose lying frames (`lies`, pair_malformed) exceed `fraction` of their
        arriving bytes (`arrived`, pair_bytes) since the last telemetry; a liar already in quarantine
        has it renewed. Returns the pairs that entered it."""
        entered: set[int] = set()
        if self.seconds <= 0:
            return entered
        for p in pairs:
            lied = lies.get(p.pid, ZERO)
            m = lied.bytes
            if m > 0 and m > self.fraction * max(arrived.get(p.pid, ZERO).bytes, m):
                if p.pid not in self.until:
                    entered.add(p.pid)
                    log.warning("quarantined pair %s->%s (pid=%d) for %gs: %d of its frames lied about their "
                                "length this period", p.ingress, p.egress, p.pid, self.seconds, lied.packets)
                self.until[p.pid] = now_s + self.seconds
        return entered
