"""Results as text people read (Slack's mrkdwn) and Messages with choices. Pure: dataclasses in, text out."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from bot.builds.diagnose import Diagnosis
from bot.builds.progress import BuildStart, CacheStats, Progress
from bot.config import Config
from bot.hosts.meminfo import free_table, human
from bot.hosts.models import GpuReport, Proc, Snapshot
from bot.language.commands import describe_step as describe
from bot.language.plan import Plan, Question, Step
from bot.memory.policy import Levels
from bot.memory.watch import BuildUsage, OomKill
from bot.reports import HostResult
from bot.store import BuildRun
from bot.text.message import Choice, ChoiceKind, Message
from bot.util.redact import redact

StepState = Literal["waiting", "running", "done", "failed", "skipped"]
STATE_ICON: dict[StepState, str] = {"waiting": ":white_small_square:", "running": ":hourglass_flowing_sand:",
                                    "done": ":white_check_mark:", "failed": ":x:", "skipped": ":heavy_minus_sign:"}
AUTO_USER = "rigops"  # who is named for what rigops did by itself (bot.core.guard acts as this user)
TEXT_LIMIT = 2900  # a section's text may hold 3000 characters
MAX_CHOICES = 20  # buttons under one question (Slack allows 25 in an actions block)


@dataclass(frozen=True)
class StepLine:
    step: Step
    state: StepState
    summary: str = ""


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def describe_step(step: Step, plan: Plan) -> str:
    return describe(step, plan.build)


def plan_title(plan: Plan) -> str:
    where = f"*{plan.host}*" if plan.host else "*all hosts*"
    return f"{where} · `{plan.build}`" if plan.build else where


def plan_text(plan: Plan, lines: Sequence[StepLine], *, note: str = "") -> str:
    rows = [plan_title(plan)]
    if plan.guess:
        rows.append(f":mag: a guess: {plan.guess}" + (" — Cancel if it is wrong" if plan.destructive else ""))
    rows += [f"{STATE_ICON[ln.state]} {describe_step(ln.step, plan)}" + (f" — {ln.summary}" if ln.summary else "")
             for ln in lines]
    rows += list(f":warning: {w}" for w in plan.warnings)
    if note:
        rows.append(note)
    return clip("\n".join(rows))


def steps_summary(plan: Plan) -> str:
    """"stop the build, show memory, start the build at -j20": what a plan would do, in one line."""
    return ", ".join(describe_step(s, plan) for s in plan.steps)


def question_message(text: str, question: Question, question_id: int, *, host: str | None) -> Message:
    """Which host (or build): a choice per candidate."""
    if len(question.candidates) > MAX_CHOICES:  # too many to press: the answer is typed
        return Message(f"{text}\nOne of: {', '.join(question.candidates)}")
    label = (lambda c: f"{host} · {c}") if question.kind == "build" and host else (lambda c: c)
    return Message(text, choices=tuple(choice(label(c), "pick", f"{question_id}:{c}") for c in question.candidates),
                   group=f"ask-{question_id}")


def plan_message(plan: Plan, lines: Sequence[StepLine], *, note: str = "", plan_id: int | None = None) -> Message:
    """The plan and its steps' states; with ``plan_id``, the Run and Cancel choices under it."""
    text = plan_text(plan, lines, note=note)
    if plan_id is None:
        return Message(text)
    return Message(text, choices=(choice("Run", "run", plan_id, style="primary"), choice("Cancel", "cancel", plan_id)),
                   group=f"plan-{plan_id}")


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 20] + "\n… (cut)"


def counted(counts: Mapping[str, int]) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} × {name}" for name, n in items)


def tool_counts(procs: Sequence[Proc]) -> str:
    """"2 × cc1plus, 1 × ninja": processes by name, the most first."""
    return counted(Counter(p.name for p in procs))


def proc_line(p: Proc) -> str:
    return f"`{human(p.rss):>6}`  {p.name} (pid {p.pid}, {p.user})"


def stopped_by(user: str) -> str:
    """Who asked rigops for a stop: a person, or rigops itself (a host's memory policy)."""
    return "rigops itself (this host's memory policy)" if user == AUTO_USER else f"<@{user}>"


