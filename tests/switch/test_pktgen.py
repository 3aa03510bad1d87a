# SPDX-License-Identifier: Apache-2.0
"""The software switch's packet generator and the queue guard's timer (spec §7.1, §7.7): running a
pipe's due timer packets late, when the pipe next runs a packet, and a packet_id due k times as k
saturating drains in one, leaves exactly the state that each timer packet run at its own time
through the parser leaves (the generator's port, TNA's pktgen_timer_header_t); both engines."""

from __future__ import annotations

import pytest

from ffs.core import constants, p4names
from ffs.core.entries import Exact, TableEntry, TimerSpec, Update
from ffs.core.frames import ipv4_frame
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.pktgen import parse_timer, timer_frame

PERIOD = 100_000
DRAINS = {0: (3, 700), 1: (4, 1)}  # packet_id -> (port, drain); packet_id 2 has no entry


def rig(cls) -> tuple[Pipeline, LocalDriver]:
    p = cls(1)
    d = LocalDriver(p)
    t = p4names.TIMER_PORTS.name
    d.write(
        [
            Update("insert", TableEntry(t, {"packet_id": Exact(k)}, "set_drain", {"port": port, "drain": drain}))
            for k, (port, drain) in DRAINS.items()
        ]
    )
    for port in (3, 4):
        d.write_register(p4names.GUARD_QUEUE.name, port, 10_000)
    return p, d


def pipe0(p: Pipeline) -> dict[int, tuple[int, int]]:
    """Pipe 0's queue and timer count per port, as they are (a control-plane read would run every
    pipe's due timers first)."""
    return {port: (p.guard.queue.read_pipes(port)[0], p.guard.timers.read_pipes(port)[0][0]) for port in (3, 4)}


def test_the_timer_header_is_tnas():
    f = timer_frame(2, constants.TIMER_APP_ID, 0x1234, 0x0506, 64)
    assert len(f) == 64 and f[0] == (2 << 3) | 1 and f[1] == 0 and f[2:6] == bytes([0x12, 0x34, 0x05, 0x06])
    assert parse_timer(f) == (constants.TIMER_APP_ID, 0x0506)


@pytest.mark.parametrize("cls", [Pipeline, fast.FastPipeline], ids=["python", "c"])
def test_late_timers_leave_what_timers_on_time_leave(cls):
    """25 periods pass before pipe 0 runs a packet: its 25 batches then run at once. Each timer
    packet run at its own time instead leaves the same: port 3's queue drained to 0 (25 · 700 >
    10,000, saturating), port 4's by 25, each counted 25 times; packet_id 2 drains nothing."""
    if cls is fast.FastPipeline:
        fast.require()
    late, dl = rig(cls)
    dl.set_timer(TimerSpec(PERIOD, 3))
    frame = ipv4_frame("10.0.1.1", "10.0.3.1", 100)
    late.process(frame, 1, 25 * PERIOD + 5)
    on_time, _ = rig(Pipeline)
    timer = [timer_frame(0, constants.TIMER_APP_ID, 0, k, 64) for k in range(3)]
    for k in range(1, 26):
        for f in timer:
            assert on_time.process(f, constants.PKTGEN_PORT, k * PERIOD).drop_reason == "timer"
    on_time.process(frame, 1, 25 * PERIOD + 5)
    assert pipe0(late) == pipe0(on_time) == {3: (0, 25), 4: (10_000 - 25, 25)}
