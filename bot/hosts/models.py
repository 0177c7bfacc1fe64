"""What hosts answer, as frozen dataclasses built from the agent's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bot.hosts.meminfo import Memory, UsedFormula, memory_from_meminfo


class ProcId(NamedTuple):
    """A process's identity on one boot of a host: its pid, and its start time in clock ticks after boot
    (field 22 of /proc/<pid>/stat). A pid alone may have been reused by another process; the pair may not,
    within one boot_id. On the wire with the agent it is the list ``[pid, start]``."""

    pid: int
    start: int

    @classmethod
    def from_json(cls, value: Any) -> ProcId:
        pid, start = value
        return cls(int(pid), int(start))


class RunRef(NamedTuple):
    """A run to ask a host about (``Host.run_status``): its root process, and its exit file and log there."""

    pid: int
    start: int
    exit_file: str
    log: str

    @property
    def proc_id(self) -> ProcId:
        return ProcId(self.pid, self.start)


@dataclass(frozen=True)
class AgentInfo:
    hostname: str
    user: str
    cores: int
    boot_id: str
    python: str
    psutil: bool
    used_formula: UsedFormula
    pid: int = 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AgentInfo:
        formula: UsedFormula = "classic" if d.get("free_used") == "classic" else "available"
        return cls(hostname=str(d.get("hostname", "")), user=str(d.get("user", "")), cores=int(d.get("cores") or 1),
                   boot_id=str(d.get("boot_id", "")), python=str(d.get("python", "")),
                   psutil=bool(d.get("psutil")), used_formula=formula, pid=int(d.get("pid") or 0))


@dataclass(frozen=True)
class Proc:
    """A process seen on a host; (pid, start) is its identity."""

    pid: int
    start: int
    name: str
    user: str
    rss: int
    ppid: int = 0
    cmd: str = ""
    root: ProcId | None = None  # the root (of those asked about) whose process tree holds it
    job: int = 0  # a compiler's compile job: the pid of its outermost compiler ancestor (nvcc, g++), or its own

    @property
    def proc_id(self) -> ProcId:
        return ProcId(self.pid, self.start)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Proc:
        root = d.get("root")
        return cls(pid=int(d["pid"]), start=int(d["start"]), name=str(d.get("name", "")), user=str(d.get("user", "")),
                   rss=int(d.get("rss") or 0), ppid=int(d.get("ppid") or 0), cmd=str(d.get("cmd", "")),
                   root=ProcId.from_json(root) if root else None, job=int(d.get("job") or 0))


@dataclass(frozen=True)
class BuildMemory:
    """A running build's memory limit (its cgroup's, below the host's memory) and what it uses of it, as the
    build's OOM guard last saw them."""

    build: str
    run_id: int
    limit: int
    used: int
    peak: int


@dataclass(frozen=True)
class Snapshot:
    """Memory, load, the top memory users and the build tools running, at one moment."""

    host: str
    time: float
    memory: Memory
    loadavg: tuple[float, float, float]
    cores: int
    top: tuple[Proc, ...]
    tools: tuple[Proc, ...]
    oom_kill: int | None = None  # the host's OOM kills since boot (a counter), where the kernel keeps one
    boot_id: str = ""
    limit: int | None = None  # the memory limit a build started there runs under (a container's, a job's)
    builds: tuple[BuildMemory, ...] = ()  # the limits running builds live in (filled by the mem action)

    @classmethod
    def from_json(cls, host: str, d: Mapping[str, Any], *, used_formula: UsedFormula) -> Snapshot:
        load = tuple(float(x) for x in (d.get("loadavg") or (0, 0, 0)))[:3]
        oom_kill = d.get("oom_kill")
        return cls(host=host, time=float(d.get("time", 0)),
                   memory=memory_from_meminfo(d.get("meminfo", {}), used_formula=used_formula),
                   loadavg=(load[0], load[1], load[2]), cores=int(d.get("cores") or 1),
                   top=tuple(Proc.from_json(p) for p in d.get("top", ())),
                   tools=working_tools(tuple(Proc.from_json(p) for p in d.get("tools", ()))),
                   oom_kill=int(oom_kill) if oom_kill is not None else None, boot_id=str(d.get("boot_id") or ""),
                   limit=int(d["limit"]) if d.get("limit") is not None else None)


