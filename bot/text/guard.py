"""What the OOM guard says in a build's thread: pressure alerts with their buttons, OOM kills, pauses."""

from __future__ import annotations

from collections.abc import Sequence

from bot.memory.advisor import size_text
from bot.memory.policy import MAX_PAUSE, OnPressure, ResumeWhy
from bot.memory.watch import Alert, OomKill
from bot.store import BuildRun
from bot.text.message import Message
from bot.text.render import choice, oom_victims

NO_COMPILERS = ":information_source: No compilers of this build are running to pause."
NOTHING_PAUSED = "Nothing of this build is paused now."


def alert_text(alert: Alert, run: BuildRun, *, jobs: int | None) -> str:
    """"memory pressure: 3% available, swap rising, 64 compilers at ~6.8 GiB each — suggest -j20" (``jobs``: the
    -j a restart would help at, bot.memory.policy.restart_jobs)."""
    if alert.scope == "cgroup":
        room = (f"{alert.available_pct:.0f}% of the build's memory limit left ({size_text(alert.available)} of "
                f"{size_text(alert.total)})")
    else:
        room = f"{alert.available_pct:.0f}% available ({size_text(alert.available)} of {size_text(alert.total)})"
    parts = [room]
    if "no_headroom" in alert.reasons:
        parts.append(f"less than the running compilers still need: up to ~{size_text(alert.need)} more as each "
                     f"reaches ~{size_text(alert.job_peak)}, as this build's compile jobs do")
    if (ahead := alert.forecast) is not None:
        end = "the build's memory limit is hit" if alert.scope == "cgroup" else f"{alert.host} runs out of memory"
        parts.append(f"memory use rising ~{size_text(int(ahead.rate))}/s for {ahead.lasted:.0f} s: at this rate "
                     f"{end} in ~{max(1, round(ahead.eta))} s")
    if "swap_rising" in alert.reasons:
        parts.append(f"swap rising ({size_text(int(alert.swap_rate))}/s, {size_text(alert.swap_used)} used)")
    if "stalls" in alert.reasons and alert.psi_full_avg10 is not None:
        parts.append(f"tasks stalled on memory {alert.psi_full_avg10:.0f}% of the last 10 s")
    text = f":warning: *Memory pressure on {run.host}* while `{run.build}` builds at -j{run.jobs}: " + ", ".join(parts)
    if alert.compilers:
        text += f" — {alert.compilers} compiler{'s' if alert.compilers != 1 else ''} at ~" \
                f"{size_text(alert.per_compiler)} each"
    if alert.others:
        text += " — also building here: " + ", ".join(
            f"`{o.build}` ({o.compilers} compiler{'s' if o.compilers != 1 else ''}, {size_text(o.rss)})"
            for o in alert.others)
    if jobs is not None:
        text += f" — suggest -j{jobs}"
    return text + "."


def alert_message(alert: Alert, run: BuildRun, answer: OnPressure) -> Message:
    """The alert with what this host's policy does about it, and the buttons left for people."""
    jobs = answer.jobs
    text = alert_text(alert, run, jobs=jobs)
    if answer.act == "pause":
        text += "\nThis host's policy pauses the heaviest compilers by itself."
    if answer.act == "restart":
        text += f"\nThis host's policy restarts the build at -j{jobs} by itself."
    choices = []
    if jobs is not None and answer.act != "restart":
        choices.append(choice(f"Stop & restart at -j{jobs}", "oom_restart", f"{run.id}:{jobs}", style="danger"))
    if answer.act != "pause":
        choices.append(choice("Pause the heaviest compilers", "oom_pause", run.id))
    choices.append(choice("Ignore", "oom_ignore", run.id))
    return Message(text, choices=tuple(choices), group=f"oom-{run.id}")


def handled(text: str, outcome: str) -> Message:
    """An alert once someone chose what to do: the buttons give way to who did what."""
    return Message(text, footnote=outcome)


def chose_restart(user: str, jobs: int) -> str:
    return f"<@{user}> chose to restart at -j{jobs}."


def chose_pause(user: str) -> str:
    return f"<@{user}> paused the heaviest compilers."


