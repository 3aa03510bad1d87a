# SPDX-License-Identifier: Apache-2.0
"""Lengths that lie (docs/security.md): the attacks of tests/switch/test_attacks.py in virtual time at line
rate, measured. A flood shares an egress with a well-behaved victim; its frames' IP length field
says something other than their size. For each case: the victim's rate against min(demand, share)
(Corollary 1), the flood's delivered rate, the egress's rate as a share of its target, and the
frames the egress dropped as malformed. Prints a table, or JSON with --json.

    python bench/attacks.py [--json] [--live]

IPv4 cases run the virtual network (ffs.lab.experiments.run_scenario, a stream's `ip_len`); its streams
are IPv4, so IPv6 cases replay frames through one pipeline with its agent (no FIFO behind the
egress). "no frame check" runs the reference pipeline with the egress frame check removed, at
1/10 of the rates; "Tofino order" puts a traffic-manager queue between the ingress and the frame
check, as on the hardware (the residual exposure of docs/security.md). --live (root; run under the live lock) adds the
dumbbell over veth with
`ffs.lab.traffic send --ip-len`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "controlplane")]
# the live run's switch, agent and traffic processes import this tree's ffs too
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "controlplane"), os.environ.get("PYTHONPATH")]))

M = 1e6


def ipv4_case(
    name,
    cap,
    victim,
    share,
    flood,
    ip_len,
    rf=None,
    streams=1,
    size=1250,
    flood_size=None,
    duration_s=None,
    reference=False,
):
    from ffs.lab import experiments
    from ffs.lab.attacks import loads, topology
    from ffs.lab.experiments import run_scenario

    topo = loads(
        topology(cap, victim, share, flood, rf, streams, packet_size=size, ip_len=ip_len, flood_size=flood_size)
    )
    if reference:  # the reference pipeline without the frame check
        from ffs.switch.control.egress_accounting import EgressAccounting
        from ffs.switch.pipeline import Pipeline

        saved = experiments.new_pipeline, EgressAccounting.lies
        experiments.new_pipeline, EgressAccounting.lies = (
            (lambda seed: Pipeline(seed)),
            (lambda self, buf, pkt_length, grown: False),
        )
    t0 = time.perf_counter()
    try:
        res = run_scenario(topo, "ffs", duration_s=duration_s)
    finally:
        if reference:
            experiments.new_pipeline, EgressAccounting.lies = saved
    got = {s["stream"]: s["measured"] for s in res.streams}
    fl = sum(v for k, v in got.items() if k != "victim")
    return row(
        name,
        cap,
        victim,
        share,
        got["victim"],
        fl,
        sum(got.values()),
        sum(res.malformed.values()),
        time.perf_counter() - t0,
    )


def ipv6_case(name, payload_len, real_payload=1210, streams=1, flood=300 * M, reference=False):
    from ffs.core.frames import ipv6_frame
    from ffs.lab.attacks import replay_attack
    from ffs.switch import fast

    f = bytearray(ipv6_frame("fc00::1", "fd00::9", real_payload))
    f[18:20] = payload_len.to_bytes(2, "big")
    saved = fast.new_pipeline
    if reference:
        from ffs.switch.control.egress_accounting import EgressAccounting
        from ffs.switch.pipeline import Pipeline

        lies = EgressAccounting.lies
        fast.new_pipeline, EgressAccounting.lies = (
            (lambda seed: Pipeline(seed)),
            (lambda self, buf, pkt_length, grown: False),
        )
    t0 = time.perf_counter()
    try:
        _, got, malformed = replay_attack(bytes(f), flood=flood, streams=streams)
    finally:
        fast.new_pipeline = saved
        if reference:
            EgressAccounting.lies = lies
    fl = sum(v for k, v in got.items() if k != "victim")
    return row(
        name, 100 * M, 40 * M, 50 * M, got["victim"], fl, sum(got.values()), int(malformed), time.perf_counter() - t0
    )


def tofino_case(name, frame_of, cap=100 * M):
    """Tofino's order, as every run of the software switch has it now: the traffic manager's queue
    (the port drained at its speed, tail drop) sits between the ingress (γ) and the egress's frame
    check, so frames the egress will drop still take their place in the queue. One egress,
    replayed with its agent at 100 Mb/s."""
    from ffs.lab.attacks import replay_attack

    t0 = time.perf_counter()
    _, got, malformed = replay_attack(frame_of(), cap=cap, poisson=True, duration=1.0)  # no phase-locking with the FIFO
    fl = sum(v for k, v in got.items() if k != "victim")
    return row(
        name, cap, 40 * M, 50 * M, got["victim"], fl, sum(got.values()), int(malformed), time.perf_counter() - t0
    )


def lying_v4(ip_len):
    from ffs.core.frames import ipv4_frame, lie_ip_len

    f = ipv4_frame("10.0.2.1", "10.0.3.1", 1250)
    return f if ip_len is None else lie_ip_len(f, ip_len)


def row(name, cap, victim, share, got_victim, got_flood, total, malformed, wall):
    want = min(victim, share)
    return {
        "case": name,
        "capacity_bps": cap,
        "victim_bps": round(got_victim),
        "victim_of_min_demand_share": round(got_victim / want, 4),
        "flood_bps": round(got_flood),
        "egress_of_target": round(total / cap, 4),
        "malformed": malformed,
        "holds": got_victim >= 0.95 * want and total <= 1.05 * cap,
        "wall_s": round(wall, 2),
    }


def virtual() -> list[dict]:
    from ffs.core.labels import decode

    g = 1000 * M
    return [
        ipv4_case("IPv4 honest flood (reference point)", g, 400 * M, 500 * M, 3000 * M, None),
        ipv4_case("IPv4 1250 B claiming 20", g, 400 * M, 500 * M, 3000 * M, 20),
        ipv4_case("IPv4 1250 B claiming 0", g, 400 * M, 500 * M, 3000 * M, 0),
        ipv4_case("IPv4 1250 B claiming 65535", g, 400 * M, 500 * M, 3000 * M, 0xFFFF),
        ipv4_case("IPv4 60 B frames claiming 20 (padding), victim 600", g, 600 * M, 500 * M, 1000 * M, 20, size=46),
        ipv4_case("IPv4 50 streams claiming 20", g, 400 * M, 500 * M, 3000 * M, 20, streams=50),
        ipv4_case("IPv4 claiming 28 + label 0x0001 (trusted)", g, 400 * M, 500 * M, 3000 * M, 28, rf=decode(0x0001)),
        ipv4_case(
            "IPv4 claiming 20 + label (shim outside: parse error)", g, 400 * M, 500 * M, 3000 * M, 20, rf=decode(0x0001)
        ),
        ipv4_case("IPv4 100 Gb/s, 9000 B claiming 20", 100e9, 40e9, 50e9, 300e9, 20, size=9000, duration_s=0.2),
        ipv4_case(
            "IPv4 100 Gb/s, 9000 B claiming 28 + 0x0001",
            100e9,
            40e9,
            50e9,
            300e9,
            28,
            rf=decode(0x0001),
            size=9000,
            duration_s=0.2,
        ),
        ipv6_case("IPv6 1264 B claiming payload 0", 0),
        ipv6_case("IPv6 1264 B claiming payload 20", 20),
        ipv6_case("IPv6 1264 B claiming payload 65535", 0xFFFF),
        ipv6_case("IPv6 60 B padded (payload 0), 10 streams", 0, real_payload=0, streams=10, flood=100 * M),
        ipv4_case("no frame check: IPv4 claiming 20 (100 Mb/s)", 100 * M, 40 * M, 50 * M, 300 * M, 20, reference=True),
        ipv6_case("no frame check: IPv6 claiming 0 (100 Mb/s)", 0, reference=True),
        tofino_case("Tofino order (TM queue first): IPv4 honest flood", lambda: lying_v4(None)),
        tofino_case("Tofino order (TM queue first): IPv4 claiming 20", lambda: lying_v4(20)),
        tofino_case("Tofino order (TM queue first): IPv4 claiming 65535", lambda: lying_v4(0xFFFF)),
    ]


def live(ip_len: int) -> dict:
    """The dumbbell over veth: h1 at 8 Mb/s, h2 at its 20 Mb/s line rate claiming `ip_len`."""
    import tempfile

    from ffs.core import p4names
    from ffs.lab.liverun import live_node
    from ffs.switch.driver import ModelDriver

    name = f"benchlen{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        topo_file = work / f"{name}.yaml"
        topo_file.write_text(
            (ROOT / "topologies" / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}")
        )
        with live_node(topo_file, work) as node:
            rx = node.receive("h3", 7)
            time.sleep(0.3)
            node.send("h1", "10.0.3.1", "8Mbps", 6.5)
            liar = node.spawn(
                node.exec_args(
                    "h2",
                    sys.executable,
                    "-m",
                    "ffs.lab.traffic",
                    "send",
                    "--dst=10.0.3.1",
                    "--rate=20Mbps",
                    f"--ip-len={ip_len}",
                    "--duration=6.5",
                ),
                stdout=subprocess.PIPE,
                text=True,
            )
            lines = [json.loads(x) for x in rx.stdout]
            rx.wait()
            sent = json.loads(liar.communicate(timeout=10)[0])["sent_packets"]
            drv = ModelDriver(node.switch_address)
            drv.connect(5)
            port = node.topology.node("s1").interfaces["p3"].port
            malformed = drv.read_counters(p4names.MALFORMED.name, [port])[port].packets
            drv.close()
    steady = [x["rates_bps"] for x in lines if 2 <= x["t"] <= 6]
    well = sum(r.get("10.0.1.1", 0) for r in steady) / len(steady)
    flood = sum(r.get("10.0.2.1", 0) for r in steady) / len(steady)
    return {
        "case": f"live dumbbell, h2 20 Mb/s of 1250 B claiming {ip_len}",
        "victim_bps": round(well),
        "victim_of_min_demand_share": round(well / 8e6, 4),
        # the worst of those seconds: where the attack's onset shows
        "victim_worst_second_bps": round(min(x["rates_bps"].get("10.0.1.1", 0) for x in lines if 2 <= x["t"] <= 6)),
        "flood_bps": round(flood),
        "egress_of_target": round((well + flood) / 20e6, 4),
        "malformed": malformed,
        "flood_sent": sent,
        "holds": well >= 0.95 * 8e6 and flood == 0,
    }


def machine() -> dict:
    model = ""
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "python": platform.python_version(), "load": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--live", action="store_true", help="also the live dumbbell (root)")
    a = ap.parse_args()
    rows = virtual()
    if a.live:
        rows += [live(20), live(0xFFFF)]
    if a.json:
        print(json.dumps({"machine": machine(), "cases": rows}, indent=1))
        return 0
    print(f"{'case':56} {'victim':>10} {'of min':>7} {'flood':>10} {'egress':>7} {'malformed':>10}  holds")
    for r in rows:
        print(
            f"{r['case']:56} {r['victim_bps'] / 1e6:8.1f}M {r['victim_of_min_demand_share']:7.1%} "
            f"{r['flood_bps'] / 1e6:8.1f}M {r['egress_of_target']:7.1%} {r['malformed']:10d}  {r['holds']}"
        )
    print(json.dumps(machine()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
