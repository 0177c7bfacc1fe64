"""The ops that signal processes: kill (a build's trees, its own memory cgroups and named tools; frozen,
re-scanned, TERM then KILL, identity-checked; then memory settles), pause and resume.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Any

from .args import arg_float, arg_identities, arg_identity, arg_names, arg_opt_str
from .cgroups import cgroup_mounts, memory_cgroup
from .procs import (
    EXIT_POLL,
    HAVE_PIDFD,
    MY_EUID,
    MY_PID,
    MY_UID,
    SETTLE_FRACTION,
    SETTLE_POLL,
    AgentError,
    Stat,
    _proc_entry,
    _read,
    ancestors,
    read_meminfo,
    read_stat,
    read_uid,
    scan,
    stat_tool_name,
    user_name,
    user_uid,
)
from .trees import children_of, tree_owners


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


def op_pause(req: dict[str, Any]) -> dict[str, Any]:
    return _signal_targets(req, signal.SIGSTOP)


def op_resume(req: dict[str, Any]) -> dict[str, Any]:
    return _signal_targets(req, signal.SIGCONT)
