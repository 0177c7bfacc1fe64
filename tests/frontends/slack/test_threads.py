"""Threads as Slack keeps them: rigops answers under a thread's top-level message, never under a reply (the
emulator refuses a reply's ts as thread_ts, as Slack's docs say never to pass one)."""

from __future__ import annotations

from pathlib import Path

from bot.text import messages
from slackemu import SlackEmulator
from tests.harness import OPS, make_config, running_bot
from tests.scenario import CANCEL_ACTION, RUN_ACTION, thread_text, wait_for_plan


async def test_a_button_pressed_again_is_answered_in_the_thread_of_its_message(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    config = make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}}}})
    async with running_bot(emulator, config, state_dir) as core:
        event = await emulator.send_message("kill the build", channel=OPS)
        root = str(event["ts"])
        plan = await wait_for_plan(emulator, OPS, root)
        assert plan.is_reply  # the Run button sits on a reply in the request's thread
        for action in (CANCEL_ACTION, RUN_ACTION):  # Run after Cancel: the request was already handled
            before = core.activity.finished
            await emulator.click(plan.ts, action, channel=OPS)
            await core.activity.wait_finished(before + 1)
    assert messages.ALREADY_HANDLED.format(state="cancelled") in thread_text(emulator, OPS, root)
    assert emulator.refused == []
