# SPDX-License-Identifier: Apache-2.0
"""The FFS paper's rate-feedback evaluation (§IX, Figures 5 and 6), live: FFS-aware endpoints
(`ffs-transfer`, MinTime and MinLoss), the kernel's TCP (cubic, bbr) and cubic capped by the
indicator (partial deployment, App. C: `ffs-transfer --scheme partial`) moving 1 and 10 MB from one
and two senders through the software switch with its agent (FFS-C85, RI on) over a 20 Mb/s egress
(topologies/endpoint.yaml; a tbf FIFO of 64 KB behind it; --delay 10ms: the paper's 10 ms one-way
delay on every port of the switch, after its queue, a 20 ms round trip without netem). Per scheme:
transfer time and the router's drops (FFS drops of the sender's pair + the FIFO's drops). Then two
10 MB transfers, the second 2 s after the first: the router's arrival and drop rate per sender
over time (Figure 6).

    python bench/experiment_endpoint.py [--out docs/results/endpoint]
        [--schemes minloss,mintime,cubic,bbr] [--delay 10ms]

Needs root. Results: summary.json, transfers.png and staggered.png in --out; docs/results.md reports them.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "controlplane"))

from ffs.core import p4names  # noqa: E402
from ffs.core.program import pairs_of  # noqa: E402
from ffs.core.units import parse_delay  # noqa: E402
from ffs.lab.liverun import live_node  # noqa: E402
from ffs.switch.driver import ModelDriver  # noqa: E402

PY = sys.executable
# the hosts' processes import this tree's ffs, installed or not
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "controlplane"), os.environ.get("PYTHONPATH")]))
TOPO = ROOT / "topologies" / "endpoint.yaml"
CAPACITY_MBIT = 20
DST = "10.0.3.1"
SCHEMES = ("minloss", "mintime", "cubic", "bbr", "partial")  # partial: cubic capped by the indicator (App. C)
SENDERS = {"h1": "p1", "h2": "p2"}
POLL_S = 0.1
PERIOD_MS = 100  # the agent's control period
# MinLoss: echoes of packets sent within 2 periods + the F estimator's 20 ms of a rate change are
# stale; RRIs apply to the rate sent over one period; increases must hold for one period; 3 % below
# the indicator (docs/endpoint.md)
EXTRA = {
    "minloss": [
        "--settle",
        "0.25",
        "--measure",
        str(PERIOD_MS / 1000),
        "--confirm",
        str(PERIOD_MS / 1000),
        "--headroom",
        "0.03",
    ]
}


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


# --- TCP bulk transfer with a chosen congestion control (the comparison) --------------------------

TCP_INFO_TOTAL_RETRANS = 100  # byte offset of tcpi_total_retrans in struct tcp_info (linux/tcp.h)


def tcp_send(dst: str, port: int, nbytes: int, cca: str) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
    t0 = time.monotonic()
    s.connect((dst, port))
    buf = bytes(1 << 16)
    left = nbytes
    while left > 0:
        left -= s.send(buf[: min(left, len(buf))])
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # the receiver's "all arrived"
    dur = time.monotonic() - t0
    info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    retrans = (
        struct.unpack_from("I", info, TCP_INFO_TOTAL_RETRANS)[0] if len(info) >= TCP_INFO_TOTAL_RETRANS + 4 else None
    )
    s.close()
    return {
        "scheme": cca,
        "bytes": nbytes,
        "transfer_s": dur,
        "goodput_bps": nbytes * 8 / dur,
        "retransmitted": retrans,
    }


def tcp_recv(port: int, timeout_s: float) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    srv.settimeout(timeout_s)
    c, _ = srv.accept()
    c.settimeout(timeout_s)
    while c.recv(1 << 16):
        pass
    c.send(b"!")
    c.close()
    srv.close()


# --- one run: receivers on h3, senders on h1/h2, the router's counters polled ------------------------


class Router:
    """The node's per-pair arrivals and FFS drops (pair_bytes, pair_drops) and the FIFO's drops."""

    def __init__(self, node) -> None:
        self.node = node
        self.d = ModelDriver(node.switch_address)
        self.d.connect(timeout_s=10)
        n = node.topology.nodes[node.plan.node]
        self.pid = {
            h: next(p.pid for p in pairs_of(n) if p.ingress == i and p.egress == "p3") for h, i in SENDERS.items()
        }

    def counters(self) -> dict:
        b = self.d.read_counters(p4names.PAIR_BYTES.name, list(self.pid.values()))
        dr = self.d.read_counters(p4names.PAIR_DROPS.name, list(self.pid.values()))
        out = {
            h: {"packets": b[p].packets, "bytes": b[p].bytes, "drops": dr[p].packets, "drop_bytes": dr[p].bytes}
            for h, p in self.pid.items()
        }
        q = sh(
            "ip", "netns", "exec", self.node.plan.switch_ns, "tc", "-s", "qdisc", "show", "dev", "p3", check=False
        ).stdout
        words = q.replace(",", " ").split()
        out["fifo_drops"] = int(words[words.index("dropped") + 1]) if "dropped" in words else 0
        return out


def wait_listening(ns: str, scheme: str, n: int, timeout_s: float = 20.0) -> None:
    """Until the receivers' sockets exist (a loaded machine takes a while to start Python)."""
    raw = scheme in ("minloss", "mintime")
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        lines = sh("ip", "netns", "exec", ns, "cat", "/proc/net/raw" if raw else "/proc/net/tcp").stdout.splitlines()[
            1:
        ]
        # raw: local address ":00FD" is IP protocol 253; tcp: state 0A is LISTEN
        if sum(1 for x in lines if (x.split()[1].endswith(":00FD") if raw else x.split()[3] == "0A")) >= n:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{scheme}: the receivers did not start within {timeout_s:g} s")


