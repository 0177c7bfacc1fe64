"""The ops that start and follow builds: spawn (the build supervisor, run from a file of this host, runs the
command detached; a kept build directory is removed first when asked or when its setup changed) and status.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from stat import S_ISDIR as stat_is_dir
from typing import Any

from .args import arg_identity, arg_path, arg_str
from .kill import _alive
from .procs import BOOT_ID, MY_EUID, MY_UID, AgentError, log, user_name


def _reap(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait()
    except Exception as e:  # a waiter thread must not die noisily
        log(f"waiting for supervisor {proc.pid} failed: {e}")


KEPT_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}")  # each part of a kept directory's path
REMOVED_PREFIX = ".rigops-removed-"  # a kept directory moved aside to be deleted: <parent>/.rigops-removed-<name>-<t>


def _kept_setup(req: dict[str, Any], workdir: str) -> str | None:
    """Spawn's ``keep``: {dir (the build directory rigops keeps, relative to workdir), setup {name: digest} (what
    the build's objects depend on: its command and env, digested), setup_file (where the last run's setup is
    recorded), clean (remove the directory whatever the setup)}. The directory is removed when asked to, or when
    the setup differs from the recorded one (the kept objects were built another way); then the new setup is
    recorded. The removal moves the directory aside at once and deletes it in the background. Returns the line
    that opens the build's log when the run starts clean, else None."""
    keep = req.get("keep")
    if keep is None:
        return None
    if not isinstance(keep, dict):
        raise AgentError("bad_request", "keep must be an object")
    rel = arg_str(keep, "dir")
    parts = rel.split("/")
    if not all(KEPT_NAME_RE.fullmatch(p) for p in parts) or len(parts) > 4:
        raise AgentError("bad_request", "keep.dir must be a plain relative path (no '..', no leading '/')")
    setup = keep.get("setup")
    if not isinstance(setup, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in setup.items()):
        raise AgentError("bad_request", "keep.setup must map names to strings")
    setup_file = arg_path(keep, "setup_file", workdir)
    path = os.path.join(workdir, rel)  # plain parts: inside the workdir, as the build tool sees it
    parent = os.path.dirname(path)
    _sweep_removed(parent, os.path.basename(path))
    try:
        with open(setup_file, encoding="utf-8") as f:
            recorded = json.load(f)
        if not isinstance(recorded, dict):
            recorded = None
    except (OSError, ValueError):
        recorded = None
    why = None
    if keep.get("clean") is True:
        why = "a clean rebuild was asked for"
    elif recorded is not None and recorded != setup:
        changed = sorted(k for k in {*recorded, *setup} if recorded.get(k) != setup.get(k))
        shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
        why = f"{shown} changed since the run that built it"
    line = None
    if why is not None:
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isdir(path)):
            raise AgentError("bad_path", f"{rel} in {workdir} is not a directory rigops keeps: it leaves it alone")
        if os.path.isdir(path):
            aside = os.path.join(parent, f"{REMOVED_PREFIX}{os.path.basename(path)}-{time.time_ns()}")
            try:
                os.rename(path, aside)
            except OSError as e:
                raise AgentError("bad_path", f"cannot remove {rel}: {e.strerror}") from None
            threading.Thread(target=shutil.rmtree, args=(aside,), kwargs={"ignore_errors": True},
                             name="remove-kept", daemon=True).start()
            line = f"rigops: started clean: {why}; the kept build directory {rel} was removed"
        elif keep.get("clean") is True:
            line = f"rigops: started clean: {why}; nothing was kept in {rel}"
    try:
        os.makedirs(os.path.dirname(setup_file), exist_ok=True)
        tmp = f"{setup_file}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(setup, f, sort_keys=True)
        os.replace(tmp, setup_file)
    except OSError as e:
        raise AgentError("bad_path", f"cannot record the build's setup in {setup_file}: {e.strerror}") from None
    return line


def _sweep_removed(parent: str, name: str) -> None:
    """Delete what an earlier removal of ``name`` left moved aside (an agent that exited mid-delete)."""
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        if entry.startswith(f"{REMOVED_PREFIX}{name}-"):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


# Set by main(): the build supervisor's source (supervisor.py, which the bootstrap carries) and the open-files
# limit the agent found (the build gets it back: the agent raised its own).
SUPERVISOR_SOURCE = ""
ORIGINAL_NOFILE = -1
_supervisor_lock = threading.Lock()


def configure(supervisor: str, original_nofile: int) -> None:
    global SUPERVISOR_SOURCE, ORIGINAL_NOFILE
    SUPERVISOR_SOURCE, ORIGINAL_NOFILE = supervisor, original_nofile


def supervisor_file() -> str:
    """The build supervisor as a file of this host, which spawn runs (``ps`` shows its path, not its source):
    ``rigops/supervisor-<digest>.py`` in the user's cache directory, else in a private directory of the temp
    directory; named by its content, so agents of different bot versions on one host never run each other's.
    Written when missing or changed, atomically, in a directory only this user can write."""
    if not SUPERVISOR_SOURCE:
        raise AgentError("spawn_failed", "this agent was started without the build supervisor's source")
    data = SUPERVISOR_SOURCE.encode("utf-8")
    name = f"supervisor-{hashlib.sha256(data).hexdigest()[:16]}.py"
    problems = []
    with _supervisor_lock:
        for base in _supervisor_dirs():
            path = os.path.join(base, name)
            try:
                _private_dir(base)
                if _read_file(path) != data:
                    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                    try:
                        os.write(fd, data)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    os.replace(tmp, path)
                return path
            except OSError as e:
                problems.append(f"{base}: {e.strerror or e}")
    raise AgentError("spawn_failed", "cannot write the build supervisor: " + "; ".join(problems))


