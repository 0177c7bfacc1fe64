"""What hosts answer, as frozen dataclasses built from the agent's JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.memory import Memory, UsedFormula, memory_from_meminfo


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

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Proc:
        return cls(pid=int(d["pid"]), start=int(d["start"]), name=str(d.get("name", "")), user=str(d.get("user", "")),
                   rss=int(d.get("rss") or 0), ppid=int(d.get("ppid") or 0), cmd=str(d.get("cmd", "")))


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

    @classmethod
    def from_json(cls, host: str, d: Mapping[str, Any], *, used_formula: UsedFormula) -> Snapshot:
        load = tuple(float(x) for x in (d.get("loadavg") or (0, 0, 0)))[:3]
        return cls(host=host, time=float(d.get("time", 0)),
                   memory=memory_from_meminfo(d.get("meminfo", {}), used_formula=used_formula),
                   loadavg=(load[0], load[1], load[2]), cores=int(d.get("cores") or 1),
                   top=tuple(Proc.from_json(p) for p in d.get("top", ())),
                   tools=tuple(Proc.from_json(p) for p in d.get("tools", ())))


@dataclass(frozen=True)
class KillResult:
    """What a kill stopped, how, and how long until the processes were gone and memory settled."""

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

    @property
    def stopped(self) -> int:
        return self.termed + self.killed

    @classmethod
    def from_json(cls, host: str, d: Mapping[str, Any], *, used_formula: UsedFormula) -> KillResult:
        return cls(host=host, targets=tuple(Proc.from_json(p) for p in d.get("targets", ())),
                   counts=dict(d.get("counts", {})), termed=int(d.get("termed", 0)), killed=int(d.get("killed", 0)),
                   survivors=tuple(Proc.from_json(p) for p in d.get("survivors", ())),
                   elapsed=float(d.get("elapsed", 0)), stop_elapsed=float(d.get("stop_elapsed", 0)),
                   before=memory_from_meminfo(d.get("meminfo_before", {}), used_formula=used_formula),
                   after=memory_from_meminfo(d.get("meminfo_after", {}), used_formula=used_formula))


@dataclass(frozen=True)
class Spawned:
    pid: int
    start: int
    supervisor_pid: int | None
    log: str
    exit_file: str
    started: float

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
