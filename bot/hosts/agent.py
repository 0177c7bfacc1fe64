"""rigops host agent: one self-contained, stdlib-only Python 3 (>= 3.8) program.

The bot starts it once per host, over one SSH channel as ``python3 -u -c '<bootstrap>'`` or locally as a
subprocess, and keeps it running. The bootstrap (``bot.hosts.base.agent_bootstrap``) carries this source and
the build supervisor's (``bot/hosts/supervisor.py``, which spawn runs), and calls ``main(supervisor)``. This
file imports nothing from ``bot`` and nothing outside the standard library; the bootstrap must stay well under
128 KiB (one command-line argument).

Protocol: JSON lines. Request ``{"id": <int>, "op": <str>, ...args}``; response
``{"id": <same>, "ok": true, "result": {...}}`` or
``{"id": <same>, "ok": false, "error": {"type": <code>, "message": <text>}}``; id null when the line was not a
JSON object. Requests run concurrently (a thread each; ``ping`` is answered inline), so responses may come
out of order. Only protocol lines go to stdout (fd 1 is pointed at stderr at startup); diagnostics go to
stderr, which the reader must drain. Blank lines are ignored. EOF on stdin: finish the requests in flight,
then exit 0; spawned builds keep running. Times are seconds (floats), sizes bytes (ints). A process's
identity is (pid, start), start being field 22 of /proc/<pid>/stat (clock ticks after boot): meaningful
only together with boot_id.

Error types: ERROR_CODES (bot/util/errors.py says what each means); every error answer has one.

hello -> agent_version (1), pid, python "3.x.y", psutil (importable), pidfd (race-free signals), hostname,
    cores, boot_id, uid, user, clock_ticks, page_size, free_used ("available": free's "used" is
    MemTotal-MemAvailable, procps-ng >= 4 or no free; "classic": MemTotal-MemFree-Buffers-Cached-SReclaimable),
    procps_version (str|null), build_tool_names.
ping -> time.
snapshot {top=5, user=null, names=BUILD_TOOL_NAMES, roots=[]} -> time, meminfo (every /proc/meminfo key; kB
    values in bytes, HugePages_* counts as they are), loadavg [1, 5, 15], cores,
    top: the `top` largest processes by RSS [{pid, ppid, name, user, rss, start}],
    tools: every live process whose tool name is in names (owned by user, if given)
    [{pid, ppid, name, user, rss, start, cmd (argv joined, <= 200 chars), root ([pid, start] of the root in
    roots whose tree holds it; absent when none does)}], oom_kill (/proc/vmstat's counter, null where the
    kernel has none), boot_id, limit (the memory limit a build started from the agent runs under: its cgroup's
    or an ancestor's, in bytes | null).
    Kernel threads are never listed.
kill {roots=[[pid, start]...], names=[] (NB: no default list), fallback_names=[], spare=[[pid, start]...],
      user=null (= the agent's user), grace=3, timeout=30, settle=5} (roots or names required) ->
    targets [{pid, start, name, user, rss, signal "TERM"|"KILL"|null, via "tree"|"cgroup"|"name"}],
    counts {name: n} (signalled targets), termed (ended after SIGTERM), killed (needed SIGKILL),
    survivors [target...] (alive at the timeout), denied [target...] (EPERM),
    skipped [{pid, start, name, user, reason "protected"|"other_user"|"spared", via, spared_by [pid, start]
    (reason "spared": the spared root whose tree holds it)}], stale_roots [[pid, start]...] (no such process:
    refused), tree (a root was alive), by_name (processes were matched by name), cgroups [path...] (the
    build's own memory cgroups, whose processes were targets), spare_alive [[pid, start]...] (the spared roots
    alive at the end), elapsed, stop_elapsed, meminfo_before, meminfo_after.
    Targets: every process of each root's tree; every process of a memory cgroup that a tree process moved
    into (its parent is in another one: the build's own cgroup; never the root cgroup, the agent's or one
    above it); every process named in names, and in fallback_names when no root is alive (a build whose tree
    is gone or was never known); all owned by user. Never the agent, its parent chain, pid 1, kernel threads,
    nor any process whose ancestry reaches a spare root by identity (other builds running there). Collected,
    frozen (SIGSTOP) and re-scanned for late children, then SIGTERM + SIGCONT each; SIGKILL after grace;
    every signal identity-checked (pidfd where available). A zombie counts as gone. Then MemAvailable is
    polled every 50 ms until two readings differ by < 0.5% of MemTotal or settle seconds pass (skipped when
    nothing was signalled).
spawn {workdir, command (run by /bin/sh -c), env {k: v} (added), log, exit_file (relative paths: under
      workdir), keep? {dir, setup, setup_file, clean} (the build directory kept between runs: removed first when
      asked to or when the build's setup changed, the log then opening with why)}
    -> pid (the shell: the root to kill), start, supervisor_pid, log, exit_file (absolute),
    started. The build runs detached: a supervisor (session leader; bot/hosts/supervisor.py) runs the command
    in its own process group, stdin /dev/null, stdout+stderr appended to the log (truncated first; an old exit
    file is removed), and writes exit_file atomically: {exit_status: int|null, signal: int|null, ended, pid};
    on start it writes <exit_file>.start: {pid, start, supervisor_pid}, for a caller that died before the
    answer.
status {runs: [{pid, start, exit_file?, log?}]} -> runs [{pid, start, alive, exit (exit file JSON|null),
    log_size (int|null)}], boot_id.
tail {path, lines=40, max_bytes=1 MiB} -> lines [str], size, truncated (max_bytes reached before `lines`
    lines were found: the first line may be partial), bytes_read. Reads backwards from the end.
gpu {timeout=10} -> {available: true, gpus_csv, apps_csv} (nvidia-smi's CSV, unparsed) or
    {available: false, reason}.
disk {paths: [str...] (at most DISK_PATHS)} -> places [{path (as asked), at (the path measured: the nearest
    existing one, for a directory not made yet), exists (at is the path itself), mount (the mount point holding
    it), device, total, used, free
    (bytes: statvfs's f_blocks, f_blocks - f_bfree, f_bavail, as df counts them)} | {path, error}].
pause / resume {targets: [[pid, start]...], user=null (= the agent's user)} -> SIGSTOP / SIGCONT each target
    (not its children), owned by user: signalled, skipped (each with reason "protected"|"other_user"), denied
    (EPERM), all [{pid, ppid, name, user, rss, start}]; stale [[pid, start]...]. Same identity rules as kill.
sample {roots=[] ([pid, start] of the build's trees), spare=[] (roots of other builds' trees), user=null (the
    build user), cgroup=true} -> time, mem_total, mem_available, swap_total, swap_free, psi
    ({some,full}_{avg10,avg60,total} from /proc/pressure/memory) | null, classes {driver|compiler|linker:
    {count, rss, max_rss}} over the processes in the trees or owned by user (the user's outside the trees: those a
    full /proc scan at most FULL_SCAN_EVERY=10 s old found, as they are now), never those in a spare root's
    tree (drivers: ninja make gmake cmake; linkers: ld ld.gold ld.lld collect2;
    compilers: COMPILER_NAMES), top_compilers (`top`=5 by RSS) [{pid, ppid, name, user, rss, start, job (pid
    of the compile job's driver: its outermost compiler ancestor, through shells; itself when none)}],
    ended [{pid, start, name, peak_rss}] (compilers gone since this build's last sample: the highest RSS seen),
    oom_kill (/proc/vmstat; null before Linux 4.13), cgroup {version 1|2, path, current, working_set (current
    less the unmapped file cache), peak|null, limit|null (its own or an ancestor's, the tightest), oom (v2)|null,
    oom_kill|null, exclusive (every process in it is in the trees)} | null (no live root, cgroup=false or
    unreadable): the root's memory cgroup, or the heaviest compiler's where that one leaves less room,
    kernel [{victim_pid, victim_name, user, cgroup (task_memcg), oom_cgroup,
    in_tree (victim was in the trees at this or the last sample), spared_by ([pid, start] of the spare root
    whose tree held the victim then, else null), line}] (OOM kills logged since this build's last sample; []
    on its first) | null (neither /dev/kmsg nor dmesg readable), tree (process count), stale_roots, others
    [{root, tools, compilers, rss}] (the build tools in each spare root's tree, where it has any), scan_age
    (seconds since that full scan began; 0 when this sample made it: a build's first sample always does).
    Per-build state is kept for the last 32 (roots, user) pairs.
"""