def _supervisor_dirs() -> list[str]:
    dirs = []
    cache = os.environ.get("XDG_CACHE_HOME", "")
    home = os.path.expanduser("~")
    if os.path.isabs(cache):
        dirs.append(os.path.join(cache, "rigops"))
    elif os.path.isabs(home):
        dirs.append(os.path.join(home, ".cache", "rigops"))
    dirs.append(os.path.join(tempfile.gettempdir(), f"rigops-{MY_EUID}"))
    return dirs


def _private_dir(path: str) -> None:
    """``path`` as a directory of this user that nobody else can write (made when missing), or OSError."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat_is_dir(st.st_mode) or st.st_uid != MY_EUID or st.st_mode & 0o022:
        raise OSError(errno.EPERM, "not a private directory of this user")


def _read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def op_spawn(req: dict[str, Any]) -> dict[str, Any]:
    workdir = os.path.abspath(os.path.expanduser(arg_str(req, "workdir")))
    command = arg_str(req, "command")
    env_arg = req.get("env") or {}
    if not isinstance(env_arg, dict) or not all(
        isinstance(k, str) and k and "=" not in k and isinstance(v, str) for k, v in env_arg.items()
    ):
        raise AgentError("bad_request", "env must map variable names to strings")
    if not os.path.isdir(workdir):
        raise AgentError("bad_workdir", f"workdir {workdir} does not exist or is not a directory")
    if not os.access(workdir, os.X_OK):
        raise AgentError("bad_workdir", f"workdir {workdir} is not accessible to {user_name(MY_UID)}")
    log_path = arg_path(req, "log", workdir)
    exit_file = arg_path(req, "exit_file", workdir)
    supervisor = supervisor_file()
    env = dict(os.environ)
    env.update({k: os.path.expanduser(v) if v.startswith("~/") else v for k, v in env_arg.items()})  # as sh does
    opening = _kept_setup(req, workdir)
    try:
        for path in (log_path, exit_file):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        for stale in (exit_file, exit_file + ".start"):  # old records would describe an earlier run
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stale)
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        if opening is not None:
            os.write(log_fd, f"{opening}\n".encode())
    except OSError as e:
        raise AgentError("bad_path", f"cannot prepare {e.filename or log_path}: {e.strerror}") from None
    read_fd, write_fd = os.pipe()
    try:
        try:
            proc = subprocess.Popen(
                [
                    sys.executable or "python3",
                    "-I",
                    "-S",
                    supervisor,
                    command,
                    exit_file,
                    str(write_fd),
                    str(ORIGINAL_NOFILE),
                ],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                pass_fds=(write_fd,),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            raise AgentError("spawn_failed", f"cannot start the build supervisor: {e}") from None
        except ValueError as e:  # a NUL byte in the command or the environment
            raise AgentError("bad_request", f"cannot pass that command or environment: {e}") from None
        started = time.time()
        os.close(write_fd)
        write_fd = -1
        threading.Thread(target=_reap, args=(proc,), name=f"reap-{proc.pid}", daemon=True).start()
        report = b""
        deadline = time.monotonic() + 30.0
        poller = select.poll()  # not select(): fds may be numbered past 1024
        poller.register(read_fd, select.POLLIN)
        while b"\n" not in report:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                raise AgentError("spawn_failed", "the build supervisor did not report its child in time")
            chunk = os.read(read_fd, 64)
            if not chunk:
                raise AgentError("spawn_failed", "the build supervisor exited before starting the command")
            report += chunk
    finally:
        os.close(read_fd)
        os.close(log_fd)
        if write_fd >= 0:
            os.close(write_fd)
    text = report.decode("utf-8", "replace").strip()
    if text.startswith("error "):
        raise AgentError("spawn_failed", text[len("error ") :])
    pid_text, _, start_text = text.partition(" ")
    return {
        "pid": int(pid_text),
        "start": int(start_text),
        "supervisor_pid": proc.pid,
        "log": log_path,
        "exit_file": exit_file,
        "started": started,
    }


def op_status(req: dict[str, Any]) -> dict[str, Any]:
    runs = req.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise AgentError("bad_request", "runs must be a list of objects")
    out = []
    for run in runs:
        pid, start = arg_identity([run.get("pid"), run.get("start")], "runs pid/start")
        exit_record = None
        exit_file = run.get("exit_file")
        if isinstance(exit_file, str) and exit_file:
            try:
                with open(os.path.expanduser(exit_file), "rb") as f:
                    exit_record = json.loads(f.read().decode("utf-8", "replace"))
            except (OSError, ValueError):
                exit_record = None
        log_size = None
        log_path = run.get("log")
        if isinstance(log_path, str) and log_path:
            try:
                log_size = os.stat(os.path.expanduser(log_path)).st_size
            except OSError:
                log_size = None
        out.append({"pid": pid, "start": start, "alive": _alive(pid, start), "exit": exit_record, "log_size": log_size})
    return {"runs": out, "boot_id": BOOT_ID}