IDLE_DRIVERS = frozenset({"make", "gmake", "ninja"})  # with nothing compiling: a `make run`, not a build


def working_tools(tools: tuple[Proc, ...]) -> tuple[Proc, ...]:
    """The build tools that are a build: a make or ninja that rigops did not start, while nothing compiles or
    links anywhere, is someone's ``make run`` or ``make test``, not a build (cmake alone may be configuring one)."""
    if any(t.name not in IDLE_DRIVERS for t in tools):
        return tools
    return tuple(t for t in tools if t.root is not None)


@dataclass(frozen=True)
class KillResult:
    """What a kill stopped, how, and how long until the processes were gone and memory settled.

    ``tree``: a root's process tree was alive (and stopped); ``by_name``: processes were also matched by name;
    ``cgroups``: the build's own memory cgroups whose processes were stopped too; ``spared``: processes the kill
    would have taken but left alone because they are in the tree of a spared root (another build), each with
    that root in ``Proc.root``; ``spare_alive``: the spared roots still alive at the end.
    """

    host: str
    targets: tuple[Proc, ...]
    counts: Mapping[str, int]
    termed: int
    killed: int
    survivors: tuple[Proc, ...]
    elapsed: float
    stop_elapsed: float
    before: Memory
    after: Memory
    tree: bool = False
    by_name: bool = False
    cgroups: tuple[str, ...] = ()
    spared: tuple[Proc, ...] = ()
    spare_alive: tuple[ProcId, ...] = ()

    @property
    def stopped(self) -> int:
        return self.termed + self.killed

    @classmethod
    def from_json(cls, host: str, d: Mapping[str, Any], *, used_formula: UsedFormula) -> KillResult:
        spared = tuple(Proc.from_json({**p, "root": p.get("spared_by")}) for p in d.get("skipped", ())
                       if p.get("reason") == "spared")
        return cls(host=host, targets=tuple(Proc.from_json(p) for p in d.get("targets", ())),
                   counts=dict(d.get("counts", {})), termed=int(d.get("termed", 0)), killed=int(d.get("killed", 0)),
                   survivors=tuple(Proc.from_json(p) for p in d.get("survivors", ())),
                   elapsed=float(d.get("elapsed", 0)), stop_elapsed=float(d.get("stop_elapsed", 0)),
                   before=memory_from_meminfo(d.get("meminfo_before", {}), used_formula=used_formula),
                   after=memory_from_meminfo(d.get("meminfo_after", {}), used_formula=used_formula),
                   tree=bool(d.get("tree")), by_name=bool(d.get("by_name")),
                   cgroups=tuple(str(c) for c in d.get("cgroups", ())), spared=spared,
                   spare_alive=tuple(ProcId.from_json(r) for r in d.get("spare_alive", ())))


@dataclass(frozen=True)
class KeptDir:
    """The build directory a build keeps between runs (``dir``, relative to its workdir), the setup its objects
    depend on (``setup``: name -> digest, never the values themselves), where the agent records the last run's
    setup (``setup_file``), and whether to remove the directory whatever the setup (``clean``)."""

    dir: str
    setup: Mapping[str, str]
    setup_file: str
    clean: bool = False


@dataclass(frozen=True)
class Spawned:
    """A build the agent started: ``pid``/``start`` are its root (the shell running the command)."""

    pid: int
    start: int
    supervisor_pid: int | None
    log: str
    exit_file: str
    started: float

    @property
    def proc_id(self) -> ProcId:
        return ProcId(self.pid, self.start)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Spawned:
        sup = d.get("supervisor_pid")
        return cls(pid=int(d["pid"]), start=int(d["start"]), supervisor_pid=int(sup) if sup else None,
                   log=str(d["log"]), exit_file=str(d["exit_file"]), started=float(d.get("started", 0)))


