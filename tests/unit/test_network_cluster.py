# SPDX-License-Identifier: Apache-2.0
"""`ffs-sim network --cluster`: the study's partitions on a local Dask cluster of two worker
processes give the single process's allocation, per stream, at 500 and 1,000 ASes (docs/results.md's
study runs the same code at 2,000); without Dask the option says in one line what to install."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from distributed import LocalCluster

from ffs.lab.cli.sim import main as sim_cli
from ffs.lab.network.report import Options, run


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit=0)
    yield c.scheduler_address
    c.close()


@pytest.mark.parametrize("nodes", [500, pytest.param(1000, marks=pytest.mark.slow)])
def test_two_workers_give_the_single_process_allocation(cluster, nodes):
    one, _, streams = run(Options(nodes=nodes, seed=1), per_stream=True)
    two, _, streams2 = run(Options(nodes=nodes, seed=1, cluster=cluster), per_stream=True)
    assert one["computed_in"] == "this process" and two["computed_in"].startswith("2 Dask workers")
    assert two["streams"] == one["streams"] == nodes * round(0.2 * (nodes - 1))
    assert two["ffs_rounds"] == one["ffs_rounds"]
    for k in ("ffs", "helia", "glwp"):
        assert streams2[k] == pytest.approx(streams[k], rel=1e-9, abs=0)
    for f in ("0.2", "0.4", "0.6", "0.8"):
        assert np.array_equal(streams2[f"deployed {f}"], streams[f"deployed {f}"])  # whole ASes along each path
    for k in ("ffs", "helia", "glwp"):
        assert two["allocation"][k] == pytest.approx(one["allocation"][k], rel=1e-9)
        assert two["cdf_gbps"][k] == pytest.approx(one["cdf_gbps"][k], rel=1e-9)
    for f, d in one["deployment"].items():  # whole ASes along each path: the same counts
        assert two["deployment"][f]["share_at"] == d["share_at"] and two["deployment"][f]["cdf"] == d["cdf"]
        assert two["deployment"][f]["mean"] == pytest.approx(d["mean"], rel=1e-12)


def test_cli_cluster_option(cluster, tmp_path):
    args = ["network", "--nodes", "120", "--seed", "2", "--json"]
    one = json.loads(CliRunner().invoke(sim_cli, [*args, "--out", str(tmp_path / "a")]).output)
    res = CliRunner().invoke(sim_cli, [*args, "--out", str(tmp_path / "b"), "--cluster", cluster])
    assert res.exit_code == 0, res.output
    two = json.loads(res.output)
    assert two["computed_in"] == f"2 Dask workers at {cluster}"
    assert two["cdf_gbps"]["ffs"] == pytest.approx(one["cdf_gbps"]["ffs"], rel=1e-9)


def test_cluster_without_dask_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    res = CliRunner().invoke(
        sim_cli, ["network", "--nodes", "50", "--cluster", "tcp://127.0.0.1:1", "--out", str(tmp_path)]
    )
    assert res.exit_code != 0 and "Traceback" not in res.output
    line = res.output.strip()
    assert len(line.splitlines()) == 1
    assert line.endswith(
        "error: --cluster needs Dask's distributed scheduler: pip install 'ffs-tofino[lab]' (or dask distributed)"
    )


def test_cluster_bad_local_count(tmp_path):
    res = CliRunner().invoke(sim_cli, ["network", "--nodes", "50", "--cluster", "local:0", "--out", str(tmp_path)])
    assert res.exit_code != 0
    assert len(res.output.strip().splitlines()) == 1 and "local:N needs a worker count N >= 1" in res.output
