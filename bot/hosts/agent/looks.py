"""The ops that only look: hello, ping, snapshot, tail, read, gpu (nvidia-smi's CSV), disk.
"""

from __future__ import annotations

import heapq
import os
import shutil
import subprocess
import sys
import time
from stat import S_ISREG as stat_is_reg
from typing import Any

from .args import arg_float, arg_identities, arg_int, arg_names, arg_opt_str, arg_path
from .cgroups import own_memory_limit
from .procs import (
    BOOT_ID,
    CLOCK_TICKS,
    HAVE_PIDFD,
    HAVE_PSUTIL,
    MY_PID,
    MY_UID,
    PAGE_SIZE,
    AgentError,
    _meta_of,
    _proc_entry,
    _prune_caches,
    free_facts,
    read_loadavg,
    read_meminfo,
    read_vmstat_oom_kill,
    scan,
    stat_tool_name,
    user_name,
    user_uid,
)
from .protocol import AGENT_VERSION, BUILD_TOOL_NAMES
from .trees import _rss_key, children_of, tree_owners

# ---------------------------------------------------------------------------------------------------------
# Ops


def op_ping(req: dict[str, Any]) -> dict[str, Any]:
    return {"time": time.time()}


def op_hello(req: dict[str, Any]) -> dict[str, Any]:
    facts = free_facts()
    return {
        "agent_version": AGENT_VERSION,
        "pid": MY_PID,
        "python": "{}.{}.{}".format(*sys.version_info[:3]),
        "psutil": HAVE_PSUTIL,
        "pidfd": HAVE_PIDFD,
        "hostname": os.uname().nodename,
        "cores": os.cpu_count(),
        "boot_id": BOOT_ID,
        "uid": MY_UID,
        "user": user_name(MY_UID),
        "clock_ticks": CLOCK_TICKS,
        "page_size": PAGE_SIZE,
        "free_used": facts["free_used"],
        "procps_version": facts["procps_version"],
        "build_tool_names": list(BUILD_TOOL_NAMES),
    }


def op_snapshot(req: dict[str, Any]) -> dict[str, Any]:
    top_n = arg_int(req, "top", 5, 0, 10000)
    user = arg_opt_str(req, "user")
    names = arg_names(req, "names", BUILD_TOOL_NAMES)
    roots = arg_identities(req, "roots")
    want_uid = user_uid(user) if user is not None else None
    now = time.time()
    procs = scan()
    meminfo = read_meminfo()
    loadavg = read_loadavg()
    owners = tree_owners({st.pid: st for st in procs}, children_of(procs), roots) if roots else {}

    tools = []
    for st in procs:
        if st.dead:
            continue
        name = stat_tool_name(st)
        if name not in names and st.comm.decode("utf-8", "replace") not in names:
            continue
        uid, cmd = _meta_of(st, True)
        if uid is None or (want_uid is not None and uid != want_uid):
            continue
        entry = _proc_entry(st, name, uid)
        entry["cmd"] = cmd
        if st.pid in owners:
            entry["root"] = list(owners[st.pid])
        tools.append(entry)

    top = []
    if top_n:
        for st in heapq.nlargest(top_n, procs, key=_rss_key):
            if st.rss <= 0:
                break
            top.append(_proc_entry(st, stat_tool_name(st), _meta_of(st, False)[0]))
    _prune_caches(procs)

    return {
        "time": now,
        "meminfo": meminfo,
        "loadavg": loadavg,
        "cores": os.cpu_count(),
        "top": top,
        "tools": tools,
        "oom_kill": read_vmstat_oom_kill(),
        "boot_id": BOOT_ID,
        "limit": own_memory_limit(),
    }


TAIL_BLOCK = 65536


