# SPDX-License-Identifier: Apache-2.0
"""tofino-model + bf_switchd, started with the SDE's own run scripts ($SDE/run_tofino_model.sh,
$SDE/run_switchd.sh) as a user starts them: for the tests that drive the SDE's real bfrt_grpc
client and for the differential run (ffs.lab.differential).

`sde_missing(program, chip)` says why they cannot run here (no SDE, not root, program not
installed for that chip); `installed_problem` says why an installed program is not the one to run
(another chip's, or not compiled from this checkout's p4src/); `Sde` starts the two processes with
their logs in a directory of the caller's, waits for BF-Runtime to answer, and stops them with a
plain kill (a signal they exit cleanly on).

    python -m ffs.lab.sde check [--chip tofino2] [--program ffs] [--sha256 HASH]
        prints the installed program's directory, or the one-line reason it cannot run (exit 2)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GRPC_PORT = 50052  # bf_switchd's BF-Runtime server; fixed by the SDE
CHIPS = ("tofino", "tofino2")
# what run_tofino_model.sh/run_switchd.sh --arch accept, and the P4 architectures, per chip
_ALIASES = {
    "tofino": "tofino",
    "tf1": "tofino",
    "tna": "tofino",
    "tofino2": "tofino2",
    "tf2": "tofino2",
    "t2na": "tofino2",
}


def chip_of(name: str) -> str:
    """The chip a name means (tofino, tf1, tna; tofino2, tf2, t2na)."""
    try:
        return _ALIASES[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown chip {name!r}: use tofino or tofino2") from None


def default_port_map(chip: str) -> Path:
    """The project's port map for the chip's model (relative to the checkout): Tofino 1's
    front-panel device ports start at 0, Tofino 2's at 8."""
    return Path("ptf-tests", "port_maps", f"{chip_of(chip)}-model.json")


