# SPDX-License-Identifier: Apache-2.0
"""Rate control of FFS endpoints, pure: every method takes the time explicitly, so the same objects
run live (wall clock) and in virtual time (docs/endpoint.md).

The nodes of this project write the *relative* indicator RRI (App. D, Algorithm 4; docs/spec.md §7):
the factor by which the source should scale the rate at which it sent the packet. A source turns an
echoed RRI into an absolute indicator by multiplying it with its own sending rate at the time it
sent that packet, one RTT earlier (App. D, "Overhead"), and smooths the result with the median of
the 21 most recent values (§IX).

- `MinTime`: always the source's egress capacity (§IX).
- `MinLoss`: starts low and moves to the median indicator (§IX).
- `IndicatorCap`: partial deployment (App. C): the median indicator only caps a conventional
  congestion control's rate; it never raises it.
- `LeakyBucket`: the pacer: the time of the next send, so the process can sleep until then (§IX).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import deque
from dataclasses import dataclass, field

from ffs.core import constants
from ffs.core.labels import decode

MEDIAN_WINDOW = 21  # FFS §IX: the 21 most recent indicator values


def rri_factor(code: int) -> float | None:
    """The RRI code as a factor, or None when no node on the path wrote it (the source's ∞, 0xFFFF,
    came back unchanged: no information)."""
    if code >= constants.CODE_MAX:
        return None
    return decode(code)


class RateHistory:
    """The source's sending rate as a step function of time, so an indicator can be applied to the
    rate of one RTT earlier (App. D). Steps older than `keep_s` before the newest are forgotten."""

    def __init__(self, t0: float, rate_bps: float, keep_s: float = 10.0) -> None:
        self._t: list[float] = [t0]
        self._r: list[float] = [rate_bps]
        self.keep_s = keep_s

    def set(self, t: float, rate_bps: float) -> None:
        if t < self._t[-1]:
            raise ValueError(f"rate history must move forward in time ({t} < {self._t[-1]})")
        if t == self._t[-1]:
            self._r[-1] = rate_bps
        else:
            self._t.append(t)
            self._r.append(rate_bps)
        if len(self._t) > 256 and self._t[0] < t - self.keep_s:
            k = bisect.bisect_left(self._t, t - self.keep_s)
            del self._t[: max(0, k - 1)], self._r[: max(0, k - 1)]

    def at(self, t: float) -> float:
        """The rate in force at time t (the oldest known rate before the history starts)."""
        k = bisect.bisect_right(self._t, t) - 1
        return self._r[max(k, 0)]

    def last_change_before(self, t: float) -> float:
        """When the rate in force at t was set."""
        k = bisect.bisect_right(self._t, t) - 1
        return self._t[max(k, 0)]

    @property
    def current(self) -> float:
        return self._r[-1]


class SendLog:
    """What the source actually sent: cumulative IP bytes over time, so an indicator can be applied
    to the rate the node measured, the bytes sent over the `window_s` before the packet left
    (App. D: "the rate 1 RTT ago"). The nominal pacing rate is not enough live: a starved process
    or a full host queue sends less than it meant to, and the node judged what arrived."""

    def __init__(self, window_s: float, keep_s: float = 10.0) -> None:
        if not window_s > 0:
            raise ValueError("the send-log window must be positive")
        self.window_s = window_s
        self.keep_s = keep_s
        self._t: deque[float] = deque()
        self._cum: deque[int] = deque()
        self._total = 0

    def sent(self, t: float, size: int) -> None:
        self._total += size
        self._t.append(t)
        self._cum.append(self._total)
        while len(self._t) > 1 and self._t[0] < t - self.keep_s:
            self._t.popleft()
            self._cum.popleft()

    def rate(self, t: float) -> float | None:
        """Bit/s sent over (t − window, t]; None before a whole window has passed since the first send."""
        if not self._t or t - self.window_s < self._t[0]:
            return None
        a = bisect.bisect_right(self._t, t - self.window_s)
        b = bisect.bisect_right(self._t, t)
        lo = self._cum[a - 1] if a > 0 else 0
        hi = self._cum[b - 1] if b > 0 else 0
        return (hi - lo) * 8 / self.window_s


class MedianWindow:
    """The `size` most recent values and their median (FFS §IX)."""

    def __init__(self, size: int = MEDIAN_WINDOW) -> None:
        if size < 1:
            raise ValueError("the median window needs at least one value")
        self.values: deque[float] = deque(maxlen=size)

    def push(self, x: float) -> None:
        self.values.append(x)

    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Echo:
    """One piece of feedback: the RRI code the receiver echoed and when the source sent the data
    packet that carried it (the source's own record, looked up by sequence number)."""

    rri_code: int
    sent_at: float


class Controller:
    """A sending rate as a function of the feedback so far. `rate(now)` is the rate to pace at."""

    name = "controller"

    def rate(self, now: float) -> float:
        raise NotImplementedError

    def on_echo(self, now: float, echo: Echo) -> None:  # feedback arrived
        pass

    def on_sent(self, now: float, size: int) -> None:  # a packet of `size` IP bytes left
        pass

    def indicator(self) -> float | None:  # the median absolute indicator, if any (for reports)
        return None


class MinTime(Controller):
    """FFS §IX: send at the source's egress capacity, whatever the feedback says."""

    name = "mintime"

    def __init__(self, capacity_bps: float) -> None:
        if not capacity_bps > 0 or math.isinf(capacity_bps):
            raise ValueError("MinTime needs a finite positive egress capacity")
        self.capacity = capacity_bps

    def rate(self, now: float) -> float:
        return self.capacity


@dataclass
class MinLossParams:
    """Knobs of MinLoss. The defaults are the paper's (window 21) plus three that make the relative
    indicator usable (docs/endpoint.md, "MinLoss"):

    - `settle_s`: an RRI is relative to what the node measured, and the node measures rates over a
      control period (its counters) and an LPF time constant; a packet sent within `settle_s` of a
      rate change was judged against a measurement that still mixes the old rate, so its echo is
      ignored. Set it to at least the node's control period plus its estimator's time constant.
    - `deadband`: the rate moves only when the median differs from it by more than this fraction,
      so small fluctuations do not restart `settle_s`.
    - `headroom`: send at (1 − headroom) · median, keeping the node just below the point where its
      egress counts as congested (R* > T, Algorithm 2).
    """

    start_bps: float
    capacity_bps: float
    window: int = MEDIAN_WINDOW
    settle_s: float = 0.2
    deadband: float = 0.02
    headroom: float = 0.01
    min_bps: float = 0.0  # never below this (default: the start rate / 10)
    confirm_s: float = 0.0  # an increase must be indicated for this long (by packets sent this far
    #                         apart) before the rate follows; decreases follow at once
    measure_s: float | None = None  # apply RRIs to the rate actually sent over this window (the
    #                                 node's control period); None: to the nominal pacing rate


class IndicatorTracker:
    """The absolute indicator from echoed RRIs: RRI × the source's rate when it sent the packet
    (App. D), median of the most recent `window` values (§IX), ignoring echoes of packets sent
    within `settle_s` after a rate change."""

    def __init__(self, history: RateHistory, window: int, settle_s: float, sent: SendLog | None = None) -> None:
        self.history = history
        self.sent = sent
        self.window = MedianWindow(window)
        self.settle_s = settle_s
        self.used = 0
        self.ignored = 0

    def on_echo(self, echo: Echo) -> float | None:
        factor = rri_factor(echo.rri_code)
        if factor is None or echo.sent_at - self.history.last_change_before(echo.sent_at) < self.settle_s:
            self.ignored += 1
            return None
        rate = self.sent.rate(echo.sent_at) if self.sent is not None else None
        self.window.push(factor * (rate if rate is not None else self.history.at(echo.sent_at)))
        self.used += 1
        return self.window.median()


class MinLoss(Controller):
    """FFS §IX: start at a low rate and move to the rate the echoed indicator gives."""

    name = "minloss"

    def __init__(self, params: MinLossParams, t0: float = 0.0) -> None:
        p = params
        if not (0 < p.start_bps <= p.capacity_bps and math.isfinite(p.capacity_bps)):
            raise ValueError("MinLoss needs 0 < start rate <= capacity < inf")
        if not (0 <= p.headroom < 1 and 0 <= p.deadband < 1 and p.settle_s >= 0 and p.window >= 1):
            raise ValueError("MinLoss: headroom and deadband in [0, 1), settle >= 0, window >= 1")
        self.p = p
        self.floor = p.min_bps or p.start_bps / 10
        self.history = RateHistory(t0, p.start_bps)
        self.sent = SendLog(p.measure_s) if p.measure_s else None
        self.tracker = IndicatorTracker(self.history, p.window, p.settle_s, self.sent)
        self.changes = 0
        self._indicator: float | None = None
        self._up_since: float | None = None  # send time of the first packet that indicated an increase

    def on_sent(self, now: float, size: int) -> None:
        if self.sent is not None:
            self.sent.sent(now, size)

    def rate(self, now: float) -> float:
        return self.history.current

    def indicator(self) -> float | None:
        return self._indicator

    def on_echo(self, now: float, echo: Echo) -> None:
        med = self.tracker.on_echo(echo)
        if med is None or len(self.tracker.window) < self.p.window:
            return  # a median of a full window only (FFS §IX): one early echo is no estimate
        self._indicator = med
        want = min(max(med * (1 - self.p.headroom), self.floor), self.p.capacity_bps)
        cur = self.history.current
        if want > cur * (1 + self.p.deadband) and self.p.confirm_s > 0:
            # one node period that under-measured R* (Algorithm 2's C/R*) must not raise the rate:
            # the 21 values of a median window often come from one period
            if self._up_since is None:
                self._up_since = echo.sent_at
            if echo.sent_at - self._up_since < self.p.confirm_s:
                return
        self._up_since = None
        if abs(want - cur) > self.p.deadband * cur:
            self.history.set(now, want)
            self.changes += 1
            self.tracker.window.values.clear()  # judged at the old rate: collect anew


class IndicatorCap:
    """Partial deployment (App. C): with FFS-unaware nodes on the path, loss may come from them, so
    a conventional congestion control must stay in charge; the indicator may only *lower* the rate.
    `cap()` is the median indicator (None until feedback arrives); the sender's rate is
    min(CCA's rate, cap). A higher indicator only lifts the cap: it never raises the CCA's rate."""

    def __init__(
        self, history: RateHistory, window: int = MEDIAN_WINDOW, settle_s: float = 0.2, sent: SendLog | None = None
    ) -> None:
        self.tracker = IndicatorTracker(history, window, settle_s, sent)

    def on_echo(self, echo: Echo) -> float | None:
        return self.tracker.on_echo(echo)

    def cap(self) -> float | None:
        return self.tracker.window.median()

    def limit(self, cca_rate_bps: float) -> float:
        c = self.cap()
        return cca_rate_bps if c is None else min(cca_rate_bps, c)


@dataclass
class LeakyBucket:
    """The pacer (FFS §IX, [40]): packets leave at `rate` with at most `depth_bytes` of credit, and
    `due(now)` says when the next packet may go, so the sender sleeps until then instead of
    spinning. Time is explicit; the rate may change between packets."""

    depth_bytes: int = 0
    _next: float = field(default=-math.inf, repr=False)

    def due(self, now: float, size: int, rate_bps: float) -> float:
        """The earliest time >= now at which a `size`-byte packet conforms."""
        credit_s = self.depth_bytes * 8 / rate_bps
        return max(now, self._next - credit_s)

    def sent(self, now: float, size: int, rate_bps: float) -> None:
        """A `size`-byte packet left at `now`: the theoretical departure time moves on by its
        serialization time at `rate` from where it was or, after idling, from now (GCRA): credit
        never exceeds the depth, so at most depth/size + 1 packets leave back to back."""
        self._next = max(self._next, now) + size * 8 / rate_bps
