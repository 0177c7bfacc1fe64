"""Memory cgroups (v1 and v2): where they are mounted, a process's memory cgroup, its figures (current,
working set, peak, limit, OOM counters) and whether only the build's processes are in it; the limit the
agent's own builds run under.
"""

from __future__ import annotations

from typing import Any

from .procs import MY_PID, _read, read_stat

UNLIMITED = 1 << 62  # cgroup v1 says "no limit" with a number near 2**63


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
