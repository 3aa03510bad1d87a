# SPDX-License-Identifier: Apache-2.0
"""Benchmark of the exact allocator at Internet scale: `ffs-sim network`'s study (FFS §VII-B) on
generated power-law graphs of 500 to 10,000 ASes, each sending to 20 % of the others, one fresh
process per size. Reports wall time per stage, the allocator's rounds and the peak resident memory
of the process, its CPU time (the machine may be shared: wall time alone would hide the load),
plus the machine and its load. With `--cluster ADDRESS` (or local:N) the partitions run on a Dask
cluster and the memory is the driver's and the workers' peaks (`ffs.lab.network.pool`). Prints a
JSON report; docs/benchmarks.md records the numbers with the command that made them.

    python bench/bench_sim.py [--nodes 500,1000,2000,5000,10000] [--pairs 0.2] [--seed 1]
        [--graph ba|internet] [--cluster local:2] [--files 5000,30000]

With `--files`, also `ffs-sim allocate`'s own path (loading and validating a topology file, then
the allocation) on generated 4-node chain files of the given stream counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(nodes: int, pairs: float, seed: int, graph: str, cluster: str | None) -> dict:
    """The study in this process (its partitions here or on the cluster): stage times, sizes and
    peak RSS (with a cluster, also each worker's)."""
    from ffs.lab.network.report import Options, run

    marks: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    summary, _rates, _eff = run(
        Options(nodes=nodes, pairs=pairs, seed=seed, graph=graph, cluster=cluster),
        lambda s: marks.append((s, time.perf_counter())),
    )
    end = time.perf_counter()
    stages = {name: round(t1 - t, 3) for (name, t), (_n, t1) in zip(marks, marks[1:] + [("end", end)], strict=False)}
    u = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)  # local:N workers' CPU, once they have exited
    return {
        "nodes": summary["graph"]["nodes"],
        "links": summary["graph"]["links"],
        "pairs": pairs,
        "streams": summary["streams"],
        "stream_hops": summary["stream_hops"],
        "tree_hops": summary["tree_hops"],
        "matrix_pairs": summary["matrix_pairs"],
        "computed_in": summary["computed_in"],
        "wall_s": round(end - t0, 2),
        "stages_s": stages,
        "allocator_rounds": summary["ffs_rounds"]["allocator_rounds"],
        "cpu_s": round(u.ru_utime + u.ru_stime, 2),
        "workers_cpu_s": round(c.ru_utime + c.ru_stime, 2),
        "peak_rss_mib": round(u.ru_maxrss / 1024, 1),
        "partition_peak_rss_mib": summary["partition_peak_mib"],  # each worker's own (VmHWM)
        "ffs_median_gbps": summary["allocation"]["ffs"]["median_gbps"],
    }


def chain_file(path: Path, streams: int, seed: int) -> None:
    """A chain of 4 nodes (two local ingresses each, 40 Gb/s links) and `streams` streams entering
    at a random node and leaving at a random later one: a topology file as `ffs-sim allocate` reads."""
    import random

    import yaml

    rng = random.Random(seed)
    nodes = {}
    for k in range(4):
        ifs = {
            "c1": {"capacity": "100Gbps", "port": 1},
            "c2": {"capacity": "100Gbps", "port": 2},
            "out": {"capacity": "40Gbps", "port": 4, **({"peer": f"n{k + 1}.up"} if k < 3 else {})},
        }
        col = {"c1": "25Gbps", "c2": "15Gbps"} if k == 0 else {"c1": "15Gbps", "c2": "10Gbps", "up": "15Gbps"}
        if k > 0:
            ifs["up"] = {"capacity": "40Gbps", "port": 3, "peer": f"n{k - 1}.out"}
        nodes[f"n{k}"] = {"interfaces": ifs, "fairness": {"out": col}}
    rows = []
    for m in range(streams):
        a = rng.randint(0, 3)
        b = rng.randint(a, 3)
        rows.append(
            {
                "name": f"s{m}",
                "demand": f"{round(rng.uniform(0.01, 1), 3)}Gbps",
                "path": [
                    {"node": f"n{k}", "ingress": rng.choice(["c1", "c2"]) if k == a else "up", "egress": "out"}
                    for k in range(a, b + 1)
                ],
            }
        )
    path.write_text(yaml.safe_dump({"name": f"chain-{streams}", "nodes": nodes, "streams": rows}, width=200))


