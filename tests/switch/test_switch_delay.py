# SPDX-License-Identifier: Apache-2.0
"""A port's propagation delay (ffs.switch.delay): the wire after the traffic manager. Frames are due
exactly one delay after the TM released them, never earlier, in the order they were sent; the
queue's admissions and departures do not change with the delay; the delay is configured by
`ffs-switch run --delay N=10ms` or a topology interface's `delay` key."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ffs.core import constants
from ffs.core.tables import wire_len
from ffs.core.topology import TopologyError, load
from ffs.core.units import parse_delay
from ffs.lab.cli.switch import main as switch_cli
from ffs.switch.delay import DelayLine
from ffs.switch.tm import TrafficManager

MS = 1_000_000  # ns


def test_a_frame_is_due_one_delay_after_it_left_the_queue() -> None:
    line: DelayLine[str] = DelayLine(10 * MS)
    assert line.push(3 * MS, "a") == 13 * MS
    assert line.next_due() == 13 * MS
    assert line.pop_due(13 * MS - 1) == []  # never early, by a single ns
    assert line.pop_due(13 * MS) == ["a"]
    assert line.next_due() is None and len(line) == 0


def test_frames_leave_in_the_order_they_were_sent() -> None:
    line: DelayLine[int] = DelayLine(5 * MS)
    departs = [0, 1, 1, 2 * MS, 2 * MS + 7, 9 * MS]
    for i, t in enumerate(departs):
        line.push(t, i)
    # popped in small steps of time: every frame at its own due time, in order, none twice
    out: list[tuple[int, int]] = []
    for now in range(0, 20 * MS, MS // 4):
        out += [(now, f) for f in line.pop_due(now)]
    assert [f for _, f in out] == list(range(len(departs)))
    for now, f in out:
        assert departs[f] + 5 * MS <= now < departs[f] + 5 * MS + MS // 4


def test_a_frame_stamped_before_its_predecessor_waits_for_it() -> None:
    # a live clock read a moment earlier: the wire keeps order, so it is due with the one ahead
    line: DelayLine[str] = DelayLine(MS)
    line.push(100, "first")
    assert line.push(90, "second") == 100 + MS
    assert line.pop_due(100 + MS) == ["first", "second"]


def test_no_delay_sends_at_the_departure_time() -> None:
    line: DelayLine[str] = DelayLine(0)
    assert line.push(42, "x") == 42
    assert line.pop_due(42) == ["x"]
    with pytest.raises(ValueError):
        DelayLine(-1)


def test_the_queue_admits_and_drains_the_same_with_a_delay_behind_it() -> None:
    """A burst into a 20 Mb/s port with a 16 KB queue and 10 ms of wire: the queue admits what fits
    its buffer alone (the frames on the wire are not in it), each leaves one serialization time
    after the previous, and arrives 10 ms later."""
    speed, buffer, delay = 20e6, 16384, 10 * MS
    frame = wire_len(constants.ETH_HDR_LEN + 1500 + constants.FCS_LEN)
    tm = TrafficManager(8)
    tm.configure(3, speed, buffer)
    line: DelayLine[int] = DelayLine(delay)
    admitted = []
    for i in range(20):
        depart = tm.enqueue(3, 0, frame)
        if depart >= 0:
            admitted.append(i)
            line.push(depart, i)
    assert len(admitted) == buffer // frame  # 10 frames of 1538 bytes fit 16 KB
    serialize = frame * 8 / speed * 1e9
    arrivals = []
    for now in range(0, 20 * MS, 1000):
        arrivals += [(now, f) for f in line.pop_due(now)]
    assert [f for _, f in arrivals] == admitted
    for k, (now, _) in enumerate(arrivals):
        assert now == pytest.approx(delay + (k + 1) * serialize, abs=1000)
    # 10 ms later the queue has drained the burst, whatever is still on the wire: it admits again
    assert tm.enqueue(3, 10 * MS, frame) == pytest.approx(10 * MS + serialize, abs=1)


@pytest.mark.parametrize(
    "text, seconds",
    [("10ms", 0.01), ("500us", 5e-4), ("0.02", 0.02), (0.003, 0.003), ("1s", 1.0), ("250000ns", 2.5e-4)],
)
def test_delays_as_operators_write_them(text, seconds) -> None:
    assert parse_delay(text) == pytest.approx(seconds)


# "2 s": above the 1 s a link ever needs
@pytest.mark.parametrize(
    "bad", ["-1ms", "ten ms", "nan", "10 min", "2 s", True, float("nan"), float("inf"), -0.5, 10**400]
)
def test_a_delay_that_is_not_one_is_refused(bad) -> None:
    with pytest.raises(ValueError):
        parse_delay(bad)


TOPO = """
name: t
nodes:
  s1:
    interfaces:
      p1: {{capacity: 20Mbps, port: 1{d1}}}
      p2: {{capacity: 20Mbps, port: 2}}
    fairness:
      p2: {{p1: 20Mbps}}
"""


def test_the_topology_key_delay(tmp_path) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TOPO.format(d1=", delay: 10ms"))
    ifs = load(f).nodes["s1"].interfaces
    assert ifs["p1"].delay_s == pytest.approx(0.01)
    assert ifs["p2"].delay_s == 0.0  # no key: no wire delay
    f.write_text(TOPO.format(d1=", delay: forever"))
    with pytest.raises(TopologyError, match="delay"):
        load(f)


def test_the_cli_refuses_a_delay_for_a_port_it_does_not_bind() -> None:
    r = CliRunner().invoke(switch_cli, ["run", "--port", "1=lo", "--delay", "2=10ms"])
    assert r.exit_code != 0 and "port 2 is not bound" in r.output
    r = CliRunner().invoke(switch_cli, ["run", "--port", "1=lo", "--delay", "1=ten"])
    assert r.exit_code != 0 and "--delay 1=ten" in r.output
