# SPDX-License-Identifier: Apache-2.0
"""The SDE's bfrt_grpc as an SDE ships it: Intel's SDE 9.x generates bfruntime_pb2.py with its own,
old protoc (before 3.20), whose code protobuf 4.21+ refuses in its C implementations ("Descriptors
cannot be created directly"). ffs.driver.bfrt loads such a client with the protobuf the agent's
environment has (its pure-Python implementation), or says in one line what to do.

The old code is made here as an old SDE makes it: grpcio-tools 1.38 (protoc 3.15) under Python 3.8
or 3.9 (it has no wheel for newer ones), in a virtual environment kept in build/old-protoc. First a
stand-in client (a small proto), then, with an SDE, the SDE's own bfruntime.proto generated that
way, the SDE's client.py around it, bound to bf_switchd on tofino-model: from this environment
(protobuf 7) and from the wheel under Python 3.8 (protobuf 5, the [tofino] extra)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from sdekit import running_sde, sde_missing

from .test_agent_pythons import clean_env, find_python

OLD_TOOLS = ["grpcio-tools==1.38.1", "protobuf<3.20"]
STAND_IN_PROTO = """syntax = "proto3";
package bfrt_proto;
message Ping { uint32 id = 1; string note = 2; }
service BfRuntime { rpc Echo(Ping) returns (Ping); }
"""
STAND_IN_CLIENT = """from bfrt_grpc import bfruntime_pb2 as pb
def roundtrip(n):
    return pb.Ping.FromString(pb.Ping(id=n, note="x").SerializeToString()).id
"""


def old_python() -> str | None:
    return find_python("3.8") or find_python("3.9")


@pytest.fixture(scope="module")
def old_protoc() -> Path:
    """A Python with grpcio-tools 1.38: the protoc of an SDE from before protobuf 3.20."""
    exe = old_python()
    if exe is None:
        pytest.skip("no python3.8 or python3.9 (on PATH or under pyenv's root) to run grpcio-tools 1.38 with")
    venv = ROOT / "build" / "old-protoc"
    stamp = venv / "installed.txt"
    if not stamp.is_file() or stamp.read_text() != " ".join(OLD_TOOLS):
        subprocess.run([exe, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True, timeout=120)
        r = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *OLD_TOOLS],
            capture_output=True,
            text=True,
            timeout=600,
            env=clean_env(),
        )
        if r.returncode != 0:
            pytest.skip(f"pip could not install {' '.join(OLD_TOOLS)} for {exe}: {r.stderr.strip().splitlines()[-1:]}")
        stamp.write_text(" ".join(OLD_TOOLS))
    return venv / "bin" / "python"


def generate(python: Path | str, proto_dir: Path, out: Path) -> Path:
    """bfruntime_pb2.py and bfruntime_pb2_grpc.py as that Python's grpcio-tools generates them."""
    out.mkdir(parents=True, exist_ok=True)
    inc = subprocess.run(
        [
            str(python),
            "-c",
            "import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), '_proto'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run(
        [
            str(python),
            "-m",
            "grpc_tools.protoc",
            f"-I{proto_dir}",
            f"-I{inc}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "bfruntime.proto",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=out,
    )
    return out / "bfruntime_pb2.py"


def stand_in(tmp_path: Path, python: Path | str) -> Path:
    """A bfrt_grpc package whose client imports a bfruntime_pb2 that `python`'s protoc generated."""
    (tmp_path / "proto").mkdir()
    (tmp_path / "proto" / "bfruntime.proto").write_text(STAND_IN_PROTO)
    pkg = tmp_path / "site" / "bfrt_grpc"
    generate(python, tmp_path / "proto", pkg)
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text(STAND_IN_CLIENT)
    return pkg.parent


def run_py(code: str, site: Path, python: str = sys.executable, **env: str) -> subprocess.CompletedProcess:
    """`code` in a new interpreter (protobuf chooses its implementation once, at its first import)."""
    e = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "SDE_INSTALL", "PYTHONPATH")
    }
    e["PYTHONPATH"] = os.pathsep.join(
        [str(site), str(ROOT / "controlplane")] if python == sys.executable else [str(site)]
    )
    e.update(env)
    return subprocess.run([python, "-c", code], capture_output=True, text=True, env=e, timeout=300)