def run_transfers(node, router: Router, scheme: str, plan: list[tuple[str, int, float]], series: bool = False) -> dict:
    """plan: (sender host, bytes, start delay in s). Returns per-sender results and router counts."""
    ex = lambda h: node.exec_args(h)  # noqa: E731
    recvs, sends = [], []
    for k, _ in enumerate(plan):
        port = 5301 + k
        args = _recv_args(scheme, port)
        recvs.append(subprocess.Popen(ex("h3") + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    wait_listening(node.plan.host("h3").netns, scheme, len(plan))
    before = router.counters()
    samples: list[dict] = []
    stop = threading.Event()

    def poll() -> None:
        t0 = time.monotonic()
        while not stop.is_set():
            samples.append({"t": time.monotonic() - t0, **router.counters()})
            stop.wait(POLL_S)

    poller = threading.Thread(target=poll, daemon=True)
    if series:
        poller.start()
    t0 = time.monotonic()
    for k, (h, nbytes, delay) in enumerate(plan):
        wait = t0 + delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        port = 5301 + k
        args = _send_args(scheme, port, nbytes)
        sends.append(
            (h, delay, subprocess.Popen(ex(h) + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        )
    results, received = _collect(scheme, sends, recvs)
    time.sleep(0.3)
    stop.set()
    if series:
        poller.join()
    after = router.counters()
    fifo, drops, arrivals = _router_losses(results, received, before, after)
    return {
        "scheme": scheme,
        "streams": len(plan),
        "bytes": plan[0][1],
        "transfers": results,
        "fifo_drops": fifo,
        "router_drops": drops,
        "loss": drops / arrivals if arrivals else 0.0,
        "series": rates_over_time(samples) if series else None,
    }


def _recv_args(scheme: str, port: int) -> list[str]:
    """The receiver's command for `scheme` on `port`."""
    if scheme in ("minloss", "mintime"):
        return [PY, "-m", "ffs.lab.cli.transfer", "recv", "--port", str(port), "--timeout", "40", "--json"]
    if scheme == "partial":
        return [PY, "-m", "ffs.lab.cli.transfer", "recv", "--tcp", "--port", str(port), "--timeout", "40", "--json"]
    return [PY, str(Path(__file__).resolve()), "tcp-recv", "--port", str(port)]


def _send_args(scheme: str, port: int, nbytes: int) -> list[str]:
    """The sender's command for `scheme` to `port`."""
    if scheme not in ("minloss", "mintime", "partial"):  # a kernel CCA
        return [
            PY,
            str(Path(__file__).resolve()),
            "tcp-send",
            "--port",
            str(port),
            "--bytes",
            str(nbytes),
            "--cca",
            scheme,
        ]
    send = [PY, "-m", "ffs.lab.cli.transfer", "send", "--dst", DST, "--port", str(port), "--bytes", str(nbytes)]
    if scheme == "partial":
        how = ["--scheme", "partial", "--cca", "cubic", "--settle", "0.25", "--measure", str(PERIOD_MS / 1000)]
    else:
        how = ["--scheme", scheme, *EXTRA.get(scheme, []), "--capacity", f"{CAPACITY_MBIT}Mbps"]
    return [*send, *how, "--timeout", "40", "--json"]


def _collect(scheme: str, sends: list, recvs: list) -> tuple[list[dict], list]:
    """Each sender's JSON report (a failed sender fails the run) and each receiver's, or None."""
    results = []
    for h, delay, p in sends:
        out, err = p.communicate(timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"{scheme} sender on {h}: {err.strip()}")
        r = json.loads(out)
        r.update({"host": h, "start_s": delay})
        results.append(r)
    received = []
    for p in recvs:
        out, _ = p.communicate(timeout=60)
        received.append(json.loads(out) if out.strip().startswith("{") else None)
    return results, received


def _router_losses(results: list[dict], received: list, before: dict, after: dict) -> tuple[int, int, int]:
    """Counts each transfer's packets and drops at the router; (FIFO drops, all drops, arrivals)."""
    for r, got in zip(results, received, strict=False):
        r["receiver"] = got
        h = r["host"]
        arr = after[h]["packets"] - before[h]["packets"]
        r["router_packets"] = arr
        r["router_drops"] = after[h]["drops"] - before[h]["drops"]
        r["ffs_loss"] = r["router_drops"] / arr if arr else 0.0
    fifo = after["fifo_drops"] - before["fifo_drops"]
    arrivals = sum(r["router_packets"] for r in results)
    drops = sum(r["router_drops"] for r in results) + fifo
    return fifo, drops, arrivals


def rates_over_time(samples: list[dict]) -> dict:
    out = {"t": [], **{h: {"arrival_bps": [], "drop_bps": []} for h in SENDERS}}
    for a, b in zip(samples, samples[1:], strict=False):
        dt = b["t"] - a["t"]
        out["t"].append(b["t"])
        for h in SENDERS:
            out[h]["arrival_bps"].append((b[h]["bytes"] - a[h]["bytes"]) * 8 / dt)
            out[h]["drop_bps"].append((b[h]["drop_bytes"] - a[h]["drop_bytes"]) * 8 / dt)
    return out


def plot(summary: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in summary["runs"] if r["series"] is None]
    labels = [f"{r['scheme']}\n[{r['streams']}] {r['bytes'] // 10**6} MB" for r in runs]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(max(8, 0.6 * len(runs)), 6), sharex=True)
    x = range(len(runs))
    a1.bar(x, [max(t["transfer_s"] for t in r["transfers"]) for r in runs])
    a1.set_ylabel("transfer time (s)")
    a2.bar(x, [100 * r["loss"] for r in runs], color="tab:red")
    a2.set_ylabel("router drops (% of arrivals)")
    a2.set_xticks(list(x), labels, fontsize=7)
    a1.set_title("1 and [2] streams over a 20 Mb/s FFS-C85 egress (live software switch)")
    fig.tight_layout()
    fig.savefig(out / "transfers.png", dpi=110)
    plt.close(fig)
    stag = [r for r in summary["runs"] if r["series"] is not None]
    fig, axes = plt.subplots(len(stag), 1, figsize=(8, 2.2 * len(stag)), sharex=True, squeeze=False)
    for ax, r in zip(axes[:, 0], stag, strict=False):
        s = r["series"]
        for h, c in zip(SENDERS, ("tab:blue", "tab:orange"), strict=False):
            ax.plot(s["t"], [v / 1e6 for v in s[h]["arrival_bps"]], color=c, label=f"{h} arrival")
            ax.plot(s["t"], [v / 1e6 for v in s[h]["drop_bps"]], color=c, linestyle=":", label=f"{h} drops")
        ax.set_ylabel("Mb/s")
        ax.set_title(f"{r['scheme']}: router drops {r['router_drops']} packets", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("time (s); the second 10 MB transfer starts at 2 s")
    fig.tight_layout()
    fig.savefig(out / "staggered.png", dpi=110)
    plt.close(fig)


def bottleneck(plan) -> None:
    """The 20 Mb/s token bucket on p3 with a 64 kB FIFO, set before the switch starts."""
    sh(
        "ip",
        "netns",
        "exec",
        plan.switch_ns,
        "tc",
        "qdisc",
        "add",
        "dev",
        "p3",
        "root",
        "tbf",
        "rate",
        f"{CAPACITY_MBIT}mbit",
        "burst",
        "16kb",
        "limit",
        "64kb",
    )


def run_all(node, router: Router, schemes: list[str]) -> list[dict]:
    """Every scheme on 1 and 2 streams of 1 and 10 MB, then 2 staggered 10 MB transfers with series."""
    runs: list[dict] = []
    for scheme in schemes:
        for plan in (
            [("h1", 10**6, 0.0)],
            [("h1", 10**7, 0.0)],
            [("h1", 10**6, 0.0), ("h2", 10**6, 0.0)],
            [("h1", 10**7, 0.0), ("h2", 10**7, 0.0)],
        ):
            r = run_transfers(node, router, scheme, plan)
            print(json.dumps({k: v for k, v in r.items() if k != "series"}), flush=True)
            runs.append(r)
            time.sleep(1.0)  # the egress goes idle: τ's next congestion starts from a quiet node
    for scheme in schemes:
        r = run_transfers(node, router, scheme, [("h1", 10**7, 0.0), ("h2", 10**7, 2.0)], series=True)
        print(json.dumps({k: v for k, v in r.items() if k != "series"}), flush=True)
        runs.append(r)
        time.sleep(1.0)
    return runs


def summarize(runs: list[dict], avail: list[str], delay_s: float, started: float) -> dict:
    stag = {r["scheme"]: r["router_drops"] for r in runs if r["series"] is not None}
    return {
        "capacity_mbit": CAPACITY_MBIT,
        "target_factor": 0.85,
        "one_way_delay_ms": delay_s * 1e3,
        "delay_where": "switch ports, after the queue",
        "available_ccas": avail,
        "fifo_bytes": 65536,
        "agent_period_ms": PERIOD_MS,
        "minloss_args": EXTRA["minloss"],
        "elapsed_s": round(time.monotonic() - started, 1),
        "staggered_drops": stag,
        "staggered_drops_vs_minloss": {
            k: (v / stag["minloss"] if stag.get("minloss") else None) for k, v in stag.items()
        },
        "runs": runs,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd")
    a = sub.add_parser("tcp-send")
    a.add_argument("--dst", default=DST)
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--bytes", type=int, required=True)
    a.add_argument("--cca", required=True)
    b = sub.add_parser("tcp-recv")
    b.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "endpoint"))
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--delay", default="0", help="one-way delay of every switch port after its queue (the paper: 10ms)")
    args = ap.parse_args()
    if args.cmd == "tcp-send":
        print(json.dumps(tcp_send(args.dst, args.port, args.bytes, args.cca)))
        return 0
    if args.cmd == "tcp-recv":
        tcp_recv(args.port, 40.0)
        return 0
    if os.geteuid() != 0:
        print("experiment-endpoint: needs root (namespaces, veth, tc, raw sockets)", file=sys.stderr)
        return 2
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    schemes = [
        s
        for s in args.schemes.split(",")
        if s in ("minloss", "mintime") or s in avail or (s == "partial" and "cubic" in avail)
    ]
    delay_s = parse_delay(args.delay)

    # every port's wire delays what its queue sent: a data packet crosses p3's, its ACK or echo p1's or p2's
    delays = [f"--delay={p}={delay_s * 1e3:g}ms" for p in (1, 2, 3) if delay_s]
    work = Path(tempfile.mkdtemp(prefix="ffs-endpoint-"))
    started = time.monotonic()
    with live_node(TOPO, work, agent=True, period_ms=PERIOD_MS, switch_args=delays, before_switch=bottleneck) as node:
        runs = run_all(node, Router(node), schemes)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(runs, avail, delay_s, started)
    stag = summary["staggered_drops"]
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, out)
    print(json.dumps({"staggered_drops": stag, "elapsed_s": summary["elapsed_s"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
