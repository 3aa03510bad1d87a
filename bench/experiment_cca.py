# SPDX-License-Identifier: Apache-2.0
"""The FFS paper's CCA-isolation experiment (Table III, Figure 9), live: two real Linux TCP flows with
different congestion controls, from two hosts in private namespaces, through the software switch
in live mode to one receiver, over a 20 Mb/s bottleneck (the switch's egress port at its speed,
with a 64 KB queue: ffs-switch run --port 3=p3@20Mbps --buffer 3=65536). --delay 10ms gives every
port of the switch the paper's 10 ms one-way delay after its queue (ffs-switch run --delay N=10ms:
a 20 ms round trip, without netem). For every pair of the kernel's CCAs and every scheme — FIFO
(FFS off), CSFQ, FFS-C100, FFS-C85 — it measures the paper's metrics: F (min/max throughput of the
pair), U (utilization), the latency increase and the jitter of UDP probes through the bottleneck.

    python bench/experiment_cca.py [--duration 15] [--ccas reno,cubic,bbr] [--delay 10ms] [--buffer 65536]
                                   [--schemes fifo,csfq,ffs-c100,ffs-c85] [--out docs/results/cca]

Needs root. Results: summary.json and heatmap.png in --out; docs/results.md reports them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "controlplane"))

from ffs.agent.core import Agent  # noqa: E402
from ffs.core import p4names  # noqa: E402
from ffs.core.units import parse_delay  # noqa: E402
from ffs.lab.liverun import live_node  # noqa: E402
from ffs.switch.driver import ModelDriver  # noqa: E402

PY = sys.executable
CAPACITY_MBIT = 20
SCHEMES = ("fifo", "csfq", "ffs-c100", "ffs-c85")
PORTS = (1, 2, 3)  # the dumbbell's switch ports: h1, h2, h3


def topology_for(scheme: str, work: Path) -> Path:
    text = (ROOT / "topologies" / "dumbbell.yaml").read_text().replace("name: dumbbell", "name: cca")
    if scheme == "ffs-c85":
        text = text.replace("    fairness:", "    target_factor: 0.85\n    fairness:", 1)
    p = work / f"{scheme}.yaml"
    p.write_text(text)
    return p


def run_pair(plan, cca1: str, cca2: str, duration: float) -> dict:
    h1, h2, h3 = (plan.host(h).netns for h in ("h1", "h2", "h3"))
    ex = ["ip", "netns", "exec"]
    procs = [
        subprocess.Popen(
            [*ex, h3, PY, "-m", "ffs.lab.cca", "sink", "--duration", str(duration + 3)],
            stdout=subprocess.PIPE,
            text=True,
        ),
        subprocess.Popen([*ex, h3, PY, "-m", "ffs.lab.cca", "echo", "--duration", str(duration + 4)]),
    ]
    time.sleep(0.5)
    base = subprocess.run(
        [*ex, h1, PY, "-m", "ffs.lab.cca", "probe", "--dst", "10.0.3.1", "--duration", "1"],
        capture_output=True,
        text=True,
    )
    base_rtt = [json.loads(x)["rtt_ms"] for x in base.stdout.splitlines()]
    probe = subprocess.Popen(
        [*ex, h1, PY, "-m", "ffs.lab.cca", "probe", "--dst", "10.0.3.1", "--duration", str(duration)],
        stdout=subprocess.PIPE,
        text=True,
    )
    srcs = [
        subprocess.Popen(
            [*ex, h, PY, "-m", "ffs.lab.cca", "source", "--dst", "10.0.3.1", "--cca", c, "--duration", str(duration)]
        )
        for h, c in ((h1, cca1), (h2, cca2))
    ]
    lines = [json.loads(x) for x in procs[0].stdout]
    rtts = [json.loads(x)["rtt_ms"] for x in probe.stdout]
    for p in srcs + procs + [probe]:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    steady = [x["rates_bps"] for x in lines if duration / 3 <= x["t"] <= duration]
    t1 = statistics.mean(r.get("10.0.1.1", 0.0) for r in steady) if steady else 0.0
    t2 = statistics.mean(r.get("10.0.2.1", 0.0) for r in steady) if steady else 0.0
    base_med = statistics.median(base_rtt) if base_rtt else float("nan")
    load_rtts = rtts[len(rtts) // 3 :]
    return {
        "cca1": cca1,
        "cca2": cca2,
        "t1_bps": t1,
        "t2_bps": t2,
        "F": min(t1, t2) / max(t1, t2) if max(t1, t2) > 0 else 0.0,
        "U": (t1 + t2) / (CAPACITY_MBIT * 1e6),
        "base_rtt_ms": base_med,
        "latency_increase_ms": (statistics.median(load_rtts) - base_med) if load_rtts else None,
        "jitter_ms": statistics.pstdev(load_rtts) if len(load_rtts) > 1 else None,
        "probe_loss": 1 - len(rtts) / max(1, duration / 0.1),
    }


def run_scheme(
    scheme: str, ccas: list[str], duration: float, work: Path, delay_s: float = 0.0, buffer: int = 65536
) -> list[dict]:
    topo_file = topology_for(scheme, work)
    # the bottleneck is the switch's own p3 at its 20 Mb/s speed with `buffer` bytes of queue; every
    # port's wire delays what its queue sent by `delay_s` (a data packet crosses p3's, its ACK p1's)
    extra = [f"--buffer=3={buffer}"] + (["--csfq"] if scheme == "csfq" else [])
    extra += [f"--delay={p}={delay_s * 1e3:g}ms" for p in PORTS if delay_s]
    sub = work / scheme
    sub.mkdir(exist_ok=True)
    with live_node(topo_file, sub, agent=scheme.startswith("ffs"), period_ms=50, switch_args=extra) as node:
        if not scheme.startswith("ffs"):  # FFS off: forwarding only (CSFQ, if any, runs in the switch loop)
            d = ModelDriver(node.switch_address)
            d.connect(timeout_s=10)
            Agent(d, node.topology, node.plan.node).install()
            d.clear_table(p4names.PAIRS.name)
            d.close()
        out = []
        for c1, c2 in itertools.combinations_with_replacement(ccas, 2):
            r = run_pair(node.plan, c1, c2, duration)
            r["scheme"] = scheme
            print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
            out.append(r)
        return out


def aggregate(rows: list[dict]) -> dict:
    out = {}
    for s in SCHEMES:
        r = [x for x in rows if x["scheme"] == s]
        if not r:
            continue
        lat = [x["latency_increase_ms"] for x in r if x["latency_increase_ms"] is not None]
        jit = [x["jitter_ms"] for x in r if x["jitter_ms"] is not None]
        out[s] = {
            "F": statistics.mean(x["F"] for x in r),
            "U": statistics.mean(x["U"] for x in r),
            "L(2)": sum(v < 2 for v in lat) / len(lat) if lat else None,
            "L(50)": sum(v < 50 for v in lat) / len(lat) if lat else None,
            "J(2)": sum(v < 2 for v in jit) / len(jit) if jit else None,
            "J(50)": sum(v < 50 for v in jit) / len(jit) if jit else None,
            "pairs": len(r),
        }
    return out


def heatmap(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pairs = sorted({(x["cca1"], x["cca2"]) for x in rows})
    data = np.array(
        [
            [next((x["F"] for x in rows if x["scheme"] == s and (x["cca1"], x["cca2"]) == p), np.nan) for s in SCHEMES]
            for p in pairs
        ]
    )
    fig, ax = plt.subplots(figsize=(5.5, 0.5 * len(pairs) + 1.5))
    im = ax.imshow(data, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(SCHEMES)), SCHEMES)
    ax.set_yticks(range(len(pairs)), [f"{a} vs {b}" for a, b in pairs])
    for i in range(len(pairs)):
        for j in range(len(SCHEMES)):
            if not np.isnan(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2f}", ha="center", va="center", color="w" if data[i, j] < 0.6 else "k")
    ax.set_title("F = min/max throughput of the pair (1 = equal)")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=15.0)
    ap.add_argument("--ccas", default=None)
    ap.add_argument("--delay", default="0", help="one-way delay of every switch port after its queue (the paper: 10ms)")
    ap.add_argument("--buffer", type=int, default=65536, help="bytes of the bottleneck's queue")
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "cca"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("experiment-cca: needs root (namespaces, veth, tc)", file=sys.stderr)
        return 2
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    ccas = a.ccas.split(",") if a.ccas else [c for c in ("reno", "cubic", "bbr") if c in avail]
    delay_s = parse_delay(a.delay)
    schemes = [s for s in a.schemes.split(",") if s in SCHEMES]
    work = Path(tempfile.mkdtemp(prefix="ffs-cca-"))
    rows = []
    started = time.monotonic()
    for s in schemes:
        rows += run_scheme(s, ccas, a.duration, work, delay_s, a.buffer)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "capacity_mbit": CAPACITY_MBIT,
        "duration_s": a.duration,
        "ccas": ccas,
        "available_ccas": avail,
        "one_way_delay_ms": delay_s * 1e3,
        "delay_where": "switch ports, after the queue",
        "buffer_bytes": a.buffer,
        "elapsed_s": round(time.monotonic() - started, 1),
        "pairs": rows,
        "schemes": aggregate(rows),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    heatmap(rows, out / "heatmap.png")
    print(json.dumps(summary["schemes"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
