# SPDX-License-Identifier: Apache-2.0
"""The bfshell scripts, run against a recording stand-in for bfshell's `bfrt` object (no SDE here):
they write the same entries as the agent, under bfrt_python's names and argument conventions."""

import runpy
import sys

import pytest

from conftest import ROOT
from ffs.core import p4names, tables
from ffs.core.program import LpfConfig, node_updates, pair_time_constant_ns, pairs_of
from ffs.core.topology import load

SCRIPTS = ROOT / "bfrt-scripts"
M = 1e6


class Recorder:
    """Any attribute path of `bfrt`; calls are recorded as (path, kwargs) and return a Recorder, so
    `t.entry_with_x(...).push()` records the entry and then the push."""

    def __init__(self, path="bfrt", calls=None):
        self._path, self._calls = path, calls if calls is not None else []

    def __getattr__(self, name):
        return Recorder(f"{self._path}.{name}", self._calls)

    def __call__(self, *args, **kw):
        self._calls.append((self._path, kw))
        return Recorder(f"{self._path}()", self._calls)


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("FFS_ROOT", str(ROOT))
    monkeypatch.setenv("FFS_TOPOLOGY", str(ROOT / "topologies" / "dumbbell.yaml"))
    monkeypatch.setenv("FFS_NODE", "s1")
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield
    sys.modules.pop("_common", None)


def run(script, **env_globals):
    bfrt = Recorder()
    runpy.run_path(str(SCRIPTS / script), init_globals={"bfrt": bfrt})
    return bfrt._calls


def test_setup_node_writes_what_the_agent_writes(env):
    calls = run("setup_node.py")
    n = load(ROOT / "topologies" / "dumbbell.yaml").node("s1")
    expected = node_updates(n, LpfConfig())
    writes = [c for c in calls if ".add" in c[0] and "f_lpf" not in c[0]]
    assert len(writes) == len(expected)
    clears = [c[0] for c in calls if c[0].endswith(".clear")]
    assert "bfrt.ffs.pipe.FfsIngress.ri_update.ri_candidate.clear" not in clears  # const entries
    assert "bfrt.ffs.pipe.FfsIngressParser.PORT_METADATA.clear" in clears
    assert calls.index(("bfrt.ffs.pipe.FfsIngress.pair_map.pairs.clear", {})) < calls.index(writes[0])
    pm = [c for c in calls if c[0] == "bfrt.ffs.pipe.FfsIngressParser.PORT_METADATA.add"]  # `$` dropped
    assert {"ingress_port": 1, "trust": 0, "insert": 1} in [c[1] for c in pm]  # a host port: reset
    pair = next(c for c in calls if c[0] == "bfrt.ffs.pipe.FfsIngress.pair_map.pairs.add_with_set_pair")
    assert set(pair[1]) == {"ingress_port", "egress_port", "pid", "nlm"}
    route = next(c for c in calls if c[0].endswith("ipv4_routes.add_with_route"))
    assert route[1]["dst_addr_p_length"] == 24
    log = next(c for c in calls if c[0].endswith("f_log.add_with_set_lf"))
    assert {"f", "f_mask", "MATCH_PRIORITY", "lf", "nlf"} == set(log[1])
    lpf = [c[1] for c in calls if c[0] == "bfrt.ffs.pipe.FfsIngress.rate_est.f_lpf.add"]
    assert [x["LPF_INDEX"] for x in lpf] == list(range(p4names.F_LPF.size))  # every index, as the agent does
    sized = LpfConfig().for_node(load(ROOT / "topologies" / "dumbbell.yaml").node("s1"))  # as the agent sizes it
    # each pair its own time constant (spec §4); no output shift: the weights carry the scale-down
    assert all(x["LPF_SPEC_TYPE"] == "RATE" and x["LPF_SPEC_OUT_SCALE_DOWN_FACTOR"] == 0 for x in lpf)
    assert {(x["LPF_INDEX"], x["LPF_SPEC_GAIN_TIME_CONSTANT_NS"]) for x in lpf} >= set(sized.pairs)
    assert len({x["LPF_SPEC_DECAY_TIME_CONSTANT_NS"] for x in lpf}) > 1
    assert calls[-1][0] == "bfrt.complete_operations"


