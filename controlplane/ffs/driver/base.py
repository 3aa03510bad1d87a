# SPDX-License-Identifier: Apache-2.0
"""The Driver interface: what the agent, the CLI and the PTF tests may ask of a target.

It is the subset of BF-Runtime that FFS needs -- table entries, default entries, indexed counters,
registers and LPF specs -- with BF-RT's semantics: names are the P4 names of `ffs.core.p4names`,
a batch of updates is applied atomically (all or nothing), counters and registers come back per
pipe and are summed here (`pipe_sum`, the one rule every driver uses), and every refusal raises
DriverError with a one-line reason.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ffs.core.entries import COUNTER_WRAP, CounterValue, LpfSpec, TableEntry, TimerSpec, Update
from ffs.core.ports import PortSpec, PortState


class DriverError(Exception):
    """A target refused an operation or cannot be reached; the message is one line for operators."""


def pipe_sum(v: Any) -> int:
    """A cell read from every pipe (BF-RT's target pipe 0xFFFF gives a register cell, and on some
    SDEs a counter, as a list with one value per pipe): the sum of the pipes. For a counter that is
    the device's total. For a register or an LPF it is the value only because one pipe alone writes
    the cell -- a pair's in the pipe of its ingress port, an egress's in the pipe of its egress
    port -- and every other pipe holds 0."""
    return int(sum(int(x) for x in v)) if isinstance(v, (list, tuple)) else int(v)


def pipe_counter(packets: Any, nbytes: Any) -> CounterValue:
    """A counter cell from its per-pipe packets and bytes, summed modulo 2^64."""
    return CounterValue(pipe_sum(packets) % COUNTER_WRAP, pipe_sum(nbytes) % COUNTER_WRAP)


@dataclass(frozen=True)
class TmPortCounts:
    """An egress port's traffic-manager counters (BF-Runtime's `tfN.tm.counter.eg_port`)."""

    drops: int  # frames the TM dropped toward the port (its queue was full), cumulative
    queue_bytes: int  # the port's queue at the read
    # line-rate bytes the port sent, cumulative, read at the same instant; None where the egress
    # pipeline's counters already count each frame as it leaves the queue (Tofino: the agent
    # reads those)
    sent_bytes: int | None = None


class Driver(abc.ABC):
    """A connection to one FFS target (device 0, all pipes)."""

    # -- life cycle --------------------------------------------------------------------------
    @abc.abstractmethod
    def connect(self, timeout_s: float = 30.0) -> None:
        """Connect (retrying until timeout_s while the target starts) and bind the ffs program."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Driver:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abc.abstractmethod
    def program_id(self) -> str:
        """An id of the loaded pipeline that changes when the program is reloaded (agent re-applies)."""

    def program_identity(self) -> str:
        """Which program the switch runs, for an operator comparing switches (ffsctl status, the
        metric ffs_build_info, ffsctl fleet plan); empty where the target cannot tell."""
        return ""

    # -- tables ------------------------------------------------------------------------------
    @abc.abstractmethod
    def write(self, updates: Sequence[Update]) -> None:
        """Apply a batch atomically: every update takes effect, or none does (DriverError)."""

    @abc.abstractmethod
    def read_table(self, table: str) -> list[TableEntry]:
        """All entries of a table (not the default entry), in a stable order."""

    @abc.abstractmethod
    def read_default(self, table: str) -> TableEntry: ...

    @abc.abstractmethod
    def clear_table(self, table: str) -> None:
        """Delete every entry and restore the P4 default action."""

    # -- counters, registers, LPFs -----------------------------------------------------------
    @abc.abstractmethod
    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, CounterValue]:
        """Synced counter values, summed over pipes; all indices when `indices` is None."""

    @abc.abstractmethod
    def reset_counters(self, name: str) -> None: ...

    @abc.abstractmethod
    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, int]:
        """Synced register cells, summed over pipes (`pipe_sum`: a pair's cell is written in its
        ingress pipe only, the other pipes hold 0)."""

    def read_register_pipes(self, name: str, indices: Iterable[int] | None = None) -> dict[int, list[int]]:
        """Synced register cells, one value per pipe (pipe 0 first): which pipe holds what."""
        raise DriverError(f"{name}: this target does not read registers per pipe")

    @abc.abstractmethod
    def write_register(self, name: str, index: int, value: int) -> None:
        """Write the cell in every pipe (as BF-RT's target of every pipe does): a read sums the
        pipes, so a value other than 0 reads back once per pipe."""

    @abc.abstractmethod
    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None: ...

    @abc.abstractmethod
    def read_lpf_spec(self, name: str, index: int) -> LpfSpec: ...

    # -- the packet generator's timer (BF-Runtime's tf1/tf2.pktgen tables; spec §7.7) -----------
    has_pktgen = False

    def set_timer(self, timer: TimerSpec | None) -> None:
        """Run the timer application on the generator's port of every pipe (None: stop it). The
        queue guard's virtual queues drain only while it runs."""
        raise DriverError("this target has no packet generator: the queue guard stays off")

    def read_timer(self) -> TimerSpec | None:
        """The timer application as the target runs it; None when it is not running."""
        raise DriverError("this target has no packet generator")

    # -- the traffic manager's per-port counters (the agent follows a port that drains slower, spec §9)
    def read_tm_ports(self, dev_ports: Iterable[int]) -> dict[int, TmPortCounts]:
        """The TM's drop count and queue of these egress ports."""
        raise DriverError("this target does not expose its traffic manager's per-port counters")

    # -- front-panel ports (BF-Runtime's $PORT; a target without it has ports that are always up) --
    has_ports = False

    def port_of(self, fp: str) -> int:
        """The device port of a front-panel port name (`$PORT_STR_INFO`)."""
        raise DriverError(f"this target has no front-panel ports to look up ({fp})")

    def read_ports(self, dev_ports: Iterable[int]) -> dict[int, PortState]:
        """The `$PORT` entries of these device ports; a port not added is left out."""
        raise DriverError("this target has no $PORT table")

    def write_ports(
        self,
        adds: Sequence[PortSpec] = (),
        deletes: Sequence[int] = (),
        enables: Sequence[int] = (),
        limits: Sequence[PortSpec] = (),
    ) -> None:
        """Delete, then add, then enable ports, then set the frame limit of ports already added
        (each in one request per kind)."""
        raise DriverError("this target has no $PORT table")
