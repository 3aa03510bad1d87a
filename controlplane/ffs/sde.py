"""tofino-model + bf_switchd, started with the SDE's own run scripts ($SDE/run_tofino_model.sh,
$SDE/run_switchd.sh) as a user starts them: for the tests that drive the SDE's real bfrt_grpc
client and for the differential run (ffs.differential).

`sde_missing(program)` says why they cannot run here (no SDE, not root, program not installed);
`Sde` starts the two processes with their logs in a directory of the caller's, waits for
BF-Runtime to answer, and stops them with a plain kill (a signal they exit cleanly on).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

GRPC_PORT = 50052  # bf_switchd's BF-Runtime server; fixed by the SDE


def sde_missing(program: str, arch: str = "tofino") -> str | None:
    """Why tofino-model + switchd cannot run here with `program`, or None."""
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
    if not Path(inst, "share", "p4", "targets", arch, f"{program}.conf").is_file():
        return f"program {program!r} is not installed in $SDE_INSTALL (make build installs ffs)"
    if _port_open(GRPC_PORT):
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

    def __init__(self, program: str, log_dir: Path, arch: str = "tofino", port_map: Path | None = None) -> None:
        self.program, self.arch, self.port_map = program, arch, port_map
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.model: subprocess.Popen | None = None
        self.switchd: subprocess.Popen | None = None
        self.status_port = free_port()

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        out = open(self.log_dir / f"{name}.out", "ab")
        try:
            return subprocess.Popen(argv, cwd=self.log_dir, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            out.close()

    def start_model(self) -> None:
        sde = os.environ["SDE"]
        argv = [f"{sde}/run_tofino_model.sh", "-p", self.program, "--arch", self.arch, "--log-dir", str(self.log_dir)]
        if self.port_map is not None:
            argv += ["-f", str(self.port_map)]
        self.model = self._spawn("model", argv)

    def start_switchd(self, timeout_s: float = 90.0) -> None:
        """Returns once BF-Runtime accepts connections (the driver still retries its bind)."""
        sde = os.environ["SDE"]
        self.switchd = self._spawn("switchd", [f"{sde}/run_switchd.sh", "-p", self.program, "--arch", self.arch,
                                               "--status-port", str(self.status_port)])
        deadline = time.monotonic() + timeout_s
        while not _port_open(GRPC_PORT):
            if self.switchd.poll() is not None:
                raise RuntimeError(f"bf_switchd exited ({self.switchd.returncode}): see {self.log_dir}/switchd.out")
            if time.monotonic() > deadline:
                raise RuntimeError(f"bf_switchd not serving :{GRPC_PORT} within {timeout_s:g} s: see {self.log_dir}")
            time.sleep(0.5)

    def start(self) -> "Sde":
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


def running_sde(program: str, tmp_path_factory: Any, logs: str) -> Iterator[Sde]:
    """The body of a module fixture: tofino-model and bf_switchd with `program`, stopped after."""
    s = Sde(program, tmp_path_factory.mktemp(logs))
    try:
        s.start()
        yield s
    finally:
        s.stop()
