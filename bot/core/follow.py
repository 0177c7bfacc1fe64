"""Following a build in its thread until it ends: a live status card, then the result with a diagnosis.

One task per run. It polls the host's agent (status, the new log bytes, memory) every few seconds, edits
one card at most every few seconds (backing off when Slack rate-limits), and on the end posts success or
the first real error with its known fix and buttons. Each run is followed by the rigops that owns it
(``bot.store.replicas``): the one that started it, or the one that adopted it when that one stopped (its card
carries on; its end is told once).
A host that stops answering shows on the card as unreachable (since when), and one line tells its return and
what the build did meanwhile; a retry that began again from nothing, where the run before it in the thread had
got far, says so on its card with the fix for its build system.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.actions.rebuild import cache_log
from bot.builds import logs
from bot.builds.diagnose import Diagnosis, diagnose
from bot.builds.progress import Progress, ProgressTracker, cache_stats, from_scratch, resumed
from bot.builds.stops import interruption
from bot.core.guard import Guards
from bot.core.services import Services
from bot.core.talk import Conversation, Reply
from bot.memory.policy import retry_offer
from bot.store import BuildRun, RunState
from bot.text import messages, render
from bot.util.aio import cancel, log_end
from bot.util.errors import ActionFailed, HostError, StateError

log = logging.getLogger(__name__)
POLL_INTERVAL = 2.0
CARD_INTERVAL = 5.0
MAX_CARD_INTERVAL = 60.0
READ_CHUNK = 4 << 20
LOST_AFTER_TICKS = 5  # a run gone without an exit status for this long is lost
LOST_AFTER_MIN = 1.0
LOST_CONTACT_FAILURES = 3  # polls in a row the host does not answer before the thread and the card say so
LOG_HEAD = 16 << 20  # what is kept for the diagnosis: the start and the end of a long log
LOG_TAIL = 16 << 20
ADOPT_TRIES = 3
ADOPT_WAIT = 1.0
REACHED_KEPT = 1000  # runs whose furthest progress is remembered, for a restart in their thread to compare with
REPLICA_TIMEOUT = 10.0  # seconds a rigops may miss its heartbeat before its runs are adopted by another
PREVIOUS_TAIL_LINES = 2000  # lines of an earlier run's log read for where it got to (after a restart of rigops)


@dataclass
class LogKeeper:
    """The text of a log read so far, bounded: its first LOG_HEAD and last LOG_TAIL characters."""

    head: list[str] = field(default_factory=list)
    head_size: int = 0
    tail: list[str] = field(default_factory=list)
    tail_size: int = 0

    def add(self, text: str) -> None:
        if self.head_size < LOG_HEAD:
            take = text[: LOG_HEAD - self.head_size]
            self.head.append(take)
            self.head_size += len(take)
            text = text[len(take):]
        if text:
            self.tail.append(text)
            self.tail_size += len(text)
            while self.tail_size - len(self.tail[0]) >= LOG_TAIL:
                self.tail_size -= len(self.tail.pop(0))

    def text(self) -> str:
        return "".join(self.head) + "".join(self.tail)

    def end(self, size: int = 8192) -> str:
        """The last ``size`` characters read (where a stopped build's tools say so)."""
        parts: list[str] = []
        have = 0
        for chunk in reversed([*self.head, *self.tail]):
            parts.append(chunk)
            have += len(chunk)
            if have >= size:
                break
        return "".join(reversed(parts))[-size:]


# The line a build's log opens with when the agent removed the build directory kept for it before the start.
CLEAN_START_RE = re.compile(r"rigops: started clean: ([^\n]{1,300})\n")
STATE_BACKOFF = 3  # while the state does not answer, a followed build is looked at every 2**3 polls at most


@dataclass
class Following:
    run: BuildRun
    thread: Conversation | None
    tracker: ProgressTracker = field(default_factory=ProgressTracker)
    keeper: LogKeeper = field(default_factory=LogKeeper)
    offset: int = 0
    card_id: str | None = None
    card_due: float = 0.0
    card_interval: float = CARD_INTERVAL
    gone_since: float | None = None
    seen_at: float = 0.0  # when the host last answered (time.time())
    lost_at: float | None = None  # when it stopped answering, once that has been told in the thread
    start_checked: bool = False  # whether where the build started was compared with the run before it
    restarted: str | None = None  # the card's note: it started from scratch where the last run got far
    told: bool = False  # the end was told in the thread (it is then recorded as reported, once the state answers)


class Follower:
    """Follows builds in their threads; its Guards watch their memory."""

    def __init__(self, services: Services, reply: Reply, *, guards: Guards, poll: float = POLL_INTERVAL,
                 card_interval: float = CARD_INTERVAL, replica_timeout: float = REPLICA_TIMEOUT) -> None:
        self.services = services
        self.replica_timeout = replica_timeout  # seconds without a heartbeat before another rigops adopts a run
        self.reply = reply
        self.guards = guards
        self.poll = poll
        self.card_interval = card_interval
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._progress: dict[int, tuple[Progress, float | None]] = {}
        self._reached: dict[int, Progress] = {}  # how far each run that ended got, by run id

    @property
    def progress(self) -> Mapping[int, tuple[Progress, float | None]]:
        """(progress, ETA in seconds) of the runs being followed, by run id (the digest shows them)."""
        return self._progress

    @property
    def following(self) -> list[int]:
        """The ids of the runs this rigops follows now."""
        return [run_id for run_id, task in self._tasks.items() if not task.done()]

    def follow(self, run: BuildRun) -> None:
        """Start following a run this rigops owns (once; a second call for the same run does nothing)."""
        if run.id in self._tasks and not self._tasks[run.id].done():
            return
        if not self.services.store.replicas.claim(run.id, timeout=self.replica_timeout):
            log.info("run %d is followed by another rigops", run.id)
            return
        with logs.ids(run=run.id, channel=run.channel, thread=run.thread_id):  # the task's logs carry them
            task = asyncio.create_task(self._follow(run), name=f"follow-run-{run.id}")
        task.add_done_callback(log_end)
        self._tasks[run.id] = task

    async def adopt(self) -> None:
        """Follow the runs nobody alive follows (their rigops died or stopped, this one too before a restart),
        and the ones this rigops still owns; let go of the ones another rigops took over. Raises StateError."""
        replicas = self.services.store.replicas
        following = set(self.following)
        for run_id in sorted((replicas.owned() | set(replicas.orphans(timeout=self.replica_timeout))) - following):
            run = self.services.store.run(run_id)
            if run is None or run.host not in self.services.config.hosts:
                continue
            if run.owner not in (None, replicas.me):
                log.info("adopting run %d of %s on %s from %s, which stopped answering", run.id, run.build, run.host,
                         run.owner)
                await self._took_over(run)
            self.follow(run)
        for run_id in replicas.taken(following):
            log.warning("run %d is followed by another rigops now; this one lets it go", run_id)
            await cancel(self._tasks.pop(run_id))
            await self.guards.let_go(run_id)
            self._progress.pop(run_id, None)

    async def _took_over(self, run: BuildRun) -> None:
        """Another rigops followed this run and stopped answering: the audit says who follows it now, and so
        does a line in the build's thread (the card carries on as before)."""
        me = self.services.store.replicas.me
        self.services.store.audit("takeover", user=None, channel=run.channel, thread_id=run.thread_id,
                                  host=run.host, build=run.build, detail={"run": run.id, "from": run.owner, "by": me})
        if run.channel is not None:
            await Conversation(self.reply, run.channel, run.thread_id).post(
                messages.taken_over(me, previous=str(run.owner)))

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            await cancel(task)

    async def _follow(self, run: BuildRun) -> None:
        thread = Conversation(self.reply, run.channel, run.thread_id) if run.channel else None
        state = Following(run=run, thread=thread, card_interval=self.card_interval, card_id=run.card_id)
        failures = 0
        while True:
            try:
                ended = await self._tick(state)
                failures = 0
            except HostError as exc:
                failures += 1
                log.warning("following run %d on %s: %s", run.id, run.host, exc)
                if failures == LOST_CONTACT_FAILURES:
                    await self._lost_contact(state, exc)
                if state.lost_at is not None:
                    await self._card(state, final=None)  # the card says since when, and for how long
                ended = False
            except StateError as exc:  # the build goes on, and so does its card; what is recorded is tried again
                failures = min(failures + 1, STATE_BACKOFF)
                log.warning("following run %d: the state does not answer (%s); trying again", run.id, exc)
                ended = False
            except Exception:
                log.exception("following run %d failed", run.id)
                return
            if ended:
                return
            await asyncio.sleep(self.poll * min(2 ** failures, 30))

    async def _tick(self, state: Following) -> bool:
        """One look at the run; True when it has ended and was reported."""
        if state.run.state == "starting" and not await self._adopt(state):
            return True
        run = state.run
        host = self.services.hosts[run.host]
        self.guards.start(run, state.thread)
        (status,), boot_id = await host.run_status([run.ref])
        if state.lost_at is not None:
            await self._contact_back(state, still_running=status.alive and not status.finished
                                     and not (run.boot_id and boot_id and boot_id != run.boot_id))
        state.seen_at = time.time()
        await self._read_log(state)
        if not state.start_checked:
            await self._check_start(state)
        if run.boot_id and boot_id and boot_id != run.boot_id:
            await self._finish(state, "lost", None)
            return True
        if status.finished:
            await self._read_log(state)
            code = status.exit_status if status.exit_status is not None else 128 + (status.signal or 0)
            interrupted = None if code == 0 else interruption(
                exit_status=status.exit_status, signal_number=status.signal, log_tail=state.keeper.end())
            result: RunState = "succeeded" if code == 0 else "stopped" if interrupted else "failed"
            await self._finish(state, result, code, ended=status.ended, interrupted=interrupted)
            return True
        if not status.alive:
            # the supervisor writes the exit status just after the build ends: give it a moment
            state.gone_since = state.gone_since or time.monotonic()
            if time.monotonic() - state.gone_since > max(LOST_AFTER_TICKS * self.poll, LOST_AFTER_MIN):
                await self._finish(state, "lost", None)
                return True
            return False
        await self._card(state, final=None)
        return False

    async def _check_start(self, state: Following) -> None:
        """Once the build's first counter is known: did it start over from nothing, where the last run of the
        same build in the same thread had got far? Then the card says so, and how to resume next time."""
        start = state.tracker.start()
        if start is None:
            return
        before = await self._reached_before(state.run)
        state.start_checked = True
        if before is None:
            return
        if from_scratch(start, before):
            state.restarted = render.restart_note(start, before)
            state.card_due = 0.0
        elif (built := resumed(start, before)) is not None:
            state.restarted = render.resume_note(start, built)
            state.card_due = 0.0

    async def _reached_before(self, run: BuildRun) -> Progress | None:
        """How far the run before ``run`` (same host, build and thread) got; None without one."""
        if run.thread_id is None:
            return None
        previous = next((r for r in self.services.store.runs(host=run.host, build=run.build, limit=20)
                         if r.id < run.id and r.channel == run.channel and r.thread_id == run.thread_id), None)
        if previous is None:
            return None
        if previous.id in self._reached:
            return self._reached[previous.id]
        try:  # it ended before rigops last started: its log says where it got to
            tail = await self.services.hosts[run.host].tail(previous.log, lines=PREVIOUS_TAIL_LINES)
        except ActionFailed:
            return None
        tracker = ProgressTracker()
        tracker.feed("\n".join(tail.lines) + "\n", now=time.time())
        return tracker.progress()

    async def _cache_line(self, run: BuildRun) -> str:
        """What the build's ccache did this run, from the stats log it wrote beside the run's log ("" when the
        build has no ccache, or the log cannot be read: the result does not wait on it)."""
        build = self.services.config.hosts[run.host].builds.get(run.build)
        if build is None or build.cache != "ccache":
            return ""
        try:
            chunk = await self.services.hosts[run.host].read(cache_log(build, run.log, run.id), offset=0,
                                                             max_bytes=8 << 20)
        except HostError as exc:
            log.info("no ccache stats for run %d: %s", run.id, exc)
            return ""
        stats = cache_stats(chunk.data)
        return render.cache_line("ccache", stats) if stats is not None else ""

    async def _lost_contact(self, state: Following, exc: HostError) -> None:
        """Tell the thread that the host does not answer; the card shows it from now on."""
        state.lost_at = state.seen_at or time.time()
        state.card_due = 0.0
        if state.thread is not None:
            await state.thread.post(messages.lost_contact(state.run.host, state.run.build, exc.reason))

    async def _contact_back(self, state: Following, *, still_running: bool) -> None:
        """One line: the host answers again, and what its build did meanwhile (a build that ended is then
        reported as usual)."""
        lost_at, state.lost_at = state.lost_at or time.time(), None
        state.card_due = 0.0
        if state.thread is not None:
            away = render.duration(max(time.time() - lost_at, 0.0))
            await state.thread.post(messages.contact_back(state.run.host, state.run.build, away=away,
                                                          still_running=still_running))

    async def _adopt(self, state: Following) -> bool:
        """A run the bot recorded as starting and then died: find the build its spawn started, from the
        supervisor's start record, and follow it; or record that it never started. True when adopted."""
        run = state.run
        build = self.services.config.hosts[run.host].builds.get(run.build)
        host = self.services.hosts[run.host]
        for _ in range(ADOPT_TRIES):
            found = await host.started(workdir=build.workdir if build else "/", log_path=run.log,
                                       exit_file=run.exit_file)
            if found is not None:
                state.run = self.services.store.started_run(run.id, pid=found.pid, start=found.start,
                                                            supervisor_pid=found.supervisor_pid, log=run.log,
                                                            exit_file=run.exit_file)
                if state.thread is not None:
                    await state.thread.post(messages.adopted(run.build, found.pid))
                return True
            await asyncio.sleep(ADOPT_WAIT)  # a supervisor still starting writes its record any moment
        self.services.store.finish_run(run.id, state="lost", exit_status=None)
        if state.thread is not None:
            await state.thread.post(messages.never_started(run.build, run.host))
        self.services.store.replicas.reported(run.id)
        return False

    async def _read_log(self, state: Following) -> None:
        host = self.services.hosts[state.run.host]
        while True:
            opening = state.offset == 0
            chunk = await host.read(state.run.log, offset=state.offset, max_bytes=READ_CHUNK)
            if chunk.offset < state.offset:  # the log was truncated or replaced
                state.tracker, state.keeper = ProgressTracker(), LogKeeper()
            if opening and (m := CLEAN_START_RE.match(chunk.data)):  # the agent removed the kept work first
                state.restarted, state.start_checked, state.card_due = render.clean_note(m[1]), True, 0.0
            state.offset = chunk.offset
            if chunk.data:
                state.tracker.feed(chunk.data, now=time.time())
                state.keeper.add(chunk.data)
            if len(chunk.data) < READ_CHUNK // 2:
                return

    async def _card(self, state: Following, *, final: str | None) -> None:
        progress, eta = state.tracker.progress(), state.tracker.eta(time.time())
        if final is None:
            self._progress[state.run.id] = (progress, eta)  # for the digest
        else:
            self._progress.pop(state.run.id, None)
        if state.thread is None:
            return
        now = time.monotonic()
        if final is None and now < state.card_due:
            return
        guard = self.guards.get(state.run.id)  # its samples hold the memory the card shows
        run = self.services.store.run(state.run.id) if final else state.run  # a stop says who asked for it
        series = guard.series if guard else None  # in the build's memory limit once a sample showed one
        text = render.build_card(run or state.run, progress, eta=eta, peak_used=series.peak_used if series else 0,
                                 peak_tools=guard.peak_tools if guard else 0,
                                 total_memory=series.total if series else 0, final=final,
                                 limited=series is not None and series.limited,
                                 memory_note=self.guards.note(state.run.id), others=self.guards.others(state.run.id),
                                 unreachable_since=state.lost_at, last_seen=state.seen_at or None,
                                 restarted=state.restarted)
        ok = True
        if state.card_id is None:
            state.card_id = await state.thread.post(text)
            ok = state.card_id is not None
            if state.card_id is not None:  # whoever follows the run next edits this card
                self.services.store.replicas.set_card(state.run.id, state.card_id)
        else:
            ok = await state.thread.update(state.card_id, text)
        # Slack rate-limits chat.update; when an edit fails even after retries, edit less often
        state.card_interval = self.card_interval if ok else min(state.card_interval * 2, MAX_CARD_INTERVAL)
        state.card_due = now + state.card_interval

    async def _finish(self, state: Following, result: RunState, code: int | None, *,
                      ended: float | None = None, interrupted: str | None = None) -> None:
        """Record and tell how the run ended. A run someone asked rigops to stop is already recorded as
        stopped, by whom; one stopped from outside rigops (a signal) is told as stopped, never diagnosed.
        Raises StateError when the state does not answer: tried again on the next tick, the end told once."""
        run = state.run
        store = self.services.store
        if not state.told:
            await self._tell_end(state, result, code, ended=ended, interrupted=interrupted)
        store.replicas.reported(run.id)  # from here on no other rigops tells this end again
        final = store.run(run.id) or run
        await self.guards.finish(final, post_chart=final.state != "stopped" and state.thread is not None)

    async def _tell_end(self, state: Following, result: RunState, code: int | None, *, ended: float | None,
                        interrupted: str | None) -> None:
        run = state.run
        store = self.services.store
        current = store.run(run.id)
        if current is None or current.state in ("starting", "running"):
            store.finish_run(run.id, state=result, exit_status=code, ended_at=ended)
        elif current.state == "failed" and result == "stopped":  # a status that saw it end first had no log
            store.restate_run(run.id, state="stopped")
        final = store.run(run.id) or run
        self._reached[run.id] = state.tracker.progress()
        while len(self._reached) > REACHED_KEPT:
            del self._reached[next(iter(self._reached))]
        await self._card(state, final=final.state)
        killed = await self.guards.settle(final)  # the OOM kills the last samples saw are told before the result
        if state.thread is not None:
            diagnosis: Diagnosis | None = None
            if final.state == "failed":
                diagnosis = await asyncio.to_thread(diagnose, state.keeper.text())
            retry_at = retry_offer(final.jobs, category=diagnosis.category if diagnosis else None,
                                   fits=self.guards.suggested(run.id))
            await state.thread.post(render.build_result(final, diagnosis, interrupted=interrupted, killed=killed,
                                                        retry_at=retry_at, cache=await self._cache_line(run)))
        state.told = True
