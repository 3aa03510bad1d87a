# SPDX-License-Identifier: Apache-2.0
"""One owner per switch: an agent holds an exclusive flock on a lock file named after the switch's
control address, and one next to its control socket, for as long as it runs.

A second agent for the same switch (or the same socket) is refused before it touches either, with
the holder's pid; the kernel drops the lock when the holder exits, however it exits (kill -9
included), so a lock never goes stale. A clean stop removes its lock files (while still holding
them: an agent that opened the file just before checks, once it holds the lock, that the file is
still the one at the path, and starts over otherwise); a killed owner leaves them with its pid.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
from pathlib import Path

log = logging.getLogger("ffs.agent")


class OwnerError(RuntimeError):
    """Another process owns the switch or the socket; the message names it (one line)."""


def run_dir() -> Path:
    """Where switch locks live: FFS_RUN_DIR, else /run/ffs for root, else $XDG_RUNTIME_DIR/ffs or /tmp/ffs-<uid>."""
    if os.environ.get("FFS_RUN_DIR"):
        return Path(os.environ["FFS_RUN_DIR"])
    if os.geteuid() == 0:
        return Path("/run/ffs")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "ffs" if xdg else Path(f"/tmp/ffs-{os.geteuid()}")


def switch_key(address: str) -> str:
    """The same switch reached by different spellings gets one key: unix paths resolved, loopback
    names and addresses folded into `localhost`."""
    if address.startswith("unix:"):
        return "unix" + os.path.realpath(address[5:])
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "localhost"
    try:
        if host == "localhost" or socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host) in (
            socket.inet_pton(socket.AF_INET, "127.0.0.1"),
            socket.inet_pton(socket.AF_INET6, "::1"),
        ):
            host = "localhost"
    except OSError:
        host = host.lower()
    return f"{host}:{port}"


def switch_lock_path(address: str) -> Path:
    return run_dir() / ("switch-" + re.sub(r"[^A-Za-z0-9.:-]+", "_", switch_key(address)).strip("_") + ".lock")


class OwnerLock:
    """Exclusive flocks on several files, all or none; released when closed or when the process ends."""

    def __init__(self) -> None:
        self._fds: list[tuple[int, Path]] = []
        self.taken_over: list[str] = []  # lock files a killed owner left its pid in

    def acquire(self, path: Path, what: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                self.close()
                raise OwnerError(
                    f"{what} is owned by another ffs-agent (pid {holder}; lock {path}); stop that one first"
                ) from None
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                break
            os.close(fd)  # the owner removed this file as it stopped: lock the one at the path now
        left = os.pread(fd, 64, 0).decode(errors="replace").strip()
        if left:  # a clean stop empties the file (close): a pid here is an owner that was killed
            self.taken_over.append(f"{path} (pid {left})")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fds.append((fd, path))

    def close(self) -> None:
        """Release the locks and remove their files (a killed owner leaves its pid in them instead)."""
        for fd, path in self._fds:
            try:
                if os.stat(path).st_ino == os.fstat(fd).st_ino:
                    path.unlink()
            except FileNotFoundError:
                pass
            os.close(fd)
        self._fds = []


def take_ownership(switch_address: str, socket_path: str | None) -> OwnerLock:
    lock = OwnerLock()
    lock.acquire(switch_lock_path(switch_address), f"the switch at {switch_address}")
    if socket_path:
        p = Path(socket_path)
        lock.acquire(p.with_name(p.name + ".lock"), f"the control socket {socket_path}")
    if lock.taken_over:
        log.warning("took over the lock files of an owner that did not stop cleanly: %s", ", ".join(lock.taken_over))
    return lock
