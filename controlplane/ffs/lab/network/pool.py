# SPDX-License-Identifier: Apache-2.0
"""Where the study's partitions (`ffs.lab.network.part.Part`) live: one in this process, or one per
worker of a Dask cluster, each a Dask actor that keeps its edges between the rounds' calls (only
the per-pair and per-egress sums and τ cross the network). docs/benchmarks.md says why Dask."""

from __future__ import annotations

from typing import Any

import numpy as np

from ffs.lab.network.graph import ASGraph
from ffs.lab.network.part import Part

INSTALL = "--cluster needs Dask's distributed scheduler: pip install 'ffs-tofino[lab]' (or dask distributed)"


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """Sources 0..n-1 in `parts` contiguous ranges of near-equal size."""
    cuts = [round(k * n / parts) for k in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=False))


class LocalPool:
    """The partitions in this process, called one after the other."""

    def __init__(self, g: ASGraph, fraction: float, seed: int, aggregate: bool, parts: int = 1) -> None:
        self.parts = [Part(g, fraction, seed, aggregate) for _ in range(parts)]
        self.ranges = split(g.n, parts)
        self.pairs: list[np.ndarray] = []  # per partition: its pairs' places among the study's
        self.where = "this process"

    def call(self, method: str, *args: Any) -> list[Any]:
        """`method(*args)` on every partition, in partition order."""
        return [getattr(p, method)(*args) for p in self.parts]

    def call_each(self, method: str, args: list[tuple[Any, ...]]) -> list[Any]:
        """`method(*args[k])` on partition k."""
        return [getattr(p, method)(*a) for p, a in zip(self.parts, args, strict=True)]

    def close(self) -> None:
        self.parts = []


class DaskPool:
    """One partition per worker of the Dask cluster at `address` ("local:N" starts N worker
    processes on this machine), each a Dask actor; calls go to all of them at once."""

    def __init__(self, address: str, g: ASGraph, fraction: float, seed: int, aggregate: bool) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError(INSTALL) from None
        self.cluster = None
        if address.startswith("local:"):
            workers = address.removeprefix("local:")
            if not workers.isdigit() or int(workers) < 1:
                raise ValueError(f"--cluster local:N needs a worker count N >= 1, got {address!r}")
            self.cluster = LocalCluster(
                n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=None, memory_limit=0
            )
            address = self.cluster.scheduler_address
        try:
            self.client = Client(address, timeout="20s")
        except OSError as e:
            self.close()
            raise ValueError(f"--cluster {address}: cannot reach the scheduler ({e})") from None
        workers_at = sorted(self.client.scheduler_info()["workers"])
        if not workers_at:
            self.close()
            raise ValueError(f"--cluster {address}: the scheduler has no workers")
        futures = [
            self.client.submit(Part, g, fraction, seed, aggregate, actor=True, workers=[w], pure=False)
            for w in workers_at
        ]
        self.parts = [f.result() for f in futures]
        self.ranges = split(g.n, len(self.parts))
        self.pairs: list[np.ndarray] = []
        self.where = f"{len(self.parts)} Dask workers at {address}"

    def call(self, method: str, *args: Any) -> list[Any]:
        futures = [getattr(p, method)(*args) for p in self.parts]
        return [f.result() for f in futures]

    def call_each(self, method: str, args: list[tuple[Any, ...]]) -> list[Any]:
        futures = [getattr(p, method)(*a) for p, a in zip(self.parts, args, strict=True)]
        return [f.result() for f in futures]

    def close(self) -> None:
        self.parts = []
        if getattr(self, "client", None) is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


Pool = LocalPool | DaskPool


def open_pool(cluster: str | None, g: ASGraph, fraction: float, seed: int, aggregate: bool) -> Pool:
    return DaskPool(cluster, g, fraction, seed, aggregate) if cluster else LocalPool(g, fraction, seed, aggregate)