from __future__ import annotations

import contextlib
import errno
import heapq
import json
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from stat import S_ISREG as stat_is_reg
from typing import Any

AGENT_VERSION = 1

# The "type" of an error answer; the bot's AgentErrorCode (bot/util/errors.py) lists the same.
ERROR_CODES = (
    "bad_json", "bad_request", "unknown_op", "unknown_user", "forbidden", "bad_workdir", "bad_path",
    "spawn_failed", "not_found", "not_a_file", "unreadable", "internal",
)  # fmt: skip

# Tool names a snapshot reports as build processes when the request names none.
BUILD_TOOL_NAMES: tuple[str, ...] = (
    "cmake",
    "ninja",
    "make",
    "gmake",
    "cc1",
    "cc1plus",
    "c++",
    "g++",
    "gcc",
    "cc",
    "clang",
    "clang++",
    "nvcc",
    "cicc",
    "ptxas",
    "cudafe++",
    "fatbinary",
    "nvlink",
    "ld",
    "ld.gold",
    "ld.lld",
    "collect2",
    "as",
)

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


def _raise_fd_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE (builds get the original back); returns (original soft, fd budget)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        original = soft
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        limit = 65536 if soft == resource.RLIM_INFINITY else soft
        return original, max(0, min(limit, 65536) - 256) // 2  # two fds a process
    except (ImportError, ValueError, OSError):
        return -1, 256


# Set by main(): importing this module (the bot reads BUILD_TOOL_NAMES) changes no limit and holds no fds.
ORIGINAL_NOFILE = -1
FD_BUDGET = 0
SUPERVISOR_SOURCE = ""  # the build supervisor's source (bot/hosts/supervisor.py), run by spawn


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


# ---------------------------------------------------------------------------------------------------------
# Argument helpers


def arg_int(req: dict[str, Any], key: str, default: int, lo: int, hi: int) -> int:
    value = req.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentError("bad_request", f"{key} must be an integer")
    if not lo <= value <= hi:
        raise AgentError("bad_request", f"{key} must be between {lo} and {hi}")
    return value


def arg_float(req: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = req.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AgentError("bad_request", f"{key} must be a number")
    if not lo <= value <= hi:
        raise AgentError("bad_request", f"{key} must be between {lo:g} and {hi:g}")
    return float(value)


def arg_str(req: dict[str, Any], key: str) -> str:
    value = req.get(key)
    if value is None:
        raise AgentError("bad_request", f"{key} is required")
    if not isinstance(value, str) or not value:
        raise AgentError("bad_request", f"{key} must be a non-empty string")
    return value


def arg_opt_str(req: dict[str, Any], key: str) -> str | None:
    return None if req.get(key) is None else arg_str(req, key)


def arg_names(req: dict[str, Any], key: str, default: tuple[str, ...]) -> frozenset[str]:
    value = req.get(key)
    if value is None:
        return frozenset(default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AgentError("bad_request", f"{key} must be a list of strings")
    return frozenset(value)


def arg_path(req: dict[str, Any], key: str, base: str | None = None) -> str:
    path = os.path.expanduser(arg_str(req, key))
    if base is not None and not os.path.isabs(path):
        path = os.path.join(base, path)
    return os.path.abspath(path)


def arg_identities(req: dict[str, Any], key: str) -> list[tuple[int, int]]:
    value = req.get(key) or []
    if not isinstance(value, list):
        raise AgentError("bad_request", f"{key} must be a list of [pid, start] pairs")
    return [arg_identity(v, key) for v in value]


def arg_identity(value: Any, what: str) -> tuple[int, int]:
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return int(value[0]), int(value[1])
    raise AgentError("bad_request", f"{what} must be [pid, start] pairs of integers")


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


def _proc_entry(st: Stat, name: str, uid: int | None) -> dict[str, Any]:
    return {
        "pid": st.pid,
        "ppid": st.ppid,
        "name": name,
        "user": user_name(uid),
        "rss": st.rss,
        "start": st.start,
    }


JOB_DEPTH = 8  # how far up a compiler's parents the driver of its compile job is looked for


def job_of(st: Stat, lookup: Callable[[int], Stat | None]) -> int:
    """The compile job a compiler process works for: its outermost compiler ancestor (nvcc above the sh above
    its cicc, g++ above its cc1plus), through shells, up to a build driver (ninja, make) or the tree's top; the
    process itself when it has none. A job's steps run one after the other, so a job grows as its heaviest.
    ``lookup``: a process by pid (None when gone)."""
    job, cur = st.pid, st
    for _ in range(JOB_DEPTH):
        parent = lookup(cur.ppid)
        if parent is None or parent.pid in (0, 1):
            break
        kind = TOOL_CLASS.get(stat_tool_name(parent))
        if kind == "compiler":
            job = parent.pid
        elif kind is not None or parent.comm not in (b"sh", b"bash", b"dash"):
            break  # a driver, a linker, or no shell of the job's
        cur = parent
    return job


def _rss_key(st: Stat) -> int:
    return st.rss


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


def _alive(pid: int, start: int) -> bool:
    """True while the process (pid, start) exists and is not a zombie; reaps it when it is our child."""
    st = read_stat(pid)
    if st is None or st.start != start:
        return False
    if st.dead:
        if st.ppid == MY_PID:
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)
        return False
    return True


def send_signal(pid: int, start: int, sig: int) -> str:
    """Signal the process (pid, start) and nothing else. Returns "sent", "gone" or "eperm"."""
    fd = -1
    if HAVE_PIDFD:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return "gone"
        except OSError:
            fd = -1  # old kernel (ENOSYS), out of fds: fall back to check-then-kill
    try:
        st = read_stat(pid)
        if st is None or st.start != start or st.dead:
            return "gone"
        if fd >= 0:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return "sent"
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        return "eperm"
    finally:
        if fd >= 0:
            os.close(fd)


class _Target:
    __slots__ = ("name", "pid", "rss", "signal", "start", "uid", "via")

    def __init__(self, st: Stat, name: str, uid: int, via: str) -> None:
        self.via = via  # "tree": in a root's tree (its children are targets too); "cgroup": in the build's own
        # memory cgroup; "name": matched by name
        self.pid = st.pid
        self.start = st.start
        self.name = name
        self.uid = uid
        self.rss = st.rss
        self.signal: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start": self.start,
            "name": self.name,
            "user": user_name(self.uid),
            "rss": self.rss,
            "signal": self.signal,
            "via": self.via,
        }


