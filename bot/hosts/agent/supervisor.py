"""The build supervisor: the agent's spawn starts it, detached, to run one build and record how it ended.

Started as ``python3 -I -S <this file> COMMAND EXIT_FILE REPORT_FD NOFILE`` in a session of its own
(the agent's Popen(start_new_session=True)), with the build's workdir, environment and log as cwd, env and
stdout/stderr. It runs COMMAND with ``/bin/sh -c`` as its child in a process group of its own, writes the
start record ``<EXIT_FILE>.start`` ({pid, start, supervisor_pid}), reports ``"<pid> <start>"`` (or
``"error <why>"``) on REPORT_FD, forwards SIGTERM, SIGINT and SIGHUP to the build's group, waits, and writes
EXIT_FILE atomically: {exit_status, signal, ended, pid}. NOFILE (-1: leave it) is the soft open-files limit
to give the build back: the agent raised its own.

Like the agent, stdlib only and Python >= 3.8: it runs on build hosts, which have no ``bot`` package. The bot
ships this file's text in the agent's bootstrap (``bot.hosts.base.agent_bootstrap``); the agent's spawn writes it
to a file of the host (``spawn.supervisor_file``) and runs that, so a ``ps`` there shows a path, not 5 KB of
Python. It imports none of the agent's modules: it runs alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from types import FrameType

RESET_SIGNALS = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")  # ignored by Python, but a build expects the defaults
FORWARDED_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


def main(argv: list[str] | None = None) -> None:
    """Run one build: ``argv`` is COMMAND EXIT_FILE REPORT_FD NOFILE (default: the command line's)."""
    args = sys.argv[1:] if argv is None else argv
    command, exit_file, report_fd, nofile = args[0], args[1], int(args[2]), int(args[3])
    restore_nofile(nofile)
    pid, failure = start(command, report_fd)
    if failure:
        os.write(report_fd, b"error " + failure.replace(b"\n", b" ") + b"\n")
    else:
        start_time = process_start(pid)
        with contextlib.suppress(OSError):  # the start record: for a bot that dies before hearing the report
            write_record(exit_file + ".start", {"pid": pid, "start": start_time, "supervisor_pid": os.getpid()})
        os.write(report_fd, f"{pid} {start_time}\n".encode())
    os.close(report_fd)
    forward_signals(pid)
    code, sig = wait_for(pid)
    write_record(exit_file, {"exit_status": code, "signal": sig, "ended": time.time(), "pid": pid})


def restore_nofile(nofile: int) -> None:
    """Give the build the open-files limit the agent had before it raised its own."""
    if nofile < 0:
        return
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def start(command: str, report_fd: int) -> tuple[int, bytes]:
    """Fork and exec ``/bin/sh -c command`` in a process group of its own: (its pid, why the exec failed)."""
    exec_r, exec_w = os.pipe()  # close-on-exec: EOF on exec_r means the exec happened
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_fd)
            os.close(exec_r)
            os.setpgid(0, 0)
            for name in RESET_SIGNALS:
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            os.execv("/bin/sh", ["/bin/sh", "-c", command])
        except BaseException as e:
            try:
                os.write(exec_w, f"cannot run /bin/sh: {e}".encode())
            finally:
                os._exit(127)
    with contextlib.suppress(OSError):  # both sides: the group exists before either goes on
        os.setpgid(pid, pid)
    os.close(exec_w)
    failure = b""
    while True:
        chunk = os.read(exec_r, 4096)
        if not chunk:
            break
        failure += chunk
    os.close(exec_r)
    return pid, failure


def process_start(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot), -1 when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return int(data[data.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return -1


def write_record(path: str, record: dict[str, int | float | None]) -> None:
    """``record`` as one JSON line at ``path``, atomically (a reader never sees half of it)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def forward_signals(pid: int) -> None:
    """Pass a stop request on to the build's whole process group; the supervisor stays to record the end."""

    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signum)

    for name in FORWARDED_SIGNALS:
        signal.signal(getattr(signal, name), forward)


def wait_for(pid: int) -> tuple[int | None, int | None]:
    """Wait until the build's shell ends: (exit status, killing signal), one of them None (both: unknown)."""
    status = None
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            break
    if status is None:
        return None, None
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return None, None


if __name__ == "__main__":
    main()