def installed_problem(program: str, chip: str, want_sha256: str | None = None) -> str | None:
    """Why the program installed under $SDE_INSTALL for `chip` is not one to run, in one line, or
    None. The conf must be the chip's, and so must the compiled program it names (the driver stops
    on a chip-type mismatch only after a long wait); with `want_sha256`, the program must have been
    compiled from that p4src/ (make build records its hash beside it)."""
    chip = chip_of(chip)
    inst = Path(os.environ.get("SDE_INSTALL", ""))
    conf = inst / "share" / "p4" / "targets" / chip / f"{program}.conf"
    build = f"make build CHIP={chip}" if program == "ffs" else f"install {program} for {chip}"
    if not conf.is_file():
        return f"{program} is not installed for {chip} ({conf} missing): {build}"
    try:
        doc = json.loads(conf.read_text())
        family = doc["chip_list"][0]["chip_family"]
        pipe = doc["p4_devices"][0]["p4_programs"][0]["p4_pipelines"][0]
        # an empty config loads the tables without a binary (the SDE's bundled tna_exact_match)
        config = inst / pipe["config"] if pipe["config"] else None
        context, path = inst / pipe["context"], inst / pipe["path"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        return f"{conf} is not a conf bf_switchd can load ({type(e).__name__}: {e}): {build}"
    if chip_of(str(family)) != chip:
        return f"{conf} is for {family}, not {chip}: {build}"
    for f in (config, context):
        if f is not None and not f.is_file():
            return f"{conf} names {f}, which is missing: {build}"
    try:
        target = json.loads(context.read_text()).get("target")
    except (OSError, ValueError) as e:
        return f"{context} unreadable ({e}): {build}"
    if target is None or chip_of(str(target)) != chip:
        return f"the installed {program} ({context}) was compiled for {target}, not {chip}: {build}"
    if want_sha256 is not None:
        have = (path / "p4src.sha256").read_text().strip() if (path / "p4src.sha256").is_file() else ""
        if have != want_sha256:
            return (
                f"the installed {program} for {chip} was not compiled from the current p4src/ "
                f"({have or 'no ' + str(path / 'p4src.sha256')}): {build}"
            )
    return None


def installed_dir(program: str, chip: str) -> Path:
    """The directory of the program's conf `path` (bf-rt.json, p4src.sha256, compiler-defects)."""
    conf = Path(os.environ["SDE_INSTALL"], "share", "p4", "targets", chip_of(chip), f"{program}.conf")
    pipe = json.loads(conf.read_text())["p4_devices"][0]["p4_programs"][0]["p4_pipelines"][0]
    return Path(os.environ["SDE_INSTALL"], pipe["path"])


def sde_missing(
    program: str, chip: str = "tofino", want_sha256: str | None = None, check_grpc_port: bool = True
) -> str | None:
    """Why tofino-model + switchd cannot run here with `program` on `chip`, or None. A node in a
    network namespace of its own (ffs.lab.chain) has its own :50052: `check_grpc_port=False`."""
    sde, inst = os.environ.get("SDE"), os.environ.get("SDE_INSTALL")
    if not sde or not inst:
        return "needs a Tofino SDE: set SDE and SDE_INSTALL (docs/testing.md)"
    for script in ("run_tofino_model.sh", "run_switchd.sh"):
        if not os.access(os.path.join(sde, script), os.X_OK):
            return f"$SDE/{script} not found"
    if not any(Path(inst, "lib").glob("python3*/site-packages/tofino/bfrt_grpc/client.py")):
        return "the SDE's bfrt_grpc client is not installed under $SDE_INSTALL/lib/python3*/site-packages/tofino"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "bf_switchd needs root (hugepages, DMA pools)"
    try:
        pages = int(Path("/proc/sys/vm/nr_hugepages").read_text())
    except OSError:
        return "no hugepages on this system (bf_switchd needs 196 2-MiB pages)"
    if pages < 196 and not os.access("/proc/sys/vm/nr_hugepages", os.W_OK):
        return f"bf_switchd needs 196 hugepages, vm.nr_hugepages is {pages} and cannot be raised"
    why = installed_problem(program, chip, want_sha256)
    if why:
        return why
    if check_grpc_port and _port_open(GRPC_PORT):
        return f"something already listens on :{GRPC_PORT} (another bf_switchd?)"
    return None


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(p: subprocess.Popen | None, timeout_s: float = 20.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout_s` (SIGCONT first, in case a test
    paused it); nothing for a process that is gone or was never started."""
    if p is None or p.poll() is not None:
        return
    p.send_signal(signal.SIGCONT)
    p.terminate()
    try:
        p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


class Sde:
    """One tofino-model and one bf_switchd running `program`; logs under `log_dir`."""

    def __init__(self, program: str, log_dir: Path, chip: str = "tofino", port_map: Path | None = None) -> None:
        self.program, self.arch, self.port_map = program, chip_of(chip), port_map
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.model: subprocess.Popen | None = None
        self.switchd: subprocess.Popen | None = None
        self.status_port = free_port()

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        out = open(self.log_dir / f"{name}.out", "ab")
        try:
            return subprocess.Popen(
                argv, cwd=self.log_dir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            out.close()

    def start_model(self) -> None:
        sde = os.environ["SDE"]
        argv = [f"{sde}/run_tofino_model.sh", "-p", self.program, "--arch", self.arch, "--log-dir", str(self.log_dir)]
        if self.port_map is not None:
            argv += ["-f", str(self.port_map)]
        # the model spends most of its time writing its per-packet log; MODEL_LOG=1 keeps it
        if os.environ.get("MODEL_LOG") != "1":
            argv.append("-q")
        self.model = self._spawn("model", argv)

    def start_switchd(self, timeout_s: float = 90.0) -> None:
        """Returns once BF-Runtime accepts connections (the driver still retries its bind)."""
        sde = os.environ["SDE"]
        self.switchd = self._spawn(
            "switchd",
            [f"{sde}/run_switchd.sh", "-p", self.program, "--arch", self.arch, "--status-port", str(self.status_port)],
        )
        deadline = time.monotonic() + timeout_s
        while not _port_open(GRPC_PORT):
            if self.switchd.poll() is not None:
                raise RuntimeError(f"bf_switchd exited ({self.switchd.returncode}): see {self.log_dir}/switchd.out")
            if time.monotonic() > deadline:
                raise RuntimeError(f"bf_switchd not serving :{GRPC_PORT} within {timeout_s:g} s: see {self.log_dir}")
            time.sleep(0.5)

    def start(self) -> Sde:
        self.start_model()
        self.start_switchd()
        return self

    def stop_switchd(self) -> None:
        stop_process(self.switchd)
        self.switchd = None
        deadline = time.monotonic() + 10
        while _port_open(GRPC_PORT) and time.monotonic() < deadline:
            time.sleep(0.2)

    def stop(self) -> None:
        """The model first: a SIGTERM to bf_switchd while the model's ports are up (a port map)
        ends it with SIGSEGV; once the model is gone switchd exits on its own terms."""
        stop_process(self.model)
        self.model = None
        self.stop_switchd()

    def restart(self) -> None:
        """bf_switchd restarted, as after a crash or a reboot of the switch. The model goes with it:
        once its switchd disconnected, tofino-model does not reliably accept the next one."""
        self.stop()
        self.start()


def running_sde(
    program: str, tmp_path_factory: Any, logs: str, chip: str = "tofino", port_map: Path | None = None
) -> Iterator[Sde]:
    """The body of a module fixture: tofino-model and bf_switchd with `program`, stopped after."""
    s = Sde(program, tmp_path_factory.mktemp(logs), chip, port_map)
    try:
        s.start()
        yield s
    finally:
        s.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.sde", description="the program installed in $SDE_INSTALL")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="print the installed program's directory, or why it cannot run (exit 2)")
    c.add_argument("--chip", default="tofino")
    c.add_argument("--program", default="ffs")
    c.add_argument("--sha256", help="the p4src/ hash the program must have been compiled from")
    a = ap.parse_args(argv)
    try:
        why = installed_problem(a.program, a.chip, a.sha256)
    except ValueError as e:
        why = str(e)
    if why:
        print(why, file=sys.stderr)
        return 2
    print(installed_dir(a.program, a.chip))
    return 0


if __name__ == "__main__":
    sys.exit(main())