def children_of(procs: list[Stat]) -> dict[int, list[Stat]]:
    children: dict[int, list[Stat]] = {}
    for st in procs:
        children.setdefault(st.ppid, []).append(st)
    return children


def tree_owners(
    by_pid: dict[int, Stat], children: dict[int, list[Stat]], roots: list[tuple[int, int]]
) -> dict[int, tuple[int, int]]:
    """pid -> the root (pid, start) whose tree holds the process, for every process in the trees of ``roots``
    (the first root wins where trees nest). A root counts only while its identity is alive: a reused pid is
    never taken for it."""
    return walk_trees(roots, by_pid.get, lambda st: children.get(st.pid, []))[0]


class _Collector:
    """What one kill reaches, gathered over repeated scans: every process of the root trees (and of the trees
    of tree targets already found, to catch children forked since), every process in a memory cgroup the
    build moved into, and every process named in ``names``; all owned by ``want_uid``, never a protected
    process and never one whose ancestry reaches a ``spare`` root (another build). Processes left out for a
    reason go to ``skipped``."""

    def __init__(self, names: frozenset[str], want_uid: int, protected: set[int],
                 spare: list[tuple[int, int]]) -> None:
        self.names = names
        self.want_uid = want_uid
        self.protected = protected
        self.spare = spare
        self.targets: dict[int, _Target] = {}
        self.skipped: dict[int, dict[str, Any]] = {}
        self.cgroups: list[tuple[int, str]] = []  # the build's own memory cgroups: (version, path)
        self.agent_cgroup = memory_cgroup(MY_PID)

    def collect(self, procs: list[Stat], roots: list[tuple[int, int]], stale: list[list[int]] | None) -> list[_Target]:
        """Add what this scan shows; returns the targets newly added."""
        by_pid = {st.pid: st for st in procs}
        children = children_of(procs)
        spared = tree_owners(by_pid, children, self.spare)
        added: list[_Target] = []
        targets, skipped, protected = self.targets, self.skipped, self.protected

        def consider(st: Stat, via: str) -> None:
            if st.pid in targets or st.pid in skipped or st.dead:
                return
            reason = None
            uid = None
            if st.pid in protected or st.ppid == 2:
                reason = "protected"
            elif st.pid in spared:
                reason = "spared"
                uid = read_uid(st.pid)
            else:
                uid = read_uid(st.pid)
                if uid is None:
                    return
                if uid != self.want_uid:
                    reason = "other_user"
            name = stat_tool_name(st)
            if reason is not None:
                skipped[st.pid] = {"pid": st.pid, "start": st.start, "name": name, "user": user_name(uid),
                                   "reason": reason, "via": via}
                if reason == "spared":
                    skipped[st.pid]["spared_by"] = list(spared[st.pid])
                return
            assert uid is not None
            target = _Target(st, name, uid, via)
            targets[st.pid] = target
            added.append(target)

        # Root trees, and the descendants of every tree target already found (children forked since).
        stack: list[Stat] = []
        for pid, start in roots:
            root = by_pid.get(pid)
            if root is None or root.start != start or root.dead:
                if stale is not None:
                    stale.append([pid, start])
                continue
            stack.append(root)
        for t in targets.values():
            current = by_pid.get(t.pid)
            if t.via in ("tree", "cgroup") and current is not None and current.start == t.start:
                stack.append(current)
        seen: set[int] = set()
        while stack:
            st = stack.pop()
            if st.pid in seen:
                continue
            seen.add(st.pid)
            consider(st, "tree")
            if st.pid in protected or st.ppid == 2 or st.pid in spared:
                continue  # never descend into the agent, its parent chain, init, kernel threads or another build
            stack.extend(children.get(st.pid, ()))

        for t in added:
            if t.via == "tree":
                self._note_cgroup(t.pid, by_pid)
        mounts = cgroup_mounts()
        for version, path in self.cgroups:
            base = mounts.get(f"v{version}", "").rstrip("/") + path
            for word in (_read(base + "/cgroup.procs", 1 << 20) or b"").split():
                member = by_pid.get(int(word))
                if member is not None:
                    consider(member, "cgroup")

        if self.names:
            for st in procs:
                if st.pid in targets or st.dead:
                    continue
                name = stat_tool_name(st)
                if name in self.names or st.comm.decode("utf-8", "replace") in self.names:
                    consider(st, "name")
        return added

    def _note_cgroup(self, pid: int, by_pid: dict[int, Stat]) -> None:
        """Keep the memory cgroup of a tree process that moved into one of its own (its parent is elsewhere):
        everything in it is the build's. Never the root cgroup, the agent's own or one above it."""
        st = by_pid.get(pid)
        cg = memory_cgroup(pid)
        parent = memory_cgroup(st.ppid) if st is not None else None
        if cg is None or parent is None or cg == parent or cg in self.cgroups or cg[1] == "/":
            return
        above = cg[1].rstrip("/") + "/"
        mine = self.agent_cgroup
        if parent[1].startswith(above) or (mine is not None and (mine == cg or mine[1].startswith(above))):
            return
        self.cgroups.append(cg)


def _tree_alive(procs: list[Stat], roots: list[tuple[int, int]]) -> bool:
    wanted = dict(roots)
    return any(st.pid in wanted and wanted[st.pid] == st.start and not st.dead for st in procs)


