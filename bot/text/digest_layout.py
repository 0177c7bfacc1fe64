"""A digest of any fleet as posts that fit: who needs attention first, then every host, in one message when it
fits, else one line per host up top and every host in detail in the thread (messages, or one file). Pure.

A host needs attention when it is down, low on memory, had OOM kills or a failed build.

A step asked of many hosts (``status all``) is laid out the same way: :func:`fleet_posts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from bot.hosts.meminfo import human
from bot.reports import Digest, HostDigest, HostResult, gpu_busy
from bot.store.schedules import Schedule
from bot.text import render
from bot.text.digest import SECTION_TEXT, SHOWN_PROCESSES, clock, host_text, when
from bot.text.message import MESSAGE_SECTIONS, MESSAGE_TEXT, Message

DETAIL_POSTS = 3  # thread messages for every host in detail, or a fleet's rows; more than that go in one file
NAMED_IN_SUMMARY = 5  # hosts the notification text names
MORE_ROOM = 120  # characters kept for a "… and N more" line


@dataclass(frozen=True)
class Attachment:
    """A file that goes with a post."""

    filename: str
    title: str
    content: str


@dataclass(frozen=True)
class DigestPosts:
    """A digest (or a fleet's answer) as rigops posts it: ``first`` in the channel (or the request's thread);
    ``thread``, then ``attachment``, in its thread."""

    first: Message
    thread: tuple[Message, ...] = ()
    attachment: Attachment | None = None


def _plural(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


def _failed(row: HostDigest) -> list[str]:
    return [r.build for r in row.finished if r.state == "failed"]


def needs_attention(row: HostDigest) -> bool:
    return (row.snapshot is None or row.memory_level == "low" or row.oom_total > 0
            or bool(_failed(row)))


def attention_line(row: HostDigest, *, tz: ZoneInfo, since_last_post: bool = True) -> str | None:
    """Why a host needs someone to look, in one line; None when it does not."""
    if row.snapshot is None:
        return f":red_circle: *{row.host}* down: {row.problem or 'no answer'}"
    reasons = []
    low = row.memory_level == "low"
    if low:
        mem = row.snapshot.memory
        reasons.append(f"memory low: {human(mem.available)} available of {human(mem.total)}")
    if row.oom_total:
        reasons.append(_plural(row.oom_total, "OOM kill") + (" since the last post" if since_last_post else " lately"))
    failed = [r for r in row.finished if r.state == "failed"]
    reasons += [f"`{r.build}` failed at {clock(r.ended_at or r.started_at, tz)} (run {r.id})"
                for r in failed[:SHOWN_PROCESSES]]
    if len(failed) > SHOWN_PROCESSES:
        reasons.append(f"{len(failed) - SHOWN_PROCESSES} more failed builds")
    if not reasons:
        return None
    icon = ":boom:" if row.oom_total else ":warning:" if low else ":x:"
    return f"{icon} *{row.host}* — " + " · ".join(reasons)


def attention_section(digest: Digest, *, tz: ZoneInfo, since_last_post: bool = True,
                      more: str = "in the thread") -> str | None:
    """The hosts that need attention, one line each, within one section; None when none does."""
    lines = [line for h in digest.hosts if (line := attention_line(h, tz=tz, since_last_post=since_last_post))]
    if not lines:
        return None
    head = f"*Needs attention: {len(lines)} of {_plural(len(digest.hosts), 'host')}*"
    shown, left = _fill(lines, SECTION_TEXT - len(head) - MORE_ROOM)
    tail = [f"… and {len(left)} more {more}"] if left else []
    return "\n".join([head, *shown, *tail])


def host_row(row: HostDigest) -> str:
    """One host in one line: memory, GPUs busy, load, builds, OOM kills."""
    if row.snapshot is None:
        return f":red_circle: *{row.host}* down"
    snap, mem = row.snapshot, row.snapshot.memory
    share = mem.used / mem.total if mem.total else 0.0
    parts = [f"*{row.host}*", f"mem {share:.0%} used, {human(mem.available)} free"]
    if row.gpus is not None and row.gpus.available and row.gpus.gpus:
        busy = sum(gpu_busy(g.utilization, g.processes) for g in row.gpus.gpus)
        parts.append(f"GPUs {busy}/{len(row.gpus.gpus)} busy")
    parts.append(f"load {snap.loadavg[0]:.0f}/{snap.cores}")
    if row.running:
        parts.append(f"{len(row.running)} running")
    if row.finished:
        failed = len(_failed(row))
        parts.append(f"{len(row.finished)} finished" + (f", {failed} failed" if failed else ""))
    if row.oom_total:
        parts.append(_plural(row.oom_total, "OOM kill"))
    return (":warning: " if needs_attention(row) else "") + " · ".join(parts)


def host_rows(hosts: Iterable[HostDigest]) -> list[str]:
    """A line per host, packed into sections."""
    return _sections(host_row(h) for h in hosts)


def summary(digest: Digest) -> str:
    """The plain-text fallback (notifications, screen readers), naming the hosts that need attention."""
    down = sum(1 for h in digest.hosts if h.snapshot is None)
    running = sum(len(h.running) for h in digest.hosts)
    finished = sum(len(h.finished) for h in digest.hosts)
    kills = sum(h.oom_total for h in digest.hosts)
    parts = [_plural(len(digest.hosts), "host")]
    parts += [f"{down} down"] if down else []
    parts += [_plural(running, "build") + " running"]
    parts += [f"{finished} finished since the last post"] if finished else []
    parts += [_plural(kills, "OOM kill")] if kills else []
    named = [h.host for h in digest.hosts if needs_attention(h)]
    if named:
        more = f" and {len(named) - NAMED_IN_SUMMARY} more" if len(named) > NAMED_IN_SUMMARY else ""
        parts.append("needs attention: " + ", ".join(named[:NAMED_IN_SUMMARY]) + more)
    return "rigops status: " + ", ".join(parts)


def digest_posts(digest: Digest, *, tz: ZoneInfo, schedule: Schedule) -> DigestPosts:
    """The scheduled post: a title, who needs attention, every host in detail and which schedule sent it — in one
    message when that fits; else one line per host (the rest continued in the thread) and the details in the
    thread, as messages or, for a fleet that needs more than DETAIL_POSTS of them, one file."""
    title = f"Status · {when(digest.taken_at, tz)}"
    footnote = (f"Schedule `{schedule.id}` · {schedule.when} · times in {tz.key}"
                + (" · posts only when something changed" if schedule.only_changes else ""))
    head = tuple(s for s in [attention_section(digest, tz=tz)] if s)
    details = [host_text(h, now=digest.taken_at, tz=tz) for h in digest.hosts]
    text = summary(digest)
    whole = Message(text, title=title, sections=(*head, *details), footnote=footnote)
    if whole.fits:
        return DigestPosts(whole)
    footnote += " · every host in detail in the thread"
    room = MESSAGE_TEXT - len(title) - len(footnote) - sum(map(len, head)) - MORE_ROOM
    shown, rest = _fill([host_row(h) for h in digest.hosts], room)
    more = (f"… and {_plural(len(rest), 'more host')}: in the thread",) if rest else ()
    first = Message(text, title=title, sections=(*head, *_sections(shown), *more), footnote=footnote)
    thread = _messages(_sections(rest), text="rigops status, continued: one line per host")
    in_detail = _messages(details, text="rigops status: every host in detail")
    if len(in_detail) <= DETAIL_POSTS:
        return DigestPosts(first, thread=(*thread, *in_detail))
    stamp = when(digest.taken_at, tz)
    file = Attachment(filename=f"rigops-status-{int(digest.taken_at)}.txt", title=f"Every host in detail · {stamp}",
                      content=f"rigops status · {stamp}\n\n" + "\n\n".join(details).translate(_MARKUP) + "\n")
    return DigestPosts(first, thread=tuple(thread), attachment=file)


def fleet_posts(where: str, rows: render.Rows, results: Sequence[HostResult]) -> DigestPosts:
    """A step's answer from many hosts: the one message it always was when that is within TEXT_LIMIT; else how
    many answered and what needs a look, then a row per host, problems first (no answer, then failing builds and
    low memory), as many as fit, and the rest in the thread: messages, or one file when they would take more than
    DETAIL_POSTS messages. Each message's text is all it shows, for a front end that shows only text (an answer
    only the asker sees)."""
    one = render.fleet_text(where, rows, results)
    if len(one) <= render.TEXT_LIMIT:
        return DigestPosts(Message(one))
    lines = [render.fleet_row(r, rows) for r in sorted(results, key=lambda r: _fleet_rank(r, rows))]
    head = render.fleet_summary(where, rows, results)
    wrap = render.fleet_fences(rows)
    room = MESSAGE_TEXT - len(head) - MORE_ROOM
    room -= len("".join(wrap)) * (room // (SECTION_TEXT // 2) + 1)  # each section's fences (rows fill half at least)
    shown, rest = _fill(lines, room)
    thread = _messages(_sections(rest, wrap=wrap))
    file = _fleet_file(where, rows, head, lines) if len(thread) > DETAIL_POSTS else None
    more = [f"… and {_plural(len(rest), 'more host')}: "
            + ("every host is in the file below" if file else "continued below")] if rest else []
    first = [head, *_sections(shown, wrap=wrap), *more]
    return DigestPosts(Message("\n".join(first), sections=tuple(first)), thread=() if file else tuple(thread),
                       attachment=file)


def _fleet_file(where: str, rows: render.Rows, head: str, lines: Sequence[str]) -> Attachment:
    text = [head.translate(_MARKUP), "", *render.fleet_columns(rows), *lines]
    return Attachment(filename=f"rigops-{rows.name}-{where}.txt", title=f"{rows.name} on {where}",
                      content="\n".join(text) + "\n")


_MARKUP = str.maketrans("", "", "*`")  # bold and code marks mean nothing in a text file


def _fleet_rank(result: HostResult, rows: render.Rows) -> int:
    """Where a host's row goes: first the hosts that did not answer, then those that need a look, then the rest."""
    troubles = render.fleet_troubles(result, rows)
    return 0 if render.NO_ANSWER in troubles else 1 if troubles else 2


