# SPDX-License-Identifier: Apache-2.0
"""The differential across a chain of Tofino nodes (ffs.lab.chain): the same seeded probes through
the compiled nodes and through the software switch's replay of the same chain, node after node along
the topology's links, each node with the table state read back from its Tofino. Every probe's fate
and output bytes, and every counter of every node, must agree.

    ffs-agent installed every node (ffs.lab.chain)  ->  each node's tables are read back and loaded
    into a software switch of its own  ->  each phase sets the egress states on all  ->  probes
    (ffs.lab.differential.generate, tagged in the source MAC) enter the chain's host ports  ->
    each leaves at any node's host port or is dropped at any hop; the software switch follows a
    frame a node sends on a link into the peer node, as ffs.switch.trace does

Phase "exact": every egress uncongested with C/R* set (γ = 1), probes of every kind, malformed
ones included. Phase "congested": every egress congested at τ = 1 and 2, so that a random draw
decides many probes at each hop: a tap on every link (a raw socket in the namespace of the node
at one end) and the host ports say which node forwarded which probe, and each draw in the
software switch takes that node's decision, so that every counter is compared; probes the egress
drops whatever γ does are left out (ffs.lab.differential.hides_gamma).

    python -m ffs.lab.chain_differential --chain build/chain-model/chain.json [--packets N] [--seed S]
        (in the chain's hosts' namespace: python -m ffs.lab.chain test runs it)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import select
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from ffs.core import p4names
from ffs.core.entries import Update
from ffs.core.topology import Topology, load
from ffs.driver.bfrt import BfrtDriver
from ffs.lab.chain import ChainPlan, socket_in
from ffs.lab.differential import (
    FORGETFUL,
    Cells,
    EgressState,
    Probe,
    Report,
    Wire,
    counters,
    counters_moved,
    drained,
    egress_updates,
    generate,
    read_state,
    tag_of,
)
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import DROP_MALFORMED, Pipeline, Result
from ffs.switch.trace import links

T = TypeVar("T")
PORTS_PER_NODE = 512  # a probe's entry and exit as one number: node index · 512 + device port
PACKET_OUTGOING = 4


def endpoint(index: int, port: int) -> int:
    return index * PORTS_PER_NODE + port


class Taps:
    """Which node sent which probe onto a link: a raw socket on every link, in the namespace of
    the node at one end (its outgoing frames left that node, its incoming ones the peer)."""

    def __init__(self, plan: ChainPlan) -> None:
        self.socks = []
        for n in plan.nodes:
            for port, (peer, _) in n.links.items():
                if n.name < peer:
                    self.socks.append((socket_in(n.netns, n.veths[port]), n.name, peer))
        self.left: dict[str, set[int]] = {n.name: set() for n in plan.nodes}
        self.last_s = time.monotonic()  # when the last frame crossed a link
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        by_fd = {s.fileno(): (s, a, b) for s, a, b in self.socks}
        while not self._stop.is_set():
            for fd in select.select(list(by_fd), [], [], 0.1)[0]:
                s, a, b = by_fd[fd]
                frame, addr = s.recvfrom(65535)
                self.last_s = time.monotonic()
                seq = tag_of(frame)
                if seq is not None:
                    self.left[a if addr[2] == PACKET_OUTGOING else b].add(seq)

    def clear(self) -> None:
        for s in self.left.values():
            s.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for s, _, _ in self.socks:
            s.close()


class SoftChain:
    """The software switch's replay of the chain: a pipeline per node with that node's Tofino
    state, a frame sent on a link processed next by the peer node at its port."""

    def __init__(self, plan: ChainPlan, topo: Topology, states: dict[str, list[Update]], seed: int) -> None:
        self.plan, self.links = plan, links(topo)
        self.pipes: dict[str, Pipeline] = {}
        self.drivers: dict[str, LocalDriver] = {}
        for n in plan.nodes:
            self.pipes[n.name] = Pipeline(seed + n.index)
            self.drivers[n.name] = LocalDriver(self.pipes[n.name])
            self.drivers[n.name].write(states[n.name])
            self.drivers[n.name].set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), FORGETFUL)
        self.index = {n.name: n.index for n in plan.nodes}
        self.drawn: set[int] = set()
        self._seq = 0
        self._decide: Callable[[int, str], bool] | None = None
        for name, pipe in self.pipes.items():
            pipe.normalize.gamma_frac = self._hook(name, pipe.normalize.gamma_frac)  # type: ignore[method-assign]

    def _hook(self, name: str, frac: Callable) -> Callable:
        """γ's random compare at node `name`: the draw noted, and replaced by the Tofino node's
        decision where one is given."""

        def gamma_frac(md, thr) -> None:  # type: ignore[no-untyped-def]
            self.drawn.add(self._seq)
            frac(md, thr)
            if self._decide is not None:
                md.admit_margin = 1 if self._decide(self._seq, name) else 0

        return gamma_frac

    def process(self, p: Probe, t_ns: int, decide: Callable[[int, str], bool] | None = None) -> Result:
        """`p` through the chain: dropped at some hop, or out of a host port (its endpoint)."""
        self._seq, self._decide = p.seq, decide
        node = self.plan.nodes[p.port // PORTS_PER_NODE].name
        port, frame = p.port % PORTS_PER_NODE, p.frame
        for _ in range(4 * len(self.pipes)):
            res = self.pipes[node].process(frame, port, t_ns)
            if res.egress_port is None or res.frame is None:
                return res
            nxt = self.links.get((node, res.egress_port))
            if nxt is None:
                return dataclasses.replace(res, egress_port=endpoint(self.index[node], res.egress_port))
            (node, port), frame = nxt, res.frame
        raise RuntimeError(f"probe {p.seq} loops between the nodes")

    def write(self, ups: dict[str, list[Update]]) -> None:
        for name, u in ups.items():
            self.drivers[name].write(u)


def compare(phase: str, probes: list[Probe], soft: list[Result], got: dict, drawn: set[int], limit: int = 20) -> Report:
    rep = Report(phase, len(probes), random=len(drawn))
    for p, res in zip(probes, soft, strict=True):
        want = [] if res.egress_port is None or res.frame is None else [(res.egress_port, res.frame)]
        seen = got.get(p.seq, [])
        if seen != want:
            rep.mismatches.append(
                f"probe {p.seq} ({p.kind}) into endpoint {p.port}: tofino {[(e, f.hex()) for e, f in seen]}, "
                f"software switch {[(e, f.hex()) for e, f in want] or 'dropped (' + str(res.drop_reason) + ')'}"
                if len(rep.mismatches) < limit
                else f"probe {p.seq}"
            )
    return rep


@dataclasses.dataclass
class Run:
    plan: ChainPlan
    topo: Topology
    seed: int
    packets: int
    gap_s: float = 0.008
    settle_s: float = 1.0
    log: Callable[[str], None] = print


def phase(
    r: Run,
    name: str,
    tofino: dict[str, BfrtDriver],
    cells: Cells,
    wire: Wire,
    taps: Taps,
    soft: SoftChain,
    probes: list[Probe],
    replay: bool,
) -> Report:
    """Send `probes` into the chain, replay them through `soft`, compare outputs and every node's counters."""
    r.log(f"chain differential: phase {name}: {len(probes)} probes, {r.gap_s * 1e3:g} ms apart")
    t0 = time.monotonic()
    before = each_node(tofino, cells.read)
    t1 = time.monotonic()
    wire.got.clear()
    taps.clear()
    for p in probes:
        wire.send(p.port, p.frame)
        time.sleep(r.gap_s)
    t2 = time.monotonic()

    def quiet() -> float:  # no frame has crossed a link or left the chain for this long
        return min(wire.quiet_s(), time.monotonic() - taps.last_s)

    after = each_node(tofino, lambda d: drained(d, r.settle_s, read=cells.read, poll_s=0.5, quiet_s=quiet))
    time.sleep(0.5)  # the taps' and the wire's threads take in the last frames
    r.log(
        f"chain differential: counters read in {t1 - t0:.0f} s, probes sent in {t2 - t1:.0f} s, "
        f"both nodes drained in {time.monotonic() - t2:.0f} s"
    )
    left = {k: set(v) for k, v in taps.left.items()}
    for seq, outs in wire.got.items():
        for e, _ in outs:
            left[r.plan.nodes[e // PORTS_PER_NODE].name].add(seq)

    def decide(seq: int, node: str) -> bool:
        return seq in left[node]

    soft.drawn.clear()
    results = [soft.process(p, 1_000_000 * (i + 1), decide if replay else None) for i, p in enumerate(probes)]
    rep = compare(name, probes, results, wire.got, set(soft.drawn))
    rep.counters_equal = True
    for node in tofino:
        dt, ds = counters_moved(after[node], before[node]), counters_moved(counters(soft.drivers[node]), {})
        for c in dt:
            if dt[c] != ds[c]:
                rep.counters_equal = False
                rep.notes.append(f"{node} {c.rsplit('.', 1)[-1]}: tofino {dt[c]} software {ds[c]}")
    rep.notes.append(f"seed {r.seed}")
    if wire.other:
        rep.notes.append(f"{wire.other} untagged frames seen")
    return rep


def each_node(tofino: dict[str, BfrtDriver], read: Callable[[BfrtDriver], T]) -> dict[str, T]:
    """`read` of every node at once: each node's bf_switchd answers on its own, and a read that
    syncs a counter table from the model takes seconds."""
    with ThreadPoolExecutor(len(tofino)) as ex:
        futures = {k: ex.submit(read, d) for k, d in tofino.items()}
        return {k: f.result() for k, f in futures.items()}


def run(r: Run) -> list[Report]:
    # sync_always=(): every read here is of Cells, a few cells each, from the device one by one
    tofino = {n.name: BfrtDriver(n.grpc, rpc_timeout_s=60.0, sync_always=()) for n in r.plan.nodes}
    for d in tofino.values():
        d.connect(timeout_s=60)
    wire = Wire({endpoint(n.index, port): ifname for n in r.plan.nodes for port, ifname in n.hosts.items()})
    taps = Taps(r.plan)
    try:
        states = {k: read_state(d) for k, d in tofino.items()}
        cells = Cells(r.topo, states)
        for k, d in tofino.items():
            cells.bind(k, d)
        for d in tofino.values():
            d.set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), FORGETFUL)
        ports = tuple(endpoint(n.index, p) for n in r.plan.nodes for p in sorted(n.hosts))
        routes = sorted({rt.prefix for n in r.topo.nodes.values() for rt in n.routes})
        prefixes4, prefixes6 = [p for p in routes if ":" not in p], [p for p in routes if ":" in p]
        r.log(f"chain differential: read back {sum(map(len, states.values()))} entries; probes into {list(ports)}")
        reports: list[Report] = []
        for name, n, congested in (("exact", r.packets, False), ("congested", max(r.packets // 2, 50), True)):
            ups = {node.name: egress_updates(node, _states(node.fairness, congested)) for node in r.topo.nodes.values()}
            for k, u in ups.items():
                tofino[k].write(u)
            soft = SoftChain(r.plan, r.topo, states, r.seed)
            soft.write(ups)
            probes = generate(r.seed * 1000 + len(reports), n, ports, prefixes4, prefixes6, malformed=not congested)
            if congested:
                probes = _gamma_visible(r, states, probes)
            reports.append(phase(r, name, tofino, cells, wire, taps, soft, probes, replay=congested))
            r.log("chain differential: " + reports[-1].line())
        return reports
    finally:
        taps.close()
        wire.close()
        for d in tofino.values():
            d.close()


def _states(egresses: dict, congested: bool) -> dict[str, EgressState]:
    """Uncongested with C/R* known (Algorithm 4 lines 7-8), or congested at τ low enough that γ < 1 often."""
    return {
        e: ((1.0 + i, True, None) if congested else (None, False, 1.25 + i)) for i, e in enumerate(sorted(egresses))
    }


def _gamma_visible(r: Run, states: dict[str, list[Update]], probes: list[Probe]) -> list[Probe]:
    """The probes no hop's egress drops whatever γ decides (replayed at γ = 1 everywhere): a probe
    the frame check drops does not say whether γ admitted it (ffs.lab.differential.hides_gamma)."""
    soft = SoftChain(r.plan, r.topo, states, r.seed)
    soft.write({n.name: egress_updates(n, _states(n.fairness, False)) for n in r.topo.nodes.values()})
    return [p for i, p in enumerate(probes) if soft.process(p, 1_000_000 * (i + 1)).drop_reason != DROP_MALFORMED]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.chain_differential", description=__doc__.split("\n\n")[0])
    ap.add_argument("--chain", type=Path, required=True, help="the chain.json python -m ffs.lab.chain wrote")
    ap.add_argument("--packets", type=int, default=400)
    ap.add_argument("--seed", type=int, help="default: a new one each run, printed (this reproduces it)")
    ap.add_argument("--gap-ms", type=float, default=8.0)
    ap.add_argument("--report", type=Path, help="also write the reports to this file, as JSON")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 1 << 31)
    print(f"chain differential: seed {seed} (--seed {seed} reproduces this run)", file=sys.stderr, flush=True)
    plan = ChainPlan.from_json(json.loads(a.chain.read_text()))
    r = Run(
        plan, load(plan.topology), seed, a.packets, a.gap_ms / 1e3, log=lambda s: print(s, file=sys.stderr, flush=True)
    )
    try:
        reports = run(r)
    except Exception as e:  # noqa: BLE001 - one line for the operator
        print(f"chain differential: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if a.report:
        a.report.write_text(json.dumps([rep.__dict__ for rep in reports], indent=1) + "\n")
    for rep in reports:
        print(rep.line())
        for m in rep.mismatches:
            print("  " + m)
    return 0 if all(rep.ok() for rep in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