def snapshot_text(snap: Snapshot) -> str:
    mem = snap.memory
    rows = [f"*Memory on {snap.host}* — {human(mem.available)} available of {human(mem.total)} "
            f"({mem.available_fraction:.0%}); load {snap.loadavg[0]:.1f} on {snap.cores} cores",
            f"```\n{free_table(mem)}\n```"]
    if snap.top:
        rows.append("Top memory users:\n" + "\n".join(proc_line(p) for p in snap.top))
    if snap.tools:
        total = sum(p.rss for p in snap.tools)
        rows.append(f"Build tools running: {tool_counts(snap.tools)} using {human(total)}")
    for b in snap.builds:
        rows.append(f":straight_ruler: `{b.build}` (run {b.run_id}) runs inside a {human(b.limit)} memory limit: "
                    f"{human(b.used)} used ({b.used / b.limit:.0%}), peak {human(b.peak)} — that limit, not the "
                    f"host's {human(mem.total)}, is what it can run out of")
    if snap.limit is not None and snap.limit < mem.total and not snap.builds:
        rows.append(f":straight_ruler: builds started here run inside a {human(snap.limit)} memory limit")
    return clip("\n".join(rows))


def snapshot_summary(snap: Snapshot) -> str:
    """"40 GiB available of 449 GiB": a memory look's line in the plan's status message."""
    return f"{human(snap.memory.available)} available of {human(snap.memory.total)}"


def gpu_text(report: GpuReport) -> str:
    if not report.available:
        return f"*GPUs on {report.host}*: none seen ({report.reason})"
    rows = [f"*GPUs on {report.host}*"]
    for g in report.gpus:
        rows.append(f"`{g.index}` {g.name} — {g.utilization}% util, {g.memory_used}/{g.memory_total} MiB, "
                    f"{g.temperature}°C, {g.power} W")
        rows += [f"    {p}" for p in g.processes]
    if not report.gpus:
        rows.append("nvidia-smi listed no GPUs.")
    return clip("\n".join(rows))


def hosts_text(config: Config) -> str:
    rows = ["*Hosts*"]
    for host in config.hosts.values():
        where = "this machine" if host.is_local else f"{host.user + '@' if host.user else ''}{host.address}"
        builds = ", ".join(f"`{b}`" for b in host.builds) or "no builds"
        rows.append(f"• *{host.name}* ({where}) — {builds}")
    return "\n".join(rows)


RESULT_ICON = {"succeeded": ":white_check_mark:", "failed": ":x:", "stopped": ":octagonal_sign:",
               "lost": ":grey_question:", "running": ":hourglass_flowing_sand:"}


def progress_parts(progress: Progress, *, eta: float | None) -> list[str]:
    """"[123/456]", "27%", "ETA 5 min", the phase: what is known of a build's progress."""
    parts = []
    if progress.done is not None and progress.total:
        parts.append(f"[{progress.done}/{progress.total}]")
    if progress.percent is not None:
        parts.append(f"{progress.percent:.0f}%")
    if eta is not None:
        parts.append(f"ETA {duration(eta)}")
    if progress.phase:
        parts.append(progress.phase)
    return parts


UNREACHABLE_ICON = ":electric_plug:"


def clock(moment: float) -> str:
    """A time of day as people in several time zones read it: "12:03:10 UTC"."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(moment))


def unreachable(since: float, *, now: float | None = None) -> str:
    """"unreachable since 12:03:10 UTC (40 s)": a host rigops has lost contact with."""
    return f"unreachable since {clock(since)} ({duration(max((now or time.time()) - since, 0.0))})"


RESTART_FIX = {
    "scikit-build-core": "keep scikit-build-core's build directory (rigops keeps one by itself unless the build "
                         "says `resume = \"never\"` or names its own): `pip install . -C "
                         "build-dir=build/{wheel_tag}` (uv: `uv pip install . -C build-dir=build/{wheel_tag}`), or "
                         "`build-dir = \"build/{wheel_tag}\"` under `[tool.scikit-build]` in pyproject.toml",
    "setuptools": "keep setuptools' `build/`: `python setup.py build_ext` keeps it, and so does "
                  "`pip install --no-build-isolation .` run in the source tree (not a copy in a temporary directory)",
    "cmake": "configure into a build directory that stays, `cmake -B build`, and build with `cmake --build build`",
}


def _counter(done: int | None, total: int | None, percent: float | None) -> str:
    return f"[{done}/{total}]" if done is not None and total else f"{percent or 0:.0f}%"


def cache_line(tool: str, stats: CacheStats) -> str:
    """"ccache: 37 of 40 compiles came from the cache (92%).": what the build's compiler cache did this run."""
    return (f":package: {tool}: {stats.hits} of {stats.compiles} compile{'s' if stats.compiles != 1 else ''} came "
            f"from the cache ({100 * stats.hits / stats.compiles:.0f}%).")