def chose_ignore(user: str) -> str:
    return f"Ignored by <@{user}>: no more pressure alerts for this run (OOM kills are still told)."


def restart_note(jobs: int, *, user: str | None) -> str:
    """Why a build restarts: a person pressed the button, or the host's policy did it."""
    if user is not None:
        return f"Restart at -j{jobs} pressed by <@{user}>."
    return f"Restarting at -j{jobs}: this host's policy (on_memory_pressure = \"restart\")."


def pause_failed(reason: str) -> str:
    return f":warning: Could not pause the compilers: {reason}"


def resumed_by(user: str) -> str:
    return f"<@{user}> resumed them"


def resume_reason(why: ResumeWhy, *, available_pct: float) -> str:
    """Why the policy let paused compilers go on (bot.memory.policy.resume_why)."""
    if why == "memory_back":
        return f"memory is back ({available_pct:.0f}% available)"
    return f"paused for {MAX_PAUSE / 60:.0f} min and memory is still tight; consider a restart at a lower -j"


INHERITED_PAUSE = "they were paused by a rigops that stopped before resuming them"
BUILD_ENDED = "the build ended"
STOPPING = "rigops is stopping"


def card_note(*, available_pct: float | None, paused: int, limited: bool = False) -> str | None:
    """What a build's card says of memory while it is tight: "memory pressure: 4% available, 3 compilers paused"
    (``limited``: the 4% are of the build's memory limit)."""
    of = " of its memory limit" if limited else ""
    parts = [f"memory pressure: {available_pct:.0f}%{of} available"] if available_pct is not None else []
    if paused:
        parts.append(f"{paused} compiler{'s' if paused != 1 else ''} paused")
    return ", ".join(parts) or None


def chart_title(run: BuildRun, what: str) -> str:
    return f"{run.build} on {run.host}: {what}"


def kills_text(kills: Sequence[OomKill], run: BuildRun) -> str:
    """One message for OOM kills told together, the build's first."""
    ours = [k for k in kills if k.whose == "build"]
    other = [k for k in kills if k.whose == "other"]
    unknown = [k for k in kills if k.whose == "unknown"]
    lines = []
    if ours:
        named = [k for k in ours if k.victim_name]
        what = oom_victims(named) if named else f"{len(ours)} processes" if len(ours) > 1 else "a process"
        where = " (in its memory cgroup)" if any(k.evidence == "cgroup" for k in ours) else ""
        lines.append(f":boom: The kernel's OOM killer killed {what} of `{run.build}` on *{run.host}*{where}.")
    for build in sorted({k.other_build for k in other if k.other_build}):
        theirs = [k for k in other if k.other_build == build]
        lines.append(f":information_source: An OOM kill on *{run.host}* hit {oom_victims(theirs)} of `{build}` — not "
                     "this build.")
    if strangers := [k for k in other if not k.other_build]:
        who = ", ".join(sorted({k.user for k in strangers if k.user})) or "another user"
        lines.append(f":information_source: An OOM kill on *{run.host}* hit {oom_victims(strangers)} ({who}) — not "
                     "this build.")
    if unknown:
        count = f"{len(unknown)} OOM kill{'s' if len(unknown) != 1 else ''}"
        lines.append(f":grey_question: *{run.host}* counted {count}, but the kernel log is not readable here, so "
                     "rigops cannot tell whose process it was.")
    return "\n".join(lines)


def paused_message(count: int, freed: int, *, user: str | None, run: BuildRun) -> Message:
    """Who paused how many compilers, with a button to let them go on before memory is back."""
    who = f"<@{user}> paused" if user else "Paused (this host's policy)"
    text = (f":double_vertical_bar: {who} the {count} heaviest compiler{'s' if count != 1 else ''} "
            f"({size_text(freed)} between them) with SIGSTOP; they carry on when memory is back.")
    if not count:
        return Message(text)
    return Message(text, choices=(choice("Resume now", "oom_resume", run.id),), group=f"paused-{run.id}")


def resumed_text(count: int, *, why: str) -> str:
    return f":arrow_forward: Resumed {count} paused compiler{'s' if count != 1 else ''}: {why}."


