# SPDX-License-Identifier: Apache-2.0
"""A topology in virtual time: one software-switch pipeline and one agent per node, the agents
installed (the set-up of scenario runs, `ffs-switch replay` and the benchmarks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ffs.agent.core import Agent
from ffs.core.topology import Topology
from ffs.switch.driver import LocalDriver
from ffs.switch.fast import new_pipeline
from ffs.switch.pipeline import Pipeline
from ffs.switch.tm import configure_node


@dataclass
class Nodes:
    pipelines: dict[str, Pipeline]  # node -> its pipeline
    agents: dict[str, Agent]  # node -> its agent, on a LocalDriver of that pipeline


def build_nodes(
    topo: Topology,
    seed: int | None = None,
    engine: str = "auto",
    *,
    pipeline_of: Callable[[int], Pipeline] | None = None,
    **agent_kw: Any,
) -> Nodes:
    """Pipelines seeded seed, seed + 1, ... in the order of the node names (the topology's seed by
    default), made by `pipeline_of(seed)` or else `new_pipeline(seed, engine)`, their ports paced
    at the topology's speeds (`ffs.switch.tm`); each node's agent (`agent_kw` passed on) installed
    on its pipeline."""
    seed = topo.seed if seed is None else seed
    pipes = {
        n: pipeline_of(seed + k) if pipeline_of is not None else new_pipeline(seed + k, engine)
        for k, n in enumerate(sorted(topo.nodes))
    }
    for n, p in pipes.items():
        configure_node(p.tm, topo.nodes[n])
    agents = {n: Agent(LocalDriver(p), topo, n, **agent_kw) for n, p in pipes.items()}
    for a in agents.values():
        a.install()
    return Nodes(pipes, agents)
