# SPDX-License-Identifier: Apache-2.0
"""The transfer's reliability, as state machines with explicit time (live and virtual runs drive
the same objects): the receiver acknowledges every data packet cumulatively and selectively and
echoes the latest rate indicator it received (FFS §VIII "Rate Feedback"); the sender paces at its
controller's rate, detects losses from the acknowledgements (a packet is lost once a packet sent
sufficiently after it was delivered, or after a retransmission timeout) and retransmits them
before new data (FFS §IX: "both algorithms provide reliable transport").
"""

from __future__ import annotations

import bisect
import math
from collections import OrderedDict, deque
from dataclasses import dataclass

import numpy as np

from ffs.lab.endpoint.rate import Controller, Echo, LeakyBucket
from ffs.lab.endpoint.wire import MAX_BLOCKS, OVERHEAD, Ack


@dataclass
class SenderStats:
    sent: int = 0  # data packets handed to the network, retransmissions included
    retransmitted: int = 0
    lost: int = 0  # packets declared lost (by acknowledgements or timeout)
    echoes: int = 0
    first_send: float | None = None
    finish: float | None = None
    rtt_min: float = math.inf


class Sender:
    """One transfer of `total` bytes in packets of `payload` bytes (IP size `payload + OVERHEAD`)."""

    def __init__(
        self,
        total: int,
        payload: int,
        controller: Controller,
        *,
        xfer: int = 1,
        rto_min_s: float = 0.2,
        rto_initial_s: float = 1.0,
        bucket: LeakyBucket | None = None,
    ) -> None:
        if total <= 0 or payload <= 0:
            raise ValueError("a transfer needs a positive size and payload")
        self.total, self.payload, self.xfer = total, payload, xfer
        self.npkts = (total + payload - 1) // payload
        self.ctl = controller
        self.bucket = bucket or LeakyBucket()
        self.acked = np.zeros(self.npkts, dtype=bool)
        self.cum = 0
        self.next_new = 0
        self.retx: deque[int] = deque()
        self.outstanding: OrderedDict[int, float] = OrderedDict()  # seq -> send time, oldest first
        self.sent_at = np.full(self.npkts, math.nan)  # last send time per seq (echo look-up)
        self.retransmitted = np.zeros(self.npkts, dtype=bool)
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto_min, self.rto = rto_min_s, rto_initial_s
        self.stats = SenderStats()

    # -- what to send, and when ---------------------------------------------------------------
    def size_of(self, seq: int) -> int:
        """IP bytes of data packet `seq`."""
        last = self.total - (self.npkts - 1) * self.payload
        return OVERHEAD + (last if seq == self.npkts - 1 else self.payload)

    def pending(self) -> int | None:
        """The next packet to send (a lost one first), or None when everything is in flight."""
        while self.retx and self.acked[self.retx[0]]:
            self.retx.popleft()
        if self.retx:
            return self.retx[0]
        return self.next_new if self.next_new < self.npkts else None

    def due(self, now: float) -> float | None:
        """When the next packet may leave (>= now), or None if there is nothing to send."""
        seq = self.pending()
        if seq is None:
            return None
        return self.bucket.due(now, self.size_of(seq), self.ctl.rate(now))

    def send(self, now: float) -> int:
        """Take the pending packet for sending at `now` (the caller checked `due`). Returns its seq."""
        seq = self.pending()
        if seq is None:
            raise RuntimeError("nothing to send")
        if self.retx and self.retx[0] == seq:
            self.retx.popleft()
            self.retransmitted[seq] = True
            self.stats.retransmitted += 1
        else:
            self.next_new += 1
        self.bucket.sent(now, self.size_of(seq), self.ctl.rate(now))
        self.ctl.on_sent(now, self.size_of(seq))
        self.outstanding.pop(seq, None)
        self.outstanding[seq] = now
        self.sent_at[seq] = now
        self.stats.sent += 1
        if self.stats.first_send is None:
            self.stats.first_send = now
        return seq

    @property
    def done(self) -> bool:
        return self.cum >= self.npkts

    # -- feedback ---------------------------------------------------------------------------
    def on_ack(self, now: float, ack: Ack, rri_echo: int | None) -> None:
        if ack.xfer != self.xfer:
            return
        newly: list[int] = []
        if ack.cum > self.cum:
            hi = min(ack.cum, self.npkts)
            seg = np.flatnonzero(~self.acked[self.cum : hi]) + self.cum
            newly.extend(seg.tolist())
            self.acked[self.cum : hi] = True
            self.cum = hi
        for s, e in ack.blocks:
            s, e = max(s, self.cum), min(e, self.npkts)
            if s < e:
                seg = np.flatnonzero(~self.acked[s:e]) + s
                if seg.size:
                    newly.extend(seg.tolist())
                    self.acked[s:e] = True
        latest_sent = -math.inf
        for seq in newly:
            t = self.outstanding.pop(seq, None)
            if t is not None and t > latest_sent:
                latest_sent = t
        # RTT from the packet this ACK answers, unless it was retransmitted (Karn)
        e = ack.echo_seq
        if 0 <= e < self.npkts and not self.retransmitted[e] and e in newly:
            self._rtt_sample(float(now - self.sent_at[e]))
        if rri_echo is not None and 0 <= e < self.npkts and not math.isnan(self.sent_at[e]):
            self.stats.echoes += 1
            self.ctl.on_echo(now, Echo(rri_echo, float(self.sent_at[e])))
        if latest_sent > -math.inf:
            self._detect_losses(latest_sent)
        while self.cum < self.npkts and self.acked[self.cum]:
            self.cum += 1
        if self.done and self.stats.finish is None:
            self.stats.finish = now

    def _rtt_sample(self, r: float) -> None:
        self.stats.rtt_min = min(self.stats.rtt_min, r)
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r
        self.rto = max(self.rto_min, self.srtt + 4 * self.rttvar)

    def _detect_losses(self, latest_delivered_sent: float) -> None:
        """A packet is lost when one sent more than a reordering window after it was delivered
        (time-based, as RACK): FFS nodes drop before the queue and do not reorder."""
        reo = (self.srtt or 0.0) / 8
        while self.outstanding:
            seq, t = next(iter(self.outstanding.items()))
            if t + reo >= latest_delivered_sent:
                break
            self.outstanding.popitem(last=False)
            self._lost(seq)

    def _lost(self, seq: int) -> None:
        if not self.acked[seq]:
            self.stats.lost += 1
            self.retx.append(seq)

    def on_timer(self, now: float) -> None:
        """Retransmission timeout: everything in flight for longer than the RTO is lost."""
        while self.outstanding:
            seq, t = next(iter(self.outstanding.items()))
            if now - t < self.rto:
                break
            self.outstanding.popitem(last=False)
            self._lost(seq)

    def timer_due(self) -> float | None:
        """When `on_timer` next has something to do."""
        if not self.outstanding:
            return None
        return next(iter(self.outstanding.values())) + self.rto