def clean_note(why: str) -> str:
    """A run that started clean because rigops removed the build directory it keeps for the build: why (the agent's
    words: "a clean rebuild was asked for; the kept build directory build/rigops-x was removed")."""
    return f":broom: started clean: {why}."


def resume_note(start: BuildStart, built: int) -> str:
    """A restarted build that kept the last run's work: "resumed: 412 of 690 steps were already built"."""
    total = (start.total or 0) + built
    return f":fast_forward: resumed: {built} of {total} steps were already built, {start.total} to go."


def restart_note(start: BuildStart, before: Progress) -> str:
    """Why a restarted build began again from nothing, and how to make the next restart resume: the card's
    lines for a build whose last run, in the same thread, had reached ``before``."""
    fix = RESTART_FIX.get(start.system or "", "build in a directory that is kept between runs")
    return (f":repeat: started again from {_counter(start.done, start.total, start.percent)}; the last run reached "
            f"{_counter(before.done, before.total, before.percent)} — its build directory was not kept.\n"
            f"*To resume next time:* {fix}; the next run then builds only what is left.")


def build_card(run: BuildRun, progress: Progress, *, eta: float | None, peak_used: int, peak_tools: int,
               total_memory: int, final: str | None, memory_note: str | None = None,
               others: Sequence[BuildUsage] = (), unreachable_since: float | None = None,
               last_seen: float | None = None, restarted: str | None = None, limited: bool = False) -> str:
    """The live status card of a build, edited in place while it runs; ``others``: the other builds running on
    the host, whose tools share its memory; ``unreachable_since``: rigops has lost contact with the host since
    then (a time.time()), having last seen the build running at ``last_seen``; ``restarted``: its restart_note;
    ``limited``: ``total_memory`` is the build's memory limit (its cgroup's), not the host's memory."""
    state = final or "running"
    elapsed = (run.ended_at if final and run.ended_at else time.time()) - run.started_at
    if unreachable_since is not None and not final:
        seen = (last_seen or unreachable_since) - run.started_at
        rows = [f"{UNREACHABLE_ICON} `{run.build}` on *{run.host}* — {unreachable(unreachable_since)} · "
                f"last seen running after {duration(max(seen, 0.0))} · -j{run.jobs} · run {run.id}"]
        eta = None
    else:
        rows = [f"{RESULT_ICON.get(state, '')} `{run.build}` on *{run.host}* — {state} · {duration(elapsed)} · "
                f"-j{run.jobs} · run {run.id}"]
    if final == "stopped" and run.stopped_by:
        rows.append(f"stopped by {stopped_by(run.stopped_by)}")
    if final == "stopped" and progress.phase == "failed":  # "ninja: build stopped" reads as failed; it was not
        progress = replace(progress, phase=None)
    if parts := progress_parts(progress, eta=None if final else eta):
        rows.append(" · ".join(parts))
    if restarted:
        rows.append(restarted)
    if total_memory:
        whose = "this build's tools" if others else "build tools"
        of = f"its {human(total_memory)} memory limit" if limited else human(total_memory)
        rows.append(f"peak memory used {human(peak_used)} of {of}"  # in a limit, all of it is the build's
                    + (f" ({whose} {human(peak_tools)})" if peak_tools and not limited else ""))
    if others and not final:
        rows.append("other builds here now: " + ", ".join(
            f"`{o.build}` {human(o.rss)} ({o.compilers} compiler{'s' if o.compilers != 1 else ''})" for o in others))
    if memory_note and not final:
        rows.append(f":warning: {memory_note}")
    if progress.compiling and not final:
        rows.append(f"compiling `{progress.compiling}`")
    elif progress.last_line and not final:
        rows.append(f"`{progress.last_line[:150]}`")
    return redact("\n".join(rows))


