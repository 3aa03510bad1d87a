# SPDX-License-Identifier: Apache-2.0
"""The CSFQ baseline (ffs.lab.baselines) checked against the CSFQ paper (papers/001), and the label
lie FFS §VII-A says fools (H)CSFQ, in virtual time (docs/results.md, "CSFQ against the CSFQ paper").

- Figure 4a: one 10 Mb/s link, 32 UDP flows, flow i sends (i + 1) times its fair share of
  0.3125 Mb/s; the paper's CSFQ keeps every flow within −11 % / +5 % of 0.3125 over 10 s.
- Table 4 (relabeling, Figure 10): two 10 Mb/s links in a row; flows 1 and 2 enter before link 1,
  flow 3 after it, all three UDP at 10 Mb/s; on link 2 the paper measures 3.36 / 3.32 / 3.28 Mb/s
  (fair: 3.33), which needs the labels that link 1 rewrote to α.
- The lie: five flows of 4 Mb/s into a 10 Mb/s link (fair share 2); one flow's edge labels its
  packets with a tenth of its rate. A CSFQ core believes the label, so it drops none of that flow.

The paper's parameters: K = K_α = K_c = 100 ms, a 64 KB buffer per output, UDP sources whose
inter-arrival times are uniform in [0.5, 1.5) of the mean. The paper does not give a packet size;
1000 bytes here. Every rate is a line rate (docs/spec.md §4, a packet costs its IP bytes + 38),
the link's and the flows' alike, so the flows' ratios to the link are the paper's.

FFS beside CSFQ uses what CSFQ's per-flow fairness corresponds to (FFS §VII-A: "equal fairness
matrix entries"): one ingress per flow with equal shares; for Table 4 the second node's shares
follow the flows (2/3 of link 2 to the link from the first node, 1/3 to flow 3's port).
"""

from __future__ import annotations

from dataclasses import dataclass

from ffs.core.allocator import allocate
from ffs.lab.attacks import loads
from ffs.lab.baselines import Csfq
from ffs.lab.experiments import run_scenario

MB = 1e6
LINK = 10 * MB
BUFFER = 64 * 1024  # bytes per output port (the paper's 64 KB)
K_S = 0.1  # K, K_alpha, K_c: the paper's 100 ms
SIZE = 1000  # IP bytes per packet
FLOWS_4A = 32
FAIR_4A = LINK / FLOWS_4A  # 0.3125 Mb/s
PAPER_4A = (-0.11, 0.05)  # the band of Figure 4a's CSFQ throughputs around the fair share
PAPER_TABLE4 = {"flow1": 3.36e6, "flow2": 3.32e6, "flow3": 3.28e6}
LIAR_FLOWS, LIAR_RATE, LIE = 5, 4 * MB, 0.1


def _iface(
    name: str, port: int, cap: float, *, trust: bool = False, peer: str | None = None, buffer: int | None = None
) -> str:
    extra = (
        (", trust: true" if trust else "")
        + (f", peer: {peer}" if peer else "")
        + (f", buffer: {buffer}" if buffer else "")
    )
    return f"      {name}: {{capacity: {cap:.0f}, port: {port}{extra}}}"


def _one_link(
    name: str, duration: float, flows: list[tuple[str, float, str]], share: float, trust: bool = False
) -> str:
    """One router whose ingresses p0, p1, ... each carry one flow (name, demand, extra stream
    fields) and share the link j equally at `share` each."""
    ins = "\n".join(_iface(f"p{i}", i + 1, 2 * LINK, trust=trust) for i in range(len(flows)))
    shares = ", ".join(f"p{i}: {share:.0f}" for i in range(len(flows)))
    streams = "\n".join(
        f"  - {{name: {flow}, path: [{{node: r, ingress: p{i}, egress: j}}], demand: {demand:.0f}, "
        f"packet_size: {SIZE}{extra}}}"
        for i, (flow, demand, extra) in enumerate(flows)
    )
    return f"""
name: {name}
duration: {duration}
nodes:
  r:
    interfaces:
{ins}
{_iface("j", 40, LINK, buffer=BUFFER)}
    fairness:
      j: {{{shares}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: j}}
streams:
{streams}
"""


