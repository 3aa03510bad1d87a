# SPDX-License-Identifier: Apache-2.0
"""The agent's answer to frames that lie about their length (spec §7.3, §9; docs/security.md).

On Tofino the egress drops a lying frame only after it queued: the lie passed γ on its light claim
and took the port's time. The data plane has one estimator per (ingress, egress) pair and no
per-sender state, so the response is per pair and proportionate: a pair whose lying bytes exceed
`fraction` of its admitted bytes in a telemetry period has that part of its share withheld, its
set_pair carrying lm for `M · (1 − λ)` (λ: the lying fraction of its admitted bytes), for
`seconds` (0: never), renewed while it lies. λ counts the bytes since the quarantine began, not
the latest period's: a frame still queued when the counters are read counts as admitted and not
yet as a lie, and a λ read low hands back a share that light claims multiply (a lie of weight 1/k
takes k times its share's bytes). Over the quarantine that error is at most a queue's bytes, and
once the share is withheld the queue holds few of the pair's frames; the first reading, mostly
the attack's onset in flight, is taken again at the next lie (`ffs.agent.tau_loop`).
A pair whose claims are light (its bytes weigh w = F/R < 1 of what they cost, from the
estimator and the counters) has at least `1 − w` withheld, so it admits at most τM of its bytes
however low λ reads; the larger of the two, since at an attack's onset w reads high (F is the
rate now, R the period's mean, part of it before the attack).
A pair whose claims are heavy (w > 1: small frames claiming large lengths within the MTU) is
admitted `M'/w` of its bytes at a code for M', so `M · (1 − λ)` would leave its honest senders
`(1 − λ)²M/w`; once held it gets the code of `M · c` instead, c the weight of its admitted bytes
over the last period (`c' · M / a`: the code c' it ran at over the line rate a it was admitted,
the same bytes and period as λ), at most w: γ then admits about M of its real bytes, its honest
senders `(1 − λ) · M`. A pair admitted above OVERSHOOT times its share in a period under such a
code (its frames weighed less than c: a liar that lies heavy while F is read and light between)
loses it for the rest of its quarantine. While it holds, the guard's virtual queue, which adds
claims, drains faster by what the pair's admitted claims weigh above their bytes (`drains`).
Whatever the claim, the pair then costs the egress at most its share; its honest senders keep
about `(1 − λ)` of it; a pair of heavy liars alone (λ = 1) gets lm = 0, no share. The state is, per pid, the fraction
withheld and when it ends, on
the agent's clock; the agent turns what changes into set_pair modifications of its batches: a
held pair's entry is a set_held_pair, whose packets face τ = 1 whatever the egress's τ (at most
its share's worth however high the free pairs need τ).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Iterable

from ffs.core import p4names
from ffs.core.constants import LM_MAX
from ffs.core.entries import CounterValue, TableEntry, Update
from ffs.core.program import Pair
from ffs.core.tables import pair_params

log = logging.getLogger("ffs.agent")

ZERO = CounterValue(0, 0)
CODE_STEPS = 128  # lm codes per octave of the share (spec §3)
# The evidence a quarantine needs (spec §9): over the pair's last EVIDENCE_PERIODS judgements, at
# least LYING_FRAMES frames lied and their bytes exceed `fraction` of its checked bytes. One odd
# frame (a bit error the FCS missed upstream, a middlebox) is never enough, whatever the pair's rate;
# while a pair has some evidence, its next lie is judged at once (`suspects`), so an attack that
# gets few lies to the frame check (the guard drops most) is judged period by period.
EVIDENCE_PERIODS = 3
LYING_FRAMES = 3
# A repeat offence doubles the quarantine, up to REPEAT_MAX times `seconds`; an offence is forgotten
# FORGET_PERIODS quarantines (of `seconds`) after the last one, one at a time
REPEAT_MAX = 64
FORGET_PERIODS = 30
# A held pair with heavy claims admitted above OVERSHOOT times its share (line rate) over a telemetry
# period has its frames weigh less than its code's factor assumed: it keeps no factor for the rest
# of its quarantine. The margin is the noise of a period's admitted bytes and the estimator's lag
# behind them; a liar that games the factor takes it back one period later, once per quarantine.
OVERSHOOT = 1.25


def lm_of(nlm: int) -> int:
    """lm from a set_pair's nlm (= −lm mod 2^16, spec §5.3)."""
    return (-nlm) & 0xFFFF


# a held pair's set_pair: the same action data, and its packets face τ = 1 whatever the egress's τ,
# so it is admitted at most at its (withheld) share (spec §9)
HELD_ACTION = "set_held_pair"


