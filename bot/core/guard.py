"""The OOM guard of a followed build: it samples the host about once a second while the build runs, tells the
thread about memory pressure (once per episode, with buttons) and OOM kills, pauses and resumes the heaviest
compilers, and keeps the memory chart and the compilers' peaks that the -j advisor learns from.

One :class:`Guard` per run, driven by the Follower: ``start`` when it begins following, ``finish`` when the
build has ended. What it sees comes from :class:`bot.memory.watch.OomWatch`, what it does about it from
:mod:`bot.memory.policy`; this module carries the decisions out and does the talking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.actions import Requester
from bot.core.services import Services
from bot.core.talk import Conversation
from bot.hosts.models import ProcId, Sample
from bot.language.plan import Plan, Step
from bot.memory import policy
from bot.memory.advisor import JobMemory
from bot.memory.chart import MemorySeries, render_memory_chart
from bot.memory.frame import headroom
from bot.memory.watch import Alert, BuildUsage, OomKill, OomWatch
from bot.store import BuildRun
from bot.text import guard as guard_text
from bot.util.aio import Tasks, cancel, log_end
from bot.util.errors import HostError, RigopsError

log = logging.getLogger(__name__)
SAMPLE_INTERVAL = 1.0
SAVE_INTERVAL = 15.0  # how often the memory series is written to the state while the build runs
TOP_COMPILERS = 64  # the heaviest compilers each sample lists: the candidates for a pause
KILLS_EVERY = 10.0  # OOM kills are told at most this often per build; the ones in between come together
SETTLE_TIMEOUT = 15.0  # how long the end of a build waits for the sample on its way (it may hold the OOM kill)
MIN_CHART_POINTS = 5  # a build shorter than this many samples gets no chart at its end
AUTO_USER = "rigops"  # who the audit names for what a host's policy did by itself

# Runs a plan in a conversation as a requester, with a note: the core's Executor.execute.
Restart = Callable[[Conversation, Plan, Requester, str], Coroutine[Any, Any, None]]


@dataclass
class Guard:
    run: BuildRun
    thread: Conversation | None
    watch: OomWatch
    peaks: JobMemory = field(default_factory=JobMemory)
    series: MemorySeries = field(default_factory=MemorySeries)
    last: Sample | None = None
    peak_tools: int = 0  # the most memory the build's tools held in any sample (the series has the rest)
    alert: Alert | None = None
    alert_id: str | None = None
    ignored_by: str | None = None
    paused: list[ProcId] = field(default_factory=list)
    paused_at: float = 0.0
    inherited: bool = False  # paused by a rigops that died: resumed first thing
    saved_at: float = 0.0
    kills_untold: list[OomKill] = field(default_factory=list)
    kills_told_at: float = -KILLS_EVERY
    build_kills: list[OomKill] = field(default_factory=list)  # every OOM kill of the build's own, for its result
    task: asyncio.Task[None] | None = None
    stopping: bool = False  # the build ended: the loop ends after the sample it is taking
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    settled: bool = False


class Guards:
    def __init__(self, services: Services, *, restart: Restart, interval: float = SAMPLE_INTERVAL) -> None:
        self.services = services
        self._restart = restart
        self.interval = interval
        self._guards: dict[int, Guard] = {}
        self._series: dict[int, MemorySeries] = {}
        self._tasks = Tasks()

    @property
    def series(self) -> Mapping[int, MemorySeries]:
        """The live memory series of the runs being guarded, by run id (the chart reads them)."""
        return self._series

    def get(self, run_id: int) -> Guard | None:
        return self._guards.get(run_id)

    def suggested(self, run_id: int) -> int | None:
        """The -j the run's last memory alert found would fit, if it had one."""
        guard = self._guards.get(run_id)
        return guard.alert.suggest_jobs if guard is not None and guard.alert is not None else None

    def note(self, run_id: int) -> str | None:
        """What the build's card says of memory while it is tight: "memory pressure: 4% available, 3 compilers
        paused"."""
        guard = self._guards.get(run_id)
        if guard is None or guard.last is None or not (guard.watch.in_episode or guard.paused):
            return None
        room = headroom(guard.last)
        return guard_text.card_note(available_pct=room.pct if guard.watch.in_episode else None,
                                    paused=len(guard.paused), limited=room.scope == "cgroup")

    def start(self, run: BuildRun, thread: Conversation | None) -> None:
        if run.id in self._guards:
            return
        host = self.services.config.hosts[run.host]
        thresholds = policy.thresholds(host, peaks=self.services.store.job_memory_by_name(run.host, run.build))
        guard = Guard(run=run, thread=thread, watch=OomWatch(roots=[run.proc_id], user=host.user,
                                                             thresholds=thresholds))
        stored = self.services.store.run_memory(run.id)
        if stored is not None:  # a bot restarted mid-build keeps the chart it had
            with contextlib.suppress(ValueError, KeyError, TypeError):
                guard.series = MemorySeries.from_json(stored)
        guard.paused = self.services.store.paused(run.id)  # left paused by a rigops that died
        guard.inherited = bool(guard.paused)
        self._guards[run.id] = guard
        self._series[run.id] = guard.series
        guard.task = asyncio.create_task(self._loop(guard), name=f"guard-run-{run.id}")
        guard.task.add_done_callback(log_end)

    async def settle(self, run: BuildRun) -> tuple[OomKill, ...]:
        """The build ended: let the sample on its way finish (it may be the one that read the OOM kill), take
        one more look, and tell the kills not yet told, before the build's result is posted. The build's own
        OOM kills over the whole run."""
        guard = self._guards.get(run.id)
        if guard is None:
            return ()
        if not guard.settled:
            guard.settled, guard.stopping = True, True
            guard.wake.set()
            if guard.task is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(guard.task), timeout=SETTLE_TIMEOUT)
                except TimeoutError:
                    await cancel(guard.task)
            with contextlib.suppress(RigopsError):  # the state or the host failing must not lose the result
                if run.state in ("succeeded", "failed"):
                    await self._last_sample(guard)
                await self._tell_kills(guard)
        return tuple(guard.build_kills)

    async def finish(self, run: BuildRun, *, post_chart: bool) -> None:
        """The build ended and its result is told: keep its compilers' peaks and chart, post the chart."""
        await self.settle(run)
        guard = self._guards.pop(run.id, None)
        self._series.pop(run.id, None)
        if guard is None:
            return
        if guard.paused:
            await self._resume(guard, why=guard_text.BUILD_ENDED, post=False)
        with contextlib.suppress(RigopsError):  # the state or the host failing must not lose the result
            if run.state in ("succeeded", "failed"):  # a stopped build's compilers died before their peaks
                limit = guard.series.total if guard.series.limited else None
                self.services.store.record_job_memory(run.host, run.build, guard.peaks.values,
                                                      label=guard.peaks.label, limit=limit,
                                                      by_name=guard.peaks.by_name)
            if len(guard.series):
                self.services.store.save_run_memory(run.id, guard.series.to_json())
        if post_chart and guard.thread is not None and len(guard.series) >= MIN_CHART_POINTS:
            await self._post_chart(guard, title=guard_text.chart_title(run, "memory over the build"))

    async def let_go(self, run_id: int) -> None:
        """Another rigops follows the run now: stop guarding it here. What is paused stays paused, in the state,
        for the new follower's guard (it resumes what it inherits)."""
        guard = self._guards.pop(run_id, None)
        self._series.pop(run_id, None)
        if guard is not None:
            await cancel(guard.task)

    async def close(self) -> None:
        """rigops is stopping: nothing may stay paused behind it."""
        for guard in list(self._guards.values()):
            await cancel(guard.task)
            if guard.paused:
                with contextlib.suppress(Exception):
                    await self._resume(guard, why=guard_text.STOPPING, post=False)
            self._series.pop(guard.run.id, None)
        self._guards.clear()
        await self._tasks.close()

    # -- sampling -------------------------------------------------------------------------------------
    async def _loop(self, guard: Guard) -> None:
        run = guard.run
        host = self.services.hosts[run.host]
        user = self.services.config.hosts[run.host].user
        while not guard.stopping:
            began = time.monotonic()
            try:
                if guard.inherited:
                    await self._resume(guard, why=guard_text.INHERITED_PAUSE)
                    guard.inherited = bool(guard.paused)
                sample = await host.sample(roots=[run.proc_id], user=user, spare=self._spare(guard),
                                           top=TOP_COMPILERS)
                await self._feed(guard, sample)
            except HostError as exc:  # the follower says when a host stays away; sampling just waits
                log.debug("sampling run %d on %s: %s", run.id, run.host, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(guard.wake.wait(), self.interval * 4)
            except RigopsError as exc:
                log.warning("the OOM guard of run %d: %s", run.id, exc)
            except Exception:
                log.exception("the OOM guard of run %d failed", run.id)
                return
            with contextlib.suppress(TimeoutError):  # woken early when the build ends
                await asyncio.wait_for(guard.wake.wait(), max(0.0, self.interval - (time.monotonic() - began)))

    def _spare(self, guard: Guard) -> list[ProcId]:
        """The roots of the other builds guarded on the same host: their tools are theirs, never this build's
        (its samples, pauses and OOM kills leave them out); the watch learns their names."""
        others = {g.run.proc_id: g.run.build for g in self._guards.values()
                  if g.run.host == guard.run.host and g.run.id != guard.run.id and g.run.pid > 0}
        guard.watch.know(others)
        return list(others)

    def others(self, run_id: int) -> tuple[BuildUsage, ...]:
        """The other builds on the host of a guarded run, as its last sample saw their tools (the card shows
        them)."""
        guard = self._guards.get(run_id)
        if guard is None or guard.last is None:
            return ()
        return guard.watch.usage_of_others(guard.last)

    async def _feed(self, guard: Guard, sample: Sample) -> None:
        found = guard.watch.feed(sample)
        guard.last = sample
        guard.peak_tools = max(guard.peak_tools, sample.drivers.rss + sample.compilers.rss + sample.linkers.rss)
        guard.peaks.add(sample)
        guard.series.add(sample)
        self._note_kills(guard, found.kills)
        if guard.kills_untold and time.monotonic() - guard.kills_told_at >= KILLS_EVERY:
            await self._tell_kills(guard)
        if found.alert is not None:
            await self._alert(guard, found.alert)
        if guard.paused and (why := policy.resume_why(calm=found.calm,
                                                      paused_for=time.monotonic() - guard.paused_at)) is not None:
            await self._resume(guard, why=guard_text.resume_reason(why, available_pct=headroom(sample).pct))
        if time.monotonic() - guard.saved_at > SAVE_INTERVAL:
            guard.saved_at = time.monotonic()
            self.services.store.save_run_memory(guard.run.id, guard.series.to_json())

    async def _last_sample(self, guard: Guard) -> None:
        """One more look after the end: the compilers the build ended with are reported as ended only now."""
        run = guard.run
        try:
            sample = await self.services.hosts[run.host].sample(
                roots=[run.proc_id], user=self.services.config.hosts[run.host].user, spare=self._spare(guard), top=0)
        except HostError:
            return
        guard.peaks.add(sample)
        self._note_kills(guard, guard.watch.feed(sample).kills)

    async def _tell_kills(self, guard: Guard) -> None:
        kills, guard.kills_untold = guard.kills_untold, []
        guard.kills_told_at = time.monotonic()
        if guard.thread is not None and kills:
            await guard.thread.post(guard_text.kills_text(kills, guard.run))

    def _note_kills(self, guard: Guard, kills: tuple[OomKill, ...]) -> None:
        """OOM kills go into the state (for the digest), the chart, and the next message about kills."""
        if not kills:
            return
        self.services.store.add_oom_kills([(k.host, k.time, guard.run.id, k.whose, k.evidence, k.victim_name,
                                            k.victim_pid) for k in kills])
        for kill in kills:
            guard.series.add_kill(kill)
        guard.kills_untold += kills
        guard.build_kills += [k for k in kills if k.whose == "build"]
        for _ in (k for k in kills if k.whose == "build"):
            self.services.metrics.oom_kills.labels(guard.run.host, guard.run.build).inc()

    # -- alerts ---------------------------------------------------------------------------------------
    async def _alert(self, guard: Guard, alert: Alert) -> None:
        guard.alert = alert
        if guard.ignored_by is not None or guard.thread is None:
            return
        auto = self.services.config.hosts[guard.run.host].on_memory_pressure
        answer = policy.on_pressure(alert, run_jobs=guard.run.jobs, policy=auto)
        self.services.store.audit("memory pressure", user=None, channel=guard.thread.channel,
                                  thread_id=guard.thread.thread, host=guard.run.host, build=guard.run.build,
                                  detail={"run": guard.run.id, "available": alert.available, "total": alert.total,
                                          "reasons": list(alert.reasons), "suggest_jobs": alert.suggest_jobs,
                                          "policy": auto})
        for reason in alert.reasons:
            self.services.metrics.memory_alerts.labels(guard.run.host, guard.run.build, reason).inc()
        guard.alert_id = await guard.thread.post(guard_text.alert_message(alert, guard.run, answer))
        await self._post_chart(guard, title=guard_text.chart_title(guard.run, "memory pressure"))
        if answer.act == "pause":
            await self.pause(guard, user=None)
        elif answer.act == "restart" and answer.jobs is not None:
            self.restart(guard, answer.jobs, user=AUTO_USER)

    async def _post_chart(self, guard: Guard, *, title: str) -> None:
        if guard.thread is None or not len(guard.series):
            return
        png = await asyncio.to_thread(render_memory_chart, guard.series, title=title)
        await guard.thread.upload(png, filename=f"{guard.run.build}-run{guard.run.id}-memory.png", title=title)

    async def settle_alert(self, guard: Guard, outcome: str) -> None:
        """Replace the alert's buttons with what was done about it."""
        if guard.thread is None or guard.alert_id is None or guard.alert is None:
            return
        text = guard_text.alert_text(guard.alert, guard.run, jobs=policy.restart_jobs(guard.alert, guard.run.jobs))
        await guard.thread.update(guard.alert_id, guard_text.handled(text, outcome))

    # -- what can be done about it --------------------------------------------------------------------
    async def pause(self, guard: Guard, *, user: str | None) -> int:
        """SIGSTOP the compilers the policy chooses (:func:`bot.memory.policy.to_pause`)."""
        sample = guard.last
        if sample is None or not sample.top_compilers:
            if guard.thread is not None:
                await guard.thread.post(guard_text.NO_COMPILERS)
            return 0
        chosen = policy.to_pause(sample, paused=guard.paused, alert=guard.alert)
        host = self.services.hosts[guard.run.host]
        self.services.store.audit("pause", user=user or AUTO_USER, host=guard.run.host, build=guard.run.build,
                                  detail={"run": guard.run.id, "targets": [list(p.proc_id) for p in chosen]})
        try:
            result = await host.pause([p.proc_id for p in chosen],
                                      user=self.services.config.hosts[guard.run.host].user)
        except HostError as exc:
            if guard.thread is not None:
                await guard.thread.post(guard_text.pause_failed(exc.reason))
            return 0
        done = {p.proc_id for p in result.signalled}
        stopped = [p for p in chosen if p.proc_id in done]
        if stopped:
            guard.paused += [p.proc_id for p in stopped]
            guard.paused_at = time.monotonic()
            self.services.store.set_paused(guard.run.id, guard.paused)
        if guard.thread is not None:
            await guard.thread.post(guard_text.paused_message(len(stopped), sum(p.rss for p in stopped), user=user,
                                                              run=guard.run))
        return len(stopped)

    async def resume(self, guard: Guard, *, user: str) -> None:
        """[Resume now]: let the paused compilers go on before memory is back."""
        if not guard.paused:
            if guard.thread is not None:
                await guard.thread.private(user, guard_text.NOTHING_PAUSED)
            return
        await self._resume(guard, why=guard_text.resumed_by(user), user=user)

    async def _resume(self, guard: Guard, *, why: str, post: bool = True, user: str = AUTO_USER) -> None:
        targets, guard.paused = guard.paused, []
        host = self.services.hosts[guard.run.host]
        try:
            result = await host.resume(targets, user=self.services.config.hosts[guard.run.host].user)
        except HostError as exc:
            guard.paused = targets  # try again on the next sample
            log.warning("resuming paused compilers of run %d: %s", guard.run.id, exc)
            return
        self.services.store.set_paused(guard.run.id, [])
        self.services.store.audit("resume", user=user, host=guard.run.host, build=guard.run.build,
                                  detail={"run": guard.run.id, "targets": [list(t) for t in targets], "why": why})
        if post and guard.thread is not None and result.signalled:
            await guard.thread.post(guard_text.resumed_text(len(result.signalled), why=why))

    def restart(self, guard: Guard, jobs: int, *, user: str) -> None:
        """Stop the build and start it again at ``jobs``, in its thread. Runs apart from the guard: the stop
        ends the guard's own run."""
        if guard.thread is None:
            return
        plan = Plan(host=guard.run.host, build=guard.run.build, steps=(Step("rebuild", jobs=jobs),))
        note = guard_text.restart_note(jobs, user=user if user != AUTO_USER else None)
        self._tasks.start(self._restart(guard.thread, plan, Requester(user=user), note),
                          name=f"oom-restart-{guard.run.id}")