def fig4a_topology(duration: float) -> str:
    flows = [(f"flow{i}", (i + 1) * FAIR_4A, "") for i in range(FLOWS_4A)]
    return _one_link("csfq-fig4a", duration, flows, FAIR_4A)


def fig10_topology(duration: float) -> str:
    third = LINK / 3
    return f"""
name: csfq-fig10
duration: {duration}
nodes:
  r1:
    interfaces:
{_iface("a1", 1, 2 * LINK)}
{_iface("a2", 2, 2 * LINK)}
{_iface("l1", 3, LINK, peer="r2.u", buffer=BUFFER)}
    fairness:
      l1: {{a1: {LINK / 2:.0f}, a2: {LINK / 2:.0f}}}
  r2:
    interfaces:
{_iface("u", 1, LINK, peer="r1.l1")}
{_iface("a3", 2, 2 * LINK)}
{_iface("l2", 3, LINK, buffer=BUFFER)}
    fairness:
      l2: {{u: {2 * third:.0f}, a3: {third:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: l2}}
streams:
  - {{name: flow1, path: [{{node: r1, ingress: a1, egress: l1}}, {{node: r2, ingress: u, egress: l2}}], demand:
  {LINK:.0f}, packet_size: {SIZE}}}
  - {{name: flow2, path: [{{node: r1, ingress: a2, egress: l1}}, {{node: r2, ingress: u, egress: l2}}], demand:
  {LINK:.0f}, packet_size: {SIZE}}}
  - {{name: flow3, path: [{{node: r2, ingress: a3, egress: l2}}], demand: {LINK:.0f}, packet_size: {SIZE}}}
""".replace(
        "    fairness:\n      l1", "    routes:\n      - {prefix: 10.0.3.0/24, interface: l1}\n    fairness:\n      l1"
    )


def liar_topology(duration: float) -> str:
    """Five ingresses with equal shares; `liar`'s labels claim a tenth of its rate. Every port
    trusts its labels (links from upstream nodes): FFS's defence is normalization, not a reset."""
    flows = [("liar", LIAR_RATE, f", rf: {LIE}")] + [(f"honest{i}", LIAR_RATE, "") for i in range(1, LIAR_FLOWS)]
    return _one_link("csfq-liar", duration, flows, LINK / LIAR_FLOWS, trust=True)


@dataclass(frozen=True)
class Run:
    experiment: str
    scheme: str  # csfq, ffs or fifo
    measured: dict[str, float]  # stream -> bit/s over the window
    exact: dict[str, float]  # stream -> the fair rate (max-min = exact FFS of these matrices)


def run(experiment: str, scheme: str, duration: float = 11.0, seed: int = 1) -> Run:
    """Measured over [duration − 10 s, duration) (the paper's 10 s average) when the run is longer
    than 10 s, else over its second half."""
    topo = loads({"fig4a": fig4a_topology, "table4": fig10_topology, "liar": liar_topology}[experiment](duration))
    lies = {"liar": LIE} if experiment == "liar" else {}
    csfq = Csfq(K_S, K_S, K_S, seed=seed, lies=lies) if scheme == "csfq" else None
    w0 = duration - 10.0 if duration > 10.0 else duration / 2
    res = run_scenario(topo, scheme, duration_s=duration, seed=seed, window=(w0, duration), csfq=csfq, bin_s=0.05)
    exact = {s.name: s.rate for s in allocate(topo).streams}
    if experiment == "liar":  # the honest allocation: what the liar would get telling the truth
        exact = {s.name: s.rate for s in allocate(loads(liar_topology(duration).replace(f", rf: {LIE}", ""))).streams}
    return Run(experiment, scheme, {s["stream"]: s["measured"] for s in res.streams}, exact)


def band(r: Run) -> tuple[float, float]:
    """The lowest and highest (measured − fair) / fair over the flows (Figure 4a's −11 % / +5 %)."""
    errs = [(r.measured[k] - r.exact[k]) / r.exact[k] for k in r.exact]
    return min(errs), max(errs)