@dataclass(frozen=True)
class RunStatus:
    pid: int
    start: int
    alive: bool
    exit_status: int | None = None
    signal: int | None = None
    ended: float | None = None
    log_size: int | None = None

    @property
    def proc_id(self) -> ProcId:
        return ProcId(self.pid, self.start)

    @property
    def finished(self) -> bool:
        return not self.alive and (self.exit_status is not None or self.signal is not None)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RunStatus:
        exit_info = d.get("exit") or {}
        status = exit_info.get("exit_status")
        sig = exit_info.get("signal")
        return cls(pid=int(d["pid"]), start=int(d["start"]), alive=bool(d.get("alive")),
                   exit_status=int(status) if status is not None else None,
                   signal=int(sig) if sig is not None else None,
                   ended=float(exit_info["ended"]) if exit_info.get("ended") else None,
                   log_size=int(d["log_size"]) if d.get("log_size") is not None else None)


@dataclass(frozen=True)
class Tail:
    path: str
    lines: tuple[str, ...]
    size: int
    truncated: bool


@dataclass(frozen=True)
class LogChunk:
    """New text of a growing log: ``data`` ends at a line break; read on from ``offset``."""

    data: str
    offset: int
    size: int


@dataclass(frozen=True)
class Gpu:
    index: str
    name: str
    utilization: str
    memory_used: str
    memory_total: str
    temperature: str
    power: str
    processes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class GpuReport:
    host: str
    available: bool
    gpus: tuple[Gpu, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class ClassUsage:
    """The build's processes of one class (drivers, compilers or linkers): how many, and their RSS."""

    count: int = 0
    rss: int = 0
    max_rss: int = 0

    @property
    def mean_rss(self) -> int:
        return self.rss // self.count if self.count else 0

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> ClassUsage:
        d = d or {}
        return cls(count=int(d.get("count") or 0), rss=int(d.get("rss") or 0), max_rss=int(d.get("max_rss") or 0))


@dataclass(frozen=True)
class Pressure:
    """Memory pressure stall information (/proc/pressure/memory): % of time some / all tasks waited."""

    some_avg10: float
    some_avg60: float
    full_avg10: float
    full_avg60: float
    some_total: int
    full_total: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Pressure:
        return cls(some_avg10=float(d.get("some_avg10") or 0), some_avg60=float(d.get("some_avg60") or 0),
                   full_avg10=float(d.get("full_avg10") or 0), full_avg60=float(d.get("full_avg60") or 0),
                   some_total=int(d.get("some_total") or 0), full_total=int(d.get("full_total") or 0))


@dataclass(frozen=True)
class CgroupMemory:
    """The memory cgroup of the build's root: usage, limit and OOM counters (``exclusive``: only the build's
    processes are in it)."""

    path: str
    version: int
    current: int
    limit: int | None  # the tightest of its own and its ancestors'
    oom: int | None
    oom_kill: int | None
    exclusive: bool
    working_set: int | None = None  # current less the file cache the kernel reclaims before it kills (agents
    peak: int | None = None  # of older rigops do not say)

    @property
    def used(self) -> int:
        """What counts against the limit: the working set, where the agent says it."""
        return self.current if self.working_set is None else self.working_set

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CgroupMemory:
        def opt(key: str) -> int | None:
            return int(d[key]) if d.get(key) is not None else None

        return cls(path=str(d.get("path", "")), version=int(d.get("version") or 0), current=int(d.get("current") or 0),
                   limit=opt("limit"), oom=opt("oom"), oom_kill=opt("oom_kill"), exclusive=bool(d.get("exclusive")),
                   working_set=opt("working_set"), peak=opt("peak"))


@dataclass(frozen=True)
class OomEvent:
    """One OOM kill from the kernel log; ``in_tree``: the victim was one of the build's processes."""

    victim_pid: int
    victim_name: str
    user: str | None
    cgroup: str | None
    oom_cgroup: str | None
    in_tree: bool
    line: str
    spared_by: ProcId | None = None  # the victim was in the tree of this spared root: another build's

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OomEvent:
        user, cgroup, oom_cgroup, spared_by = d.get("user"), d.get("cgroup"), d.get("oom_cgroup"), d.get("spared_by")
        return cls(victim_pid=int(d["victim_pid"]), victim_name=str(d.get("victim_name", "")),
                   user=str(user) if user is not None else None, cgroup=str(cgroup) if cgroup is not None else None,
                   oom_cgroup=str(oom_cgroup) if oom_cgroup is not None else None,
                   in_tree=bool(d.get("in_tree")), line=str(d.get("line", "")),
                   spared_by=ProcId.from_json(spared_by) if spared_by else None)


@dataclass(frozen=True)
class TreeUsage:
    """The build tools in another build's process tree (a spared root's), as one sample saw them."""

    root: ProcId
    tools: int
    compilers: int
    rss: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TreeUsage:
        return cls(root=ProcId.from_json(d["root"]), tools=int(d.get("tools") or 0),
                   compilers=int(d.get("compilers") or 0), rss=int(d.get("rss") or 0))


@dataclass(frozen=True)
class JobPeak:
    """A compiler process of the build that has ended, and the highest RSS the samples saw it hold."""

    pid: int
    start: int
    name: str
    peak_rss: int

    @property
    def proc_id(self) -> ProcId:
        return ProcId(self.pid, self.start)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> JobPeak:
        return cls(pid=int(d["pid"]), start=int(d["start"]), name=str(d.get("name", "")),
                   peak_rss=int(d.get("peak_rss") or 0))


@dataclass(frozen=True)
class Sample:
    """One reading of a host's memory and of a build's processes, taken about once a second.

    ``oom_kill`` and ``cgroup.oom_kill`` are counters (compare two samples); ``kernel`` holds the OOM kills
    logged since this build's previous sample, and is None where the kernel log cannot be read.
    """

    host: str
    time: float
    mem_total: int
    mem_available: int
    swap_total: int
    swap_free: int
    psi: Pressure | None
    drivers: ClassUsage
    compilers: ClassUsage
    linkers: ClassUsage
    top_compilers: tuple[Proc, ...]
    ended: tuple[JobPeak, ...]
    oom_kill: int | None
    cgroup: CgroupMemory | None
    kernel: tuple[OomEvent, ...] | None
    tree: int = 0
    stale_roots: tuple[ProcId, ...] = ()  # roots asked for that no longer exist
    others: tuple[TreeUsage, ...] = ()  # other builds' tools (spared roots' trees), never counted above

    @property
    def swap_used(self) -> int:
        return max(self.swap_total - self.swap_free, 0)

    @classmethod
    def from_json(cls, host: str, d: Mapping[str, Any]) -> Sample:
        classes = d.get("classes") or {}
        psi, cgroup, kernel, oom_kill = d.get("psi"), d.get("cgroup"), d.get("kernel"), d.get("oom_kill")
        return cls(host=host, time=float(d.get("time") or 0), mem_total=int(d.get("mem_total") or 0),
                   mem_available=int(d.get("mem_available") or 0), swap_total=int(d.get("swap_total") or 0),
                   swap_free=int(d.get("swap_free") or 0), psi=Pressure.from_json(psi) if psi else None,
                   drivers=ClassUsage.from_json(classes.get("driver")),
                   compilers=ClassUsage.from_json(classes.get("compiler")),
                   linkers=ClassUsage.from_json(classes.get("linker")),
                   top_compilers=tuple(Proc.from_json(p) for p in d.get("top_compilers", ())),
                   ended=tuple(JobPeak.from_json(p) for p in d.get("ended", ())),
                   oom_kill=int(oom_kill) if oom_kill is not None else None,
                   cgroup=CgroupMemory.from_json(cgroup) if cgroup else None,
                   kernel=tuple(OomEvent.from_json(e) for e in kernel) if kernel is not None else None,
                   tree=int(d.get("tree") or 0),
                   stale_roots=tuple(ProcId.from_json(r) for r in d.get("stale_roots", ())),
                   others=tuple(TreeUsage.from_json(o) for o in d.get("others", ())))


@dataclass(frozen=True)
class Signalled:
    """What a pause or resume reached: the processes signalled, those left alone (``Proc`` plus a reason),
    and identities that no longer exist."""

    signalled: tuple[Proc, ...]
    skipped: tuple[tuple[Proc, str], ...]
    denied: tuple[Proc, ...]
    stale: tuple[ProcId, ...]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Signalled:
        return cls(signalled=tuple(Proc.from_json(p) for p in d.get("signalled", ())),
                   skipped=tuple((Proc.from_json(p), str(p.get("reason", ""))) for p in d.get("skipped", ())),
                   denied=tuple(Proc.from_json(p) for p in d.get("denied", ())),
                   stale=tuple(ProcId.from_json(t) for t in d.get("stale", ())))