class Receiver:
    """Collects one transfer (`on_data`) and says what to acknowledge. Keeps the received payload
    when `keep` is set (the command writes it out)."""

    def __init__(self, keep: bool = False) -> None:
        self.xfer: int | None = None
        self.total = 0
        self.payload_size = 0
        self.npkts = 0
        self.got: np.ndarray = np.zeros(0, dtype=bool)
        self.cum = 0
        self.ranges: list[list[int]] = []  # disjoint sorted [start, end) above cum
        self.keep = keep
        self.chunks: dict[int, bytes] = {}
        self.latest_rri: int | None = None
        self.packets = 0
        self.duplicates = 0
        self.first: float | None = None
        self.complete_at: float | None = None

    def on_data(
        self, now: float, xfer: int, seq: int, total: int, payload: bytes, payload_size: int, rri: int | None
    ) -> Ack | None:
        """A data packet arrived carrying `rri` (None: no shim / R flag). Returns the ACK to send."""
        if self.xfer is None:
            if total <= 0 or payload_size <= 0:
                return None
            self.xfer, self.total, self.payload_size = xfer, total, payload_size
            self.npkts = (total + payload_size - 1) // payload_size
            self.got = np.zeros(self.npkts, dtype=bool)
            self.first = now
        if xfer != self.xfer or not 0 <= seq < self.npkts:
            return None
        self.packets += 1
        if rri is not None:
            self.latest_rri = rri
        if self.got[seq]:
            self.duplicates += 1
        else:
            self.got[seq] = True
            if self.keep:
                self.chunks[seq] = payload
            self._insert(seq)
        if self.complete_at is None and self.cum >= self.npkts:
            self.complete_at = now
        return Ack(self.xfer, self.cum, seq, self._blocks(seq))

    @property
    def complete(self) -> bool:
        return self.xfer is not None and self.cum >= self.npkts

    def data(self) -> bytes:
        return b"".join(self.chunks[k] for k in range(self.npkts))

    def _insert(self, seq: int) -> None:
        if seq == self.cum:
            self.cum += 1
            while self.ranges and self.ranges[0][0] <= self.cum:
                self.cum = max(self.cum, self.ranges.pop(0)[1])
            return
        k = bisect.bisect_right(self.ranges, [seq, math.inf])
        if k > 0 and self.ranges[k - 1][1] == seq:  # extends the range before
            self.ranges[k - 1][1] = seq + 1
            if k < len(self.ranges) and self.ranges[k][0] == seq + 1:
                self.ranges[k - 1][1] = self.ranges.pop(k)[1]
        elif k < len(self.ranges) and self.ranges[k][0] == seq + 1:
            self.ranges[k][0] = seq
        else:
            self.ranges.insert(k, [seq, seq + 1])

    def _blocks(self, seq: int) -> tuple[tuple[int, int], ...]:
        """The block holding the packet just received first, then the highest others (RFC 2018)."""
        if not self.ranges:
            return ()
        out = []
        k = bisect.bisect_right(self.ranges, [seq, math.inf]) - 1
        if k >= 0 and self.ranges[k][0] <= seq < self.ranges[k][1]:
            out.append(tuple(self.ranges[k]))
        for r in reversed(self.ranges):
            if len(out) >= MAX_BLOCKS:
                break
            if tuple(r) not in out:
                out.append(tuple(r))
        return tuple(out)  # type: ignore[arg-type]
