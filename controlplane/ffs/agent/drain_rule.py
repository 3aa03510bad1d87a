# SPDX-License-Identifier: Apache-2.0
"""The rule for a port that drains slower than its speed (docs/spec.md §9, item 8): the factor of
its configured target in force, cut to what the port drained while its queue drops, climbed back
while it does not (the agent's part that reads and pushes: `ffs.agent.port_drain`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

# how far below what the port drained the target is set: at the drained rate itself the queue
# would stand full and its tail drop would keep deciding; 1/32 of it empties the queue
DRAIN_MARGIN = 1 / 32
# how far below the target in force what the port drained must read for a cut: the error of a
# window's measure (the instants of its reads), well below the climb's step, so that a climb one
# margin past what the port drains is seen (at the margin itself it would stand there, its queue
# dropping, a few % of the target to the tail drop)
DRAIN_TOLERANCE = 1 / 64
# the least fraction of the configured target followed: a paused port drains nothing, and a share
# of zero would have no code (the pairs keep a share to climb back from)
DRAIN_FLOOR = 1 / 64
# the first climb after a drop is one margin (the drained rate again), each further period with
# the queue clear doubles the step, at most a factor 2 a period: back from the floor within
# 5 + log2(64) periods once the port drains again. Above the rate the port last drained the
# steps stay one margin: a port still slow is overshot by a few %, not by the doubled step
MAX_CLIMB = 2.0
# clear periods at or past the rate the port last drained after which that rate is forgotten: a
# port still slow stands its queue within a period of a climb one margin past it, so that many
# clear periods say it drains more now (a window that mixed the time before a pause with the
# pause read a rate the port never had), and the climb doubles again
STALE_PERIODS = 3
# the queue is clear below this fraction of the port's buffer: a few frames, so that a climb past
# what the port drains stops within a period or two of the queue starting to stand
CLEAR_FRACTION = 1 / 32


@dataclass(frozen=True)
class PortDrain:
    factor: float = 1.0  # the fraction of the configured target in force
    drained: float = 0.0  # what it drained over the last window it dropped in, / the target (0: a pause)
    clear: int = 0  # periods with the queue clear since the last drop (or the last cut)
    past: int = 0  # of those, periods at or past the rate drained


def drain_window(state: PortDrain, target_bps: float, drained_bps: float, dropped: bool) -> PortDrain:
    """A window of at least the τ loop's frames whose periods each began and ended with the queue
    standing (what left is then what the port can drain): a port that drained its configured
    target (within the measure's tolerance, the cut's own) is at its speed, and the target in
    force is the configured one again at once: below it the queue stands from the τ loop's
    transients, not from the port, and a climb that waits for it to clear waits on chance (at a
    factor near 1 the port runs at nearly critical load). Else, where the TM dropped, `drain_cut`."""
    if state.factor < 1.0 and target_bps > 0 and drained_bps >= (1.0 - DRAIN_TOLERANCE) * target_bps:
        return PortDrain()
    return drain_cut(state, target_bps, drained_bps) if dropped else state


def drain_cut(state: PortDrain, target_bps: float, drained_bps: float) -> PortDrain:
    """A window of at least the τ loop's frames in which the TM dropped toward the port: the
    target follows what the port drained, a margin below, where that is below what the target
    aims at (a few drops at the target itself, a burst, change nothing)."""
    if target_bps <= 0 or drained_bps >= (1.0 - DRAIN_TOLERANCE) * state.factor * target_bps:
        return replace(state, clear=0, past=0)
    factor = max(DRAIN_FLOOR, min(1.0, drained_bps * (1.0 - DRAIN_MARGIN) / target_bps))
    # at the floor the port drained next to nothing (paused): no rate to climb back to is known
    return PortDrain(factor, drained_bps / target_bps if factor > DRAIN_FLOOR else 0.0, 0)


def drain_period(state: PortDrain, dropped: bool, queue_clear: bool) -> PortDrain:
    """Every period: while the port drops nothing and its queue is clear, the factor climbs back
    toward 1 (the configured target), by DRAIN_MARGIN, then twice that, ... (at most MAX_CLIMB). A
    period whose queue stands without a drop holds the factor and the count: a burst the queue
    took (a few frames arriving together) says nothing of what the port drains, and a climb that
    reached what the port drains stands still until its drops cut it. Past the rate the port last
    drained the steps are one margin for STALE_PERIODS clear periods, then that rate is forgotten."""
    if dropped:
        return replace(state, clear=0, past=0)
    if not queue_clear:
        return state
    if state.factor >= 1.0:
        return state if state.clear == state.past == 0 else replace(state, clear=0, past=0)
    above = 0.0 < state.drained <= state.factor  # at or past what the port last drained
    past = state.past + above
    if past > STALE_PERIODS:  # the port drains more than that rate now
        state, above, past = replace(state, drained=0.0), False, 0
    step = 1.0 + DRAIN_MARGIN if above else min(MAX_CLIMB, 1.0 + DRAIN_MARGIN * 2**state.clear)
    return replace(state, factor=min(1.0, state.factor * step), clear=state.clear + 1, past=past)