def test_load_matrix_pushes_scaled_shares(env, tmp_path, monkeypatch):
    m = tmp_path / "m.yaml"
    m.write_text("p3: {p1: 4Mbps, p2: 16Mbps}\n")
    monkeypatch.setenv("FFS_MATRIX", str(m))
    calls = run("load_matrix.py")
    pairs = [c[1] for c in calls if c[0] == "bfrt.ffs.pipe.FfsIngress.pair_map.pairs.entry_with_set_pair"]
    lm = {(p["ingress_port"], p["egress_port"]): tables.lm_of(p) for p in pairs}
    n = load(ROOT / "topologies" / "dumbbell.yaml").node("s1")
    pid = {(p.ingress_port, p.egress_port): p.pid for p in pairs_of(n)}
    # spec §4: each pair's time constant holds 64 of the node MTU's line-rate frames at its share,
    # the scale-down as setup sized it from the node's longest
    sd = LpfConfig().for_node(n).scale_down
    code = lambda m: tables.lm_code(m, pair_time_constant_ns(n, m, sd), sd)  # noqa: E731
    assert lm[(1, 3)] == code(4 * M) and lm[(2, 3)] == code(16 * M)
    assert lm[(3, 1)] == code(20 * M)  # the topology's other columns are kept
    resized = {c[1]["LPF_INDEX"]: c[1] for c in calls if c[0] == "bfrt.ffs.pipe.FfsIngress.rate_est.f_lpf.entry"}
    # the shares that moved by more than an eighth, and the pairs without a share, which take the
    # smallest share's time constant (it fell from 10 to 4 Mb/s)
    assert set(resized) == {pid[(1, 3)], pid[(2, 3)]} | {
        i for k, i in pid.items() if k not in [(1, 3), (2, 3), (3, 1), (3, 2)]
    }
    assert resized[pid[(1, 3)]]["LPF_SPEC_DECAY_TIME_CONSTANT_NS"] == pair_time_constant_ns(n, 4 * M, sd)
    pushes = [c for c in calls if c[0].endswith("entry_with_set_pair().push")]
    assert len(pushes) == len(pairs) == 9  # add-or-modify: the script does not know what is installed
    assert calls[-1][0] == "bfrt.complete_operations"


@pytest.mark.parametrize(
    "content, message",
    [
        ("p3: {p9: 1Mbps}\n", "unknown ingress interface 'p9'"),
        ("p3: {p1: 15Mbps, p2: 15Mbps}\n", "above its capacity"),
        ("p3: {p1: 0, p2: 0}\n", "sum to 0"),
        ("p3: {p1: -1Mbps}\n", "negative rate"),
    ],
)
def test_load_matrix_refuses_bad_files_before_writing(env, tmp_path, monkeypatch, content, message):
    m = tmp_path / "m.yaml"
    m.write_text(content)
    monkeypatch.setenv("FFS_MATRIX", str(m))
    bfrt = Recorder()
    with pytest.raises(SystemExit, match=message):
        runpy.run_path(str(SCRIPTS / "load_matrix.py"), init_globals={"bfrt": bfrt})
    assert bfrt._calls == []


def test_show_state_syncs_before_dumping(env):
    calls = [c[0] for c in run("show_state.py")]
    i = calls.index("bfrt.ffs.pipe.FfsIngress.rate_est.pair_bytes.operation_counter_sync")
    assert calls[i + 1] == "bfrt.ffs.pipe.FfsIngress.rate_est.pair_bytes.dump"
    assert "bfrt.ffs.pipe.FfsIngress.rate_est.f_est.operation_register_sync" in calls