def op_kill(req: dict[str, Any]) -> dict[str, Any]:
    t0 = time.monotonic()
    roots = arg_identities(req, "roots")
    spare = arg_identities(req, "spare")
    names = arg_names(req, "names", ())
    fallback = arg_names(req, "fallback_names", ())
    user = arg_opt_str(req, "user")
    grace = arg_float(req, "grace", 3.0, 0.0, 3600.0)
    timeout = arg_float(req, "timeout", 30.0, 0.0, 3600.0)
    settle = arg_float(req, "settle", 5.0, 0.0, 3600.0)
    if not roots and not names and not fallback:
        raise AgentError("bad_request", "kill needs roots or names")
    want_uid = user_uid(user) if user is not None else MY_UID
    if want_uid != MY_UID and MY_EUID != 0:
        raise AgentError("forbidden", f"the agent runs as {user_name(MY_UID)} and cannot stop processes of {user}")
    protected = {0, 1, 2, MY_PID} | ancestors(MY_PID)
    meminfo_before = read_meminfo()

    # 1. Collect every target first, freeze them (SIGSTOP) so none can fork or be re-parented away,
    #    and look again for children forked between the scan and the freeze.
    stale: list[list[int]] = []
    denied: list[_Target] = []
    frozen: list[_Target] = []
    try:
        procs = scan(full=True)
        tree = _tree_alive(procs, roots)
        collector = _Collector(names if tree else names | fallback, want_uid, protected, spare)
        targets = collector.targets
        new = collector.collect(procs, roots, stale)
        for _ in range(20):
            if not new:
                break
            for t in new:
                if send_signal(t.pid, t.start, signal.SIGSTOP) == "sent":
                    frozen.append(t)
            procs = scan(full=True)
            new = collector.collect(procs, [], None)

        # 2. SIGTERM each target and let it run again (SIGCONT) so it can act on it. Deepest first, so that no
        #    process group loses its last parent while members are still stopped (the kernel would SIGHUP them).
        parents = {st.pid: st.ppid for st in procs}

        def depth(pid: int) -> int:
            n = 0
            while pid in parents and n < 4096:
                pid = parents[pid]
                n += 1
            return n

        for t in sorted(targets.values(), key=lambda t: depth(t.pid), reverse=True):
            result = send_signal(t.pid, t.start, signal.SIGTERM)
            if result == "sent":
                t.signal = "TERM"
            elif result == "eperm":
                denied.append(t)
            send_signal(t.pid, t.start, signal.SIGCONT)
        frozen = []
    finally:
        for t in frozen:  # only after an unexpected error: never leave a process stopped
            send_signal(t.pid, t.start, signal.SIGCONT)

    waiting = [t for t in targets.values() if t.signal is not None]
    deadline = t0 + timeout
    grace_end = min(t0 + grace, deadline)

    def wait_until(until: float) -> None:
        while True:
            waiting[:] = [t for t in waiting if _alive(t.pid, t.start)]
            if not waiting or time.monotonic() >= until:
                return
            time.sleep(min(EXIT_POLL, max(0.0, until - time.monotonic())))

    wait_until(grace_end)
    # 3. SIGKILL whatever is left after the grace period.
    for t in list(waiting):
        result = send_signal(t.pid, t.start, signal.SIGKILL)
        if result == "sent":
            t.signal = "KILL"
        elif result == "eperm":
            denied.append(t)
    wait_until(deadline)
    stop_elapsed = time.monotonic() - t0
    survivors = [t.to_json() for t in waiting if _alive(t.pid, t.start)]

    # 4. Wait for memory to settle: two MemAvailable readings 50 ms apart within 0.5% of MemTotal.
    meminfo_after = read_meminfo()
    signalled = [t for t in targets.values() if t.signal is not None]
    if signalled and settle > 0:
        settle_end = time.monotonic() + settle
        threshold = meminfo_after.get("MemTotal", 0) * SETTLE_FRACTION
        previous = meminfo_after.get("MemAvailable", 0)
        while time.monotonic() < settle_end:
            time.sleep(min(SETTLE_POLL, max(0.0, settle_end - time.monotonic())))
            meminfo_after = read_meminfo()
            current = meminfo_after.get("MemAvailable", 0)
            if abs(current - previous) < threshold:
                break
            previous = current

    counts: dict[str, int] = {}
    for t in signalled:
        counts[t.name] = counts.get(t.name, 0) + 1
    return {
        "targets": [t.to_json() for t in targets.values()],
        "counts": counts,
        "termed": sum(1 for t in targets.values() if t.signal == "TERM"),
        "killed": sum(1 for t in targets.values() if t.signal == "KILL"),
        "survivors": survivors,
        "denied": [t.to_json() for t in denied],
        "skipped": list(collector.skipped.values()),
        "stale_roots": stale,
        "tree": tree,
        "by_name": bool(collector.names),
        "cgroups": [path for _, path in collector.cgroups],
        "spare_alive": [[pid, start] for pid, start in spare if _alive(pid, start)],
        "elapsed": time.monotonic() - t0,
        "stop_elapsed": stop_elapsed,
        "meminfo_before": meminfo_before,
        "meminfo_after": meminfo_after,
    }


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
    if not SUPERVISOR_SOURCE:
        raise AgentError("spawn_failed", "this agent was started without the build supervisor's source")
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
                    "-c",
                    SUPERVISOR_SOURCE,
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


# ---------------------------------------------------------------------------------------------------------
# pause, resume: stop and continue chosen processes (e.g. the heaviest compilers), identity-checked


def _signal_targets(req: dict[str, Any], sig: int) -> dict[str, Any]:
    raw = req.get("targets")
    if not isinstance(raw, list) or not raw:
        raise AgentError("bad_request", "targets must be a non-empty list of [pid, start] pairs")
    targets = [arg_identity(t, "targets") for t in raw]
    user = arg_opt_str(req, "user")
    want_uid = user_uid(user) if user is not None else MY_UID
    if want_uid != MY_UID and MY_EUID != 0:
        raise AgentError("forbidden", f"the agent runs as {user_name(MY_UID)} and cannot signal processes of {user}")
    protected = {0, 1, 2, MY_PID} | ancestors(MY_PID)
    signalled: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    denied: list[dict[str, Any]] = []
    stale: list[list[int]] = []
    for pid, start in targets:
        st = read_stat(pid)
        uid = read_uid(pid) if st is not None else None
        if st is None or uid is None or st.start != start or st.dead:
            stale.append([pid, start])
            continue
        entry = _proc_entry(st, stat_tool_name(st), uid)
        reason = "protected" if pid in protected or st.ppid == 2 else "other_user" if uid != want_uid else None
        if reason is not None:
            entry["reason"] = reason
            skipped.append(entry)
            continue
        result = send_signal(pid, start, sig)
        if result == "sent":
            signalled.append(entry)
        elif result == "eperm":
            denied.append(entry)
        else:
            stale.append([pid, start])
    return {"signalled": signalled, "skipped": skipped, "denied": denied, "stale": stale}


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


def op_pause(req: dict[str, Any]) -> dict[str, Any]:
    return _signal_targets(req, signal.SIGSTOP)


def op_resume(req: dict[str, Any]) -> dict[str, Any]:
    return _signal_targets(req, signal.SIGCONT)


# ---------------------------------------------------------------------------------------------------------
# sample: memory, pressure, the build's tools by class, OOM kills (one call a second, so it must stay cheap)

DRIVER_NAMES = ("ninja", "make", "gmake", "cmake")
COMPILER_NAMES = (
    "cc1", "cc1plus", "cc", "gcc", "g++", "c++", "clang", "clang++",
    "nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink",
)  # fmt: skip
LINKER_NAMES = ("ld", "ld.gold", "ld.lld", "collect2")
TOOL_CLASS: dict[str, str] = {
    **{n: "driver" for n in DRIVER_NAMES},
    **{n: "compiler" for n in COMPILER_NAMES},
    **{n: "linker" for n in LINKER_NAMES},
}
TOP_COMPILERS = 5
WATCHES_KEPT = 32  # (roots, user) keys whose per-build state a sample keeps
KERNEL_EVENTS_KEPT = 256
KMSG_RECORDS_PER_POLL = 20000  # a kernel flooding its log must not keep a sample busy
UNLIMITED = 1 << 62  # cgroup v1 says "no limit" with a number near 2**63


