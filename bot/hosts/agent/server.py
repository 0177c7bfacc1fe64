"""The protocol loop: JSON lines on stdin, one thread a request (ping inline), answers on a private copy of
stdout; ``main`` is what the bootstrap calls.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import threading
import traceback
from typing import Any

from . import spawn
from .kill import op_kill, op_pause, op_resume
from .looks import op_disk, op_gpu, op_hello, op_ping, op_read, op_snapshot, op_tail
from .procs import AgentError, free_facts, log, raise_fd_limit
from .sample import op_sample
from .spawn import op_spawn, op_status

OPS = {
    "hello": op_hello,
    "ping": op_ping,
    "snapshot": op_snapshot,
    "kill": op_kill,
    "spawn": op_spawn,
    "status": op_status,
    "tail": op_tail,
    "read": op_read,
    "gpu": op_gpu,
    "disk": op_disk,
    "pause": op_pause,
    "resume": op_resume,
    "sample": op_sample,
}


# ---------------------------------------------------------------------------------------------------------
# The protocol loop


class Server:
    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self.write_lock = threading.Lock()
        self.busy = threading.Condition()
        self.in_flight = 0

    def send(self, message: dict[str, Any]) -> None:
        try:
            data = json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"
        except (TypeError, ValueError) as e:
            data = (
                json.dumps(
                    {
                        "id": message.get("id"),
                        "ok": False,
                        "error": {"type": "internal", "message": f"unencodable result: {e}"},
                    }
                ).encode("ascii")
                + b"\n"
            )
        with self.write_lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.out_fd, view)
                except InterruptedError:
                    continue
                except OSError as e:
                    if e.errno in (errno.EPIPE, errno.EBADF):
                        log("stdout is gone; exiting")
                        os._exit(0)
                    raise
                view = view[n:]

    def error(self, rid: Any, code: str, message: str) -> None:
        self.send({"id": rid, "ok": False, "error": {"type": code, "message": message}})

    def handle(self, rid: Any, op: str, req: dict[str, Any]) -> None:
        try:
            result = OPS[op](req)
        except AgentError as e:
            self.error(rid, e.code, e.message)
        except Exception as e:
            log(f"{op} failed:\n{traceback.format_exc()}")
            self.error(rid, "internal", f"{type(e).__name__}: {e}")
        else:
            self.send({"id": rid, "ok": True, "result": result})
        finally:
            with self.busy:
                self.in_flight -= 1
                self.busy.notify_all()

    def dispatch(self, line: bytes) -> None:
        try:
            req = json.loads(line.decode("utf-8"))
        except ValueError as e:
            self.error(None, "bad_json", f"request is not JSON: {e}")
            return
        if not isinstance(req, dict):
            self.error(None, "bad_request", "request must be a JSON object")
            return
        rid = req.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (int, str))):
            self.error(None, "bad_request", "id must be an integer")
            return
        op = req.get("op")
        if not isinstance(op, str):
            self.error(rid, "bad_request", "op must be a string")
            return
        if op not in OPS:
            self.error(rid, "unknown_op", "unknown op {!r} (known: {})".format(op, ", ".join(sorted(OPS))))
            return
        with self.busy:
            self.in_flight += 1
        if op != "ping":
            try:
                threading.Thread(target=self.handle, args=(rid, op, req), name=f"{op}-{rid}", daemon=True).start()
                return
            except RuntimeError:  # no thread to be had (a host out of memory): answer it here instead
                log(f"no thread for {op}; handling it inline")
        self.handle(rid, op, req)

    def serve(self, inp: Any) -> None:
        while True:
            try:
                line = inp.readline()
            except InterruptedError:
                continue
            if not line:
                break
            line = line.strip()
            if line:
                self.dispatch(line)
        with self.busy:
            while self.in_flight:
                self.busy.wait()


def main(supervisor: str = "") -> None:
    """Serve requests on stdin until EOF; ``supervisor``: the build supervisor's source (spawn needs it)."""
    spawn.configure(supervisor, raise_fd_limit())
    # The protocol gets a private, non-inheritable copy of stdout; fd 1 then points at stderr so that
    # nothing else (a stray print, a child process) can write on the protocol stream.
    out_fd = os.dup(1)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: stray output goes nowhere rather than into the protocol
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    sys.stdout = sys.stderr
    threading.Thread(target=free_facts, name="free-V", daemon=True).start()  # detect once, at startup
    server = Server(out_fd)
    server.serve(sys.stdin.buffer)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(0)