def build_result(run: BuildRun, diagnosis: Diagnosis | None, *, interrupted: str | None = None,
                 killed: Sequence[OomKill] = (), retry_at: int | None = None, cache: str = "") -> Message:
    """The message that says how a build ended, with the first real error, its fix and what to do next; a
    build that was stopped says by whom, or (``interrupted``) what shows it was stopped, never an error;
    ``killed``: the build's processes the kernel's OOM killer killed, as the guard saw them (a log says only
    "Killed": this says which process it was); ``retry_at``: the -j a [Retry at -jN] offers
    (bot.memory.policy.retry_offer; None: no such button)."""
    who = f" <@{run.started_by}>" if run.started_by else ""
    took = duration((run.ended_at or time.time()) - run.started_at)
    if run.state == "succeeded":
        return Message(f":white_check_mark: `{run.build}` on *{run.host}* succeeded in {took} (-j{run.jobs}).{who}"
                       + (f"\n{cache}" if cache else ""))
    if run.state == "stopped" and run.stopped_by:
        return Message(f":octagonal_sign: `{run.build}` on *{run.host}* was stopped by {stopped_by(run.stopped_by)} "
                       f"after {took} (-j{run.jobs}).")
    if run.state == "stopped":
        evidence = f"it ended on {interrupted}" if interrupted and interrupted.startswith("SIG") else \
            f"its log says `{clip(interrupted, 300)}`" if interrupted else "it ended on a signal"
        text = (f":octagonal_sign: `{run.build}` on *{run.host}* was stopped after {took} (-j{run.jobs}), not by "
                f"rigops: {evidence}. Someone or something else stopped it; it did not fail.{who}")
        return Message(clip(text), choices=(choice("Retry", "retry", run.id, style="primary"),
                                             choice("Show log", "show_log", run.id)), group=f"run-{run.id}")
    if run.state == "lost":
        text = (f":grey_question: `{run.build}` on *{run.host}* is lost: it is gone and left no exit status "
                f"(the host rebooted, or the build was killed with its supervisor).{who}")
    else:
        text = f":x: `{run.build}` on *{run.host}* failed after {took} (exit {run.exit_status}, -j{run.jobs}).{who}"
        text += f"\n{cache}" if cache else ""
    if diagnosis is not None and diagnosis.line:
        line = clip(diagnosis.line, 1500)
        text += f"\n*First error* (`{diagnosis.category}`):\n```{line}```\n*Fix:* {diagnosis.fix}"
    elif diagnosis is not None:
        text += f"\nNo error line found. {diagnosis.fix}"
    if killed and run.state == "failed":
        text += f"\n*The kernel's OOM killer killed* {oom_victims(killed)} of this build."
    choices = [choice("Retry", "retry", run.id, style="primary")]
    if retry_at is not None:
        choices.append(choice(f"Retry at -j{retry_at}", "retry_half", f"{run.id}:{retry_at}"))
    choices.append(choice("Show log", "show_log", run.id))
    return Message(clip(text), choices=tuple(choices), group=f"run-{run.id}")


def oom_victims(kills: Sequence[OomKill]) -> str:
    """"`cudafe++` (pid 25774)", "`cc1plus` ×3, `ptxas`": the processes OOM kills hit, named where known."""
    names = Counter(k.victim_name or "a process" for k in kills)
    parts = [f"`{n}`" + (f" ×{c}" if c > 1 else "") for n, c in names.most_common(5)]
    if len(kills) == 1 and kills[0].victim_pid:
        parts[0] += f" (pid {kills[0].victim_pid})"
    return ", ".join(parts)


def choice(label: str, kind: ChoiceKind, value: str | int, *, style: Literal["primary", "danger"] | None = None,
           ) -> Choice:
    return Choice(label=label, kind=kind, value=str(value), style=style)


FLEET_COLUMNS = f"{'host':<16}{'total':>8}{'used':>8}{'avail':>8}{'swap':>8}{'load':>7}  build tools"
NO_ANSWER, FAILING, LOW_MEMORY = "no answer", "build failing", "memory low"  # what puts a host's row first


