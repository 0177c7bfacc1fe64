"""The end of the latest build log rigops wrote on a host."""

from __future__ import annotations

from dataclasses import dataclass

from bot.actions import ActionContext, newest_run
from bot.actions.registry import ActionSpec, File, Reading
from bot.hosts.models import Tail
from bot.language.commands import Command
from bot.language.plan import DEFAULT_LOG_LINES, Step
from bot.store import BuildRun
from bot.util.redact import redact

MAX_INLINE_LOG = 3500  # longer tails go up as a file


@dataclass(frozen=True)
class LogTail:
    run: BuildRun
    tail: Tail


async def tail_log(ctx: ActionContext, *, lines: int | None) -> LogTail:
    """The last ``lines`` lines of the newest run's log. Raises PlanError when there is none, HostError."""
    run = newest_run(ctx, missing="no build log yet")
    tail = await ctx.target.host.tail(run.log, lines=lines or DEFAULT_LOG_LINES)
    return LogTail(run=run, tail=tail)


async def _run(ctx: ActionContext, step: Step) -> LogTail:
    return await tail_log(ctx, lines=step.lines)


def _reads(log: LogTail) -> Reading:
    text, attachment = log_text(log)
    if attachment is None:
        return Reading(text)
    filename, title = log_file(log)
    return Reading(text, files=(File(attachment, filename, title),))


def log_text(log: LogTail) -> tuple[str, str | None]:
    """(message text, file content when too long to post inline)."""
    body = redact("\n".join(log.tail.lines))
    head = f"*Last {len(log.tail.lines)} lines of* `{log.run.log}` (run {log.run.id}, `{log.run.build}`)"
    if not body:
        return f"{head}: the log is empty.", None
    if len(body) > MAX_INLINE_LOG:
        return f"{head} — attached as a file.", body
    return f"{head}\n```\n{body}\n```", None


def log_file(log: LogTail) -> tuple[str, str]:
    """(file name, title) of a tail too long to post inline."""
    return f"{log.run.build}-run{log.run.id}.log", f"{log.run.build} log (last {len(log.tail.lines)} lines)"


SPEC = ActionSpec(
    Command("log", ("logs", "tail"), "[host] [build] [N]", "the last N lines of the build log (default 40)",
            hosts="one", build_default=True, rank=40, params=("lines",), hint="log [N]",
            describe=lambda step, build: f"show the last {step.lines or DEFAULT_LOG_LINES} log lines"),
    run=_run, reads=_reads)