LOAD = """
import json, logging
logging.basicConfig(level=logging.INFO)
from ffs.driver.bfrt import import_bfrt_grpc
gc = import_bfrt_grpc()
from google.protobuf.internal import api_implementation
print(json.dumps([gc.roundtrip(7), api_implementation.Type()]))
"""


def test_an_old_style_client_loads_with_this_protobuf(old_protoc, tmp_path):
    from ffs.driver.bfrt import old_style_generated

    site = stand_in(tmp_path, old_protoc)
    assert old_style_generated((site / "bfrt_grpc" / "bfruntime_pb2.py").read_text())
    plain = run_py("import bfrt_grpc.client", site)  # what the agent met before: protobuf refuses it
    assert plain.returncode != 0 and "Descriptors cannot be created directly" in plain.stderr, plain.stderr[-800:]
    r = run_py(LOAD, site)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout) == [7, "python"]
    warned = [ln for ln in r.stderr.splitlines() if "older than 3.20" in ln]
    assert len(warned) == 1 and "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python" in warned[0], r.stderr


def test_protobuf_loaded_already_gets_one_line_saying_what_to_do(old_protoc, tmp_path):
    site = stand_in(tmp_path, old_protoc)
    r = run_py("import google.protobuf.descriptor_pb2\n" + LOAD, site)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("ffs.driver.base.DriverError: the SDE's ")
        and "start the agent with PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python" in last
    )
    assert "protobuf<3.21" in last


def test_a_client_of_this_protoc_keeps_protobufs_fast_implementation(tmp_path):
    from ffs.driver.bfrt import old_style_generated

    site = stand_in(tmp_path, sys.executable)  # grpcio-tools of make setup
    assert not old_style_generated((site / "bfrt_grpc" / "bfruntime_pb2.py").read_text())
    r = run_py(LOAD, site)
    assert r.returncode == 0 and json.loads(r.stdout)[0] == 7 and json.loads(r.stdout)[1] != "python", r.stderr[-2000:]
    assert "older than 3.20" not in r.stderr


