# SPDX-License-Identifier: Apache-2.0
"""ffsctl's way to an agent on another machine, as `docker -H ssh://user@host` reaches a daemon.

`ffsctl --host ssh://[user@]host[:port]` runs `ssh ... ffsctl dial-stdio --socket PATH` on that
machine: the remote ffsctl connects to the agent's Unix socket there and relays bytes between it and
its stdin/stdout, and the local ffsctl sends the same JSON lines over them. Nothing new listens on
the network; SSH authenticates, and the agent's SO_PEERCRED check admits the SSH user as it would
admit them on the switch (root, the agent's user or its --group).

FFS_SSH_COMMAND replaces `ssh` (with options, e.g. `ssh -i KEY -o UserKnownHostsFile=FILE`), as
GIT_SSH_COMMAND does for git; FFS_REMOTE_FFSCTL names ffsctl on the remote machine (default: ffsctl
on its PATH).
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import socket
import subprocess
import sys
import threading
import time
from typing import IO, Any
from urllib.parse import urlsplit

from ffs.core.api_client import ApiError, answer, connect

SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]  # never a password prompt in a fleet run
COMMAND_NOT_FOUND = 127  # the remote shell's status for a command it cannot find, which ssh passes on


def parse_host(url: str) -> tuple[str, int | None]:
    """ssh://[user@]host[:port] -> ("user@host", port)."""
    u = urlsplit(url)
    if u.scheme != "ssh" or not u.hostname or u.path not in ("", "/") or u.query or u.fragment:
        raise ApiError(f"--host {url!r}: use ssh://[user@]host[:port]")
    try:
        port = u.port
    except ValueError:
        raise ApiError(f"--host {url!r}: the port is not a number") from None
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    return (f"{u.username}@{host}" if u.username else host), port


def far_ffsctl(remote_ffsctl: str | None = None) -> str:
    """ffsctl on the far end: as named (a fleet file's `ffsctl:`), else FFS_REMOTE_FFSCTL, else the
    one on the PATH of an SSH session there."""
    return remote_ffsctl or os.environ.get("FFS_REMOTE_FFSCTL") or "ffsctl"


def ssh_argv(url: str, socket_path: str, remote_ffsctl: str | None = None) -> list[str]:
    dest, port = parse_host(url)
    ffsctl = far_ffsctl(remote_ffsctl)
    remote = " ".join(shlex.quote(a) for a in [ffsctl, "dial-stdio", "--socket", socket_path])
    return [
        *shlex.split(os.environ.get("FFS_SSH_COMMAND") or "ssh"),
        *SSH_OPTIONS,
        *(["-p", str(port)] if port else []),
        "--",
        dest,
        remote,
    ]


class Remote:
    """One SSH session to an agent: requests and answers, one line each, until closed."""

    def __init__(self, url: str, socket_path: str, remote_ffsctl: str | None = None, timeout_s: float = 30.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.argv = ssh_argv(url, socket_path, remote_ffsctl)
        self.remote_ffsctl = far_ffsctl(remote_ffsctl)
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except OSError as e:
            raise ApiError(f"cannot run {self.argv[0]}: {e.strerror}") from None
        self._buf = b""

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass  # stdin's unsent bytes, after the far end went away
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _failure(self, what: str) -> ApiError:
        """The session ended: say why in one line (ssh's or the remote ffsctl's last words)."""
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        last = lines[-1] if lines else what
        if self.proc.returncode == COMMAND_NOT_FOUND:
            return ApiError(
                f"{self.url}: {self.remote_ffsctl} is not on the PATH of an SSH session there ({last}): link it "
                "into /usr/local/bin there (docs/hardware.md), or name it (ffsctl: in a fleet file, FFS_REMOTE_FFSCTL)"
            )
        return ApiError(f"{self.url}: {last}")

    def _readline(self) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self.proc.kill()
                    raise ApiError(f"{self.url}: no answer within {self.timeout_s:g} s")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise self._failure("the connection closed without an answer")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line + b"\n"

    def call(self, request: dict) -> Any:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError):
            raise self._failure("the connection closed") from None
        return answer(self._readline())


def call(url: str, socket_path: str, request: dict, remote_ffsctl: str | None = None, timeout_s: float = 30.0) -> Any:
    with Remote(url, socket_path, remote_ffsctl, timeout_s) as r:
        return r.call(request)


def dial_stdio(socket_path: str, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """The remote end: relay stdin to the agent's socket and its answers to stdout, until either
    side closes (stdin's end half-closes the socket, so the last answer still comes back)."""
    src = stdin or sys.stdin.buffer
    dst = stdout or sys.stdout.buffer
    s = connect(socket_path, 10.0)
    s.settimeout(None)

    def up() -> None:
        try:
            while True:
                data = src.read1(1 << 16) if hasattr(src, "read1") else src.read(1 << 16)
                if not data:
                    break
                s.sendall(data)
        except OSError:
            pass
        finally:
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    threading.Thread(target=up, daemon=True).start()
    with s:
        while True:
            data = s.recv(1 << 16)
            if not data:
                break
            dst.write(data)
            dst.flush()