def open_regular(path: str) -> tuple[int, int]:
    """(fd, size) of a regular file opened for reading; a FIFO or device must not hang or fool us."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise AgentError("not_found", f"{path} does not exist") from None
    except OSError as e:
        raise AgentError("unreadable", f"cannot open {path}: {e.strerror}") from None
    st = os.fstat(fd)
    if not stat_is_reg(st.st_mode):
        os.close(fd)
        raise AgentError("not_a_file", f"{path} is not a regular file")
    return fd, st.st_size


def op_tail(req: dict[str, Any]) -> dict[str, Any]:
    path = arg_path(req, "path")
    want = arg_int(req, "lines", 40, 0, 1_000_000)
    max_bytes = arg_int(req, "max_bytes", 1 << 20, 1, 1 << 30)
    fd, size = open_regular(path)
    try:
        pos = size
        data = b""
        newlines = 0  # newlines in data, not counting one that ends the file
        truncated = False
        # Read backwards a block at a time until data holds ``want`` complete lines or max_bytes.
        while want and newlines < want and pos > 0:
            if len(data) >= max_bytes:
                truncated = True
                break
            step = min(TAIL_BLOCK, pos, max_bytes - len(data))
            pos -= step
            chunk = os.pread(fd, step, pos)
            if len(chunk) < step:  # the file shrank under us: start again from its new end
                size = os.fstat(fd).st_size
                pos, data, newlines = size, b"", 0
                continue
            newlines += chunk.count(b"\n") - (1 if pos + step == size and chunk.endswith(b"\n") else 0)
            data = chunk + data
    finally:
        os.close(fd)
    bytes_read = len(data)
    if data.endswith(b"\n"):
        data = data[:-1]
    pieces = data.split(b"\n") if (data or pos > 0 or size) else []
    if pos > 0 and len(pieces) > want:
        pieces = pieces[1:]  # starts mid-line and is not needed
    selected = pieces[-want:] if want else []
    lines = [(p[:-1] if p.endswith(b"\r") else p).decode("utf-8", "replace") for p in selected]
    return {"lines": lines, "size": size, "truncated": truncated, "bytes_read": bytes_read}


def op_read(req: dict[str, Any]) -> dict[str, Any]:
    """Bytes of a growing file from ``offset``, ending at a line break unless one line fills the chunk.

    A follower calls it repeatedly with the returned ``offset``: the cost is the new bytes, not the file.
    """
    path = arg_path(req, "path")
    offset = arg_int(req, "offset", 0, 0, 1 << 62)
    max_bytes = arg_int(req, "max_bytes", 1 << 20, 1, 64 << 20)
    fd, size = open_regular(path)
    try:
        if offset > size:  # truncated or replaced: start again
            offset = 0
        data = os.pread(fd, min(max_bytes, size - offset), offset) if size > offset else b""
    finally:
        os.close(fd)
    cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
    if cut >= 0:
        data = data[: cut + 1]
    elif len(data) < max_bytes:
        data = b""  # a line still being written: wait for its end
    return {"data": data.decode("utf-8", "replace"), "offset": offset + len(data), "size": size}


GPU_QUERY = (
    "--query-gpu=index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw",
    "--format=csv,noheader,nounits",
)
APPS_QUERY = ("--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv,noheader,nounits")


def op_gpu(req: dict[str, Any]) -> dict[str, Any]:
    timeout = arg_float(req, "timeout", 10.0, 0.1, 600.0)
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"available": False, "reason": "nvidia-smi not found"}
    outputs = []
    for query in (GPU_QUERY, APPS_QUERY):
        try:
            proc = subprocess.run(
                [exe, *query],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"available": False, "reason": f"nvidia-smi timed out after {timeout:g}s"}
        except OSError as e:
            return {"available": False, "reason": f"nvidia-smi could not run: {e}"}
        if proc.returncode != 0:
            text = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
            first = text.splitlines()[0] if text else "no output"
            return {"available": False, "reason": f"nvidia-smi exited with {proc.returncode}: {first}"}
        outputs.append(proc.stdout.decode("utf-8", "replace"))
    return {"available": True, "gpus_csv": outputs[0], "apps_csv": outputs[1]}


DISK_PATHS = 64


def op_disk(req: dict[str, Any]) -> dict[str, Any]:
    paths = req.get("paths")
    if not isinstance(paths, list) or not 0 < len(paths) <= DISK_PATHS or not all(
            isinstance(p, str) and p and "\0" not in p for p in paths):
        raise AgentError("bad_request", f"paths must be a list of 1 to {DISK_PATHS} paths")
    return {"places": [_disk_place(path) for path in paths]}


def _disk_place(path: str) -> dict[str, Any]:
    """Free space where ``path`` is, or would be made (a log directory before the first build)."""
    at = os.path.abspath(os.path.expanduser(path))
    while not os.path.lexists(at) and os.path.dirname(at) != at:
        at = os.path.dirname(at)
    try:
        fs = os.statvfs(at)
        device = os.stat(at).st_dev
    except OSError as e:
        return {"path": path, "error": f"cannot measure {at}: {e.strerror or e}"}
    return {"path": path, "at": at, "exists": at == os.path.abspath(os.path.expanduser(path)),
            "mount": _mount_of(at, device), "device": device,
            "total": fs.f_blocks * fs.f_frsize, "used": (fs.f_blocks - fs.f_bfree) * fs.f_frsize,
            "free": fs.f_bavail * fs.f_frsize}


def _mount_of(path: str, device: int) -> str:
    """The topmost directory above ``path`` on the same device: where its filesystem is mounted."""
    while True:
        parent = os.path.dirname(path)
        try:
            if parent == path or os.stat(parent).st_dev != device:
                return path
        except OSError:
            return path
        path = parent
