# SPDX-License-Identifier: Apache-2.0
"""The main job on tofino-model: ffs-agent --target tofino keeps τ on bf_switchd + tofino-model
while a well-behaved sender and a flood share the dumbbell's bottleneck, and an ffsctl matrix
change moves the allocation halfway through.

    SDE scripts start tofino-model and bf_switchd (port map: ptf-tests/port_maps/<chip>-model.json)
    -> ffs-agent programs node s1 from the topology and runs its τ loop over BF-Runtime
    -> paced frames enter the model's ports from each stream's veth; the receiver side counts what
       leaves the bottleneck's port, per source, per second
    -> at half time: ffsctl matrix set (the well-behaved sender's share cut to a quarter)

Each second prints what the receiver gets from each sender against the exact FFS allocation
(Eq. 1-2) of the matrix in force, and A, R* and τ of the bottleneck from the agent. Verdict, per
phase, over its last 40 %: every stream within 25 % of its exact rate, and the bottleneck at most
115 % of its target (Σ_i M(i, j), which the change moves too) (tofino-model forwards a few hundred packets a second, in
bursts: the
bounds are wider than the software switch's).

    python -m ffs.lab.demo_tofino [TOPOLOGY] [--chip tofino2] [--duration S]    (root, SDE; make demo-tofino-model)
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ffs.core.allocator import allocate
from ffs.core.api_client import ApiError, call
from ffs.core.frames import ipv4_frame
from ffs.core.topology import Topology, load
from ffs.core.units import format_rate
from ffs.lab.differential import port_map_veths
from ffs.lab.sde import CHIPS, Sde, chip_of, default_port_map, sde_missing, stop_process
from ffs.lab.traffic import wire_bytes

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
WITHIN = 0.25
HOLD = 1.15
CUT = 0.25  # the matrix change: the first stream's share becomes this part of what it was


@dataclass(frozen=True)
class Stream:
    name: str
    port: int  # device port it enters
    src: str
    dst: str
    demand: float
    size: int


def streams(topo: Topology, node: str) -> tuple[list[Stream], int, str]:
    """The topology's streams through `node`, their bottleneck egress port and name."""
    n = topo.node(node)
    out, egress = [], None
    for i, s in enumerate(topo.streams):
        hop = s.path[0]
        iface, egress = n.interfaces[hop.ingress], hop.egress
        src_net = next(r.prefix for r in n.routes if r.interface == hop.ingress)
        dst_net = next(r.prefix for r in n.routes if r.interface == hop.egress)
        hosts = list(ipaddress.ip_network(src_net).hosts())
        out.append(
            Stream(
                s.name,
                iface.port,
                str(hosts[i]),
                str(list(ipaddress.ip_network(dst_net).hosts())[0]),
                s.demand,
                s.packet_size,
            )
        )
    assert egress is not None, "the topology has no streams"
    return out, n.interfaces[egress].port, egress


