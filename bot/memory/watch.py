"""Memory trouble around one build, read from the agent's Samples: OOM kills, told apart as the build's or
not, and memory-pressure alerts, one per episode rather than one per sample.

Pure: :class:`OomWatch` is fed Samples in order and returns :class:`Findings`; what to do about them is
:mod:`bot.memory.policy`'s, the wording, buttons and charts belong to ``bot/text/``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from bot.config import DEFAULT_MEMORY_ALERT_PCT, DEFAULT_MEMORY_RESERVE
from bot.hosts.agent.protocol import COMPILER_NAMES
from bot.hosts.models import OomEvent, Proc, ProcId, Sample
from bot.memory.fit import jobs_fitting, usable
from bot.memory.frame import Scope, headroom

MIB = 1 << 20
ENDED_KEPT = 512
Whose = Literal["build", "other", "unknown"]
Evidence = Literal["kernel", "cgroup", "vmstat"]
Reason = Literal["low_memory", "no_headroom", "rising", "stalls", "swap_rising"]
LEAVE_FACTOR = 2.0  # an episode is over once the room left is back above this many times the % that begins one
FORECAST_HORIZON = 15.0  # seconds: the forecast warns when the room left is gone sooner than this
MIN_FALL = MIB  # bytes a second: room that falls slower than this is not falling
ROOM_KEPT = 120  # samples of the room left that the forecast looks back on
RATE_INTERVALS = 3  # the forecast's rate is the slowest fall of this many last intervals: a compile's first
# jump (cc1plus to ~160 MiB in ~1.2 s, measured) spans two at 1 Hz, a steady rise spans them all
# What one compile step of each kind may reach when nothing is known of the build yet (a first run): the
# peaks measured here on examples/cuda's thrust kernels (cudafe++ 641 MiB, cicc 753 MiB, ptxas 64 MiB, the
# host cc1plus 355 MiB) and on examples/demo's template code (cc1plus 183-430 MiB), rounded up by half as much
# again. They bound how far the forecast lets a first run's jobs grow; a job already past its kind's figure
# is not bounded at all.
PRIORS: dict[str, int] = {"cc1plus": 640 * MIB, "cc1": 384 * MIB, "cudafe++": 1024 * MIB,
                          "cicc": 1152 * MIB, "ptxas": 256 * MIB, "nvlink": 256 * MIB, "fatbinary": 128 * MIB}


@dataclass(frozen=True)
class Thresholds:
    """When a pressure episode begins and when it is over (memory in % of the host, or of the build's cgroup
    limit when that is tighter; PSI "full" avg10 in % of time all tasks stalled on memory)."""

    available_pct: float = DEFAULT_MEMORY_ALERT_PCT  # a host's ``memory_alert_pct``
    psi_full_avg10: float = 10.0
    swap_rise: float = 64 * MIB  # bytes a second of swap use growth
    leave_available_pct: float = LEAVE_FACTOR * DEFAULT_MEMORY_ALERT_PCT
    leave_psi_full_avg10: float = 5.0
    calm_samples: int = 3  # consecutive calm samples that end an episode
    quiet_after: float = 60.0  # seconds after an alert in which headroom alone starts no new one (jobs come
    # and go between a compile's steps: the room they need moves with them)
    reserve: float = DEFAULT_MEMORY_RESERVE  # memory a suggested -j keeps free (bot.memory.fit)
    peaks: Mapping[str, int] = field(default_factory=dict)  # what this build's compilers of each name (cc1plus,
    # cicc, g++) reach, from its past runs
    horizon: float = FORECAST_HORIZON
    priors: Mapping[str, int] = field(default_factory=lambda: dict(PRIORS))  # stand-ins for ``peaks``, by name


@dataclass(frozen=True)
class Forecast:
    """The room left falling at a steady ``rate`` (bytes a second) for ``lasted`` seconds: gone in ``eta``."""

    rate: float
    lasted: float
    eta: float


@dataclass(frozen=True)
class BuildUsage:
    """Another build running on the host, as one sample saw its build tools: how many compilers, how much RSS."""

    build: str
    compilers: int
    rss: int


@dataclass(frozen=True)
class OomKill:
    """One OOM kill. ``whose``: "build" when the victim was the build's, "other" when the kernel named a
    victim that was not (``other_build``: the build rigops knows it belonged to), "unknown" when only a counter
    moved (the kernel log unreadable or its lines lost)."""

    host: str
    time: float
    whose: Whose
    evidence: Evidence
    victim_pid: int | None = None
    victim_name: str | None = None
    user: str | None = None
    cgroup: str | None = None
    line: str | None = None
    other_build: str | None = None


@dataclass(frozen=True)
class Alert:
    """The first sample of a pressure episode, with the numbers a message needs."""

    host: str
    time: float
    reasons: tuple[Reason, ...]
    scope: Scope  # what ``available`` and ``total`` describe: the host, or the build's cgroup limit
    available: int
    total: int
    psi_full_avg10: float | None
    swap_used: int
    swap_rate: float  # bytes a second, since the previous sample
    compilers: int
    per_compiler: int  # mean RSS of the heaviest compilers
    suggest_jobs: int | None  # how many compilers fit with the reserve kept free; None when no fewer would do
    others: tuple[BuildUsage, ...] = ()  # the other builds on the host, whose memory this one cannot free
    need: int = 0  # what the running compilers may still add, each growing to ``job_peak``
    job_peak: int = 0  # what one compile job of this build reaches (its past runs, its ended compilers)
    forecast: Forecast | None = None  # the room left is falling: at this rate it is gone in ``forecast.eta``

    @property
    def available_pct(self) -> float:
        return 100.0 * self.available / self.total if self.total else 100.0


@dataclass(frozen=True)
class Findings:
    """What one sample told: OOM kills, a new pressure episode (``alert``), or the end of one (``calm``)."""

    kills: tuple[OomKill, ...] = ()
    alert: Alert | None = None
    calm: bool = False

    @property
    def build_kills(self) -> tuple[OomKill, ...]:
        return tuple(k for k in self.kills if k.whose == "build")


class OomWatch:
    """Follows one build (its root processes and user) on one host through that host's Samples. ``others``
    names the other builds running there by the roots of their trees (the samples' spared roots): their
    compilers and OOM victims are theirs, never this build's (:meth:`know` says which run now)."""

    def __init__(self, *, roots: Iterable[ProcId] = (), user: str | None = None,
                 thresholds: Thresholds | None = None) -> None:
        self.user = user
        self.thresholds = thresholds or Thresholds()
        self.others: Mapping[ProcId, str] = {}  # the other builds running now
        self._names: dict[ProcId, str] = {}  # every other build seen: a victim may outlive its build's end
        self._root_pids = frozenset(pid for pid, _ in roots)
        self._prev: Sample | None = None
        # Kills a counter showed but no kernel line explained yet: the line follows the count, so a kill
        # stays owed for one sample before it is reported as of unknown victim.
        self._owed_host = 0
        self._owed_cgroup = 0
        self._episode = False
        self._calm = 0
        self._ended: dict[str, list[int]] = {}  # by name, the peaks of this build's compilers that ended
        self._running: dict[str, int] = {}  # by name, the most a running compiler of the build was seen holding
        self._alerted_at = float("-inf")
        self._room: list[tuple[float, int]] = []  # (time, room left) of the last samples, for the forecast

    @property
    def in_episode(self) -> bool:
        return self._episode

    def know(self, others: Mapping[ProcId, str]) -> None:
        """The other builds running on the host now, by the roots of their trees."""
        self.others = others
        self._names.update(others)

    def feed(self, sample: Sample) -> Findings:
        kills = self._kills(sample)
        alert, calm = self._pressure(sample)
        self._prev = sample
        return Findings(kills=kills, alert=alert, calm=calm)

    # -- OOM kills ------------------------------------------------------------------------------------
    def _kills(self, s: Sample) -> tuple[OomKill, ...]:
        events = s.kernel or ()
        kills = [self._from_event(s, e) for e in events]
        prev = self._prev
        if prev is None:
            return tuple(kills)
        host_delta = _delta(prev.oom_kill, s.oom_kill)
        cgroup_delta = 0
        in_cgroup = 0
        if s.cgroup is not None and prev.cgroup is not None and s.cgroup.path == prev.cgroup.path:
            cgroup_delta = _delta(prev.cgroup.oom_kill, s.cgroup.oom_kill)
            in_cgroup = sum(1 for e, k in zip(events, kills, strict=True)  # no cgroup on old kernels' lines
                            if _within(e.cgroup, s.cgroup.path) or (e.cgroup is None and k.whose == "build"))
        readable = s.kernel is not None
        host_left, self._owed_host = _settle(self._owed_host, host_delta, len(events), readable)
        cgroup_left, self._owed_cgroup = _settle(self._owed_cgroup, cgroup_delta, in_cgroup, readable)
        if cgroup_left and s.cgroup is not None:
            whose: Whose = "build" if s.cgroup.exclusive else "unknown"
            kills += [OomKill(s.host, s.time, whose, "cgroup", cgroup=s.cgroup.path)] * cgroup_left
        kills += [OomKill(s.host, s.time, "unknown", "vmstat")] * max(0, host_left - cgroup_left)
        return tuple(kills)

    def _from_event(self, s: Sample, e: OomEvent) -> OomKill:
        if e.spared_by is not None and not e.in_tree:  # in another build's tree: that build's
            return OomKill(s.host, s.time, "other", "kernel", victim_pid=e.victim_pid, victim_name=e.victim_name,
                           user=e.user, cgroup=e.cgroup, line=e.line,
                           other_build=self._names.get(e.spared_by, "another build"))
        known = self._root_pids | {p.pid for p in (self._prev.top_compilers if self._prev else ())}
        own_cgroup = s.cgroup.path if s.cgroup is not None and s.cgroup.exclusive else None
        # A compiler of the build user seen in no tree is this build's only when no other build runs there.
        alone = not self.others and not s.others
        ours = (e.in_tree or e.victim_pid in known or (own_cgroup is not None and _within(e.cgroup, own_cgroup))
                or (alone and self.user is not None and e.user == self.user and e.victim_name in COMPILER_NAMES))
        return OomKill(s.host, s.time, "build" if ours else "other", "kernel", victim_pid=e.victim_pid,
                       victim_name=e.victim_name, user=e.user, cgroup=e.cgroup, line=e.line)

    def usage_of_others(self, s: Sample) -> tuple[BuildUsage, ...]:
        """The other builds' tools in a sample, named."""
        return tuple(BuildUsage(build=self._names.get(o.root, "another build"), compilers=o.compilers, rss=o.rss)
                     for o in s.others)

    # -- pressure -------------------------------------------------------------------------------------
    def _pressure(self, s: Sample) -> tuple[Alert | None, bool]:
        th = self.thresholds
        room = headroom(s)
        scope, available, total, pct = room.scope, room.available, room.total, room.pct
        psi = s.psi.full_avg10 if s.psi is not None else None
        rate = self._swap_rate(s)
        self._note_peaks(s)
        need = self.growth(s)
        ahead = self.forecast(s, available)
        reasons: list[Reason] = []
        if pct < th.available_pct:
            reasons.append("low_memory")
        elif need > available:
            reasons.append("no_headroom")
        elif ahead is not None:
            reasons.append("rising")
        if psi is not None and psi > th.psi_full_avg10:
            reasons.append("stalls")
        if s.swap_total and rate > th.swap_rise:
            reasons.append("swap_rising")
        if not self._episode:
            if not reasons:
                return None, False
            self._episode, self._calm = True, 0
            if reasons in (["no_headroom"], ["rising"]) and s.time - self._alerted_at < th.quiet_after:
                return None, False  # the same trouble as the alert just told
            self._alerted_at = s.time
            return self._alert(s, tuple(reasons), scope, available, total, psi, rate, need, ahead), False
        calm = pct >= th.leave_available_pct and available >= need and ahead is None \
            and (psi is None or psi <= th.leave_psi_full_avg10) and rate <= th.swap_rise / 2
        self._calm = self._calm + 1 if calm else 0
        if self._calm < th.calm_samples:
            return None, False
        self._episode, self._calm = False, 0
        return None, True

    def forecast(self, s: Sample, room: int) -> Forecast | None:
        """When the room left, falling as it has over the last intervals, is gone within the horizon.

        A first run knows nothing of what its jobs reach, so it looks at how the room falls: at the slowest
        of the last :data:`RATE_INTERVALS` intervals' rates (a job's first jump is no rate), for no longer than
        the fall has already lasted (a rise of a few seconds is not extrapolated for a minute), and no further
        than the running jobs can still grow, each to what its kind reaches (learned, or :data:`PRIORS`)."""
        th = self.thresholds
        self._room.append((s.time, room))
        del self._room[:-ROOM_KEPT]
        last = self._room[-RATE_INTERVALS - 1:]
        if len(last) <= RATE_INTERVALS or any(b[0] <= a[0] for a, b in itertools.pairwise(last)):
            return None
        rate = min((a[1] - b[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(last))
        if rate <= MIN_FALL:
            return None
        interval = last[-1][0] - last[-2][0]
        lasted = s.time - self._fall_began(interval)
        eta = room / rate
        horizon = max(th.horizon, 3 * interval)
        if eta > min(horizon, lasted) or self._may_grow(s) < room:
            return None
        return Forecast(rate=rate, lasted=lasted, eta=eta)

    def _fall_began(self, interval: float) -> float:
        """When the room left began to fall: the last sample before which it was smaller (by more than a
        sample's noise: :data:`MIN_FALL` over an interval), walking back from now."""
        kept = self._room
        i = len(kept) - 1
        while i > 0 and kept[i - 1][1] >= kept[i][1] - MIN_FALL * max(interval, 1.0):
            i -= 1
        return kept[i][0]

    def _may_grow(self, s: Sample) -> float:
        """How much more the running compile jobs may take, each growing to what its kind reaches (its
        largest shortfall over its steps); unbounded when a step is past that, is of no kind known, or a
        linker runs (it is none of the jobs)."""
        if s.linkers.count or len(s.top_compilers) < s.compilers.count:
            return float("inf")
        more = 0
        for members in _by_job(s):
            shortfall = 0
            for p in members:
                reach = self._learned(p.name) or self.thresholds.priors.get(p.name, 0)
                if reach <= p.rss:
                    return float("inf")
                shortfall = max(shortfall, reach - p.rss)
            more += shortfall
        return more

    def job_peak(self, s: Sample) -> int:
        """What the heaviest kind of compile job running in ``s`` reaches in this build."""
        return max((self._peak_of(p.name) for members in _by_job(s) for p in members), default=0)

    def _learned(self, name: str) -> int:
        """What a compiler called ``name`` reaches in this build (a g++ driver a few MiB, its cc1plus hundreds):
        the most of the past runs' figure and the p90 of those that ended in this run (0: not known yet)."""
        return max(self.thresholds.peaks.get(name, 0), _p90(self._ended.get(name, [])))

    def _peak_of(self, name: str) -> int:
        """:meth:`_learned`, or until it is known, the heaviest compiler of that name seen running."""
        return self._learned(name) or self._running.get(name, 0)

    def growth(self, s: Sample) -> int:
        """Headroom per running job: what the build's running compile jobs may still add before each reaches
        what such a job reaches in this build. A compile's memory rises a translation unit at a time, so a
        build whose room is below this is about to run out, whatever share of the memory is left. A job's
        steps (nvcc's cudafe++, cicc, ptxas; g++'s cc1plus, as) run one after another: it grows by its
        largest shortfall, not their sum."""
        jobs = _by_job(s)
        if not jobs:
            return 0
        need = sum(max(max(0, self._peak_of(p.name) - p.rss) for p in members) for members in jobs)
        if len(s.top_compilers) < s.compilers.count:  # more than were listed, each lighter than those
            rest, last = s.compilers.count - len(s.top_compilers), s.top_compilers[-1]
            need += rest * max(0, self._peak_of(last.name) - last.rss)
        return need

    def _note_peaks(self, s: Sample) -> None:
        for p in s.ended:
            if p.name in COMPILER_NAMES:
                kept = self._ended.setdefault(p.name, [])
                kept.append(p.peak_rss)
                del kept[:-ENDED_KEPT]
        for members in _by_job(s):
            for step in members:
                self._running[step.name] = max(self._running.get(step.name, 0), step.rss)

    def _swap_rate(self, s: Sample) -> float:
        prev = self._prev
        if prev is None or s.time <= prev.time:
            return 0.0
        return (s.swap_used - prev.swap_used) / (s.time - prev.time)

    def _alert(self, s: Sample, reasons: tuple[Reason, ...], scope: Scope, available: int, total: int,
               psi: float | None, rate: float, need: int, ahead: Forecast | None) -> Alert:
        jobs = _by_job(s)
        heavy = [sum(p.rss for p in members) for members in jobs]
        per = sum(heavy) // len(heavy) if heavy else s.compilers.mean_rss
        job = max([per, *(self._learned(p.name) for members in jobs for p in members)])  # what each grows to
        count = len(jobs) + max(0, s.compilers.count - len(s.top_compilers))  # a job's steps are one job
        suggest = None
        if count and job:
            # what is not the compilers' stays; the compilers' RSS counts pages they share, so it may exceed
            # what they are charged for
            other = max(0, total - available - s.compilers.rss)
            fit = max(1, jobs_fitting(usable(total, reserve=self.thresholds.reserve, held=other), job))
            suggest = fit if fit < count else None
        return Alert(host=s.host, time=s.time, reasons=reasons, scope=scope, available=available, total=total,
                     psi_full_avg10=psi, swap_used=s.swap_used, swap_rate=rate, compilers=count,
                     per_compiler=per, suggest_jobs=suggest, others=self.usage_of_others(s), need=need,
                     job_peak=self.job_peak(s), forecast=ahead)


def _by_job(s: Sample) -> list[list[Proc]]:
    """The compile jobs of a sample, heaviest first: the listed compilers grouped by the job they work for
    (``Proc.job``; from agents that do not say it, each its own), less the drivers of a step listed (g++
    above its cc1plus, clang's driver above its ``clang -cc1``)."""
    parents = {p.ppid for p in s.top_compilers}
    groups: dict[int, list[Proc]] = {}
    for p in s.top_compilers:
        groups.setdefault(p.job or p.pid, []).append(p)
    jobs = [steps for members in groups.values() if (steps := [p for p in members if p.pid not in parents])]
    return sorted(jobs, key=lambda m: -sum(p.rss for p in m))


def _p90(values: list[int]) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def _delta(before: int | None, after: int | None) -> int:
    return max(0, after - before) if before is not None and after is not None else 0


def _settle(owed: int, delta: int, explained: int, readable: bool) -> tuple[int, int]:
    """(kills to report as of unknown victim now, kills still owed a kernel line)."""
    left = max(0, owed + delta - explained)
    if not readable:
        return left, 0
    report = min(owed, left)  # owed since the last sample and still not explained
    return report, left - report


def _within(cgroup: str | None, path: str) -> bool:
    return cgroup is not None and (cgroup == path or cgroup.startswith(path.rstrip("/") + "/"))
