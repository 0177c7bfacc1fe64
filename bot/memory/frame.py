"""The memory a build lives in (its frame) and the room left in it (its headroom), from one Sample."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from bot.hosts.models import Sample

Scope = Literal["host", "cgroup"]


@dataclass(frozen=True)
class Frame:
    """The memory a build lives in: its memory cgroup's limit when that is below the host's memory (a
    container's ``--memory``, a Slurm job, ``systemd-run -p MemoryMax=``), else the host's. ``used`` counts
    against ``total``."""

    scope: Scope
    total: int
    used: int

    @property
    def name(self) -> str:
        return "the build's memory limit" if self.scope == "cgroup" else "the host"


class Headroom(NamedTuple):
    """The room left for a build: ``available`` of ``total``, in the build cgroup's limit or on the host
    (``scope``), whichever runs out first."""

    scope: Scope
    available: int
    total: int

    @property
    def pct(self) -> float:
        """Memory left in % of ``total``, as the alerts count it (100 when the total is unknown)."""
        return 100.0 * self.available / self.total if self.total else 100.0


def frame(s: Sample) -> Frame:
    cg = s.cgroup
    if cg is not None and cg.limit and cg.limit < s.mem_total:
        return Frame("cgroup", cg.limit, min(cg.used, cg.limit))
    return Frame("host", s.mem_total, max(0, s.mem_total - s.mem_available))


def headroom(s: Sample) -> Headroom:
    """The room below the build cgroup's limit, or the host's MemAvailable when that runs out first (or there
    is no limit)."""
    f = frame(s)
    if f.scope == "cgroup" and f.total - f.used <= s.mem_available:
        return Headroom("cgroup", f.total - f.used, f.total)
    return Headroom("host", s.mem_available, s.mem_total)