class Rows(Protocol):
    """How the answers of a step asked of many hosts read, a row per host: its action's spec
    (bot.actions.registry.ActionSpec) — the action's name, a host's row, what puts that row first, the columns."""

    @property
    def name(self) -> str: ...
    @property
    def row(self) -> Callable[[Any], str]: ...
    @property
    def troubles(self) -> Callable[[Any], tuple[str, ...]]: ...
    @property
    def columns(self) -> str | None: ...


def fleet_text(where: str, rows: Rows, results: Sequence[HostResult]) -> str:
    """A step run across many hosts as one message: a row per host, failures included. (A fleet whose rows do not
    fit in one message is laid out over its thread: bot.text.digest_layout.fleet_posts.)"""
    return fleet_head(where, rows, results) + "\n" + fleet_table(rows, [fleet_row(r, rows) for r in results])


def fleet_head(where: str, rows: Rows, results: Sequence[HostResult]) -> str:
    """"*status on all* — 31 of 32 hosts answered"."""
    ok = sum(1 for r in results if r.error is None)
    return f"*{rows.name} on {where}* — {ok} of {len(results)} hosts answered"


def fleet_summary(where: str, rows: Rows, results: Sequence[HostResult]) -> str:
    """The head of a fleet's answer whose rows come problems first: how many answered, and what needs a look."""
    counts = Counter(t for r in results for t in fleet_troubles(r, rows))
    problems = [f"{counts[NO_ANSWER]} did not answer"] if counts[NO_ANSWER] else []
    problems += [f"{counts[FAILING]} with a failing build"] if counts[FAILING] else []
    problems += [f"{counts[LOW_MEMORY]} low on memory"] if counts[LOW_MEMORY] else []
    problems += [f"{n} {trouble}" for trouble, n in sorted(counts.items())  # an action's own ("2 low on disk")
                 if trouble not in (NO_ANSWER, FAILING, LOW_MEMORY)]
    look = f"; needs a look: {', '.join(problems)} (their rows come first)" if problems else "; nothing needs a look"
    return fleet_head(where, rows, results) + look


def fleet_troubles(r: HostResult, rows: Rows) -> tuple[str, ...]:
    """What puts a host's row first: NO_ANSWER, or what its action finds in its answer (FAILING: its
    build's latest run failed; LOW_MEMORY: memory low, :func:`memory_troubles`); () when nothing does."""
    if r.error is not None or r.result is None:
        return (NO_ANSWER,)
    return rows.troubles(r.result)


def memory_troubles(snap: Snapshot, levels: Levels) -> tuple[str, ...]:
    """(LOW_MEMORY,) when the host's memory is low by its levels (bot.memory.policy), as in the digest."""
    return (LOW_MEMORY,) if levels.of(snap.memory) == "low" else ()


def fleet_columns(rows: Rows) -> tuple[str, ...]:
    """The line naming the columns of a fleet's rows, where they have columns."""
    return (rows.columns,) if rows.columns else ()


def fleet_fences(rows: Rows) -> tuple[str, str]:
    """What goes before and after a block of a fleet's rows: a code block's fences, and the columns' names."""
    return "```\n" + "".join(f"{line}\n" for line in fleet_columns(rows)), "\n```"


def fleet_table(rows: Rows, lines: Sequence[str]) -> str:
    start, end = fleet_fences(rows)
    return start + "\n".join(lines) + end


def fleet_row(r: HostResult, rows: Rows) -> str:
    """One host's line of a fleet's answer: its name, then what its action makes of its answer."""
    if r.error is not None or r.result is None:
        return f"{r.host:<16}unavailable: {r.error}"
    return f"{r.host:<16}" + rows.row(r.result)


def snapshot_row(snap: Snapshot) -> str:
    """A host's memory under FLEET_COLUMNS."""
    m = snap.memory
    tools = f"{len(snap.tools)} using {human(sum(p.rss for p in snap.tools))}" if snap.tools else "-"
    return (f"{human(m.total):>8}{human(m.used):>8}{human(m.available):>8}{human(m.swap_used):>8}"
            f"{snap.loadavg[0]:>7.1f}  {tools}")


def gpu_row(report: GpuReport) -> str:
    if not report.available:
        return f"no GPUs ({report.reason})"
    gpus = ", ".join(f"{g.index}:{g.utilization}% {g.memory_used}/{g.memory_total}MiB" for g in report.gpus)
    return gpus or "no GPUs listed"
