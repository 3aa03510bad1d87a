# SPDX-License-Identifier: Apache-2.0
"""systemd's service notifications (sd_notify(3)) without libsystemd: one datagram per message to
the Unix socket systemd names in $NOTIFY_SOCKET (a path, or an abstract name after `@`).

The agent says READY=1 once the switch is programmed and the control socket answers (Type=notify),
STATUS= while it waits for its switch, STOPPING=1 on its way out, and WATCHDOG=1 after every
completed τ step (WatchdogSec=): a loop that hangs stops the pings, and systemd restarts the agent.
Outside systemd (no $NOTIFY_SOCKET) every call does nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Mapping

log = logging.getLogger("ffs.agent")


class Notifier:
    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        address = environ.get("NOTIFY_SOCKET", "")
        self.address = "\0" + address[1:] if address.startswith("@") else address
        # the watchdog is this process's only if WATCHDOG_PID is unset or names it (sd_watchdog_enabled)
        pid = environ.get("WATCHDOG_PID", "")
        usec = environ.get("WATCHDOG_USEC", "")
        mine = not pid or pid == str(os.getpid())
        self.watchdog_s = int(usec) / 1e6 if usec.isdigit() and int(usec) > 0 and mine and self.address else 0.0
        self._last_ping = float("-inf")
        self._sock: socket.socket | None = None
        self._failed = False

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> None:
        """One message of KEY=VALUE lines; a failure is logged once and never stops the agent."""
        if not self.address:
            return
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto("\n".join(fields).encode(), self.address)
        except OSError as e:
            if not self._failed:
                log.warning("cannot notify systemd at NOTIFY_SOCKET=%s: %s", self.address.replace("\0", "@"), e)
                self._failed = True

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> None:
        """WATCHDOG=1, at most four times per watchdog interval (the τ loop calls it every period)."""
        if not self.watchdog_s:
            return
        now = time.monotonic()
        if now - self._last_ping >= self.watchdog_s / 4:
            self._last_ping = now
            self.send("WATCHDOG=1")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
