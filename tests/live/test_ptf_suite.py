# SPDX-License-Identifier: Apache-2.0
"""`make test` runs the PTF suite (ptf-tests/) on the software switch, in private network namespaces
made and removed by ptf-tests/run/model/run. It needs root; as another user it is skipped and the
reason says so."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT

RUN = ROOT / "ptf-tests" / "run" / "model" / "run"
SUITE = ROOT / "ptf-tests" / "tests"
TIMEOUT_S = 600  # far beyond the suite's run; a hang must still end the run


def why_not() -> str | None:
    if os.geteuid() != 0:
        return (
            "the PTF suite needs root (network namespaces, veth pairs, raw sockets): "
            "run make test as root, or sudo make ptf"
        )
    for tool, what in (("ptf", "the ptf package"), ("ip", "iproute2 (the ip command)")):
        if shutil.which(tool) is None:
            return f"{what} is not installed: make setup"
    return None


# PTF modules that run on p4src/examples/ programs, not on ffs: they skip on the suite's runs, and
# test_host_program_on_tofino_model runs them on the example
EXAMPLE_MODULES = ("test_host_l2",)


def suite_tests(modules: tuple[str, ...] | None = None) -> list[str]:
    """The suite's tests on ffs (without the examples' modules), or those of `modules`."""
    out = subprocess.run(
        ["ptf", "--test-dir", str(SUITE), "--list-test-names"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    names = [line.strip() for line in out.splitlines() if re.fullmatch(r"test_\w+\.\w+", line.strip())]
    if modules is None:
        return [n for n in names if n.split(".")[0] not in EXAMPLE_MODULES]
    return [n for n in names if n.split(".")[0] in modules]


@pytest.mark.root
@pytest.mark.skipif(why_not() is not None, reason=why_not() or "")
def test_ptf_suite_on_the_software_switch():
    expected = suite_tests()
    assert len(expected) >= 20, "the PTF suite lists too few tests"
    try:
        p = subprocess.run([str(RUN)], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        pytest.fail(f"the PTF suite did not finish within {TIMEOUT_S} s:\n{out[-6000:]}")
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"ptf-tests/run/model/run exited {p.returncode}:\n{run_account(out)}"
    passed = set(re.findall(r"^(test_\w+\.\w+) \.\.\. ok$", out, re.M))
    missing = [t for t in expected if t not in passed]
    assert not missing, f"tests that did not report ok: {missing}\n{out[-4000:]}"


# --- the tofino-model runner, against a recording stand-in of the SDE's scripts ----------------

RUN_TOFINO_MODEL = ROOT / "ptf-tests" / "run" / "tofino-model" / "run"

STUB = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "{rec}/{name}.args"
echo "PKTPY=${{PKTPY:-}}" > "{rec}/{name}.env"
echo $$ > "{rec}/{name}.pid"
{body}
"""
LISTEN = """exec python3 -c '
import socket, sys, time
socks = []
for port in sys.argv[1:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(port))); s.listen(); socks.append(s)
time.sleep(600)' {ports}"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def p4src_sha256() -> str:
    return subprocess.run(
        ["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True, check=True
    ).stdout.strip()


def fake_install(inst: Path, chip: str, compiled_for: str | None = None, sha: str | None = None) -> None:
    """ffs installed for `chip` as make build installs it (conf, program, p4src.sha256), the
    program compiled for `compiled_for` (default: the chip)."""
    pd = f"share/{chip}pd/ffs"
    conf = {
        "chip_list": [{"id": "asic-0", "chip_family": chip}],
        "p4_devices": [
            {
                "device-id": 0,
                "p4_programs": [
                    {
                        "program-name": "ffs",
                        "bfrt-config": f"{pd}/bf-rt.json",
                        "p4_pipelines": [
                            {
                                "p4_pipeline_name": "pipe",
                                "context": f"{pd}/pipe/context.json",
                                "config": f"{pd}/pipe/{chip}.bin",
                                "pipe_scope": [0, 1, 2, 3],
                                "path": pd,
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (inst / "share" / "p4" / "targets" / chip).mkdir(parents=True, exist_ok=True)
    (inst / "share" / "p4" / "targets" / chip / "ffs.conf").write_text(json.dumps(conf))
    (inst / pd / "pipe").mkdir(parents=True, exist_ok=True)
    (inst / pd / "pipe" / "context.json").write_text(json.dumps({"target": compiled_for or chip}))
    (inst / pd / "pipe" / f"{chip}.bin").write_bytes(b"")
    (inst / pd / "p4src.sha256").write_text((sha or p4src_sha256()) + "\n")


def fake_sde(tmp: Path, tests_rc: int, chip: str = "tofino") -> tuple[dict[str, str], Path]:
    """SDE scripts that record how they were called: the model sleeps, switchd listens on the
    status and BF-Runtime ports, run_p4_tests.sh exits with `tests_rc`."""
    sde, rec = tmp / "sde", tmp / "rec"
    (sde / "install" / "bin").mkdir(parents=True)
    fake_install(sde / "install", chip)
    rec.mkdir()
    status, grpc = free_port(), free_port()
    scripts = {
        sde / "run_tofino_model.sh": ("model", "exec sleep 600"),
        sde / "run_switchd.sh": ("switchd", LISTEN.format(ports=f"{status} {grpc}")),
        sde / "run_p4_tests.sh": ("p4tests", f"exit {tests_rc}"),
        sde / "install" / "bin" / "veth_setup.sh": ("veth", "exit 0"),
    }
    for path, (name, body) in scripts.items():
        path.write_text(STUB.format(rec=rec, name=name, body=body))
        path.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("CHIP", "ARCH")}
    env.update(
        SDE=str(sde),
        SDE_INSTALL=str(sde / "install"),
        STATUS_PORT=str(status),
        GRPC_PORT=str(grpc),
        READY_TIMEOUT="30",
        LOG_DIR=str(tmp / "logs"),
    )
    return env, rec


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


@pytest.mark.parametrize("tests_rc", [0, 1])
def test_tofino_model_runner_follows_the_sde_flow(tmp_path, tests_rc):
    env, rec = fake_sde(tmp_path, tests_rc)
    p = subprocess.run(
        [str(RUN_TOFINO_MODEL), "test_parser"], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert (p.returncode == 0) == (tests_rc == 0), p.stderr
    port_map = str(ROOT / "ptf-tests" / "port_maps" / "tofino-model.json")
    args = {n: (rec / f"{n}.args").read_text().split("\n")[:-1] for n in ("model", "switchd", "p4tests", "veth")}
    assert args["veth"] == ["8"]  # veth0..veth7 cover the port map's veths
    logs = str(tmp_path / "logs")
    # -q: the model without its per-packet log, which it spends most of its time writing (MODEL_LOG=1 keeps it)
    assert args["model"] == ["-p", "ffs", "--arch", "tofino", "-f", port_map, "--log-dir", logs, "-q"]
    assert args["switchd"] == [
        "-p",
        "ffs",
        "--arch",
        "tofino",
        "--status-port",
        env["STATUS_PORT"],
    ]  # the port it waits on
    t = args["p4tests"]
    assert t[:8] == ["-p", "ffs", "--arch", "tofino", "-t", str(SUITE), "-f", port_map]
    params = t[t.index("--test-params") + 1]
    assert "target='tofino'" in params and "packets='small'" in params and f"localhost:{env['GRPC_PORT']}" in params
    assert "ports='1,2,3'" in params
    assert t[-2:] == ["-s", "test_parser"]
    assert (rec / "p4tests.env").read_text().strip() == "PKTPY=false"  # the scapy shim layer, not bf_pktpy
    time.sleep(1.5)
    for n in ("model", "switchd"):  # stopped (a plain kill, then wait), whatever the result
        assert gone(int((rec / f"{n}.pid").read_text())), f"{n} still running"
    assert {"model.log", "switchd.log"} <= {f.name for f in (tmp_path / "logs").iterdir()}
    assert list(tmp_path.glob("*.log")) == []  # nothing written where the runner was started


@pytest.mark.parametrize("how", [{"CHIP": "tofino2"}, {"ARCH": "tofino2"}, {"CHIP": "t2na"}])
def test_tofino_model_runner_on_tofino2_takes_its_port_map_and_ports(tmp_path, how):
    """The chip alone selects the Tofino-2 model, its port map (front-panel device ports from 8)
    and the tests' ports."""
    env, rec = fake_sde(tmp_path, 0, chip="tofino2")
    p = subprocess.run(
        [str(RUN_TOFINO_MODEL), "test_parser"],
        env=dict(env, **how),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    port_map = str(ROOT / "ptf-tests" / "port_maps" / "tofino2-model.json")
    args = {n: (rec / f"{n}.args").read_text().split("\n")[:-1] for n in ("model", "switchd", "p4tests")}
    assert args["model"][:5] == ["-p", "ffs", "--arch", "tofino2", "-f"] and args["model"][5] == port_map
    assert args["switchd"][:4] == ["-p", "ffs", "--arch", "tofino2"]
    t = args["p4tests"]
    assert t[:8] == ["-p", "ffs", "--arch", "tofino2", "-t", str(SUITE), "-f", port_map]
    assert "ports='8,9,10'" in t[t.index("--test-params") + 1]


def test_model_log_1_keeps_the_models_packet_log(tmp_path):
    """MODEL_LOG=1 starts the model without -q: its log then traces every packet (docs/pipeline.md)."""
    env, rec = fake_sde(tmp_path, 0)
    p = subprocess.run(
        [str(RUN_TOFINO_MODEL), "test_parser"],
        env=dict(env, MODEL_LOG="1"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert "-q" not in (rec / "model.args").read_text().split("\n")


@pytest.mark.parametrize("chip,other", [("tofino", "tofino2"), ("tofino2", "tofino")])
def test_tofino_model_runner_refuses_the_other_chips_build_in_one_line(tmp_path, chip, other):
    """A program compiled for the other chip (an install of before side-by-side installs) is
    refused before anything starts, not after the driver's long wait on a chip-type mismatch;
    so is a chip with nothing installed."""
    env, rec = fake_sde(tmp_path, 0, chip=other)
    fake_install(Path(env["SDE_INSTALL"]), chip, compiled_for=other)
    p = subprocess.run([str(RUN_TOFINO_MODEL)], env=dict(env, CHIP=chip), capture_output=True, text=True, timeout=60)
    assert (
        p.returncode == 2 and f"compiled for {other}, not {chip}" in p.stderr and f"make build CHIP={chip}" in p.stderr
    )
    assert len(p.stderr.strip().splitlines()) == 1 and not (rec / "model.args").exists()
    (Path(env["SDE_INSTALL"]) / "share" / "p4" / "targets" / chip / "ffs.conf").unlink()
    p = subprocess.run([str(RUN_TOFINO_MODEL)], env=dict(env, CHIP=chip), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and f"not installed for {chip}" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_an_installed_program_without_a_binary_is_no_problem(tmp_path, monkeypatch):
    """The SDE's bundled example (an empty config: tables, no packets) is runnable for its chip."""
    from ffs.lab.sde import installed_problem

    fake_install(tmp_path, "tofino")
    conf = tmp_path / "share" / "p4" / "targets" / "tofino" / "ffs.conf"
    doc = json.loads(conf.read_text())
    doc["p4_devices"][0]["p4_programs"][0]["p4_pipelines"][0]["config"] = ""
    conf.write_text(json.dumps(doc))
    monkeypatch.setenv("SDE_INSTALL", str(tmp_path))
    assert installed_problem("ffs", "tofino", p4src_sha256()) is None
    assert "not installed for tofino2" in str(installed_problem("ffs", "tofino2"))
    doc["chip_list"][0]["chip_family"] = "tofino2"
    conf.write_text(json.dumps(doc))
    assert installed_problem("ffs", "tofino") == f"{conf} is for tofino2, not tofino: make build CHIP=tofino"


def test_tofino_model_runner_refuses_a_program_not_compiled_from_this_p4src(tmp_path):
    env, rec = fake_sde(tmp_path, 0)
    (Path(env["SDE_INSTALL"]) / "share" / "tofinopd" / "ffs" / "p4src.sha256").write_text("0" * 64 + "\n")
    p = subprocess.run([str(RUN_TOFINO_MODEL)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "not compiled from the current p4src/" in p.stderr and "make build" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and not (rec / "model.args").exists()


def test_tofino_model_runner_without_an_sde_says_what_is_missing():
    env = {k: v for k, v in os.environ.items() if k not in ("SDE", "SDE_INSTALL")}
    p = subprocess.run([str(RUN_TOFINO_MODEL)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "not set: SDE " in p.stderr and "not set: SDE_INSTALL" in p.stderr and "make ptf" in p.stderr


# --- the suite on tofino-model with bf_switchd (SDE, root, the program of this checkout) --------


CHIPS = ("tofino", "tofino2")


def why_not_tofino_model(chip: str) -> str | None:
    sde, inst = os.environ.get("SDE"), os.environ.get("SDE_INSTALL")
    if not sde or not inst or not Path(sde, "run_tofino_model.sh").exists():
        return "needs a Tofino SDE with tofino-model: set SDE and SDE_INSTALL (make test then builds ffs)"
    if os.geteuid() != 0:
        return "tofino-model needs root (veths, hugepages for bf_switchd)"
    from ffs.lab.sde import installed_problem

    why = installed_problem("ffs", chip, p4src_sha256())
    return f"{why} (make test does it when an SDE is set)" if why else None


# The strict ledger: tests of the suite known to fail on tofino-model, each with its reason. It
# only shrinks: a listed test that passes fails this test (take it off), and so does an unlisted
# one that fails.
TOFINO_MODEL_LEDGER: dict[str, str] = {}

# The tests allowed to skip on tofino-model, each with the words its skip reason must contain:
# any other skip fails, as does a listed test that runs there (take it off). Empty today.
TOFINO_MODEL_SKIPS: dict[str, str] = {}


def results(out: str) -> dict[str, str]:
    """Each test's verdict as PTF's unittest runner prints it: ok, FAIL, ERROR, or skipped with
    its reason, quoted as Python quotes it ("skipped 'why'", or "skipped \"it's why\"" when the
    reason holds an apostrophe)."""
    return {
        name: verdict
        for name, verdict in re.findall(
            r"""^(test_\w+\.\w+) \.\.\. (ok|FAIL|ERROR|skipped '.+'|skipped ".+")$""", out, re.M
        )
    }


def failure_reports(out: str) -> str:
    """The failed and erred tests' tracebacks as unittest prints them (the assertion's message
    with its figures), ahead of the output's tail in a failure: the tail holds only the verdicts."""
    blocks = re.findall(r"^={60,}\n((?:FAIL|ERROR): .*?)(?=^={60,}$|^-{60,}\nRan )", out, re.M | re.S)
    return "".join(blocks)


def run_account(out: str) -> str:
    """What a failing PTF run's assertion shows: each failure's traceback, then the output's tail."""
    return f"{failure_reports(out)}\n{out[-4000:]}"


def verdict_problems(
    chip: str, expected: list[str], returncode: int, out: str, skips: dict[str, str] = TOFINO_MODEL_SKIPS
) -> list[str]:
    """What is wrong with one run of the tofino-model runner: a refused build (exit 3: a compiler
    that lost the parser's selects, docs/pipeline.md) is a failure like any other, a test without a
    verdict, a skip the allowance does not name or whose reason is not the named one, a failure
    outside the ledger, a ledger entry that passed, an exit status that disagrees."""
    if returncode == 3:
        return [
            f"the runner refused the {chip} build (exit 3): " + (out.strip().splitlines()[0] if out.strip() else "")
        ]
    got = results(out)
    problems = []
    missing = [t for t in expected if t not in got]
    if missing:
        problems.append(f"tests without a verdict (runner exit {returncode}): {missing}")
    skipped = {t: v for t, v in got.items() if v.startswith("skipped")}
    for t, v in sorted(skipped.items()):
        if t not in skips or skips[t] not in v:
            problems.append(f"skipped on the {chip} model without an allowance naming it and its reason: {t}: {v}")
    ran = sorted(t for t in skips if t in got and t not in skipped)
    if ran:
        problems.append(f"allowed to skip but ran on the {chip} model: take them off TOFINO_MODEL_SKIPS: {ran}")
    failed = {t for t, v in got.items() if v != "ok" and t not in skipped}
    unexpected = sorted(failed - set(TOFINO_MODEL_LEDGER))
    healed = sorted(set(TOFINO_MODEL_LEDGER) - failed)
    if unexpected:
        problems.append(f"failed on the {chip} model and not in the ledger: {unexpected}")
    if healed:
        problems.append(f"in the ledger but passed on the {chip} model: take them off TOFINO_MODEL_LEDGER: {healed}")
    if (returncode == 0) != (not failed):
        problems.append(f"ptf-tests/run/tofino-model/run exited {returncode} with failures {sorted(failed)}")
    return problems


def _run_output(verdicts: dict[str, str]) -> str:
    return "".join(f"{t} ... {v}\n" for t, v in verdicts.items())


def test_verdicts_name_every_skip_and_fail_a_refused_build():
    """The checks of the tofino-model run, on made-up runner outputs and a made-up allowance: a
    clean run passes; exit 3 fails; an unnamed skip fails even alone; a named test skipping for
    another reason fails; the named test running fails (the allowance is stale); a skip the
    project's allowance does not name fails."""
    expected = ["test_a.One", "test_b.Slow"]
    skips = {"test_b.Slow": "too slow here"}
    clean = {"test_a.One": "ok", "test_b.Slow": "skipped 'too slow here: ...'"}
    assert verdict_problems("tofino", expected, 0, _run_output(clean), skips) == []
    # a reason with an apostrophe, which unittest prints in double quotes
    quoted = dict(clean, **{"test_b.Slow": 'skipped "too slow here: the agent\'s reads"'})
    assert verdict_problems("tofino", expected, 0, _run_output(quoted), skips) == []
    assert verdict_problems("tofino", expected, 0, _run_output(clean))  # not on the project's allowance
    assert verdict_problems("tofino", expected, 3, "refused: lost selects\n", skips)
    assert verdict_problems("tofino", expected, 0, _run_output(dict(clean, **{"test_a.One": "skipped 'slow'"})), skips)
    assert verdict_problems(
        "tofino", expected, 0, _run_output(dict(clean, **{"test_b.Slow": "skipped 'no time'"})), skips
    )
    assert verdict_problems("tofino", expected, 0, _run_output(dict(clean, **{"test_b.Slow": "ok"})), skips)
    assert verdict_problems("tofino", expected, 1, _run_output(dict(clean, **{"test_a.One": "FAIL"})), skips)


def test_failure_reports_carry_each_failures_message():
    """A failing run's message shows each failure's assertion, as unittest prints it after the
    verdicts, and nothing of the passing tests."""
    rule, dash = "=" * 70, "-" * 70
    out = (
        "test_a.One ... FAIL\ntest_b.Two ... ERROR\ntest_c.Three ... ok\n\n"
        f"{rule}\nERROR: runTest (test_b.Two)\n{dash}\nTraceback (most recent call last):\nRuntimeError: boom\n\n"
        f"{rule}\nFAIL: runTest (test_a.One)\n{dash}\nTraceback (most recent call last):\n"
        "AssertionError: False is not true : forwarded 1.06 T, want [0.97, 1.04]\n\n"
        f"{dash}\nRan 3 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n"
    )
    reports = failure_reports(out)
    assert "ERROR: runTest (test_b.Two)" in reports and "RuntimeError: boom" in reports
    assert "FAIL: runTest (test_a.One)" in reports and "forwarded 1.06 T, want [0.97, 1.04]" in reports
    assert "Three" not in reports and "Ran 3 tests" not in reports
    assert failure_reports("test_c.Three ... ok\n") == ""


@pytest.mark.root(reason="tofino-model needs root (veths, hugepages for bf_switchd)")
@pytest.mark.parametrize("chip", CHIPS)
def test_ptf_suite_on_tofino_model(chip):
    """The same suite on the chip's tofino-model + bf_switchd with the compiled program, as a user
    runs it (make ptf TARGET=tofino-model CHIP=...: the port map and the tests' ports follow from
    the chip): every test reports ok except those of TOFINO_MODEL_LEDGER, which must fail (the
    ledger is exact, and the same for both chips), and those of TOFINO_MODEL_SKIPS, which must skip
    with their reason. A build the runner refuses (exit 3: the compiler lost the parser's selects,
    docs/pipeline.md) fails: no packet test on it means anything."""
    why = why_not_tofino_model(chip)
    if why:
        pytest.skip(why)
    expected = suite_tests()
    assert set(TOFINO_MODEL_LEDGER) <= set(expected), "the ledger names a test the suite does not have"
    assert set(TOFINO_MODEL_SKIPS) <= set(expected), "the skip allowance names a test the suite does not have"
    env = {k: v for k, v in os.environ.items() if k not in ("ARCH", "PORT_MAP", "PTF_PARAMS", "PTF_ARGS", "TARGET")}
    # the README's command, as a user runs it (test_docs_commands.py leaves that block to this test)
    try:
        p = subprocess.run(
            ["make", "-s", "-C", str(ROOT), "ptf", "TARGET=tofino-model", f"CHIP={chip}"],
            capture_output=True,
            text=True,
            timeout=2400,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        pytest.fail(f"the PTF suite on the {chip} model did not finish within 2400 s:\n{out[-6000:]}")
    out = p.stdout + p.stderr
    # the examples' tests skip on ffs, each saying so
    skips = {**TOFINO_MODEL_SKIPS, **{t: "runs on the example" for t in suite_tests(EXAMPLE_MODULES)}}
    problems = verdict_problems(chip, expected, p.returncode, out, skips)
    assert not problems, "\n".join(problems) + f"\n{run_account(out)}"


@pytest.mark.root(reason="tofino-model needs root (veths, hugepages for bf_switchd)")
@pytest.mark.parametrize("chip", ["tofino2"])
def test_host_program_on_tofino_model(chip):
    """p4src/examples/l2l3_acl.p4, which pops and pushes 802.1Q tags and declares it to the FFS
    library (docs/pipeline.md), installed beside ffs and run on the chip's model as its module's
    docstring says: every test of the examples' modules reports ok. On Tofino 2 in make test: the
    frame check's arithmetic is the same P4 on both chips, and both compile the example
    (test_compiled_program.py); Tofino 1 runs it with the module docstring's command, CHIP=tofino."""
    why = why_not_tofino_model(chip)
    if why:
        pytest.skip(why)
    expected = suite_tests(EXAMPLE_MODULES)
    assert expected, "no test of the examples' modules"
    env = {k: v for k, v in os.environ.items() if k not in ("ARCH", "PORT_MAP", "PTF_PARAMS", "PTF_ARGS", "TARGET")}
    p = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "install-example", f"CHIP={chip}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run(
        [str(RUN_TOFINO_MODEL), *EXAMPLE_MODULES],
        capture_output=True,
        text=True,
        timeout=1200,
        # a log directory of its own: the suite's, run before it, keeps its logs for a failure's account
        env=dict(env, CHIP=chip, P4_PROGRAM="l2l3_acl", LOG_DIR=str(ROOT / "build" / "ptf-logs" / f"{chip}-example")),
    )
    out = p.stdout + p.stderr
    got = results(out)
    assert p.returncode == 0 and all(got.get(t) == "ok" for t in expected), f"{got}\n{run_account(out)}"
