"""Reading /proc: a process's stat, uid and argv; warm scans of every process; tool names; meminfo, load,
boot id; users; the host facts detected once (free's meaning, psutil). Also AgentError and log, which every
op uses.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any

TASK_COMM_LEN = 15  # the kernel keeps at most this many characters of a process's comm
CMD_MAX_CHARS = 200
SETTLE_POLL = 0.05  # seconds between MemAvailable readings while memory settles
SETTLE_FRACTION = 0.005  # settled when two readings differ by less than this fraction of MemTotal
EXIT_POLL = 0.02  # seconds between checks while waiting for signalled processes to go

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
MY_PID = os.getpid()
MY_UID = os.getuid()
MY_EUID = os.geteuid()
HAVE_PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


class AgentError(Exception):
    """An expected failure: becomes ``{"ok": false, "error": {"type": code, "message": ...}}``; ``code`` is
    one of ERROR_CODES."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def log(message: str) -> None:
    """Diagnostics go to stderr, never stdout."""
    try:
        sys.stderr.write("rigops-agent: " + message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------------------------------------------------
# Tool names


_VERSION_SUFFIX = re.compile(r"-\d+(?:\.\d+)*$")
_TRIPLE_ARCH = re.compile(
    r"^(?:x86_64|x86|i[3-6]86|amd64|aarch64(?:_be)?|arm\w*|riscv\d+|powerpc\w*|ppc\w*|s390x?|mips\w*"
    r"|loongarch\d+|sparc\w*|nvptx\d*|amdgcn|wasm\d+|m68k|alpha|hppa\w*|ia64|xtensa|avr|msp430|bpf\w*)$"
)
_TRIPLE_PART = re.compile(
    r"^(?:pc|unknown|none|linux|gnu\w*|musl\w*|eabi\w*|elf\w*|w64|w32|mingw\w*|cygwin|apple|darwin[\d.]*"
    r"|android\w*|nvidia|cuda|amd|amdhsa|redhat|suse|alpine|buildroot|poky|openwrt|wrs|uclibc\w*"
    r"|freebsd[\d.]*|netbsd[\d.]*|openbsd[\d.]*|kfreebsd|hurd|intel|ibm|oe|cros|montavista|vendor)$"
)


def normalise_tool_name(base: str) -> str:
    """Map a cross or versioned tool name to the plain one.

    ``x86_64-linux-gnu-g++-12`` -> ``g++``, ``gcc-12`` -> ``gcc``, ``clang++-17`` -> ``clang++``,
    ``aarch64-linux-gnu-ld.gold`` -> ``ld.gold``; anything else (``cc1plus``, ``python3.11``) stays.
    A prefix is only taken for a target triple when it starts with a known architecture and goes on with
    known vendor/OS/ABI words, so ``my-tool`` or ``x86_64-foo`` stay as they are.
    """
    name = _VERSION_SUFFIX.sub("", base) or base
    parts = name.split("-")
    if len(parts) >= 3 and _TRIPLE_ARCH.match(parts[0]):
        i = 1
        while i < len(parts) - 1 and _TRIPLE_PART.match(parts[i]):
            i += 1
        if i >= 2:
            name = "-".join(parts[i:])
    return name


def tool_name(comm: str, argv0: str | None = None) -> str:
    """A process's tool name: its comm, or argv[0]'s basename when comm is exactly 15 characters long
    (the kernel truncated it); then normalised by :func:`normalise_tool_name`."""
    if len(comm) != TASK_COMM_LEN:
        return normalise_tool_name(comm)
    base = os.path.basename(argv0.rstrip("/")) if argv0 else ""
    return normalise_tool_name(base) if base else comm  # a cut-off name is not normalised


# ---------------------------------------------------------------------------------------------------------
# /proc readers


def _read(path: str, size: int = 4096) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_all(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


class Stat:
    """The fields of /proc/<pid>/stat the agent uses."""

    __slots__ = ("comm", "pid", "ppid", "rss", "start", "state", "tool")

    def __init__(self, pid: int, comm: bytes, state: bytes, ppid: int, start: int, rss: int) -> None:
        self.tool: str | None = None  # the tool name, once known
        self.pid = pid
        self.comm = comm
        self.state = state
        self.ppid = ppid
        self.start = start
        self.rss = rss  # bytes

    @property
    def dead(self) -> bool:
        return self.state in (b"Z", b"X", b"x")


def parse_stat(pid: int, data: bytes) -> Stat | None:
    right = data.rfind(b")")
    left = data.find(b"(")
    if right < 0 or left < 0:
        return None
    f = data[right + 2 :].split(None, 22)
    if len(f) < 22:
        return None
    return Stat(pid, data[left + 1 : right], f[0], int(f[1]), int(f[19]), int(f[21]) * PAGE_SIZE)


def read_stat(pid: int) -> Stat | None:
    data = _read(f"/proc/{pid}/stat", 2048)
    if not data:
        return None
    return parse_stat(pid, data)


# Warm scans hold each process's /proc/<pid>/stat and /proc/<pid>/statm open and pread() them: no
# open/close per process. statm (memory counters, cheap for the kernel to produce) is read first: when it has
# not changed since the last scan, the process's previous Stat is reused and its stat (several times dearer)
# is not read; kill asks for full scans, which read every stat (exact ppid and state). An exec changes the
# memory counters, and a zombie's are all zero. Kernel threads are left out of scans (never a build tool,
# no RSS); for them the held statm fd only tells that the pid still belongs to the same thread. A dead
# process's held fd reads ESRCH even when its pid has been reused, so a recycled pid is opened afresh.
PF_KTHREAD = 0x00200000
_scan_lock = threading.Lock()
# pid -> [stat fd (-1: kernel thread), statm fd, is kernel thread, stat text, its Stat, statm text]
_held: dict[int, list[Any]] = {}


FD_BUDGET = 0  # fds scans may hold open; set by raise_fd_limit(): importing this module changes no limit


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE and set FD_BUDGET from it; returns the original soft limit (builds get it
    back), -1 when it could not be read."""
    global FD_BUDGET
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        original = soft
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        limit = 65536 if soft == resource.RLIM_INFINITY else soft
        FD_BUDGET = max(0, min(limit, 65536) - 256) // 2  # two fds a process
        return original
    except (ImportError, ValueError, OSError):
        FD_BUDGET = 256
        return -1


def scan(full: bool = False) -> list[Stat]:
    """Every process but kernel threads (see above; ``full``: read every stat)."""
    out: list[Stat] = []
    append = out.append
    held = _held
    pread = os.pread
    with _scan_lock:
        live = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            live.add(pid)
            entry = held.get(pid)
            data = b""
            if entry is not None:
                try:
                    if entry[2]:
                        if pread(entry[1], 256, 0):
                            continue  # the same kernel thread
                    else:
                        if not full:
                            counters = pread(entry[1], 256, 0)
                            if counters == entry[5]:
                                append(entry[4])
                                continue
                            entry[5] = counters
                        data = pread(entry[0], 2048, 0)
                except OSError:
                    data = b""
                if not data:  # that process is gone; the pid may be a new one
                    _close_held(held.pop(pid))
                elif data == entry[3]:
                    append(entry[4])
                    continue
            if not data:
                data = _open_new(pid, name)
                if not data:
                    continue
            right = data.rfind(b")")
            f = data[right + 2 :].split(None, 22)
            if right < 0 or len(f) < 22 or int(f[6]) & PF_KTHREAD:
                continue
            st = Stat(pid, data[data.find(b"(") + 1 : right], f[0], int(f[1]), int(f[19]), int(f[21]) * PAGE_SIZE)
            append(st)
            entry = held.get(pid)
            if entry is not None and not entry[2]:
                entry[3] = data
                entry[4] = st
        if len(held) > len(live):
            for pid in [p for p in held if p not in live]:
                _close_held(held.pop(pid))
        if not full:  # a reused Stat whose parent is gone has a new parent by now: read it again
            for i, st in enumerate(out):
                if st.ppid not in live and st.ppid > 0:
                    fresh = read_stat(st.pid)
                    if fresh is not None and fresh.start == st.start:
                        out[i] = fresh
                        entry = held.get(st.pid)
                        if entry is not None:
                            entry[4] = fresh
    return out


def _close_held(entry: list[Any]) -> None:
    for fd in (entry[0], entry[1]):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_new(pid: int, name: str) -> bytes:
    """Read a process's stat for the first time, and hold its fds when the budget allows."""
    try:
        fd = os.open("/proc/" + name + "/stat", os.O_RDONLY)
    except OSError:
        return b""
    keep = False
    try:
        data = os.read(fd, 2048)
        if data and len(_held) < FD_BUDGET:
            f = data[data.rfind(b")") + 2 :].split(None, 7)
            kthread = len(f) > 6 and bool(int(f[6]) & PF_KTHREAD)
            mfd = os.open("/proc/" + name + "/statm", os.O_RDONLY)
            try:
                counters = os.pread(mfd, 256, 0)
            except OSError:
                os.close(mfd)
                raise
            if kthread:
                _held[pid] = [-1, mfd, True, b"", None, b""]
            else:
                _held[pid] = [fd, mfd, False, b"", None, counters]
                keep = True
        return data
    except (OSError, ValueError):
        return b""
    finally:
        if not keep:
            os.close(fd)


def read_uid(pid: int) -> int | None:
    """The real uid from /proc/<pid>/status."""
    data = _read(f"/proc/{pid}/status", 8192)
    if not data:
        return None
    i = data.find(b"\nUid:")
    if i < 0:
        return None
    fields = data[i + 5 : data.find(b"\n", i + 5)].split()
    return int(fields[0]) if fields else None


def read_argv(pid: int) -> list[str]:
    data = _read(f"/proc/{pid}/cmdline", 8192)
    if not data:
        return []
    if data.endswith(b"\0"):
        data = data[:-1]
    return [a.decode("utf-8", "replace") for a in data.split(b"\0")]


def read_meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in _read_all("/proc/meminfo").splitlines():
        key, _, rest = line.partition(b":")
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        if len(parts) > 1 and parts[1].lower() == b"kb":
            value *= 1024
        out[key.decode("ascii", "replace")] = value
    return out


def read_loadavg() -> list[float]:
    parts = _read_all("/proc/loadavg").split()
    return [float(p) for p in parts[:3]]


def read_boot_id() -> str:
    data = _read("/proc/sys/kernel/random/boot_id", 128)
    return data.decode("ascii", "replace").strip() if data else ""


BOOT_ID = read_boot_id()


# ---------------------------------------------------------------------------------------------------------
# Caches: uid -> user name, user name -> uid, (pid, start) -> tool name, comm -> normalised name


_cache_lock = threading.Lock()
_user_names: dict[int, str] = {}
_name_cache: dict[bytes, str] = {}  # comms shorter than 15 characters
_long_name_cache: dict[tuple[int, int, bytes], str] = {}  # (pid, start, comm) of 15-character comms


def user_name(uid: int | None) -> str | None:
    if uid is None:
        return None
    name = _user_names.get(uid)
    if name is None:
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        with _cache_lock:
            _user_names[uid] = name
    return name


def user_uid(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        if name.isdigit():
            return int(name)
        raise AgentError("unknown_user", f"no user {name!r} on this host") from None


def stat_tool_name(st: Stat) -> str:
    """Tool name of a scanned process; reads cmdline only for 15-character comms (cached by identity once
    the process is a second old: younger ones may still be between fork and exec)."""
    name = st.tool
    if name is not None:
        return name
    comm = st.comm
    if len(comm) != TASK_COMM_LEN:
        name = _name_cache.get(comm)
        if name is None:
            name = normalise_tool_name(comm.decode("utf-8", "replace"))
            with _cache_lock:
                if len(_name_cache) > 4096:
                    _name_cache.clear()
                _name_cache[comm] = name
        st.tool = name
        return name
    key = (st.pid, st.start, comm)
    name = _long_name_cache.get(key)
    if name is None:
        argv = read_argv(st.pid)
        name = tool_name(comm.decode("utf-8", "replace"), argv[0] if argv else None)
        if _uptime() - st.start / CLOCK_TICKS <= 1.0:
            return name
        with _cache_lock:
            if len(_long_name_cache) > 4096:
                _long_name_cache.clear()
            _long_name_cache[key] = name
    st.tool = name
    return name


def _uptime() -> float:
    try:
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):
        data = _read("/proc/uptime", 64)
        return float(data.split()[0]) if data else 0.0


def command_line(pid: int, comm: bytes) -> str:
    argv = read_argv(pid)
    if not argv:
        return "[" + comm.decode("utf-8", "replace") + "]"
    return " ".join(argv)[:CMD_MAX_CHARS]


# (pid, start, comm) -> [uid, command line or None]: what a snapshot reports beyond /proc/<pid>/stat, read
# once per process (an exec changes comm, so it is read again then).
_meta: dict[tuple[int, int, bytes], list[Any]] = {}


def _meta_of(st: Stat, with_cmd: bool) -> list[Any]:
    key = (st.pid, st.start, st.comm)
    meta = _meta.get(key)
    if meta is None or meta[0] is None:
        meta = [read_uid(st.pid), None]
        with _cache_lock:
            _meta[key] = meta
    if with_cmd and meta[1] is None:
        meta[1] = command_line(st.pid, st.comm)
    return meta


def _prune_caches(procs: list[Stat]) -> None:
    if len(_meta) + len(_long_name_cache) <= 2 * len(procs) + 256:
        return
    live = {(st.pid, st.start) for st in procs}
    with _cache_lock:
        for key in [k for k in _meta if (k[0], k[1]) not in live]:
            _meta.pop(key, None)
        for long_key in [k for k in _long_name_cache if (k[0], k[1]) not in live]:
            _long_name_cache.pop(long_key, None)


def ancestors(pid: int) -> set[int]:
    """pid's parent chain up to pid 1 (not pid itself)."""
    out: set[int] = set()
    st = read_stat(pid)
    while st is not None and st.ppid > 0 and st.ppid not in out:
        out.add(st.ppid)
        st = read_stat(st.ppid)
    return out


# ---------------------------------------------------------------------------------------------------------
# Host facts detected once

_facts_lock = threading.Lock()
_free_facts: dict[str, Any] | None = None


def free_facts() -> dict[str, Any]:
    """How this host's ``free`` computes "used", from ``free -V`` (run once)."""
    global _free_facts
    with _facts_lock:
        if _free_facts is None:
            _free_facts = _detect_free()
        return _free_facts


def _detect_free() -> dict[str, Any]:
    exe = shutil.which("free")
    if exe is None:
        return {"free_used": "available", "procps_version": None}
    try:
        proc = subprocess.run(
            [exe, "-V"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=5,
            check=False,
        )
        text = proc.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError) as e:
        log(f"free -V failed: {e}")
        return {"free_used": "available", "procps_version": None}
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if "procps" in text.lower() and m:
        return {"free_used": "available" if int(m.group(1)) >= 4 else "classic", "procps_version": m.group(0)}
    if "busybox" in text.lower():
        return {"free_used": "classic", "procps_version": None}
    return {"free_used": "available", "procps_version": None}


def _have_psutil() -> bool:
    try:
        import importlib.util

        return importlib.util.find_spec("psutil") is not None
    except (ImportError, ValueError):
        return False


HAVE_PSUTIL = _have_psutil()


def _proc_entry(st: Stat, name: str, uid: int | None) -> dict[str, Any]:
    return {
        "pid": st.pid,
        "ppid": st.ppid,
        "name": name,
        "user": user_name(uid),
        "rss": st.rss,
        "start": st.start,
    }


def read_vmstat_oom_kill() -> int | None:
    """/proc/vmstat's oom_kill counter (kernels >= 4.13), or None."""
    data = _read("/proc/vmstat", 65536) or b""
    i = data.find(b"\noom_kill ")
    if i < 0:
        return None
    return int(data[i + 10 : data.find(b"\n", i + 10)])
