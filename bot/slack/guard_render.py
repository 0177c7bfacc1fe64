"""What the OOM guard says in a build's thread: pressure alerts with their buttons, OOM kills, pauses."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from bot.advisor import size_text
from bot.config import PressureAction
from bot.oom import Alert, OomKill
from bot.slack.render import button
from bot.store import BuildRun

RESTART_ACTION = "rigops_oom_restart"
PAUSE_ACTION = "rigops_oom_pause"
IGNORE_ACTION = "rigops_oom_ignore"
RESUME_ACTION = "rigops_oom_resume"


def fewer_jobs(alert: Alert, run: BuildRun) -> int | None:
    """The suggested -j when it is below the run's own: restarting at the same -j (or more) would not help,
    and an automatic restart must never loop."""
    if alert.suggest_jobs is None or (run.jobs is not None and alert.suggest_jobs >= run.jobs):
        return None
    return alert.suggest_jobs


def alert_text(alert: Alert, run: BuildRun) -> str:
    """"memory pressure: 3% available, swap rising, 64 compilers at ~6.8 GiB each — suggest -j20"."""
    if alert.scope == "cgroup":
        room = (f"{alert.available_pct:.0f}% of the build's memory limit left ({size_text(alert.available)} of "
                f"{size_text(alert.total)})")
    else:
        room = f"{alert.available_pct:.0f}% available ({size_text(alert.available)} of {size_text(alert.total)})"
    parts = [room]
    if "swap_rising" in alert.reasons:
        parts.append(f"swap rising ({size_text(int(alert.swap_rate))}/s, {size_text(alert.swap_used)} used)")
    if "stalls" in alert.reasons and alert.psi_full_avg10 is not None:
        parts.append(f"tasks stalled on memory {alert.psi_full_avg10:.0f}% of the last 10 s")
    text = f":warning: *Memory pressure on {run.host}* while `{run.build}` builds at -j{run.jobs}: " + ", ".join(parts)
    if alert.compilers:
        text += f" — {alert.compilers} compiler{'s' if alert.compilers != 1 else ''} at ~" \
                f"{size_text(alert.per_compiler)} each"
    if (jobs := fewer_jobs(alert, run)) is not None:
        text += f" — suggest -j{jobs}"
    return text + "."


def alert_message(alert: Alert, run: BuildRun, *, auto: PressureAction) -> tuple[str, list[dict[str, Any]]]:
    """The alert with what this host's policy does about it, and the buttons left for people."""
    text = alert_text(alert, run)
    if auto == "pause":
        text += "\nThis host's policy pauses the heaviest compilers by itself."
    jobs = fewer_jobs(alert, run)
    if auto == "restart" and jobs is not None:
        text += f"\nThis host's policy restarts the build at -j{jobs} by itself."
    buttons = []
    if jobs is not None and auto != "restart":
        buttons.append(button(f"Stop & restart at -j{jobs}", RESTART_ACTION, f"{run.id}:{jobs}", style="danger"))
    if auto != "pause":
        buttons.append(button("Pause the heaviest compilers", PAUSE_ACTION, str(run.id)))
    buttons.append(button("Ignore", IGNORE_ACTION, str(run.id)))
    return text, [{"type": "section", "text": {"type": "mrkdwn", "text": text}},
                  {"type": "actions", "block_id": f"oom-{run.id}", "elements": buttons}]


def handled_blocks(text: str, outcome: str) -> list[dict[str, Any]]:
    """An alert once someone chose what to do: the buttons give way to who did what."""
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": outcome}]}]


def kills_text(kills: Sequence[OomKill], run: BuildRun) -> str:
    """One message for OOM kills told together, the build's first."""
    ours = [k for k in kills if k.whose == "build"]
    other = [k for k in kills if k.whose == "other"]
    unknown = [k for k in kills if k.whose == "unknown"]
    lines = []
    if ours:
        named = [k for k in ours if k.victim_name]
        what = _victims(named) if named else f"{len(ours)} processes" if len(ours) > 1 else "a process"
        where = " (in its memory cgroup)" if any(k.evidence == "cgroup" for k in ours) else ""
        lines.append(f":boom: The kernel's OOM killer killed {what} of `{run.build}` on *{run.host}*{where}.")
    if other:
        who = ", ".join(sorted({k.user for k in other if k.user})) or "another user"
        lines.append(f":information_source: An OOM kill on *{run.host}* hit {_victims(other)} ({who}) — not this "
                     "build.")
    if unknown:
        count = f"{len(unknown)} OOM kill{'s' if len(unknown) != 1 else ''}"
        lines.append(f":grey_question: *{run.host}* counted {count}, but the kernel log is not readable here, so "
                     "rigops cannot tell whose process it was.")
    return "\n".join(lines)


def paused_message(count: int, freed: int, *, user: str | None, run: BuildRun) -> tuple[str, list[dict[str, Any]]]:
    """Who paused how many compilers, with a button to let them go on before memory is back."""
    who = f"<@{user}> paused" if user else "Paused (this host's policy)"
    text = (f":double_vertical_bar: {who} the {count} heaviest compiler{'s' if count != 1 else ''} "
            f"({size_text(freed)} between them) with SIGSTOP; they carry on when memory is back.")
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    if count:
        blocks.append({"type": "actions", "block_id": f"paused-{run.id}",
                       "elements": [button("Resume now", RESUME_ACTION, str(run.id))]})
    return text, blocks


def resumed_text(count: int, *, why: str) -> str:
    return f":arrow_forward: Resumed {count} paused compiler{'s' if count != 1 else ''}: {why}."


def _victims(kills: Sequence[OomKill]) -> str:
    names = Counter(k.victim_name or "a process" for k in kills)
    parts = [f"`{n}`" + (f" ×{c}" if c > 1 else "") for n, c in names.most_common(5)]
    if len(kills) == 1 and kills[0].victim_pid:
        parts[0] += f" (pid {kills[0].victim_pid})"
    return ", ".join(parts)
