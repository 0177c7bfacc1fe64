"""sample: memory, pressure, the build's tools by class, compilers' peaks, OOM kills from the kernel's log,
the build's cgroup; one call a second, so it stays cheap.
"""

from __future__ import annotations

import heapq
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from .args import arg_identities, arg_int, arg_opt_str
from .cgroups import read_cgroup
from .procs import (
    MY_PID,
    AgentError,
    Stat,
    _meta_of,
    _proc_entry,
    _prune_caches,
    _read,
    log,
    normalise_tool_name,
    read_meminfo,
    read_stat,
    read_vmstat_oom_kill,
    scan,
    stat_tool_name,
    user_name,
    user_uid,
)
from .protocol import TOOL_CLASS
from .trees import _rss_key, _Walk, children_of, job_of, walk_trees

TOP_COMPILERS = 5
WATCHES_KEPT = 32  # (roots, user) keys whose per-build state a sample keeps
KERNEL_EVENTS_KEPT = 256
KMSG_RECORDS_PER_POLL = 20000  # a kernel flooding its log must not keep a sample busy


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
