# SPDX-License-Identifier: Apache-2.0
"""The rule for a port that drains slower than its speed (spec §9, item 8), on its own: the
expectations are the spec's arithmetic of the cut and the climb."""

from __future__ import annotations

import math

import pytest

from ffs.agent.drain_rule import (
    DRAIN_FLOOR,
    DRAIN_MARGIN,
    DRAIN_TOLERANCE,
    PortDrain,
    drain_cut,
    drain_period,
    drain_window,
)

T = 100e6


def test_the_cut_follows_what_the_port_drained_a_margin_below():
    s = drain_cut(PortDrain(), T, 0.8 * T)
    assert s.factor == pytest.approx(0.8 * (1 - DRAIN_MARGIN))
    assert s.drained == pytest.approx(0.8)


def test_drops_at_the_target_itself_change_nothing():
    """A burst the queue dropped while the port drained what τ aims at (within the tolerance of a
    window's measure, (1 − DRAIN_TOLERANCE) · T')."""
    assert drain_cut(PortDrain(), T, (1 - DRAIN_TOLERANCE) * T).factor == 1.0
    assert drain_cut(PortDrain(0.5, 0.5), T, 0.5 * (1 - DRAIN_TOLERANCE) * T).factor == 0.5


def test_a_climb_one_margin_past_the_drained_rate_is_cut_back():
    """The climb probes one margin above the rate the port last drained; if the port still drains
    that rate, the probe's drops cut it back a margin below (spec §9 item 8: T' averages D), rather
    than holding the target a margin above D with its queue's tail drop deciding. Caught with the
    cut's tolerance at the margin itself: the probe stands."""
    s = drain_cut(PortDrain(0.8 * (1 + DRAIN_MARGIN), 0.8), T, 0.8 * T)
    assert s.factor == pytest.approx(0.8 * (1 - DRAIN_MARGIN))


def test_a_pause_cuts_to_the_floor_and_forgets_the_rate():
    s = drain_cut(PortDrain(), T, 0.0)
    assert s.factor == DRAIN_FLOOR and s.drained == 0.0


def test_back_from_the_floor_within_the_spec_s_bound():
    """Steps 1 + 2^k/32 (at most 2) from the floor: 1 again within 5 + log2(1/floor) periods."""
    s, n = PortDrain(DRAIN_FLOOR, 0.0), 0
    while s.factor < 1.0:
        s, n = drain_period(s, dropped=False, queue_clear=True), n + 1
    assert n <= 5 + math.log2(1 / DRAIN_FLOOR), n


def test_past_the_drained_rate_the_climb_is_one_margin():
    s = PortDrain(0.8, 0.8, clear=4)  # at the rate the port last drained, after 4 clear periods
    assert drain_period(s, False, True).factor == pytest.approx(0.8 * (1 + DRAIN_MARGIN))


def test_no_climb_while_it_drops_or_its_queue_stands():
    """A drop starts the climb's steps over; a queue standing without one holds them (spec §9 item 8)."""
    s = PortDrain(0.5, 0.5, clear=3)
    assert drain_period(s, True, True) == PortDrain(0.5, 0.5, 0)
    assert drain_period(s, False, False) == s


def test_a_burst_in_the_queue_does_not_slow_the_climb_back_from_a_pause():
    """From the floor, one period in which the queue stood (a burst) without a drop: still back
    within the spec's bound, 5 + log2(1/floor) climbing periods. Caught with a standing queue
    resetting the count as a drop does: 14."""
    s, n = PortDrain(DRAIN_FLOOR, 0.0), 0
    while s.factor < 1.0:
        s = drain_period(s, dropped=False, queue_clear=n != 7)
        n += 1
    assert n - 1 <= 5 + math.log2(1 / DRAIN_FLOOR), n


def test_a_rate_read_half_before_a_pause_is_forgotten_on_the_climb():
    """A window that mixed the time before a pause with the pause cut to 0.17 of the target, not
    the floor, and kept 0.17 as the rate drained: once the port resumes, the climb takes one-margin
    steps past that rate for 3 periods, then doubles as from the floor: back within the
    floor's bound, 5 + log2(1/floor), and those periods. Caught with the rate kept: 57 periods."""
    s, n = drain_cut(PortDrain(), T, 0.17 * T), 0
    assert s.drained == pytest.approx(0.17)
    while s.factor < 1.0:
        s = drain_period(s, dropped=False, queue_clear=True)
        n += 1
    assert n <= 5 + math.log2(1 / DRAIN_FLOOR) + 3 + 1, n  # spec §9 item 8: 3 periods past it


def test_a_port_that_drains_its_target_while_its_queue_stands_is_back_at_once():
    """A window whose queue stood all through and in which the port sent its configured target
    (within the cut's tolerance): the port is at its speed, so the factor is 1 again whatever the
    climb had reached and whether or not the queue dropped; a queue standing from the τ loop's
    transients at a factor near 1 (critical load) does not hold it below. Caught without the rule:
    0.98 stays (a climb waits for a clear queue)."""
    for dropped in (False, True):
        assert drain_window(PortDrain(0.98, 0.0, clear=6), T, (1 - DRAIN_TOLERANCE) * T, dropped) == PortDrain()
        assert drain_window(PortDrain(0.5, 0.5), T, T, dropped) == PortDrain()


def test_a_slow_port_is_not_taken_for_one_at_its_speed():
    """What a port drains below the tolerance of its target does not restore the factor: a climb
    standing at that rate holds (no drop) or is cut (drops), as `drain_cut` says. Caught with the
    restore's threshold at the target in force instead of the configured one: 1.0."""
    d = (1 - DRAIN_TOLERANCE) * 0.98 * T
    s = PortDrain(0.97, 0.0, clear=2)
    assert drain_window(s, T, d, dropped=False) == s
    assert drain_window(s, T, d, dropped=True) == drain_cut(s, T, d)
    probe = PortDrain(0.5 * (1 + DRAIN_MARGIN), 0.5)  # a climb one margin past a port at half its speed
    assert drain_window(probe, T, 0.5 * T, dropped=True).factor == pytest.approx(0.5 * (1 - DRAIN_MARGIN))
