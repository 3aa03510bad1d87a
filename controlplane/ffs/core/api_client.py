# SPDX-License-Identifier: Apache-2.0
"""The agent's control API, the client's side (what ffsctl, ffsctl fleet and the laboratory use): one
request, one answer line, over the agent's Unix socket (the protocol: ffs.agent.api, the server)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any


class ApiError(Exception):
    """A request the agent refuses; the message is returned to the client as one line."""


def connect(path: str | Path, timeout_s: float) -> socket.socket:
    """A connected socket with `timeout_s` for what follows. A Unix socket whose accept queue is full
    refuses a non-blocking connect at once (EAGAIN) rather than waiting, so a busy agent is retried
    until the deadline instead of failing the call."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(str(path))
            s.settimeout(max(0.001, deadline - time.monotonic()))
            return s
        except (BlockingIOError, InterruptedError):
            s.close()
            if time.monotonic() >= deadline:
                raise ApiError(f"the agent at {path} did not accept the connection within {timeout_s:g} s") from None
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(2 * delay, 0.05)
        except FileNotFoundError:
            s.close()
            raise ApiError(f"no agent socket at {path} (is ffs-agent running? see --socket)") from None
        except PermissionError:
            s.close()
            raise ApiError(f"permission denied on {path} (run as the agent's user or its group)") from None
        except OSError as e:
            s.close()
            raise ApiError(f"cannot reach the agent at {path}: {e.strerror}") from None


def call(path: str | Path, request: dict[str, Any], timeout_s: float = 10.0) -> Any:
    """One request to the agent; returns the result or raises ApiError with the agent's message."""
    s = connect(path, timeout_s)
    with s, s.makefile("rwb") as f:
        try:
            f.write((json.dumps(request) + "\n").encode())
            f.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent may have answered (a refusal) and closed already: read what it said
        try:
            line = f.readline()
        except ConnectionResetError:
            line = b""
        except socket.timeout:
            raise ApiError(f"the agent at {path} did not answer within {timeout_s:g} s") from None
    return answer(line)


def answer(line: bytes) -> Any:
    """The result in one answer line of the agent (over its socket, or relayed: ffs.cli.remote)."""
    if not line:
        raise ApiError("the agent closed the connection without answering")
    try:
        resp = json.loads(line)  # the agent's own answer: trusted, and it may carry Infinity (json.dumps' default)
    except ValueError:
        raise ApiError("the agent's answer is not JSON") from None
    if not isinstance(resp, dict) or not resp.get("ok"):
        raise ApiError(
            resp.get("error", "request failed") if isinstance(resp, dict) else "the agent's answer is not an object"
        )
    return resp.get("result")
