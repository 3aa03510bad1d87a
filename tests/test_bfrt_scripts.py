"""The bfshell scripts, run against a recording stand-in for bfshell's `bfrt` object (no SDE here):
they write the same entries as the agent, under bfrt_python's names and argument conventions."""

import runpy
import sys
from pathlib import Path

import pytest

from ffs.agent.program import LpfConfig, node_updates
from ffs.topology import load

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "bfrt-scripts"


class Recorder:
    def __init__(self, path="bfrt", calls=None):
        self._path, self._calls = path, calls if calls is not None else []

    def __getattr__(self, name):
        return Recorder(f"{self._path}.{name}", self._calls)

    def __call__(self, *args, **kw):
        self._calls.append((self._path, kw))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("FFS_ROOT", str(ROOT))
    monkeypatch.setenv("FFS_TOPOLOGY", str(ROOT / "topologies" / "dumbbell.yaml"))
    monkeypatch.setenv("FFS_NODE", "s1")
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield
    sys.modules.pop("_common", None)


def test_setup_node_writes_what_the_agent_writes(env):
    bfrt = Recorder()
    runpy.run_path(str(SCRIPTS / "setup_node.py"), init_globals={"bfrt": bfrt})
    calls = bfrt._calls
    n = load(ROOT / "topologies" / "dumbbell.yaml").node("s1")
    expected = node_updates(n, LpfConfig())
    writes = [c for c in calls if ".add" in c[0] and "f_lpf" not in c[0]]
    assert len(writes) == len(expected)
    pair = next(c for c in calls if c[0].endswith("pair_map.pairs.add_with_set_pair"))
    assert set(pair[1]) == {"ingress_port", "egress_port", "pid", "lm"}
    route = next(c for c in calls if c[0].endswith("ipv4_routes.add_with_route"))
    assert route[1]["dst_addr_p_length"] == 24
    log = next(c for c in calls if c[0].endswith("f_log.add_with_set_lf"))
    assert {"f", "f_mask", "MATCH_PRIORITY", "lf"} == set(log[1])
    assert calls[-1][0] == "bfrt.complete_operations"


def test_load_matrix_refuses_unknown_interfaces(env, tmp_path, monkeypatch):
    m = tmp_path / "m.yaml"
    m.write_text("p3: {p9: 1Mbps}\n")
    monkeypatch.setenv("FFS_MATRIX", str(m))
    bfrt = Recorder()
    with pytest.raises(SystemExit, match="unknown interfaces"):
        runpy.run_path(str(SCRIPTS / "load_matrix.py"), init_globals={"bfrt": bfrt})
    assert bfrt._calls == []