def test_a_missing_client_dependency_says_which_extra(tmp_path):
    pkg = tmp_path / "site" / "bfrt_grpc"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "client.py").write_text("import six_is_not_here_either\nimport six\n")
    (tmp_path / "sde" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    r = run_py(
        "import sys; sys.modules['six'] = None\nfrom ffs.driver.bfrt import import_bfrt_grpc\nimport_bfrt_grpc()",
        tmp_path / "site",
        SDE_INSTALL=str(tmp_path / "sde"),
    )
    assert "six_is_not_here_either" in r.stderr  # the client's own missing module: no hint
    (pkg / "client.py").write_text("import six\n")
    r = run_py(
        "import sys; sys.modules['six'] = None\nfrom ffs.driver.bfrt import import_bfrt_grpc\nimport_bfrt_grpc()",
        tmp_path / "site",
        SDE_INSTALL=str(tmp_path / "sde"),
    )
    assert "the client needs six: pip install 'ffs-tofino[tofino]'" in r.stderr.strip().splitlines()[-1], r.stderr[
        -800:
    ]


# --- against bf_switchd ------------------------------------------------------------------------------

PROGRAM = "tna_exact_match"
BIND = f"""
import json, logging, sys, time
logging.basicConfig(level=logging.INFO)
from ffs.driver.bfrt import BfrtDriver
from ffs.core.entries import Exact, TableEntry, Update
FWD = "SwitchIngress.forward"
d = BfrtDriver(program={PROGRAM!r}, rpc_timeout_s=10.0)
d.connect(timeout_s=120)
d.clear_table(FWD)
d.write([Update("insert", TableEntry(FWD, {{"hdr.ethernet.dst_addr": Exact(0x0200_0000_0000 + i)}}, "SwitchIngress.hit",
{{"port": i % 8}}))
         for i in range(100)])
t = time.monotonic()
got = d.read_table(FWD)
read_s = time.monotonic() - t
d.clear_table(FWD)
d.close()
from google.protobuf.internal import api_implementation
import google.protobuf
print(json.dumps({{"entries": len(got), "port5": got[5].params["port"], "impl": api_implementation.Type(),
                  "protobuf": google.protobuf.__version__, "python": "%d.%d" % sys.version_info[:2], "read_s":
                  read_s}}))
"""


def sde_client(tmp_path: Path, old_protoc: Path) -> Path:
    """The SDE's client directory, its bfruntime_pb2*.py generated again by the old protoc; laid out
    as an SDE lays it out (site-packages/tofino/bfrt_grpc)."""
    inst = Path(os.environ["SDE_INSTALL"])
    (src,) = inst.glob("lib/python3*/site-packages/tofino/bfrt_grpc")
    dst = tmp_path / "site-packages" / "tofino" / "bfrt_grpc"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("bfruntime_pb2*", "__pycache__"))
    pb2 = generate(old_protoc, inst / "share" / "bfrt_grpc" / "proto", dst)
    assert "_descriptor.FileDescriptor(" in pb2.read_text()
    return dst.parent


@pytest.fixture(scope="module")
def switchd(tmp_path_factory):
    why = sde_missing(PROGRAM)
    if why is not None:
        pytest.skip(why)
    yield from running_sde(PROGRAM, tmp_path_factory, "sde-logs-old-client")


def test_the_agents_driver_binds_switchd_with_an_old_style_client(old_protoc, switchd, tmp_path):
    site = sde_client(tmp_path, old_protoc)
    r = run_py(BIND, site, PYTHONPATH=os.pathsep.join([str(site), str(site / "bfrt_grpc"), str(ROOT / "controlplane")]))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["entries"] == 100 and out["port5"] == 5 and out["impl"] == "python", out
    assert sum("older than 3.20" in ln for ln in r.stderr.splitlines()) == 1
    print(
        f"old-style client, Python {out['python']}, protobuf {out['protobuf']} ({out['impl']}): 100 entries read in "
        f"{out['read_s'] * 1e3:.0f} ms"
    )


def test_the_wheel_on_python38_binds_switchd_with_an_old_style_client(old_protoc, switchd, tmp_path):
    exe = find_python("3.8")
    if exe is None:
        pytest.skip("no python3.8 on PATH or under pyenv's root")
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        env=dict(os.environ, FFS_BUILD_FASTPATH="0"),
        check=True,
        capture_output=True,
        timeout=300,
    )
    (whl,) = wheel_dir.glob("*.whl")
    venv = tmp_path / "py3.8"
    subprocess.run([exe, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    r = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{whl}[tofino]"],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    site = sde_client(tmp_path, old_protoc)
    # the SDE's directories as the agent finds them: SDE_INSTALL's lib/python3*/site-packages
    sde = tmp_path / "sde"
    (sde / "lib" / "python3.8").mkdir(parents=True)
    (sde / "lib" / "python3.8" / "site-packages").symlink_to(site.parent)
    r = run_py(BIND, site, python=str(venv / "bin" / "python"), PYTHONPATH="", SDE_INSTALL=str(sde))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["python"] == "3.8" and out["entries"] == 100 and out["port5"] == 5 and out["impl"] == "python", out
    print(
        f"old-style client, Python {out['python']}, protobuf {out['protobuf']} ({out['impl']}): 100 entries read in "
        f"{out['read_s'] * 1e3:.0f} ms"
    )
