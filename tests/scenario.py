"""Helpers for scenario tests: read a thread the way a person would, and wait for the bot to finish."""

from __future__ import annotations

from pathlib import Path

from bot.frontends.slack.blocks import ACTION_PREFIX
from slackemu import Message, SlackEmulator, text_of

# The action ids of rigops' buttons, as Slack sends them back
RUN_ACTION, CANCEL_ACTION = ACTION_PREFIX + "run", ACTION_PREFIX + "cancel"
RETRY_ACTION, RETRY_HALF_ACTION, SHOW_LOG_ACTION = (ACTION_PREFIX + k for k in ("retry", "retry_half", "show_log"))
RESTART_ACTION, PAUSE_ACTION, IGNORE_ACTION, RESUME_ACTION = (
    ACTION_PREFIX + k for k in ("oom_restart", "oom_pause", "oom_ignore", "oom_resume"))


def thread_text(emu: SlackEmulator, channel: str, thread_ts: str) -> str:
    return "\n".join(text_of(m) for m in emu.thread(channel, thread_ts))


def has_buttons(message: Message) -> bool:
    return any(b.get("type") == "actions" for b in message.blocks)


async def wait_for_plan(emu: SlackEmulator, channel: str, thread_ts: str, *, timeout: float = 20) -> Message:
    """The reply that carries Run / Cancel buttons."""
    def find() -> Message | None:
        return next((m for m in emu.thread(channel, thread_ts) if has_buttons(m)), None)

    found: Message = await emu.wait_for(find, timeout=timeout)
    return found


async def wait_done(emu: SlackEmulator, channel: str, ts: str, *, timeout: float = 60) -> str:
    """Wait for the bot's final reaction on the request (✓ or ✗); returns which."""
    def reacted() -> str | None:
        marks = emu.reactions(channel, ts) & {"white_check_mark", "x"}
        return next(iter(marks), None)

    mark: str = await emu.wait_for(reacted, timeout=timeout)
    return mark


async def run_confirmed(emu: SlackEmulator, text: str, *, channel: str, user: str = "U0HUMAN",
                        thread_ts: str | None = None, timeout: float = 60) -> tuple[str, str]:
    """Say ``text``, press Run on the plan, wait until it is done; returns (thread ts, final mark)."""
    event = await emu.send_message(text, channel=channel, user=user, thread_ts=thread_ts)
    root = thread_ts or str(event["ts"])
    plan = await wait_for_plan(emu, channel, root)
    await emu.click(plan.ts, RUN_ACTION, channel=channel, user=user)
    return root, await wait_done(emu, channel, str(event["ts"]), timeout=timeout)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
