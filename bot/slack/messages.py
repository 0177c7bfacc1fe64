"""Every sentence rigops says in Slack that is not a rendered result."""

from __future__ import annotations

from bot.plan import Plan

RUN_ACTION = "rigops_run"
CANCEL_ACTION = "rigops_cancel"
RETRY_ACTION = "rigops_retry"
RETRY_HALF_ACTION = "rigops_retry_half"
SHOW_LOG_ACTION = "rigops_show_log"

HELP = """*rigops* stops runaway builds, shows memory and restarts builds at the parallelism you ask for.
Say it in the ops channel or mention me, e.g. _oom-ing pretty bad, try -j20_, _free -h_, _kill the build_, \
_retry with 16 jobs_, _how's memory on b200?_, _tail the log_, _nvidia-smi_, _memory chart_.
Or use `/rigops <command> [host] [build]`:
• `status` – builds on a host and what is running
• `mem` – `free -h` and the top memory users
• `gpu` – GPUs from nvidia-smi
• `kill` – stop the build (its process tree and the build user's compilers)
• `rebuild [-jN]` – start the build again, stopping a running one first
• `log [N]` – the last N lines of the build log (default 40)
• `chart` – the memory chart of the build's latest run (by process class, OOM kills marked)
• `hosts` – the hosts and builds rigops knows
• `schedule add "<cron>"|every 30m|daily at 09:00 [host|all] [#channel]`, `schedule list`, \
`schedule remove ID` – status digests posted on a schedule (admins add and remove)
• `audit [N]` – the last N audit entries (admins)
• `help` – this text
A thread remembers its host, build and last -j, so _try -j12_ or _halve the jobs_ later in it needs no names."""

NOT_UNDERSTOOD = "I didn't catch that. Try _status_, _free -h_, _kill the build_ or _rebuild -j16_ — or `/rigops help`."
GENERIC_FAILURE = "Something went wrong on my side; the details are in rigops' log."
CANCELLED = "Cancelled by <@{user}>."
ALREADY_HANDLED = "This request was already {state}."
UNKNOWN_PLAN = "I can't find this request any more."


def plan_refused(plan: Plan) -> str:
    return f":no_entry: {plan.error}"


def confirm_prompt(user: str, *, minutes: float = 10) -> str:
    return (f"<@{user}> wants this — press *Run* to go ahead (the requester or an operator; "
            f"the button expires in {minutes:g} min).")


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


def state_failed(problem: str) -> str:
    return f":warning: rigops cannot use its state right now ({problem}); nothing was run. Try again shortly."