def one_file(streams: int, seed: int) -> dict:
    """`ffs-sim allocate`'s path on a topology file: load (YAML, validation) and allocate."""
    import tempfile

    from ffs.core.allocator import allocate
    from ffs.core.topology import load

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "chain.yaml"
        chain_file(f, streams, seed)
        t0 = time.perf_counter()
        topo = load(f)
        t1 = time.perf_counter()
        a = allocate(topo)
        t2 = time.perf_counter()
    u = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "streams": streams,
        "stream_hops": sum(len(s.path) for s in topo.streams),
        "load_s": round(t1 - t0, 2),
        "allocate_s": round(t2 - t1, 2),
        "allocator_rounds": a.rounds,
        "cpu_s": round(u.ru_utime + u.ru_stime, 2),
        "peak_rss_mib": round(u.ru_maxrss / 1024, 1),
    }


def time_sizes(a: argparse.Namespace, env: dict[str, str]) -> list[dict]:
    """One child process per graph size (--nodes), each timed alone."""
    runs = []
    for n in (int(x) for x in a.nodes.split(",")):
        load_before = os.getloadavg()
        cluster = ["--cluster", a.cluster] if a.cluster else []
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--one",
                str(n),
                "--pairs",
                str(a.pairs),
                "--seed",
                str(a.seed),
                "--graph",
                a.graph,
            ]
            + cluster,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        r["loadavg_1m_before"] = round(load_before[0], 2)
        runs.append(r)
        print(
            f"{n} nodes: {r['streams']} streams, {r['stream_hops']} stream-hops ({r['tree_hops']} in trees), "
            f"{r['wall_s']} s ({r['cpu_s']} s CPU), {r['peak_rss_mib']} MiB peak\n{json.dumps(r)}",
            file=sys.stderr,
        )
    return runs


def time_files(a: argparse.Namespace, env: dict[str, str]) -> list[dict]:
    """One child process per topology file size (--files): load + allocate."""
    files = []
    for n in (int(x) for x in a.files.split(",") if x.strip()):
        out = subprocess.run(
            [sys.executable, __file__, "--one-file", str(n), "--seed", str(a.seed)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        files.append(json.loads(out.strip().splitlines()[-1]))
        print(
            f"file with {n} streams: load {files[-1]['load_s']} s, allocate {files[-1]['allocate_s']} s",
            file=sys.stderr,
        )
    return files


def cpu_name() -> str:
    return (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="500,1000,2000,5000,10000")
    ap.add_argument("--graph", choices=["ba", "internet"], default="ba")
    ap.add_argument("--cluster", default=None, help="A Dask scheduler's address, or local:N.")
    ap.add_argument("--pairs", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--files",
        default="",
        help="Also time ffs-sim allocate's path (load + allocate) on chain "
        "topology files of these stream counts, e.g. 5000,40000.",
    )
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one size
    ap.add_argument("--one-file", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.pairs, a.seed, a.graph, a.cluster)))
        return
    if a.one_file:
        print(json.dumps(one_file(a.one_file, a.seed)))
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT / "controlplane") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = time_sizes(a, env)
    files = time_files(a, env)
    cpu = cpu_name()
    print(
        json.dumps(
            {
                "machine": {
                    "cpu": cpu,
                    "cores": os.cpu_count(),
                    "python": platform.python_version(),
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                },
                "pairs": a.pairs,
                "seed": a.seed,
                "runs": runs,
                "files": files,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
