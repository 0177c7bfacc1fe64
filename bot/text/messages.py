"""Every sentence rigops says in Slack that is not a rendered result."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.language.commands import commands
from bot.language.plan import Plan

HELP_INTRO = """*rigops* stops runaway builds, shows memory and restarts builds at the parallelism you ask for.
Say it in the ops channel or mention me, e.g. _oom-ing pretty bad, try -j20_, _free -h_, _kill the build_, \
_retry with 16 jobs_, _how's memory on b200?_, _tail the log_, _nvidia-smi_, _memory chart_.
Or use `/rigops <command> [host] [build]`:"""
HELP_OUTRO = "A thread remembers its host, build and last -j, so _try -j12_ or _halve the jobs_ later in it needs " \
             "no names."


def _own_args(usage: str) -> str:
    """A command's arguments beyond the [host] [build] every command takes."""
    args = " ".join(a for a in usage.split(" ") if a not in ("[host]", "[build]"))
    return f" {args}" if args else ""


def help_text() -> str:
    """`/rigops help`, from the command table."""
    rows = [f"• `{c.name}{_own_args(c.usage)}` – {c.help}" for c in commands()]
    return "\n".join([HELP_INTRO, *rows, HELP_OUTRO])


NOT_UNDERSTOOD = "I didn't catch that. Try _status_, _free -h_, _kill the build_ or _rebuild -j16_ — or `/rigops help`."
GENERIC_FAILURE = "Something went wrong on my side; the details are in rigops' log."
CANCELLED = "Cancelled by <@{user}>."
ALREADY_HANDLED = "This request was already {state}."
UNKNOWN_PLAN = "I can't find this request any more."
FORGED_PRESS = ("That button doesn't carry anything rigops put on it, so nothing was done. "
                "Use the buttons under rigops' own messages, or ask again.")
UNKNOWN_CHOICE = "That isn't a rigops button, so nothing was done."
UNREADABLE_COMMAND = "rigops could not read this command as Slack sent it, so nothing was done. Try again?"


def not_in_channel_answer(channel: str) -> str:
    """What a slash command's answer starts with when Slack refused to post it where the command was typed."""
    return (f":lock: I'm not in <#{channel}>, so only you see this answer — `/invite @rigops` there for "
            f"threads and buttons.")


def plan_refused(plan: Plan) -> str:
    return f":no_entry: {plan.error}"


def confirm_prompt(user: str, *, minutes: float = 10) -> str:
    return (f"<@{user}> wants this — press *Run* to go ahead (the requester or an operator; "
            f"the button expires in {minutes:g} min).")


def did_you_mean(user: str, *, minutes: float = 10) -> str:
    return (f"<@{user}> that read as a supposition or advice, not a request, so nothing ran. *Did you mean this?* "
            f"Press *Run* to go ahead (the requester or an operator; the button expires in {minutes:g} min).")


def denied(reason: str) -> str:
    return f":no_entry: Not allowed: {reason}."


def already_running(user: str) -> str:
    return f":hourglass_flowing_sand: Already in progress, started by <@{user}>; try again when it is done."


EXPIRED = ":timer_clock: This request expired before anyone pressed Run; ask again if it is still needed."
NOT_YOURS = "Only the requester or an operator of {host} can run this."
SLOW_DOWN = ":snail: Slow down: you sent more than {limit} requests in a minute. I'm ignoring the rest for now."
ADMINS_ONLY = "Only rigops admins can read the audit log."


def retried_by(user: str) -> str:
    return f"Retry pressed by <@{user}>."


def approved_by(user: str) -> str:
    return f"Approved by <@{user}>."


INTERRUPTED = "rigops stopped while this ran"


def interrupted_note() -> str:
    return (":warning: rigops was stopped (or lost) while it ran this, and cannot tell how far it got. The build's "
            "card and its end, in this thread, say where it is now; ask again if it still needs doing.")


def not_recorded(problem: str) -> str:
    return (f":information_source: rigops cannot write its state right now ({problem}): this look is answered "
            "without a record. Anything that acts waits until the state is back.")


def state_failed(problem: str) -> str:
    return f":warning: rigops cannot use its state right now ({problem}); nothing was run. Try again shortly."