def level_of(lm: int, held_lm: int) -> float:
    """The fraction withheld that a held code stands for (the inverse of withheld_lm)."""
    return max(0.0, min(1.0, 1.0 - math.pow(2.0, (held_lm - lm) / CODE_STEPS)))


def withheld_lm(lm: int, level: float) -> int:
    """The code of the share M · (1 − level), from the code of M (a log code: a factor is an offset)."""
    if level >= 1.0:
        return 0
    return max(0, lm + round(CODE_STEPS * math.log2(1.0 - level)))


def weighted_lm(lm: int, factor: float) -> int:
    """The code of M · factor (factor > 1: a held pair's heavy claims, spec §9), from the code of M."""
    return min(LM_MAX, lm + round(CODE_STEPS * math.log2(factor)))


class Quarantine:
    def __init__(self, seconds: float = 10.0, fraction: float = 0.01) -> None:
        self.seconds = seconds
        self.fraction = fraction
        self.until: dict[int, float] = {}  # pid -> when its share comes back whole
        self.level: dict[int, float] = {}  # pid -> the fraction of its share withheld (1: all of it)
        self.tally: dict[int, tuple[float, float]] = {}  # pid -> (lying, checked) bytes since it began
        # the pids whose quarantine the last judgement began: their first λ counted the lies still
        # queued then as admitted, so the next lie is judged at once (the agent reads it then)
        self.begun: set[int] = set()
        # per pair not held: (lying bytes, checked bytes, lying frames) of its last periods
        self.evidence: dict[int, list[tuple[float, float, int]]] = {}
        # the pids with lies in their evidence but not enough yet: their next lie is judged at once
        self.suspects: set[int] = set()
        # per pair: its offences (a decaying record: a repeat liar's quarantine grows) and the last one's time
        self.offences: dict[int, tuple[int, float]] = {}
        # pid -> the factor c > 1 on a held pair's share code for its heavy claims (its level then
        # says what its lies take of the share, not the code); the held pairs that lost theirs
        self.factor: dict[int, float] = {}
        self.overshot: set[int] = set()
        # pid -> (its egress port, what its admitted claims weigh above their bytes, over the port's
        # speed): the guard's virtual queue adds claims (spec §7.7), so it drains that much faster
        self.excess: dict[int, tuple[int, float]] = {}
        # egress port -> the factor on its guard drain for the shims its strip mode takes off: what
        # its admitted frames weigh as they arrive over what it sends of them (spec §7.7)
        self.stripping: dict[int, float] = {}

    def offence_count(self, pid: int, now_s: float) -> int:
        """The pair's offences still remembered: one forgotten per FORGET_PERIODS · seconds since
        its last."""
        n, last = self.offences.get(pid, (0, now_s))
        forget = FORGET_PERIODS * self.seconds
        return max(0, n - int((now_s - last) / forget)) if forget > 0 else n

    def duration(self, pid: int, now_s: float) -> float:
        """How long the pair's current quarantine lasts: `seconds`, doubled for each offence it is
        remembered for beyond the first, at most REPEAT_MAX times."""
        return float(self.seconds * min(REPEAT_MAX, 2 ** max(0, self.offence_count(pid, now_s) - 1)))

    def __contains__(self, pid: object) -> bool:
        return pid in self.until

    def resume(self, held: Iterable[TableEntry], shared: dict[int, int], saved: dict[int, float], now_s: float) -> None:
        """A quarantine a predecessor left on the switch runs again for a full `seconds` (a
        restarted agent must not hand a liar its share back): a set_held_pair entry, or a set_pair
        entry (an older agent's) with lm = 0 where the pair has a share (`shared`: pid -> lm of its
        share; no matrix gives a share code 0) or holding exactly the code of the fraction the
        predecessor saved (`saved`). Any other set_pair code below the share is a matrix that
        changed meanwhile, not a quarantine."""
        if self.seconds <= 0:
            return
        for entry in held:
            pid = entry.params.get("pid")
            if entry.action_name not in ("set_pair", HELD_ACTION) or pid is None or not shared.get(pid):
                continue
            held_lm, lm = lm_of(entry.params.get("nlm", 0)), shared[pid]
            is_saved = pid in saved and withheld_lm(lm, saved[pid]) == held_lm < lm
            if held_lm == 0 or is_saved or entry.action_name == HELD_ACTION:
                self.level[pid] = 1.0 if held_lm == 0 else saved[pid] if is_saved else level_of(lm, held_lm)
                self.until[pid] = now_s + self.seconds
                log.warning(
                    "quarantine resumed: pair pid=%d held %.0f %% of its share on the switch; %gs more",
                    pid,
                    100 * (1 - self.level[pid]),
                    self.seconds,
                )

    def drains(self) -> dict[int, float]:
        """Per egress port with a held pair whose code carries a factor: the factor on its guard
        timer's drain, 1 + what the pairs' admitted claims weigh above their bytes over its speed,
        so that the virtual queue holds the bytes the port's queue holds (spec §7.7, §9); times
        its `stripping` factor on a port that strips the shim."""
        out: dict[int, float] = {}
        for pid, (port, x) in sorted(self.excess.items()):
            if pid in self.factor:
                out[port] = out.get(port, 1.0) + x
        for port, f in sorted(self.stripping.items()):
            out[port] = out.get(port, 1.0) * f
        return out

    def withhold(self, u: Update) -> Update:
        """A quarantined pair's entry is a set_held_pair with its share less the fraction withheld
        (its packets face τ = 1, spec §9), or its share times its heavy claims' factor; the guard's
        drain of that pair's egress is raised by what its claims weigh above their bytes
        (`drains`); everything else passes unchanged."""
        e = u.entry
        if e.table == p4names.TIMER_PORTS.name and u.kind != "delete" and e.params.get("port") in self.drains():
            drain = min(0xFFFFFFFF, round(e.params["drain"] * self.drains()[e.params["port"]]))
            return dataclasses.replace(u, entry=dataclasses.replace(e, params={**e.params, "drain": drain}))
        pid = e.params.get("pid")
        if e.table != p4names.PAIRS.name or u.kind == "delete" or pid not in self.until:
            return u
        lm = lm_of(e.params["nlm"])
        lm = weighted_lm(lm, self.factor[pid]) if pid in self.factor else withheld_lm(lm, self.level.get(pid, 1.0))
        return dataclasses.replace(u, entry=dataclasses.replace(e, action=HELD_ACTION, params=pair_params(pid, lm)))

    def release(self, now_s: float) -> set[int]:
        """The pairs whose quarantine time is up (their share comes back), no longer quarantined;
        their offences are remembered (`offence_count`)."""
        over = {pid for pid, until in self.until.items() if until <= now_s}
        for pid in sorted(over):
            del self.until[pid]
            self.level.pop(pid, None)
            self.tally.pop(pid, None)
            self.factor.pop(pid, None)
            self.excess.pop(pid, None)
            self.overshot.discard(pid)
            log.info("quarantine over: pair pid=%d gets its share back", pid)
        return over

    def _enough(self, pid: int, m: float, checked: float, frames: int) -> bool:
        """This period's lies added to the pair's evidence: do its last periods suffice to
        quarantine it (LYING_FRAMES frames, over `fraction` of its bytes)?"""
        window = (self.evidence.get(pid, []) + [(m, checked, frames)])[-EVIDENCE_PERIODS:]
        self.evidence[pid] = window
        lying, total, n = (sum(x[k] for x in window) for k in range(3))
        enough = n >= LYING_FRAMES and lying > 0 and min(1.0, lying / max(total, lying)) > self.fraction
        if n and not enough:
            self.suspects.add(pid)
        else:
            self.suspects.discard(pid)
        return enough

    def judge(
        self,
        pairs: Iterable[Pair],
        lies: dict[int, CounterValue],
        arrived: dict[int, CounterValue],
        dropped: dict[int, CounterValue],
        survived: dict[int, float],
        now_s: float,
        weight: dict[int, float] | None = None,
        load: dict[int, float] | None = None,
    ) -> set[int]:
        """Judge the pairs' lies since the last telemetry: `lies` (pair_malformed, the bytes the
        frame check dropped) against the bytes γ admitted (`arrived` − `dropped`: pair_bytes −
        pair_drops) that reached the frame check (`survived`: the fraction of its egress's
        admitted bytes the traffic manager did not drop; uncorrected, a liar that overloads the
        queue would read as a smaller λ and keep part of a share its light claims multiply). A
        pair whose lying fraction λ exceeds `fraction` has λ of its share withheld for `seconds`
        (renewed, at the new λ, while it lies). A pair left out of any of these (a counter that
        jumped) is not judged. The fraction withheld is λ over the bytes since the pair's
        quarantine began: a period decides whether it lies, the whole quarantine how much. The
        judgement after the one that began a quarantine (`begun`) counts the lies that were queued
        at that first one; its weight may not raise the fraction past what the first withheld,
        since F may still be rising from the attack's start (a cold estimator reads light).
        `weight` (w = F/R) and `load` (the line rate γ admitted over the pair's share, the same
        period) where its port resets labels. Returns the pairs whose share code changed."""
        changed: set[int] = set()
        rechecked, self.begun = self.begun, set()
        if self.seconds <= 0:
            return changed
        for p in pairs:
            if p.pid not in lies or p.pid not in arrived or p.pid not in dropped or p.pid not in survived:
                continue
            lied = lies[p.pid]
            m = lied.bytes
            checked = (arrived[p.pid].bytes - dropped[p.pid].bytes) * survived[p.pid]
            held = p.pid in self.until
            if held:  # every period of a quarantine counts toward its λ, lying or not; lying renews it
                m_sum, c_sum = self.tally.get(p.pid, (0.0, 0.0))
                self.tally[p.pid] = (m_sum + m, c_sum + checked)
                if self._overshoot(p, (load or {}).get(p.pid)):
                    changed.add(p.pid)
                if m == 0 or min(1.0, m / max(checked, m)) <= self.fraction:
                    continue
            else:
                if not self._enough(p.pid, m, checked, lied.packets):
                    continue
                # the window decided that it lies; how much, λ counts from this period on, as the
                # periods before may be the honest traffic an attack began in
                self.tally[p.pid] = (m, checked)
                self.evidence.pop(p.pid, None)
                n = self.offence_count(p.pid, now_s)
                self.offences[p.pid] = (n + 1, now_s)
            old = self.level.get(p.pid)
            w = (weight or {}).get(p.pid)
            lam = self._level(p.pid, w, old if p.pid in rechecked else None)
            if old is None:
                self.begun.add(p.pid)
                self._log_onset(p, lied.packets, lam, now_s)
            reweighed = self._weigh(p.pid, w, (load or {}).get(p.pid), held)
            if old != lam or reweighed:
                changed.add(p.pid)
            self.level[p.pid] = lam
            self.until[p.pid] = now_s + self.duration(p.pid, now_s)
        return changed

    def _level(self, pid: int, w: float | None, first: float | None) -> float:
        """The fraction of the pair's share withheld: λ since its quarantine began, at least 1 − w
        where its claims are light (w < 1); `first`: the level the judgement one period before
        began its quarantine with, which its weight may not exceed."""
        m_sum, c_sum = self.tally[pid]
        lam = min(1.0, m_sum / max(c_sum, m_sum))
        if w is not None and w < 1.0:
            # light claims: the pair's bytes weigh w of what they cost, so a share M·(1 − level)
            # admits M·(1 − level)/w of them; at least 1 − w withheld keeps that within M when
            # λ reads low (frames still queued), λ itself when it does not (honest co-senders)
            floor = 1.0 - max(0.0, w)
            lam = max(lam, min(floor, first) if first is not None else floor)
        return lam

    def _weigh(self, pid: int, w: float | None, load: float | None, held: bool) -> bool:
        """A held pair's factor for heavy claims (spec §9): its code at M · c, with c the weight
        of the bytes it was admitted over the period, `c' · M / a` at the code c' · M it ran at
        (γ admits a pair held at τ = 1 at its code, in weighted bytes), so that about M of its
        real bytes pass. At most w, the weight of its arrivals: a pair that γ did not limit
        reads c'/load above its weight. None before it has run a period held, where its claims
        are light, or once it overshot; kept (at most w) where `load` is unknown (its egress not
        congested: γ admitted everyone). Returns whether the factor changed."""
        old = self.factor.pop(pid, None)
        if held and w is not None and w > 1.0 and pid not in self.overshot:
            ran = old if old is not None else 1.0 - self.level.get(pid, 1.0)
            c = min(w, ran / load) if load else min(w, old or 0.0)
            if c > 1.0:
                self.factor[pid] = c
        return self.factor.get(pid) != old

    def _overshoot(self, p: Pair, load: float | None) -> bool:
        """A held pair with a factor admitted above OVERSHOOT times its share: its frames weighed
        less than the factor assumed; it keeps none for the rest of its quarantine."""
        if p.pid not in self.factor or load is None or load <= OVERSHOOT:
            return False
        del self.factor[p.pid]
        self.overshot.add(p.pid)
        log.warning(
            "pair %s->%s (pid=%d) was admitted %.2f times its share under its heavy claims' factor: "
            "no factor for the rest of its quarantine",
            p.ingress,
            p.egress,
            p.pid,
            load,
        )
        return True

    def _log_onset(self, p: Pair, frames: int, level: float, now_s: float) -> None:
        m_sum, c_sum = self.tally[p.pid]
        log.warning(
            "quarantined pair %s->%s (pid=%d) for %gs (offence %d): %d of its frames lied about their "
            "length this period, %.0f %% of its admitted bytes over its last periods; %.0f %% of its share "
            "is withheld",
            p.ingress,
            p.egress,
            p.pid,
            self.duration(p.pid, now_s),
            self.offence_count(p.pid, now_s),
            frames,
            100 * min(1.0, m_sum / max(c_sum, m_sum)),
            100 * level,
        )
