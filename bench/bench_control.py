# SPDX-License-Identifier: Apache-2.0
"""Availability of the two control services under load (docs/security.md), in one process, on
Unix sockets only (nothing leaves the machine, no root needed):

- `api`: N concurrent ffsctl-style clients (`ffs.core.api_client.call`) against the agent's control API
  with a handler that, like the agent's, serializes requests under one lock. Reports how many calls
  succeeded and their latency.
- `switch`: the software switch's forwarding delay while greedy clients read its biggest table and
  every counter over the gRPC control service without pause. A packet thread runs the live loop's
  pattern (`ffs.switch.live`: the control lock per batch of 64 frames) on frames arriving at a fixed
  rate, and records how late each frame was processed after its arrival time.

- `inputs`: each hostile file and request of docs/security.md through what ffsctl and the agent do
  with them (`load_matrix_file` and `validate_matrix` on the dumbbell node, the API's JSON parser): its one-line error,
  time and peak memory.

    python bench/bench_control.py api [--clients 200] [--rounds 3]
    python bench/bench_control.py inputs
    python bench/bench_control.py switch [--readers 4] [--seconds 5] [--rate 20000]

Prints one JSON object. The module under test is whatever `ffs` PYTHONPATH selects, so the same
script measures an older tree for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def bench_api(clients: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ffs-bench-api-") as d:  # removed afterwards, whatever happens
        return _bench_api(Path(d), clients, rounds)


def _bench_api(work: Path, clients: int, rounds: int) -> dict:
    from ffs.agent.api import ControlServer
    from ffs.core.api_client import ApiError, call

    lock = threading.Lock()

    def handler(req: dict, who) -> dict:
        with lock:  # the agent answers one request at a time (AgentService.lock)
            time.sleep(0.0002)
            return {"node": "s1", "op": req["op"]}

    server = ControlServer(work / "agent.sock", handler)
    server.start()
    ok = failed = 0
    lat: list[float] = []
    errors: dict[str, int] = {}
    try:
        for _ in range(rounds):
            go = threading.Barrier(clients)
            res: list[tuple[bool, float, str]] = []
            rlock = threading.Lock()

            def one(
                go: threading.Barrier = go, res: list[tuple[bool, float, str]] = res, rlock: threading.Lock = rlock
            ) -> None:
                go.wait()
                t0 = time.perf_counter()
                try:
                    call(work / "agent.sock", {"op": "status"}, timeout_s=10.0)
                    r = (True, time.perf_counter() - t0, "")
                except (ApiError, OSError, ValueError) as e:
                    r = (False, time.perf_counter() - t0, str(e).split(":")[0][:60])
                with rlock:
                    res.append(r)

            ts = [threading.Thread(target=one) for _ in range(clients)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for good, dt, err in res:
                if good:
                    ok += 1
                    lat.append(dt)
                else:
                    failed += 1
                    errors[err] = errors.get(err, 0) + 1
    finally:
        server.stop()
    return {
        "clients": clients,
        "rounds": rounds,
        "calls": ok + failed,
        "ok": ok,
        "failed": failed,
        "failed_fraction": round(failed / (ok + failed), 3),
        "errors": errors,
        "latency_ms": {
            "p50": round(1e3 * pct(lat, 0.5), 1),
            "p99": round(1e3 * pct(lat, 0.99), 1),
            "max": round(1e3 * max(lat, default=float("nan")), 1),
        },
    }


def bench_switch(readers: int, seconds: float, rate: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="ffs-bench-sw-") as d:  # removed afterwards, whatever happens
        return _bench_switch(Path(d), readers, seconds, rate)


def _bench_switch(work: Path, readers: int, seconds: float, rate: float) -> dict:
    from ffs.agent.core import Agent
    from ffs.core import p4names
    from ffs.core.frames import ipv4_frame
    from ffs.core.topology import load
    from ffs.switch.driver import LocalDriver, ModelDriver
    from ffs.switch.fast import new_pipeline
    from ffs.switch.runtime import SwitchControl
    from ffs.switch.server import serve

    pipeline = new_pipeline(1, "auto")
    ctl = SwitchControl(pipeline)
    Agent(LocalDriver(ctl), load(ROOT / "topologies" / "dumbbell.yaml"), "s1").install()
    biggest = max(pipeline.tables, key=lambda n: len(pipeline.tables[n].entries))
    address = f"unix:{work}/switch.sock"
    server = serve(ctl, address)
    frame = ipv4_frame("10.0.1.1", "10.0.3.1", 1250)

    def forward(duration: float) -> list[float]:
        """Frames 'arrive' every 1/rate s; each batch of up to 64 due frames is processed under the
        lock, as the live loop does; the delay is processing time minus arrival time."""
        delays: list[float] = []
        t0 = time.perf_counter()
        n = 0
        while True:
            now = time.perf_counter()
            if now - t0 >= duration:
                return delays
            due = int((now - t0) * rate)
            if due <= n:
                time.sleep(0.0002)
                continue
            with ctl.lock:
                for k in range(n, min(due, n + 64)):
                    pipeline.process(frame, 1, time.monotonic_ns())
                    delays.append(time.perf_counter() - (t0 + k / rate))
                n = min(due, n + 64)

    stop = threading.Event()
    reads = [0]

    def reader() -> None:
        d = ModelDriver(address, rpc_timeout_s=60)
        d.connect(timeout_s=10)
        while not stop.is_set():
            d.read_table(biggest)
            d.read_counters(p4names.PAIR_BYTES.name)  # all 4096 cells
            reads[0] += 1
        d.close()

    try:
        quiet = forward(min(2.0, seconds))
        ts = [threading.Thread(target=reader, daemon=True) for _ in range(readers)]
        for t in ts:
            t.start()
        time.sleep(0.5)
        loaded = forward(seconds)
        stop.set()
        for t in ts:
            t.join(timeout=30)
    finally:
        server.stop(0)

    def summary(xs: list[float]) -> dict:
        return {
            "frames": len(xs),
            "p50_ms": round(1e3 * statistics.median(xs), 2),
            "p99_ms": round(1e3 * pct(xs, 0.99), 2),
            "max_ms": round(1e3 * max(xs), 2),
        }

    return {
        "rate_fps": rate,
        "readers": readers,
        "table_read": f"{biggest} ({len(pipeline.tables[biggest].entries)} entries)",
        "reads_done": reads[0],
        "no_readers": summary(quiet),
        "with_readers": summary(loaded),
    }


def bench_inputs() -> dict:
    with tempfile.TemporaryDirectory(prefix="ffs-bench-in-") as d:  # removed afterwards, whatever happens
        return _bench_inputs(Path(d))


def _bench_inputs(work: Path) -> dict:
    import tracemalloc

    from ffs.core.matrix import MatrixError, load_matrix_file, validate_matrix
    from ffs.core.safeload import LoadError, loads_json
    from ffs.core.topology import load

    node = load(ROOT / "topologies" / "dumbbell.yaml").node("s1")

    lol = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, c in zip("abcdefgh", "bcdefghi", strict=False):
        lol.append(f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]")
    files = {
        "5000-deep YAML": "p3: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
        "billion laughs (9^9)": "\n".join(lol) + "\n",
        "duplicate key": "p3: {p1: 10Mbps, p1: 1Mbps, p2: 10Mbps}\n",
        "column of 1e-300": "p3: {p1: 1e-300, p2: 1e-300}\n",
    }
    cases: list[tuple[str, object]] = []
    for name, text in files.items():
        f = work / f"{len(cases)}.yaml"
        f.write_text(text)
        cases.append((name, lambda f=f: validate_matrix(node, load_matrix_file(f))))  # what ffsctl + the agent do
    cases.append(("/dev/zero", lambda: load_matrix_file("/dev/zero")))
    cases.append(("100k-deep JSON request", lambda: loads_json(b"[" * 100_000 + b"]" * 100_000)))
    cases.append(('{"limit": Infinity}', lambda: loads_json(b'{"op": "log", "limit": Infinity}')))
    out = []
    for name, fn in cases:
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            fn()
            err = "(accepted)"
        except (MatrixError, LoadError) as e:
            err = str(e).replace(str(work) + "/", "")
        dt = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out.append({"input": name, "error": err, "ms": round(1e3 * dt, 1), "peak_MiB": round(peak / 2**20, 1)})
    return {"inputs": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("api")
    a.add_argument("--clients", type=int, default=200)
    a.add_argument("--rounds", type=int, default=3)
    s = sub.add_parser("switch")
    s.add_argument("--readers", type=int, default=4)
    s.add_argument("--seconds", type=float, default=5.0)
    s.add_argument("--rate", type=float, default=20000.0)
    sub.add_parser("inputs")
    args = ap.parse_args()
    if args.what == "api":
        out = bench_api(args.clients, args.rounds)
    elif args.what == "switch":
        out = bench_switch(args.readers, args.seconds, args.rate)
    else:
        out = bench_inputs()
    out["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load1": round(os.getloadavg()[0], 2),
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
