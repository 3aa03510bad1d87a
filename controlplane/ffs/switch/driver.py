# SPDX-License-Identifier: Apache-2.0
"""The Drivers of the software switch: in-process (LocalDriver, here) and over its gRPC service
(ModelDriver, in ffs.driver.model so that the agent reaches a switch without importing one)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import ffs
from ffs.core.entries import CounterValue, LpfSpec, TableEntry, TimerSpec, Update
from ffs.driver.base import Driver, DriverError, TmPortCounts, pipe_counter, pipe_sum
from ffs.driver.model import ModelDriver
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.tna import ControlError


class LocalDriver(Driver):
    """Drives a Pipeline in this process (trace mode, unit tests)."""

    def __init__(self, target: Pipeline | SwitchControl) -> None:
        self.control = target if isinstance(target, SwitchControl) else SwitchControl(target)

    @property
    def pipeline(self) -> Pipeline:
        return self.control.pipeline

    def connect(self, timeout_s: float = 30.0) -> None:
        pass

    def close(self) -> None:
        pass

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except ControlError as e:
            raise DriverError(str(e)) from None

    def program_id(self) -> str:
        return self.control.program_id

    def program_identity(self) -> str:
        return f"ffs software switch {ffs.__version__} (in process)"

    def write(self, updates: Sequence[Update]) -> None:
        self._call(self.control.write, list(updates))

    def read_table(self, table: str) -> list[TableEntry]:
        return self._call(self.control.read_table, table)

    def read_default(self, table: str) -> TableEntry:
        return self._call(self.control.read_default, table)

    def clear_table(self, table: str) -> None:
        self._call(self.control.clear_table, table)

    def read_tm_ports(self, dev_ports: Iterable[int]) -> dict[int, TmPortCounts]:
        return {p: TmPortCounts(*v) for p, v in self._call(self.control.read_tm_ports, list(dev_ports)).items()}

    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, CounterValue]:
        return {i: pipe_counter(*v) for i, v in self._call(self.control.read_counters, name, indices).items()}

    def reset_counters(self, name: str) -> None:
        self._call(self.control.reset_counters, name)

    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, int]:
        return {i: pipe_sum(v) for i, v in self._call(self.control.read_registers, name, indices).items()}

    def read_register_pipes(self, name: str, indices: Iterable[int] | None = None) -> dict[int, list[int]]:
        return {i: [int(x) for x in v] for i, v in self._call(self.control.read_registers, name, indices).items()}

    def write_register(self, name: str, index: int, value: int) -> None:
        self._call(self.control.write_register, name, index, value)

    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None:
        self._call(self.control.set_lpf_spec, name, list(indices), spec)

    def read_lpf_spec(self, name: str, index: int) -> LpfSpec:
        return self._call(self.control.read_lpf_spec, name, index)

    has_pktgen = True

    def set_timer(self, timer: TimerSpec | None) -> None:
        self._call(self.control.set_timer, timer)

    def read_timer(self) -> TimerSpec | None:
        return self._call(self.control.read_timer)


__all__ = ["LocalDriver", "ModelDriver"]
