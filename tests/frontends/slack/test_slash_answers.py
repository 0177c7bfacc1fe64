"""A slash command always gets an answer, also where rigops was never invited: read-only answers privately
(through the command's response_url), requests that need a thread carry on in a DM, schedules refuse a channel
rigops cannot post in and tell their creator when a post fails."""

from __future__ import annotations

from pathlib import Path

from bot.core.app import Core
from slackemu import SlackEmulator
from tests.harness import ADMIN, HUMAN, OPS, make_config, running_app, running_bot
from tests.scenario import CANCEL_ACTION, has_buttons

OUTSIDE = "C0OUTSIDE"  # a public channel rigops was never invited to
SECRET = "G0SECRET"  # a private one


def config(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}}}})


async def slash(emu: SlackEmulator, core: Core, text: str, *, channel: str, user: str = HUMAN) -> None:
    before = core.activity.finished
    await emu.send_slash(text, channel=channel, user=user)
    await core.activity.wait_finished(before + 1)


async def test_a_read_only_command_in_a_channel_rigops_is_not_in_answers_privately(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    emulator.add_channel(OUTSIDE, "general", bot_member=False)
    async with running_bot(emulator, config(tmp_path), state_dir) as core:
        await slash(emulator, core, "mem", channel=OUTSIDE)
    assert emulator.messages(OUTSIDE) == []  # Slack would have refused any post there
    private = "\n".join(m.text for m in emulator.ephemerals(OUTSIDE, user=HUMAN))
    assert "Memory on rig" in private and "total" in private  # the answer itself
    assert "/invite @rigops" in private  # and how to get answers in the channel


async def test_a_kill_in_a_private_channel_moves_to_a_dm_and_is_answered_there(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    emulator.add_channel(SECRET, "secret", is_private=True, bot_member=False)
    async with running_bot(emulator, config(tmp_path), state_dir) as core:
        await slash(emulator, core, "kill rig app", channel=SECRET)
        assert emulator.messages(SECRET) == []
        assert "taken it to our DM" in "\n".join(m.text for m in emulator.ephemerals(SECRET, user=HUMAN))
        dm = "D" + HUMAN[1:]
        plan = next(m for m in emulator.messages(dm) if has_buttons(m))
        before = core.activity.finished
        await emulator.click(plan.ts, CANCEL_ACTION, channel=dm, user=HUMAN)  # the buttons work there
        await core.activity.wait_finished(before + 1)
        assert "Cancelled by <@U0HUMAN>" in emulator.message(dm, plan.ts).text
        assert core.store.plan(1) is not None and core.store.plan(1).state == "cancelled"  # type: ignore[union-attr]


async def test_schedules_refuse_a_channel_rigops_cannot_post_in(emulator: SlackEmulator, state_dir: Path,
                                                                  tmp_path: Path) -> None:
    emulator.add_channel(OUTSIDE, "general", bot_member=False)
    async with running_app(emulator, config(tmp_path), state_dir) as app:
        await slash(emulator, app.core, f'schedule add "every 30m" all <#{OUTSIDE}|general>', channel=OPS,
                    user=ADMIN)
        answer = emulator.messages(OPS)[-1].text
        assert "I'm not in <#C0OUTSIDE>" in answer and "/invite @rigops" in answer
        assert app.core.schedules.runner is not None and app.core.schedules.runner.list() == []


async def test_a_scheduled_post_that_fails_is_told_to_its_creator_and_listed(
        emulator: SlackEmulator, state_dir: Path, tmp_path: Path) -> None:
    emulator.add_channel("C0DIGEST", "digest")
    async with running_app(emulator, config(tmp_path), state_dir) as app:
        await slash(emulator, app.core, 'schedule add "every 30m" all <#C0DIGEST|digest>', channel=OPS, user=ADMIN)
        emulator.remove_bot("C0DIGEST")  # someone removed rigops from the channel
        runner = app.core.schedules.runner
        assert runner is not None
        await runner.run("1")
        await runner.run("1")
        dm = "D" + ADMIN[1:]
        told = [m.text for m in emulator.messages(dm)]
        assert len(told) == 1 and "could not go out" in told[0] and "/invite @rigops" in told[0]  # told once
        await slash(emulator, app.core, "schedule list", channel=OPS, user=ADMIN)
        assert "the last post failed: I'm not in <#C0DIGEST>" in emulator.messages(OPS)[-1].text
        emulator.invite("C0DIGEST")  # a post after the invite clears the error
        await runner.run("1")
        assert [m for m in emulator.messages("C0DIGEST") if m.text.startswith("rigops status")]
        assert runner.get("1") is not None and runner.get("1").last_error is None  # type: ignore[union-attr]
