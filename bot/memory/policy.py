"""What rigops does about a build's memory, decided from numbers and the host's config: when a pressure
episode begins and ends, what an alert leads to (alert only, pause, restart), which compilers a pause stops,
when they go on, what -j a restart or a retry runs at, and where a host's memory reads low or tight.

Pure: each function returns a decision; ``bot/core/guard.py`` (and the core's buttons) carry them out and
``bot/text/`` words them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from bot.config import HostConfig, PressureAction
from bot.hosts.meminfo import Memory
from bot.hosts.models import Proc, ProcId, Sample
from bot.language.plan import half_jobs
from bot.memory.watch import LEAVE_FACTOR, Alert, Thresholds

MAX_PAUSE = 300.0  # seconds: paused compilers go on after this long even if memory never calmed
PAUSE_SHARE = 4  # without a -j that fits, a pause stops one in this many of the running compilers
# "tight" in the digest: under this many times the % that begins a pressure episode (a quarter of the memory at
# the default memory_alert_pct of 5%: where the digest has always called it tight), before it is low
TIGHT_FACTOR = 5.0
MEMORY_CATEGORIES = frozenset({"oom_compiler", "oom_kernel"})  # diagnoses of a build that ran out of memory
ResumeWhy = Literal["memory_back", "paused_too_long"]
MemoryLevel = Literal["low", "tight", "ok", "-"]


def thresholds(host: HostConfig, *, peaks: Mapping[str, int] | None = None) -> Thresholds:
    """The OOM watch's thresholds for a build on ``host``: an episode begins under its ``memory_alert_pct``
    and ends above :data:`LEAVE_FACTOR` times that; a suggested -j keeps its ``memory_reserve`` free;
    ``peaks``: what the build's compilers of each name reached in its past runs."""
    return Thresholds(available_pct=host.memory_alert_pct, leave_available_pct=LEAVE_FACTOR * host.memory_alert_pct,
                      reserve=host.memory_reserve, peaks=dict(peaks or {}))


@dataclass(frozen=True)
class OnPressure:
    """What a pressure alert leads to. ``act``: what rigops does by itself, from the host's
    ``on_memory_pressure`` ("alert": it only tells; "pause" the heaviest compilers; "restart" at ``jobs``);
    ``jobs``: a -j below the run's own that fits, offered to people when rigops does not restart by itself
    (None: no restart would help, so none is offered or done)."""

    act: PressureAction
    jobs: int | None


def on_pressure(alert: Alert, *, run_jobs: int | None, policy: PressureAction) -> OnPressure:
    """The host's policy for an alert, less a restart that would not help: a "restart" policy with no -j below
    the run's own only tells."""
    jobs = restart_jobs(alert, run_jobs)
    return OnPressure(act="alert" if policy == "restart" and jobs is None else policy, jobs=jobs)


def restart_jobs(alert: Alert, run_jobs: int | None) -> int | None:
    """The alert's suggested -j when it is below the run's own: restarting at the same -j (or more) would not
    help, and an automatic restart must never loop."""
    if alert.suggest_jobs is None or (run_jobs is not None and alert.suggest_jobs >= run_jobs):
        return None
    return alert.suggest_jobs


def to_pause(sample: Sample, *, paused: Collection[ProcId], alert: Alert | None) -> tuple[Proc, ...]:
    """The compilers a pause stops, heaviest first, of those not paused yet: as many as run above the alert's
    suggested -j, else one in :data:`PAUSE_SHARE` of them; at least one while any is left."""
    already = set(paused)
    candidates = [p for p in sample.top_compilers if p.proc_id not in already]
    running = sample.compilers.count - len(already)
    keep = alert.suggest_jobs if alert is not None and alert.suggest_jobs else None
    want = running - keep if keep is not None else -(-running // PAUSE_SHARE)
    return tuple(candidates[:max(1, min(want, len(candidates)))])


def resume_why(*, calm: bool, paused_for: float) -> ResumeWhy | None:
    """Why paused compilers go on now: their pressure episode is over, or they have been paused for
    :data:`MAX_PAUSE` seconds and memory never calmed (a restart at fewer jobs is the way out); None: not yet."""
    if calm:
        return "memory_back"
    return "paused_too_long" if paused_for > MAX_PAUSE else None


def retry_jobs(jobs: int | None, *, fits: int | None) -> int:
    """The -j a build that ran out of memory is retried at: half its own, or what the OOM guard found would fit
    (``fits``) when that is fewer. A pressed [Retry at -jN] is held to the same, so never more than half."""
    half = half_jobs(jobs)
    return min(half, fits) if fits is not None and fits >= 1 else half


def retry_offer(jobs: int | None, *, category: str | None, fits: int | None) -> int | None:
    """The -j a [Retry at -jN] under a failed build's result offers: :func:`retry_jobs` when it ran out of memory
    (its diagnosis' ``category``) at more than one job; None: no such button."""
    if category not in MEMORY_CATEGORIES or (jobs or 0) <= 1:
        return None
    return retry_jobs(jobs, fits=fits)


@dataclass(frozen=True)
class Levels:
    """Where a host's memory reads "low" and "tight" (the digest, a fleet's rows), in % of it available."""

    low_pct: float
    tight_pct: float

    def of(self, memory: Memory | None) -> MemoryLevel:
        """"low", "tight", "ok", or "-" for a host that did not answer."""
        if memory is None:
            return "-"
        available = memory.available_fraction
        return "low" if available < self.low_pct / 100 else "tight" if available < self.tight_pct / 100 else "ok"


def levels(th: Thresholds) -> Levels:
    """The levels from the OOM watch's thresholds: low under the % that ends a pressure episode (memory is not
    back, by the guard's own measure: a tenth at the default), tight under :data:`TIGHT_FACTOR` times the %
    that begins one."""
    return Levels(low_pct=th.leave_available_pct, tight_pct=TIGHT_FACTOR * th.available_pct)


def host_levels(host: HostConfig) -> Levels:
    return levels(thresholds(host))


DEFAULT_LEVELS = levels(Thresholds())
