# SPDX-License-Identifier: Apache-2.0
"""The Driver of an `ffs-switch run` process, over its gRPC control service (the JSON schema of
ffs.driver.wire): what the agent uses for --target model. It imports nothing of the software switch,
so an agent installed without the laboratory drives a switch that runs elsewhere."""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Sequence

import grpc

from ffs.core.entries import CounterValue, LpfSpec, TableEntry, TimerSpec, Update
from ffs.driver import wire
from ffs.driver.base import Driver, DriverError, TmPortCounts, pipe_counter, pipe_sum


class ModelDriver(Driver):
    """Drives an `ffs-switch run` process over its gRPC control service."""

    def __init__(self, address: str = "localhost:50052", rpc_timeout_s: float = 30.0) -> None:
        self.address = address
        self.rpc_timeout_s = rpc_timeout_s
        self._channel: grpc.Channel | None = None

    def connect(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            self._channel = grpc.insecure_channel(self.address)
            try:
                grpc.channel_ready_future(self._channel).result(timeout=max(0.1, min(2.0, deadline - time.monotonic())))
                self.program_id()
                return
            except (grpc.FutureTimeoutError, DriverError) as e:
                last = str(e) or "not ready"
                self._channel.close()
                self._channel = None
            if time.monotonic() >= deadline:
                raise DriverError(f"software switch at {self.address} did not answer within {timeout_s:.3g} s ({last})")
            time.sleep(0.2)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def _rpc(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        if self._channel is None:
            raise DriverError("not connected to the software switch")
        stub = self._channel.unary_unary(f"/{wire.SERVICE}/{method}")
        try:
            answer: dict[str, Any] = json.loads(stub(json.dumps(request).encode(), timeout=self.rpc_timeout_s))
            return answer
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else None
            detail = e.details() if hasattr(e, "details") else str(e)
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                raise DriverError(detail) from None
            raise DriverError(
                f"software switch at {self.address}: {code.name if code else 'error'}: {detail}"
            ) from None

    def program_id(self) -> str:
        return str(self._rpc("ProgramId", {})["program_id"])

    def program_identity(self) -> str:
        """The software switch runs the pipeline of its own package: its version names it."""
        try:
            return f"ffs software switch {self._rpc('Version', {})['version']}"
        except (DriverError, KeyError, TypeError):
            return "ffs software switch (a version that does not say which)"

    def write(self, updates: Sequence[Update]) -> None:
        self._rpc("Write", {"updates": [wire.update_to_json(u) for u in updates]})

    def read_table(self, table: str) -> list[TableEntry]:
        return [wire.entry_from_json(e) for e in self._rpc("ReadTable", {"table": table})["entries"]]

    def read_default(self, table: str) -> TableEntry:
        return wire.entry_from_json(self._rpc("ReadDefault", {"table": table})["entry"])

    def clear_table(self, table: str) -> None:
        self._rpc("ClearTable", {"table": table})

    def read_counters(self, name: str, indices: Iterable[int] | None = None) -> dict[int, CounterValue]:
        req: dict[str, Any] = {"name": name}
        if indices is not None:
            req["indices"] = list(indices)
        vals = self._rpc("ReadCounters", req)["values"]  # [packets, bytes], each per pipe
        return {int(i): pipe_counter(v[0], v[1]) for i, v in vals.items()}

    def reset_counters(self, name: str) -> None:
        self._rpc("ResetCounters", {"name": name})

    def read_registers(self, name: str, indices: Iterable[int] | None = None) -> dict[int, int]:
        req: dict[str, Any] = {"name": name}
        if indices is not None:
            req["indices"] = list(indices)
        return {int(i): pipe_sum(v) for i, v in self._rpc("ReadRegisters", req)["values"].items()}

    def read_register_pipes(self, name: str, indices: Iterable[int] | None = None) -> dict[int, list[int]]:
        req: dict[str, Any] = {"name": name}
        if indices is not None:
            req["indices"] = list(indices)
        return {int(i): [int(x) for x in v] for i, v in self._rpc("ReadRegisters", req)["values"].items()}

    def write_register(self, name: str, index: int, value: int) -> None:
        self._rpc("WriteRegister", {"name": name, "index": index, "value": value})

    def set_lpf_spec(self, name: str, indices: Iterable[int], spec: LpfSpec) -> None:
        self._rpc("SetLpfSpec", {"name": name, "indices": list(indices), "spec": wire.lpf_to_json(spec)})

    def read_lpf_spec(self, name: str, index: int) -> LpfSpec:
        return wire.lpf_from_json(self._rpc("ReadLpfSpec", {"name": name, "index": index})["spec"])

    def read_tm_ports(self, dev_ports: Iterable[int]) -> dict[int, TmPortCounts]:
        answer = self._rpc("ReadTmPorts", {"ports": list(dev_ports)})["values"]
        return {int(p): TmPortCounts(*(int(x) for x in v)) for p, v in answer.items()}

    has_pktgen = True

    def set_timer(self, timer: TimerSpec | None) -> None:
        self._rpc("SetTimer", {"timer": wire.timer_to_json(timer)})

    def read_timer(self) -> TimerSpec | None:
        return wire.timer_from_json(self._rpc("ReadTimer", {}).get("timer"))