def read_vmstat_oom_kill() -> int | None:
    """/proc/vmstat's oom_kill counter (kernels >= 4.13), or None."""
    data = _read("/proc/vmstat", 65536) or b""
    i = data.find(b"\noom_kill ")
    if i < 0:
        return None
    return int(data[i + 10 : data.find(b"\n", i + 10)])


def read_psi() -> dict[str, Any] | None:
    """/proc/pressure/memory, or None where the kernel has no PSI (or it is switched off)."""
    data = _read("/proc/pressure/memory", 512)
    if not data:
        return None
    out: dict[str, Any] = {}
    for line in data.decode("ascii", "replace").splitlines():
        kind, _, rest = line.partition(" ")
        for pair in rest.split():
            key, _, value = pair.partition("=")
            if key in ("avg10", "avg60", "total"):
                out[f"{kind}_{key}"] = int(value) if key == "total" else float(value)
    return out if "some_avg10" in out else None


_cgroup_mounts: dict[str, str] | None = None


def cgroup_mounts() -> dict[str, str]:
    """Where the v1 memory controller ("v1") and the v2 hierarchy ("v2") are mounted; read once."""
    global _cgroup_mounts
    if _cgroup_mounts is None:
        found: dict[str, str] = {}
        data = _read("/proc/self/mountinfo", 1 << 20) or b""
        for line in data.decode("utf-8", "replace").splitlines():
            left, _, right = line.partition(" - ")
            fields, super_fields = left.split(), right.split()
            if len(fields) < 5 or len(super_fields) < 3:
                continue
            mountpoint = fields[4].replace("\\040", " ")
            if super_fields[0] == "cgroup2":
                found.setdefault("v2", mountpoint)
            elif super_fields[0] == "cgroup" and "memory" in super_fields[2].split(","):
                found.setdefault("v1", mountpoint)
        _cgroup_mounts = found
    return _cgroup_mounts


def _read_number(path: str) -> int | None:
    data = _read(path, 64)
    if data is None:
        return None
    text = data.strip()
    if text == b"max":
        return UNLIMITED
    return int(text) if text.isdigit() else None


def _counters(path: str) -> dict[str, int]:
    """A flat-keyed cgroup file ("oom_kill 3" lines)."""
    out: dict[str, int] = {}
    for line in (_read(path, 4096) or b"").splitlines():
        key, _, value = line.partition(b" ")
        if value.strip().isdigit():
            out[key.decode("ascii", "replace")] = int(value)
    return out


def memory_cgroup(pid: int) -> tuple[int, str] | None:
    """(version, path) of the memory cgroup of ``pid`` (the v1 memory controller's, else v2's), or None where
    unreadable."""
    data = _read(f"/proc/{pid}/cgroup", 8192)
    if not data:
        return None
    v1 = v2 = None
    for line in data.decode("utf-8", "replace").splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and not controllers:
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    mounts = cgroup_mounts()
    if v1 is not None and "v1" in mounts:
        return 1, v1
    if v2 is not None and "v2" in mounts:
        return 2, v2
    return None


def read_cgroup(pid: int, tree: set[int], also: int | None = None) -> dict[str, Any] | None:
    """The memory cgroup of ``pid`` with its usage, limit and counters, or None where unreadable; or that of
    ``also`` (a process of the build that may have moved into a cgroup of its own, as under ``systemd-run -p
    MemoryMax=``) when that one leaves the build less room."""
    found = memory_cgroup(pid)
    if found is None:
        return None
    version, path = found
    cg = cgroup_memory(version, path, cgroup_mounts()[f"v{version}"], tree)
    moved = memory_cgroup(also) if also is not None else None
    if moved is not None and moved != found:
        other = cgroup_memory(moved[0], moved[1], cgroup_mounts()[f"v{moved[0]}"], tree)
        if other is not None and (cg is None or _room(other) < _room(cg)):
            return other
    return cg


def _room(cg: dict[str, Any]) -> int:
    limit = cg["limit"]
    return UNLIMITED if limit is None else limit - cg["working_set"]


def cgroup_memory(version: int, path: str, mount: str, tree: set[int]) -> dict[str, Any] | None:
    """Usage, limit and OOM counters of the cgroup ``path`` under ``mount``, and whether every process in it
    belongs to ``tree``; None where its files cannot be read.

    ``limit`` is the tightest of the cgroup's and its ancestors' (a Slurm job's limit binds its steps);
    ``working_set`` is the usage less the file cache the kernel reclaims before it kills anything;
    ``peak`` the highest usage the kernel recorded (null where it keeps none)."""
    base = mount.rstrip("/") + path
    if version == 1:
        current = _read_number(base + "/memory.usage_in_bytes")
        stat = _counters(base + "/memory.stat")
        limit = _min_limit(_read_number(base + "/memory.limit_in_bytes"), stat.get("hierarchical_memory_limit"))
        cache = _file_cache(stat, "total_active_file", "total_inactive_file", "total_mapped_file")
        peak = _read_number(base + "/memory.max_usage_in_bytes")
        counters = _counters(base + "/memory.oom_control")
        oom = None
    else:
        current = _read_number(base + "/memory.current")
        limit = _read_number(base + "/memory.max")
        parent = path.rstrip("/")
        while "/" in parent and parent != "":  # the ancestors' limits bind too; the root has none
            parent = parent.rsplit("/", 1)[0]
            if parent:
                limit = _min_limit(limit, _read_number(mount.rstrip("/") + parent + "/memory.max"))
        cache = _file_cache(_counters(base + "/memory.stat"), "active_file", "inactive_file", "file_mapped")
        peak = _read_number(base + "/memory.peak")
        counters = _counters(base + "/memory.events")
        oom = counters.get("oom")
    if current is None:
        return None
    exclusive = path != "/" and _exclusive(version, path, base, tree)  # the root holds everything: never listed
    return {
        "version": version,
        "path": path,
        "current": current,
        "working_set": max(0, current - cache),
        "peak": peak,
        "limit": limit if limit is not None and limit < UNLIMITED else None,
        "oom": oom,
        "oom_kill": counters.get("oom_kill"),
        "exclusive": exclusive,
    }


# (version, path) of a memory cgroup -> (pid, start) of a process in it outside the build's trees, found by the
# last look at its process list. While that process is alive and still in it, the cgroup is not the build's alone,
# and the list (every process of a container that holds everything: milliseconds to produce at 5,000) is not read.
_outsiders: dict[tuple[int, str], tuple[int, int]] = {}


