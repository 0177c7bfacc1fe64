"""Process trees: children by parent, which root's tree holds a process, the compile job a compiler works
for, and walking trees through /proc's children files between full scans.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .procs import PAGE_SIZE, Stat, _read, _read_all, stat_tool_name
from .protocol import TOOL_CLASS

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