class Sender(threading.Thread):
    """Paced frames of one stream into its port's veth (no catch-up burst after a stall)."""

    def __init__(self, s: Stream, ifname: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.s, self.stop = s, stop
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((ifname, 0))
        self.frame = ipv4_frame(s.src, s.dst, s.size)  # packet_size is the IP packet, as the demand
        self.sent = 0

    def run(self) -> None:
        gap = wire_bytes(self.s.size) * 8 / self.s.demand  # the demand is a line rate (spec §4)
        due = time.monotonic()
        while not self.stop.is_set():
            self.sock.send(self.frame)
            self.sent += 1
            due = max(due + gap, time.monotonic() - gap)
            self.stop.wait(max(0.0, due - time.monotonic()))


class Receiver(threading.Thread):
    """Line-rate bytes per source address per second on the bottleneck's veth, as the shares count them."""

    def __init__(self, ifname: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.stop = stop
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((ifname, 0))
        self.sock.settimeout(0.2)
        self.bins: dict[int, dict[str, int]] = {}
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                frame, addr = self.sock.recvfrom(65535)
            except TimeoutError:
                continue
            if addr[2] == PACKET_OUTGOING or len(frame) < 34 or frame[12:14] != b"\x08\x00":
                continue
            src = socket.inet_ntoa(frame[26:30])
            ip_len = struct.unpack("!H", frame[16:18])[0]
            b = self.bins.setdefault(int(time.monotonic() - self.t0), {})
            b[src] = b.get(src, 0) + wire_bytes(ip_len)


def run(
    topology: Path, node: str, port_map: Path, duration_s: float, period_ms: float, log_dir: Path, chip: str = "tofino"
) -> bool:
    why = sde_missing("ffs", chip)
    if why:
        raise RuntimeError(why)
    topo = load(topology)
    tx, egress_port, egress = streams(topo, node)
    veths = port_map_veths(port_map)
    _veth_setup(port_map)
    sde = Sde("ffs", log_dir, chip, port_map=port_map.resolve())
    stop = threading.Event()
    agent = None
    with tempfile.TemporaryDirectory(prefix="ffs-demo-tofino-") as tmp:
        try:
            print(f"starting tofino-model and bf_switchd (logs in {log_dir})", flush=True)
            sde.start()
            sock = Path(tmp) / "agent.sock"
            agent = _start_agent(topology, node, sock, tmp, period_ms, log_dir)
            _wait_for_agent(agent, sock, log_dir)
            rx = Receiver(veths[egress_port], stop)
            rx.start()
            senders = [Sender(s, veths[s.port], stop) for s in tx]
            for s in senders:
                s.start()
            alloc1 = allocate(topo)
            exact1 = {s.name: s.rate for s in alloc1.streams}
            target1 = next(e.target for e in alloc1.egresses if e.egress == egress)
            first = tx[0]
            share = topo.node(node).share(topo.streams[0].path[0].ingress, egress)
            exact2, target2 = _exact_after_cut(topology, node, topo.streams[0].path[0].ingress, egress, share * CUT)
            half = duration_s / 2
            print(f"{'t':>4} " + " ".join(f"{s.name:>22}" for s in tx) + f" {'A':>10} {'R*':>10} {'tau':>8}")
            changed = False
            rows: list[tuple[int, dict[str, float]]] = []
            for sec in range(int(duration_s)):
                time.sleep(max(0.0, rx.t0 + sec + 1 - time.monotonic()))
                if not changed and sec + 1 >= half:
                    _cut_share(sock, topo, egress, first.name, share)
                    changed = True
                got = {s.name: rx.bins.get(sec, {}).get(s.src, 0) * 8.0 for s in tx}
                rows.append((sec, got))
                _print_row(sock, egress, sec, tx, got, exact2 if changed else exact1)
            return verdict(rows, tx, (exact1, target1), (exact2, target2), half, duration_s)
        finally:
            stop.set()
            stop_process(agent)
            sde.stop()


def _veth_setup(port_map: Path) -> None:
    """The veth pairs the port map names (the SDE's script makes them in pairs)."""
    doc = json.loads(port_map.read_text())
    n = 1 + max(max(int(p["veth1"]), int(p["veth2"])) for p in doc["PortToVeth"])
    subprocess.run(
        [str(Path(os.environ["SDE_INSTALL"], "bin", "veth_setup.sh")), str(n + n % 2)], check=True, capture_output=True
    )


def _start_agent(
    topology: Path, node: str, sock: Path, tmp: str, period_ms: float, log_dir: Path
) -> subprocess.Popen[bytes]:
    """ffs-agent on bf_switchd, serving on `sock`."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={topology}",
            f"--node={node}",
            "--target=tofino",
            f"--socket={sock}",
            f"--state-dir={tmp}/state",
            f"--period-ms={period_ms}",
            # tofino-model forwards a few hundred packets a second and has no queues to guard
            # (its TM empties as fast as its loop runs): the guard's timer would swamp it
            "--guard-timer-us=0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(log_dir / "agent.log", "w"),
    )


def _wait_for_agent(agent: subprocess.Popen[bytes], sock: Path, log_dir: Path) -> None:
    """Until the agent answers on `sock` (up to 180 s); its log's tail if it exits first."""
    deadline = time.monotonic() + 180
    while True:
        try:
            call(sock, {"op": "status"}, timeout_s=1)
            break
        except (ApiError, OSError, ValueError):
            if agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ffs-agent did not start: {(log_dir / 'agent.log').read_text()[-400:]}") from None
            time.sleep(0.3)


def _cut_share(sock: Path, topo: Topology, egress: str, first: str, share: float) -> None:
    """ffsctl cuts the first stream's share to CUT of it, as an operator would."""
    cmd = [
        sys.executable,
        "-m",
        "ffs.cli.ctl",
        f"--socket={sock}",
        "matrix",
        "set",
        "--ingress",
        topo.streams[0].path[0].ingress,
        "--egress",
        egress,
        "--rate",
        f"{share * CUT:.0f}bps",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    print(
        f"-- ffsctl matrix set {first}'s share {format_rate(share)} -> "
        f"{format_rate(share * CUT)}: "
        f"{'applied' if r.returncode == 0 else r.stderr.strip()}",
        flush=True,
    )


def _print_row(
    sock: Path, egress: str, sec: int, tx: list[Stream], got: dict[str, float], want: dict[str, float]
) -> None:
    """One second: each stream's rate (of its exact share), and the egress's A, R* and tau."""
    e: dict[str, Any] = next((x for x in call(sock, {"op": "status"})["egresses"] if x["egress"] == egress), {})
    print(
        f"{sec + 1:>4} "
        + " ".join(f"{format_rate(got[s.name]):>10} (of {format_rate(want[s.name]):>8})" for s in tx)
        + f" {format_rate(e.get('accepted_bps', 0)):>10} {format_rate(e.get('offered_bps', 0)):>10}"
        f" {e.get('tau_display', '-'):>8}",
        flush=True,
    )


def _exact_after_cut(
    topology: Path, node: str, ingress: str, egress: str, rate: float
) -> tuple[dict[str, float], float]:
    """The exact allocation once the matrix entry (ingress, egress) is `rate`, and the egress's
    target then (Σ_i M(i, j) by default: it moves with the matrix, spec §9)."""
    import yaml

    doc = yaml.safe_load(topology.read_text())
    doc["nodes"][node]["fairness"][egress][ingress] = f"{rate:.0f}bps"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(doc, f)
    try:
        alloc = allocate(load(Path(f.name)))
        return {s.name: s.rate for s in alloc.streams}, next(e.target for e in alloc.egresses if e.egress == egress)
    finally:
        os.unlink(f.name)


def verdict(
    rows: list[tuple[int, dict[str, float]]],
    tx: list[Stream],
    phase1: tuple[dict[str, float], float],
    phase2: tuple[dict[str, float], float],
    half: float,
    duration_s: float,
) -> bool:
    """Over the last 40 % of each phase (the τ loop settles in the rest): every stream within
    WITHIN of its exact rate and the bottleneck at most HOLD of its target."""
    ok = True
    for name, lo, hi, (exact, target) in (
        ("before the change", 0.6 * half, half, phase1),
        ("after it", half + 0.6 * (duration_s - half), duration_s, phase2),
    ):
        sel = [got for sec, got in rows if lo <= sec < hi - 0.5]
        if not sel:
            continue
        mean = {s.name: sum(g[s.name] for g in sel) / len(sel) for s in tx}
        total = sum(mean.values())
        parts = []
        for s in tx:
            good = abs(mean[s.name] - exact[s.name]) <= WITHIN * exact[s.name]
            ok &= good
            parts.append(
                f"{s.name} {format_rate(mean[s.name])} (exact {format_rate(exact[s.name])}){'' if good else ' OFF'}"
            )
        held = total <= HOLD * target
        ok &= held
        print(
            f"{name} (seconds {lo:.0f}-{hi:.0f}): "
            + ", ".join(parts)
            + f"; bottleneck {format_rate(total)} of its target {format_rate(target)}"
            + ("" if held else " OVER")
        )
    print("verdict: " + ("FFS held every stream to its exact allocation" if ok else "FAILED"))
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.demo_tofino", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "topology",
        nargs="?",
        type=Path,
        help="default: topologies/dumbbell-model.yaml, on tofino2 dumbbell-model-tofino2.yaml",
    )
    ap.add_argument("--chip", type=chip_of, default="tofino", help=f"the model's chip: {' or '.join(CHIPS)}")
    ap.add_argument("--node", default="s1")
    ap.add_argument("--port-map", type=Path, help="default: the chip's, ptf-tests/port_maps/<chip>-model.json")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--period-ms", type=float, default=500.0, help="the agent's period (tofino-model is slow)")
    ap.add_argument("--log-dir", type=Path, default=Path("build/demo-tofino-model"))
    a = ap.parse_args(argv)
    a.topology = a.topology or Path(
        "topologies", "dumbbell-model.yaml" if a.chip == "tofino" else f"dumbbell-model-{a.chip}.yaml"
    )
    a.port_map = a.port_map or default_port_map(a.chip)
    a.log_dir.mkdir(parents=True, exist_ok=True)
    try:
        return 0 if run(a.topology, a.node, a.port_map, a.duration, a.period_ms, a.log_dir, a.chip) else 1
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print(f"demo-tofino-model: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