def _exclusive(version: int, path: str, base: str, tree: set[int]) -> bool:
    """Whether the cgroup ``path`` (its directory: ``base``) has processes and every one is in ``tree``."""
    key = (version, path)
    known = _outsiders.get(key)
    if known is not None and known[0] not in tree and memory_cgroup(known[0]) == key:
        st = read_stat(known[0])  # after the cgroup: the same start means that was this process's cgroup
        if st is not None and st.start == known[1] and not st.dead:
            return False
    procs = (_read(base + "/cgroup.procs", 1 << 20) or b"").split()
    for word in procs:
        pid = int(word)
        if pid not in tree:
            st = read_stat(pid)
            if st is not None and not st.dead:
                if len(_outsiders) >= 64:
                    _outsiders.clear()
                _outsiders[key] = (pid, st.start)
            return False
    return bool(procs)


def _file_cache(stat: dict[str, int], active: str, inactive: str, mapped: str) -> int:
    """The file cache the kernel can drop before it kills anything in the cgroup: the page cache (headers
    read, objects written) less what is mapped into processes (their executables and libraries)."""
    return max(0, stat.get(active, 0) + stat.get(inactive, 0) - stat.get(mapped, 0))


def _min_limit(a: int | None, b: int | None) -> int | None:
    found = [x for x in (a, b) if x is not None]
    return min(found) if found else None


def own_memory_limit() -> int | None:
    """The memory limit this agent, and every build it starts, runs under (its cgroup's, or an ancestor's:
    a container's ``--memory``, a Slurm job's), or None where there is none or it cannot be read."""
    found = memory_cgroup(MY_PID)
    if found is None:
        return None
    cg = cgroup_memory(found[0], found[1], cgroup_mounts()[f"v{found[0]}"], set())
    return cg["limit"] if cg is not None else None


_OOM_HEADER_FIELD = re.compile(r"(task_memcg|oom_memcg|pid|uid|task)=([^,]*)")
_OOM_KILLED = re.compile(r"Killed process (\d+) \((.*?)\)(?= total-vm|,| score|$)")
_OOM_KILLED_UID = re.compile(r"UID:(\d+)")
_DMESG_TIME = re.compile(r"^(?:<\d+>)?\[\s*\d+\.\d+\]\s?")