def audit_mirror(what: str, *, user: str | None, host: str | None, build: str | None, channel: str | None,
                 detail: dict[str, Any]) -> str:
    """One audit entry as the audit channel shows it."""
    where = (host or "-") + (f"/{build}" if build else "")
    who = f"<@{user}>" if user and user != "rigops" else "rigops itself"
    place = f" in <#{channel}>" if channel else ""
    return f"`{what}` by {who} on {where}{place}: {json.dumps(detail)[:1500]}"


def audit_entries(entries: list[dict[str, Any]]) -> str:
    """`/rigops audit`: the newest entries first."""
    if not entries:
        return "The audit log is empty."
    rows = []
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e["at"]))
        where = (e["host"] or "-") + (f"/{e['build']}" if e["build"] else "")
        detail = e["detail"] or ""
        rows.append(f"`{when}` *{e['what']}* <@{e['user']}> {where} in <#{e['channel']}> {detail[:300]}")
    return "*Audit log* (newest first)\n" + "\n".join(rows)


NO_LONGER_RUNNING = "That build is no longer running."


def taken_over(replica: str, *, previous: str) -> str:
    return (f":handshake: followed by rigops `{replica}` now — `{previous}`, which followed it, stopped answering. "
            f"The card goes on here.")


def lost_contact(host: str, build: str, reason: str) -> str:
    return f":warning: lost contact with {host} while following `{build}`: {reason}. I keep trying."


def adopted(build: str, pid: int) -> str:
    return (f":arrows_counterclockwise: rigops restarted while it was starting `{build}`; the build is running "
            f"(pid {pid}) and I follow it.")


def never_started(build: str, host: str) -> str:
    return (f":grey_question: rigops stopped while it was starting `{build}` on *{host}*, and the build never "
            "started. Say _rebuild_ to start it.")


INVITE = "/invite @rigops"


def no_files_here(filename: str) -> str:
    return (f"(I can't attach `{filename}` here: I'm not in this channel. `{INVITE}` here, or ask me in a DM, "
            "and I can attach it.)")


def not_here_read_only(channel: str) -> str:
    """Said privately under an answer given where rigops cannot post."""
    return (f"_Only you see this: I'm not in <#{channel}>, so I can't answer in the channel. `{INVITE}` there and "
            "I answer in threads everyone sees._")


def moved_to_dm(channel: str) -> str:
    return (f"I'm not in <#{channel}>, so I can't start a thread there for this: I've taken it to our DM. "
            f"`{INVITE}` in <#{channel}> to keep such requests in the channel.")


def cannot_answer_here(channel: str) -> str:
    return (f":no_entry: I'm not in <#{channel}> and can't reach you in a DM, so nothing was run. "
            f"`{INVITE}` there and ask again.")


def schedule_channel_unreachable(channel: str) -> str:
    return f"I'm not in <#{channel}>, so I can't post a digest there: `{INVITE}` in <#{channel}> first"


POST_REFUSED = "Slack refused the post (rigops' log says why)"


def guessed_rigops_build(host: str) -> str:
    return f"{host} — the only host with a build running"


def guessed_build_processes(host: str) -> str:
    return f"{host} — the only host with build processes running"


def guessed_running_build(host: str, build: str) -> str:
    return f"`{build}` — the only build running on {host}"


ALL_HOSTS_GUESS = "all hosts — the request named none"


def question(kind: str, steps: str) -> str:
    """Which host (or build) a request is about, when rigops cannot tell."""
    return (f":question: Which {kind} is this about? _{steps}_ — pick one, or answer in this thread "
            f"(e.g. _on {'b200' if kind == 'host' else 'the sgl-kernel one'}_).")


def answered(kind: str, answer: str, user: str) -> str:
    return f"Which {kind}: *{answer}* (<@{user}>)."


QUESTION_EXPIRED = ":timer_clock: This question expired before anyone answered; ask again if it is still needed."


def contact_back(host: str, build: str, *, away: str, still_running: bool) -> str:
    """The line that says a host rigops lost contact with is back (after ``away``, "40 s"), and what its build
    did meanwhile."""
    what = (f"`{build}` is still running and I follow it again." if still_running else
            f"`{build}` ended while I could not see it; how it ended follows.")
    return f":electric_plug: *{host}* is back after {away} out of contact: {what}"
