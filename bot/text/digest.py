"""The status digest and the dashboard as text: each host in detail, the schedules. Pure functions; how they
become posts that fit is bot/text/digest_layout.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.builds.progress import Progress
from bot.hosts.meminfo import Memory, human
from bot.hosts.models import Gpu, GpuReport, Snapshot
from bot.reports import Digest, HostDigest, OomKillSeen
from bot.store import BuildRun
from bot.store.schedules import Schedule
from bot.text.render import RESULT_ICON, duration, progress_parts, tool_counts

BAR_WIDTH = 20
USED, FREE = "█", "░"
SECTION_TEXT = 2900  # what one section may hold (Slack's limit is 3000)
SHOWN_PROCESSES = 3
SINCE_LAST_POST = "Finished since the last post:"
IN_THE_LAST_DAY = "Finished in the last day:"


def when(moment: float | datetime, tz: ZoneInfo) -> str:
    """A moment in the schedule's timezone, e.g. ``Mon 1 Jun 09:00 CEST``."""
    at = moment if isinstance(moment, datetime) else datetime.fromtimestamp(moment, tz)
    return at.astimezone(tz).strftime("%a %-d %b %H:%M %Z")


def clock(moment: float, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(moment, tz).strftime("%H:%M")


def memory_bar(mem: Memory, width: int = BAR_WIDTH) -> str:
    """Used memory as filled characters, available as empty ones: ``████░░░░``."""
    used = round(width * mem.used / mem.total) if mem.total else 0
    return USED * used + FREE * (width - used)


def memory_line(snap: Snapshot) -> str:
    mem = snap.memory
    share = mem.used / mem.total if mem.total else 0.0
    swap = f"swap {human(mem.swap_used)} of {human(mem.swap_total)}" if mem.swap_total else "no swap"
    return (f"`{memory_bar(mem)}` {share:.0%} used · {human(mem.available)} available of {human(mem.total)}"
            f" · {swap}")


def load_line(snap: Snapshot) -> str:
    one, five, fifteen = snap.loadavg
    line = f"load {one:.1f} · {five:.1f} · {fifteen:.1f} on {snap.cores} cores"
    if snap.tools:
        line += f" · build processes: {tool_counts(snap.tools)} ({human(sum(p.rss for p in snap.tools))})"
    return line


def _gib(mib: str) -> str:
    try:
        return f"{float(mib) / 1024:.1f}"
    except ValueError:
        return "n/a"


def gpu_line(gpu: Gpu) -> str:
    name = gpu.name.removeprefix("NVIDIA ")
    util = f"{gpu.utilization}%" if gpu.utilization != "n/a" else "util n/a"
    parts = [f"`{gpu.index}` {name}", util, f"{_gib(gpu.memory_used)}/{_gib(gpu.memory_total)} GiB"]
    if gpu.temperature != "n/a":
        parts.append(f"{gpu.temperature}°C")
    if gpu.processes:
        shown = ", ".join(gpu.processes[:SHOWN_PROCESSES])
        more = len(gpu.processes) - SHOWN_PROCESSES
        parts.append(shown + (f" and {more} more" if more > 0 else ""))
    else:
        parts.append("idle" if gpu.utilization in ("0", "n/a") else "no processes")
    return " · ".join(parts)


def gpu_lines(report: GpuReport | None) -> list[str]:
    if report is None:
        return []
    if not report.available:
        return [f"No GPUs: {report.reason}"]
    if not report.gpus:
        return ["No GPUs: nvidia-smi listed none"]
    return [gpu_line(g) for g in report.gpus]


def run_line(run: BuildRun, *, now: float, tz: ZoneInfo, progress: tuple[Progress, float | None] | None = None) -> str:
    icon = RESULT_ICON.get(run.state, "")
    who = f", started by <@{run.started_by}>" if run.started_by else ""
    if run.state == "running":
        done = progress_parts(progress[0], eta=progress[1]) if progress is not None else []
        return (f"{icon} `{run.build}` running for {duration(now - run.started_at)}"
                + "".join(f" · {p}" for p in done) + f" (-j{run.jobs}, run {run.id}{who})")
    ended = run.ended_at or now
    took = duration(ended - run.started_at)
    code = f", exit {run.exit_status}" if run.exit_status else ""
    return f"{icon} `{run.build}` {run.state} at {clock(ended, tz)} after {took} (-j{run.jobs}, run {run.id}{code})"


def oom_line(kills: Sequence[OomKillSeen], *, total: int, since_last_post: bool = True) -> str:
    """":boom: 3 OOM kills since the last post: `cc1plus` ×2 in `sgl-kernel`, 1 elsewhere (`python3`)" — the
    kills the OOM guard saw in the builds it followed, and the rest of the host's own count."""
    ours: Counter[tuple[str, str]] = Counter((k.victim or "a process", k.build or "a build") for k in kills
                                             if k.whose == "build")
    parts = [f"`{victim}`" + (f" ×{n}" if n > 1 else "") + f" in `{build}`" for (victim, build), n in
             ours.most_common(SHOWN_PROCESSES)]
    elsewhere = total - sum(ours.values())
    if elsewhere > 0:
        named = sorted({k.victim for k in kills if k.whose != "build" and k.victim})
        parts.append(f"{elsewhere} elsewhere" + (f" ({', '.join(f'`{v}`' for v in named[:3])})" if named else ""))
    when_text = "since the last post" if since_last_post else "lately"
    return f":boom: {total} OOM kill{'s' if total != 1 else ''} {when_text}: " + ", ".join(parts)


def host_text(row: HostDigest, *, now: float, tz: ZoneInfo, finished: str = SINCE_LAST_POST) -> str:
    """One host's part of the digest, as mrkdwn."""
    if row.snapshot is None:
        lines = [f":red_circle: *{row.host}* — down: {row.problem or 'no answer'}"]
    else:
        lines = [f"*{row.host}* — {memory_line(row.snapshot)}", load_line(row.snapshot), *gpu_lines(row.gpus)]
    if row.oom_total:
        lines.append(oom_line(row.oom_kills, total=row.oom_total, since_last_post=finished == SINCE_LAST_POST))
    lines += [run_line(r, now=now, tz=tz, progress=row.progress.get(r.id)) for r in row.running]
    if row.finished:
        lines.append(finished)
        lines += [run_line(r, now=now, tz=tz) for r in row.finished]
    elif row.snapshot is not None and not row.running:
        lines.append("No builds running.")
    return _clip("\n".join(lines))


def _clip(text: str, limit: int = SECTION_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 20] + "\n… (cut)"


def schedule_line(schedule: Schedule) -> str:
    """One schedule as the list and the Home tab show it."""
    tz = ZoneInfo(schedule.timezone)
    hosts = ", ".join(schedule.hosts) if schedule.hosts is not None else "all hosts"
    nxt = f"next {when(schedule.next_run, tz)}" if schedule.next_run else "not scheduled"
    origin = "from the config" if schedule.source == "config" else (
        f"added by <@{schedule.created_by}>" if schedule.created_by else "added in Slack")
    extra = " · only when something changed" if schedule.only_changes else ""
    failed = f"\n    :warning: the last post failed: {schedule.last_error}" if schedule.last_error else ""
    return f"• `{schedule.id}` *{schedule.when}* ({schedule.timezone}) — {hosts} → <#{schedule.channel}> · {nxt}" \
           f"{extra} · {origin}{failed}"


HOME_TITLE = "rigops — hosts, GPUs and builds"
HOME_ROWS = "One line a host: `/rigops status HOST` shows one in detail."
NO_SCHEDULES_HOME = 'No scheduled posts. Add one with `/rigops schedule add "0 9 * * 1-5" all #channel`.'


def scheduled_posts(schedules: Sequence[Schedule]) -> str:
    """The schedules as the dashboard lists them."""
    return _clip("*Scheduled posts*\n" + ("\n".join(schedule_line(s) for s in schedules) or NO_SCHEDULES_HOME))


def as_of(digest: Digest, tz: ZoneInfo) -> str:
    return f"As of {when(digest.taken_at, tz)} · open the tab again to refresh"
