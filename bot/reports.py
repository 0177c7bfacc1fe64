"""What rigops reports of many hosts: the status digest (a row per host at one moment) and the answers of a
step asked of a group. Data, and the one rule both sides read (when a GPU is busy): bot.core gathers them
(digest, fleet), bot.text words them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.builds.progress import Progress
from bot.hosts.models import GpuReport, Snapshot
from bot.memory.policy import DEFAULT_LEVELS, Levels, MemoryLevel
from bot.store import BuildRun

BUSY_UTILIZATION = 10  # percent: a GPU above this counts as busy for "something changed"


@dataclass(frozen=True)
class HostDigest:
    """One host's row. ``problem`` says why there is no snapshot (down, slow, gone from the config)."""

    host: str
    snapshot: Snapshot | None = None
    gpus: GpuReport | None = None
    running: tuple[BuildRun, ...] = ()
    finished: tuple[BuildRun, ...] = ()  # ended since the digest's ``since``, newest first
    problem: str | None = None
    oom_kills: tuple[OomKillSeen, ...] = ()  # seen by the OOM guard since ``since``, oldest first
    oom_counted: int | None = None  # the host's own count of OOM kills since ``since``, where it can be told
    levels: Levels = DEFAULT_LEVELS  # where its memory reads low or tight: from its memory_alert_pct

    @property
    def memory_level(self) -> MemoryLevel:
        """"low", "tight", "ok", or "-" for a host that did not answer (bot.memory.policy.levels)."""
        return self.levels.of(self.snapshot.memory if self.snapshot is not None else None)

    @property
    def oom_total(self) -> int:
        """OOM kills since ``since``: the host's count, or what the OOM guard saw if that is more."""
        return max(len(self.oom_kills), self.oom_counted or 0)
    progress: Mapping[int, tuple[Progress, float | None]] = field(default_factory=dict)  # running runs: (progress, eta)


@dataclass(frozen=True)
class OomKillSeen:
    """An OOM kill the OOM guard recorded while it followed a build: the victim, and the build it hit."""

    at: float
    whose: str  # "build", "other" or "unknown"
    victim: str | None
    build: str | None  # the followed build, when the kill was its own


@dataclass(frozen=True)
class Digest:
    taken_at: float
    since: float | None  # finished builds are those that ended after this
    hosts: tuple[HostDigest, ...]


def gpu_busy(utilization: str, processes: tuple[str, ...]) -> bool:
    """A GPU with processes on it, or above BUSY_UTILIZATION percent."""
    return bool(processes) or (utilization.isdigit() and int(utilization) >= BUSY_UTILIZATION)


@dataclass(frozen=True)
class HostResult:
    host: str
    result: object | None = None  # what the step's action returned (its spec reads it)
    error: str | None = None