class KernelLog:
    """OOM-killer lines from the kernel log, each kept once under a sequence number.

    /dev/kmsg is read non-blocking from a held position (its end when first opened). Where it cannot be
    opened, ``dmesg`` is run instead, but only after /proc/vmstat's oom_kill counter has moved. Neither
    readable: :meth:`poll` returns None.
    """

    def __init__(self, kmsg_path: str = "/dev/kmsg", dmesg: str | None = "dmesg") -> None:
        self.kmsg_path = kmsg_path
        self.dmesg = dmesg
        self.lock = threading.Lock()
        self.fd = -1
        self.source: str | None = None  # "kmsg", "dmesg" or "none", once known
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self.headers: dict[int, dict[str, Any]] = {}  # victim pid -> its "oom-kill:" line's fields
        self.dmesg_seen: dict[str, None] = {}  # OOM lines already taken from dmesg (an ordered set)
        self.dmesg_counter: int | None = None
        self.dmesg_again = 0  # runs still due after the counter moved: its lines may trail it

    def poll(self, oom_kill: int | None) -> int | None:
        """Take in what is new; returns the latest sequence number, None when no log is readable."""
        with self.lock:
            if self.source is None:
                self._open(oom_kill)
            elif self.source == "kmsg":
                self._drain_kmsg()
            elif self.source == "dmesg":
                self._poll_dmesg(oom_kill)
            return None if self.source == "none" else self.seq

    def after(self, seq: int) -> list[dict[str, Any]]:
        with self.lock:
            return [e for e in self.events if e["seq"] > seq]

    def _open(self, oom_kill: int | None) -> None:
        try:
            self.fd = os.open(self.kmsg_path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
            self.source = "kmsg"
            return
        except OSError as e:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            log(f"kernel log: cannot read {self.kmsg_path} ({e.strerror}); trying dmesg")
        lines = self._run_dmesg()
        if lines is None:
            self.source = "none"
            return
        self.source = "dmesg"
        self.dmesg_counter = oom_kill
        for line in lines:  # what is there already is history, not news
            self.dmesg_seen[line] = None

    def _drain_kmsg(self) -> None:
        for _ in range(KMSG_RECORDS_PER_POLL):
            try:
                record = os.read(self.fd, 8192)
            except BlockingIOError:
                return
            except BrokenPipeError:  # the ring overwrote records we had not read yet: go on after them
                continue
            except OSError as e:
                log(f"kernel log: reading {self.kmsg_path} failed: {e}")
                return
            if not record:
                return
            if b"illed process" in record or b"oom-kill:" in record:
                text = record.partition(b";")[2].split(b"\n", 1)[0]
                self.take(text.decode("utf-8", "replace"))

    def _poll_dmesg(self, oom_kill: int | None) -> None:
        if oom_kill is not None and oom_kill == self.dmesg_counter and not self.dmesg_again:
            return
        moved = oom_kill is None or oom_kill != self.dmesg_counter
        lines = self._run_dmesg()
        if lines is None:
            return
        self.dmesg_counter = oom_kill
        self.dmesg_again = 2 if moved else max(0, self.dmesg_again - 1)
        for line in lines:
            if line not in self.dmesg_seen:
                self.dmesg_seen[line] = None
                self.take(_DMESG_TIME.sub("", line))
        while len(self.dmesg_seen) > 4 * KERNEL_EVENTS_KEPT:
            del self.dmesg_seen[next(iter(self.dmesg_seen))]

    def _run_dmesg(self) -> list[str] | None:
        """The OOM lines dmesg prints now, or None when it cannot run or may not read the log."""
        exe = shutil.which(self.dmesg) if self.dmesg else None
        if exe is None:
            return None
        try:
            proc = subprocess.run([exe], stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError) as e:
            log(f"kernel log: dmesg failed: {e}")
            return None
        if proc.returncode != 0:
            said = proc.stderr[:200].decode("utf-8", "replace").strip()
            log(f"kernel log: dmesg exited with {proc.returncode}: {said}")
            return None
        text = proc.stdout.decode("utf-8", "replace")
        return [line for line in text.splitlines() if "illed process" in line or "oom-kill:" in line]

    def take(self, text: str) -> None:
        """One kernel log message: remember an ``oom-kill:`` line's fields; a ``Killed process`` line is an
        event (merged with its victim's ``oom-kill:`` line)."""
        i = text.find("oom-kill:")
        if i >= 0:
            fields = dict(_OOM_HEADER_FIELD.findall(text[i:]))
            if fields.get("pid", "").isdigit():
                if len(self.headers) > 64:
                    self.headers.clear()
                self.headers[int(fields["pid"])] = fields
            return
        m = _OOM_KILLED.search(text)
        if m is None:
            return
        pid = int(m.group(1))
        header = self.headers.pop(pid, {})
        uid = _OOM_KILLED_UID.search(text)
        uid_text = uid.group(1) if uid else header.get("uid", "")
        self.seq += 1
        self.events.append(
            {
                "seq": self.seq,
                "victim_pid": pid,
                "comm": m.group(2),
                "uid": int(uid_text) if uid_text.isdigit() else None,
                "cgroup": header.get("task_memcg"),
                "oom_cgroup": header.get("oom_memcg"),
                "line": text.strip(),
            }
        )
        del self.events[:-KERNEL_EVENTS_KEPT]


KERNEL_LOG = KernelLog()


class _Watch:
    """What a sample remembers per build (its roots and user): the processes of its trees at the last call,
    the highest RSS seen of each of its compilers, and the last kernel event it was given."""

    __slots__ = ("kernel_seq", "peaks", "spared", "tree")

    def __init__(self) -> None:
        self.tree: set[int] = set()
        self.spared: dict[int, tuple[int, int]] = {}  # pid -> spared root, at the last call
        self.peaks: dict[tuple[int, int], list[Any]] = {}  # (pid, start) -> [tool name, peak rss]
        self.kernel_seq: int | None = None


_sample_lock = threading.Lock()
_watches: dict[tuple[Any, ...], _Watch] = {}


def _watch_for(key: tuple[Any, ...]) -> _Watch:
    watch = _watches.pop(key, None)
    if watch is None:
        watch = _Watch()
        while len(_watches) >= WATCHES_KEPT:
            del _watches[next(iter(_watches))]  # the one used longest ago
    _watches[key] = watch
    return watch


# What a sample looks at. Each sample walks the trees it needs (the build's roots, and the spare roots: other
# builds) from the roots down, through /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN), reading the stat of
# those processes alone: a build's turnover (compilers come and go every ~100 ms) is counted afresh each second,
# at a cost that grows with the build, not with the host. Only the build user's tools outside every tree (started
# by hand, by a compiler daemon such as sccache's, or left behind by a parent that died) need the whole of /proc:
# a full scan finds every tool process, on a build's first sample and then at most FULL_SCAN_EVERY seconds
# apart, and the samples in between re-read the ones it found (their RSS is current, the gone ones drop out), so
# such a process is counted from at most FULL_SCAN_EVERY seconds after it starts (the answer's scan_age says how
# old the scan is). The same scan prunes the caches above. Where the kernel has no children files, every sample
# scans /proc in full and takes the trees from it.
FULL_SCAN_EVERY = 10.0  # seconds; a full scan of 5,000 processes costs ~30 ms: 0.3% of a core at this period
HAVE_CHILDREN_FILES = os.path.exists(f"/proc/{MY_PID}/task/{MY_PID}/children")
_last_full_scan: float | None = None  # time.monotonic() when the last full scan of a sample began
_tool_procs: dict[int, Stat] = {}  # pid -> every tool process that scan found, and those seen in a tree since


def _read_stat_threads(pid: int) -> tuple[Stat | None, int]:
    """A process's Stat and its number of threads; (None, 0) when it is gone."""
    data = _read(f"/proc/{pid}/stat", 2048)
    right = data.rfind(b")") if data else -1
    if not data or right < 0:
        return None, 0
    f = data[right + 2 :].split(None, 22)
    if len(f) < 22:
        return None, 0
    return Stat(pid, data[data.find(b"(") + 1 : right], f[0], int(f[1]), int(f[19]), int(f[21]) * PAGE_SIZE), int(f[17])


def read_children(pid: int, threads: int) -> list[int]:
    """The pids of a process's children: each of its threads lists those it forked in its own children file."""
    if threads == 1:
        tids = [str(pid)]
    else:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
    out: list[int] = []
    for tid in tids:
        try:
            data = _read_all(f"/proc/{pid}/task/{tid}/children")
        except OSError:  # that thread or the process is gone (a thread's children go to another of its threads)
            continue
        out.extend(int(word) for word in data.split())
    return out


class _Walk:
    """Processes read one by one during one sample (each at most once), children from the children files."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[Stat | None, int]] = {}
        self.kids: dict[int, list[Stat]] = {}

    def stat(self, pid: int) -> Stat | None:
        found = self.seen.get(pid)
        if found is None:
            found = self.seen[pid] = _read_stat_threads(pid)
        return found[0]

    def children(self, st: Stat) -> list[Stat]:
        kids = self.kids.get(st.pid)
        if kids is None:
            kids = self.kids[st.pid] = []
            for pid in read_children(st.pid, self.seen[st.pid][1]):
                child = self.stat(pid)
                if child is not None and child.ppid == st.pid:  # not a pid reused since the list was read
                    kids.append(child)
        return kids


def walk_trees(
    roots: list[tuple[int, int]], stat_of: Callable[[int], Stat | None], children: Callable[[Stat], list[Stat]]
) -> tuple[dict[int, tuple[int, int]], dict[int, Stat], list[Stat], list[list[int]]]:
    """The trees of ``roots`` (pid, start): pid -> the root whose tree holds it (the first root wins where trees
    nest), pid -> its Stat, the live roots and the stale ones (gone, a zombie, or the pid of another process)."""
    owners: dict[int, tuple[int, int]] = {}
    stats: dict[int, Stat] = {}
    live: list[Stat] = []
    stale: list[list[int]] = []
    for root in roots:
        st = stat_of(root[0])
        if st is None or st.start != root[1] or st.dead:
            stale.append([root[0], root[1]])
            continue
        live.append(st)
        stack = [st]
        while stack:
            st = stack.pop()
            if st.pid in owners:
                continue
            owners[st.pid] = root
            stats[st.pid] = st
            stack.extend(children(st))
    return owners, stats, live, stale


def _sample_processes(
    roots: list[tuple[int, int]], spare: list[tuple[int, int]], want_uid: int | None, first: bool
) -> tuple[set[int], dict[int, tuple[int, int]], list[Stat], list[list[int]], list[Stat],
           Callable[[int], Stat | None], float]:
    """What a sample counts: the build's tree (pids), the spared processes (pid -> their root), the live and the
    stale roots, the candidates (every process of the trees, and the tool processes of ``want_uid`` outside
    them), a lookup of processes by pid, and the age of the full scan behind the candidates outside the trees.
    A full scan when one is due (see FULL_SCAN_EVERY; ``first``: a build's first sample)."""
    global _last_full_scan, _tool_procs
    now = time.monotonic()
    full = (not HAVE_CHILDREN_FILES or first or _last_full_scan is None
            or now - _last_full_scan >= FULL_SCAN_EVERY)
    lookup: Callable[[int], Stat | None]
    if full:
        procs = scan()
        _last_full_scan = now
        _tool_procs = {st.pid: st for st in procs if not st.dead and stat_tool_name(st) in TOOL_CLASS}
        _prune_caches(procs)
    if HAVE_CHILDREN_FILES:
        walk = _Walk()
        stat_of, children, lookup = walk.stat, walk.children, walk.stat
    else:  # every sample made a full scan
        by_pid = {st.pid: st for st in procs}
        kids = children_of(procs)

        def stat_of(pid: int) -> Stat | None:
            return by_pid.get(pid)

        def children(st: Stat) -> list[Stat]:
            return kids.get(st.pid, [])

        lookup = stat_of

    owners, members, live, stale = walk_trees(roots, stat_of, children)
    spared, spared_members, _, _ = walk_trees(spare, stat_of, children) if spare else ({}, {}, [], [])
    candidates: dict[int, Stat] = {}
    if want_uid is not None:
        for pid, st in list(_tool_procs.items()):
            if pid in owners or pid in spared:
                continue
            if not full:  # the scan's figures are up to FULL_SCAN_EVERY old: read again what may count
                uid = _meta_of(st, False)[0]
                if uid is not None and uid != want_uid:
                    continue  # another user's: never counted here
                fresh = read_stat(pid) if uid is not None else None
                if fresh is None or fresh.start != st.start or fresh.dead:
                    del _tool_procs[pid]
                    continue
                _tool_procs[pid] = st = fresh
            candidates[pid] = st
    candidates.update(spared_members)
    candidates.update(members)
    for pid, st in candidates.items():  # followed after they leave their tree (a parent that died): strays then
        if pid not in _tool_procs and not st.dead and stat_tool_name(st) in TOOL_CLASS:
            _tool_procs[pid] = st
    return (set(owners), spared, live, stale, list(candidates.values()), lookup,
            0.0 if full else now - (_last_full_scan or now))


def op_sample(req: dict[str, Any]) -> dict[str, Any]:
    roots = arg_identities(req, "roots")
    spare = arg_identities(req, "spare")
    user = arg_opt_str(req, "user")
    want_uid = user_uid(user) if user is not None else None
    want_cgroup = req.get("cgroup", True)
    if not isinstance(want_cgroup, bool):
        raise AgentError("bad_request", "cgroup must be true or false")
    top_n = arg_int(req, "top", TOP_COMPILERS, 0, 256)
    with _sample_lock:
        now = time.time()
        key = (tuple(sorted(roots)), want_uid)
        first = key not in _watches
        watch = _watch_for(key)
        tree, spared, live_roots, stale, procs, lookup, scan_age = _sample_processes(roots, spare, want_uid, first)
        meminfo = read_meminfo()
        oom_kill = read_vmstat_oom_kill()  # counters before the log: a kill's line follows its count
        psi = read_psi()
        classes: dict[str, list[int]] = {"driver": [0, 0, 0], "compiler": [0, 0, 0], "linker": [0, 0, 0]}
        others: dict[tuple[int, int], list[int]] = {root: [0, 0, 0] for root in spare}  # tools, compilers, rss
        compilers: list[Stat] = []
        for st in procs:
            cls = TOOL_CLASS.get(stat_tool_name(st))
            if cls is None or st.dead:
                continue
            if st.pid in spared:  # another build's: counted as its, never as this build's
                other = others[spared[st.pid]]
                other[0] += 1
                other[1] += cls == "compiler"
                other[2] += st.rss
                continue
            if st.pid not in tree and (want_uid is None or _meta_of(st, False)[0] != want_uid):
                continue
            counts = classes[cls]
            counts[0] += 1
            counts[1] += st.rss
            counts[2] = max(counts[2], st.rss)
            if cls == "compiler":
                compilers.append(st)
        top = []
        for st in heapq.nlargest(top_n, compilers, key=_rss_key):
            entry = _proc_entry(st, stat_tool_name(st), _meta_of(st, False)[0])
            entry["job"] = job_of(st, lookup)
            top.append(entry)
        ended = _follow_peaks(watch, compilers)
        heaviest = next((p["pid"] for p in top if p["pid"] in tree), None)  # of the build's own, not the user's
        cgroup = read_cgroup(live_roots[0].pid, tree, heaviest) if want_cgroup and live_roots else None
        kernel = _kernel_events(watch, oom_kill, tree, ended, spared)
        watch.tree = tree
        watch.spared = spared
    return {
        "time": now,
        "mem_total": meminfo.get("MemTotal", 0),
        "mem_available": meminfo.get("MemAvailable", meminfo.get("MemFree", 0)),
        "swap_total": meminfo.get("SwapTotal", 0),
        "swap_free": meminfo.get("SwapFree", 0),
        "psi": psi,
        "classes": {k: {"count": v[0], "rss": v[1], "max_rss": v[2]} for k, v in classes.items()},
        "top_compilers": top,
        "ended": ended,
        "oom_kill": oom_kill,
        "cgroup": cgroup,
        "kernel": kernel,
        "tree": len(tree),
        "stale_roots": stale,
        "others": [{"root": list(root), "tools": v[0], "compilers": v[1], "rss": v[2]} for root, v in others.items()
                   if v[0]],
        "scan_age": scan_age,
    }


def _follow_peaks(watch: _Watch, compilers: list[Stat]) -> list[dict[str, Any]]:
    """Raise each live compiler's peak RSS; returns the compilers gone since the last call, with their peaks."""
    peaks = watch.peaks
    live = set()
    for st in compilers:
        key = (st.pid, st.start)
        live.add(key)
        entry = peaks.get(key)
        if entry is None:
            peaks[key] = [stat_tool_name(st), st.rss]
            continue
        entry[0] = stat_tool_name(st)  # a forked g++ first seen before it exec'd its cc1plus: the program now
        if st.rss > entry[1]:
            entry[1] = st.rss
    ended = []
    if len(peaks) > len(live):
        for key in [k for k in peaks if k not in live]:
            name, peak = peaks.pop(key)
            ended.append({"pid": key[0], "start": key[1], "name": name, "peak_rss": peak})
    return ended


def _kernel_events(
    watch: _Watch, oom_kill: int | None, tree: set[int], ended: list[dict[str, Any]],
    spared: dict[int, tuple[int, int]],
) -> list[dict[str, Any]] | None:
    """The OOM kills the kernel logged since this build's last sample (none on its first), or None."""
    seq = KERNEL_LOG.poll(oom_kill)
    if seq is None:
        return None
    if watch.kernel_seq is None:
        watch.kernel_seq = seq
        return []
    events = KERNEL_LOG.after(watch.kernel_seq)
    watch.kernel_seq = seq
    out = []
    names = {e["pid"]: e["name"] for e in ended}
    for e in events:
        pid = e["victim_pid"]
        out.append(
            {
                "victim_pid": pid,
                "victim_name": names.get(pid) or normalise_tool_name(e["comm"]),
                "user": user_name(e["uid"]),
                "cgroup": e["cgroup"],
                "oom_cgroup": e["oom_cgroup"],
                "in_tree": pid in watch.tree or pid in tree,
                "spared_by": list(owner) if (owner := spared.get(pid) or watch.spared.get(pid)) else None,
                "line": e["line"],
            }
        )
    return out


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
    global ORIGINAL_NOFILE, FD_BUDGET, SUPERVISOR_SOURCE
    ORIGINAL_NOFILE, FD_BUDGET = _raise_fd_limit()
    SUPERVISOR_SOURCE = supervisor
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


if __name__ == "__main__":  # run by hand or by the benchmarks, without the bootstrap: spawn is refused
    main()