def _fill(lines: Sequence[str], room: int) -> tuple[list[str], list[str]]:
    """The first lines that fit in ``room`` characters (one per line for its newline), and the rest."""
    used = 0
    for i, line in enumerate(lines):
        used += len(line) + 1
        if used > room:
            return list(lines[:i]), list(lines[i:])
    return list(lines), []


def _sections(lines: Iterable[str], *, wrap: tuple[str, str] = ("", "")) -> list[str]:
    """Lines packed into sections of at most SECTION_TEXT characters, each between ``wrap``'s two parts (a code
    block's fences)."""
    start, end = wrap
    room = SECTION_TEXT - len(start) - len(end)
    out: list[str] = []
    for line in lines:
        if out and len(out[-1]) + 1 + len(line) <= room:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return [start + section + end for section in out]


def _messages(sections: Sequence[str], *, text: str | None = None) -> list[Message]:
    """Sections spread over as few messages as hold them, each within what one message may hold; ``text``: what
    each says in notifications (None: its sections, whole)."""
    out: list[list[str]] = []
    size = 0
    for section in sections:
        if not out or size + len(section) > MESSAGE_TEXT or len(out[-1]) >= MESSAGE_SECTIONS:
            out.append([])
            size = 0
        out[-1].append(section)
        size += len(section)
    return [Message("\n".join(chunk) if text is None else text, sections=tuple(chunk)) for chunk in out]
