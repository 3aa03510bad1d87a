# SPDX-License-Identifier: Apache-2.0
"""The agent's local control API, the server (its client: ffs.core.api_client): JSON lines over a
Unix socket that only its owner can use.

One request per line, one response per line:
  {"op": "status"}                                -> {"ok": true, "result": {...}}
  {"op": "matrix_set", "ingress": "p1", "egress": "p3", "rate": 4e8}
  {"op": "matrix_load", "fairness": {egress: {ingress: bit/s}}}
  {"op": "matrix_show"} | {"op": "matrix_plan", "fairness": ...} | {"op": "tau_show"} | {"op": "log", "limit": 20}
  {"op": "selftest"}                              -> what the bring-up self-test found (ffs.agent.selftest)
Errors: {"ok": false, "error": "<one line>"}.

The socket is created mode 0600 (0660 when a group is configured) whatever the umask (ffs.core.unixsock:
a live agent's socket is never taken over, a stale one is replaced); every connection is also
checked with SO_PEERCRED, so a client that is neither the owner, root, nor in the configured group
is refused even if the file mode was changed.

Availability (docs/security.md): a listen backlog of `BACKLOG`, one thread per connection up to
`MAX_CONNECTIONS` (more are told the agent is busy), a request line of at most `MAX_REQUEST_BYTES`
parsed by ffs.core.safeload, and `IDLE_TIMEOUT_S` for a client that stops sending mid-request.
"""

from __future__ import annotations

import grp
import json
import logging
import os
import pwd
import socket
import socketserver
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict

from ffs.core.api_client import ApiError
from ffs.core.safeload import loads_json
from ffs.core.unixsock import bind_private

BACKLOG = 512  # connections the kernel queues before accept (socketserver's default is 5)
MAX_CONNECTIONS = 256  # served at once; each holds a thread and at most one request line
MAX_REQUEST_BYTES = 1 << 20  # a whole matrix of 64 interfaces is about 150 kB
IDLE_TIMEOUT_S = 30.0  # a connection that sends nothing for this long is closed

log = logging.getLogger("ffs.agent.api")


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a control connection, from SO_PEERCRED (not from the request)."""

    pid: int
    uid: int
    gid: int
    name: str  # the user name of uid

    def __str__(self) -> str:
        return self.name


Handler = Callable[[Dict[str, Any], Peer], Any]  # typing.Dict: evaluated at run time, also on 3.8


SO_PEERGROUPS = getattr(socket, "SO_PEERGROUPS", 59)  # Linux >= 4.13; Python does not name it everywhere


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket."""
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", data)


def peer_groups(sock: socket.socket) -> list[int] | None:
    """The peer's supplementary groups (SO_PEERGROUPS), or None where the kernel cannot tell."""
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, SO_PEERGROUPS, 4 * 256)
    except OSError:
        return None
    return list(struct.unpack(f"{len(data) // 4}I", data))


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid:{uid}"


class ControlServer:
    def __init__(self, path: str | Path, handler: Handler, group: str | None = None) -> None:
        self.path = Path(path)
        self.handler = handler
        self.owner = os.geteuid()
        self.gid = grp.getgrnam(group).gr_gid if group else None
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None

    def allowed(self, uid: int, gid: int, groups: list[int] | None = None) -> bool:
        """Root and the agent's own user; with a configured group, members of it: the peer's primary
        group, its supplementary groups (SO_PEERGROUPS), or, where the kernel cannot give those,
        the groups the user database lists for it."""
        if uid in (0, self.owner):
            return True
        if self.gid is None:
            return False
        if groups is None:
            try:
                groups = os.getgrouplist(user_name(uid), gid)
            except (KeyError, OSError):
                groups = []
        return self.gid == gid or self.gid in groups

    def start(self) -> None:
        outer = self

        class Conn(_Conn):
            api = outer
            slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

        server = _Server(str(self.path), Conn, bind_and_activate=False)
        try:
            # bound in a private directory with its mode set, then renamed into place (ffs.core.unixsock)
            def bind(tmp: str) -> None:  # listening before it appears under its name: never seen as stale
                server.socket.bind(tmp)
                server.server_activate()

            bind_private(self.path, bind, 0o600 if self.gid is None else 0o660, self.gid)
            server.server_address = str(self.path)
        except BaseException:
            server.server_close()
            raise
        self._server = server
        self._thread = threading.Thread(target=self._server.serve_forever, name="ffs-api", daemon=True)
        self._thread.start()
        log.info("control API on %s", self.path)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class _Conn(socketserver.StreamRequestHandler):
    """One control client's connection: newline-delimited JSON requests, one reply each. A server's
    subclass sets `api` (the ControlServer it answers for) and `slots` (its connections open)."""

    api: ClassVar[ControlServer]
    slots: ClassVar[threading.BoundedSemaphore]

    def handle(self) -> None:
        if not self.slots.acquire(blocking=False):
            self._refuse(f"the agent is busy ({MAX_CONNECTIONS} connections open); try again")
            return
        try:
            self._serve()
        finally:
            self.slots.release()

    def _refuse(self, message: str) -> None:
        # read (and ignore) the request first, so the client is not cut off mid-write
        # and gets the reason instead of a broken pipe
        self.request.settimeout(1.0)
        try:
            self.rfile.readline(1 << 16)
            self._reply({"ok": False, "error": message})
        except OSError:
            pass

    def _serve(self) -> None:
        pid, uid, gid = peer_credentials(self.request)
        who = Peer(pid, uid, gid, user_name(uid))
        if not self.api.allowed(uid, gid, peer_groups(self.request)):
            log.warning("refused control client uid=%d pid=%d", uid, pid)
            self._refuse(f"permission denied for {who} (uid {uid})")
            return
        self.request.settimeout(IDLE_TIMEOUT_S)
        while True:
            try:
                line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            except (socket.timeout, OSError):
                return
            if not line:
                return
            if len(line) > MAX_REQUEST_BYTES and not line.endswith(b"\n"):
                # the rest of the line cannot be told from the next request: answer and close
                self._reply({"ok": False, "error": f"request longer than {MAX_REQUEST_BYTES} bytes"})
                return
            if not line.strip():
                continue
            try:
                self._reply(self._answer(line, who))
            except OSError:
                return

    def _answer(self, line: bytes, who: Peer) -> dict[str, Any]:
        try:
            req = loads_json(line, "request", MAX_REQUEST_BYTES)
            if not isinstance(req, dict) or "op" not in req:
                raise ApiError("a request is a JSON object with an 'op'")
            return {"ok": True, "result": self.api.handler(req, who)}
        except (ApiError, ValueError) as e:  # LoadError is a ValueError
            return {"ok": False, "error": str(e).splitlines()[0] if str(e) else type(e).__name__}
        except Exception as e:  # noqa: BLE001 - the agent must keep serving
            log.exception("control request failed")
            return {"ok": False, "error": f"internal error: {e}"}

    def _reply(self, obj: dict[str, Any]) -> None:
        self.wfile.write((json.dumps(obj, default=_json_default) + "\n").encode())
        self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    request_queue_size = BACKLOG
    daemon_threads = True


def _json_default(o: Any) -> Any:
    if isinstance(o, float):
        return None
    raise TypeError(f"not JSON serializable: {type(o).__name__}")
