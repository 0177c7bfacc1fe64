"""``#channel`` as people type it: Slack escapes it (the manifest says so) into ``<#C…|name>``; an app set up
before that still gets the plain ``#name``, which rigops looks up among the channels it can see."""

from __future__ import annotations

from pathlib import Path

from bot.config import Config
from bot.core.app import Core
from slackemu import SlackEmulator
from tests.harness import ADMIN, OPS, make_config, running_app

GPU_OPS = "C0GPUOPS"
README_EXAMPLE = 'schedule add "0 9 * * 1-5" all #gpu-ops'


def config() -> Config:
    return make_config({"rig": {"address": "local"}})


async def schedule(emu: SlackEmulator, core: Core, text: str) -> str:
    before = core.activity.finished
    await emu.send_slash(text, channel=OPS, user=ADMIN)
    await core.activity.wait_finished(before + 1)
    return emu.messages(OPS)[-1].text


async def test_the_readme_example_schedules_a_digest_in_the_channel_typed(emulator: SlackEmulator,
                                                                           state_dir: Path) -> None:
    emulator.add_channel(GPU_OPS, "gpu-ops")
    async with running_app(emulator, config(), state_dir) as app:
        answer = await schedule(emulator, app.core, README_EXAMPLE)
    [sent] = [e.payload["text"] for e in emulator.envelopes.values() if e.type == "slash_commands"]
    assert sent == 'schedule add "0 9 * * 1-5" all <#C0GPUOPS|gpu-ops>'  # what Slack sends, escaping on
    assert answer.startswith(f":alarm_clock: Schedule `1`: a status digest of all hosts in <#{GPU_OPS}>")


async def test_a_channel_name_sent_as_plain_text_is_looked_up(emulator: SlackEmulator, state_dir: Path) -> None:
    emulator.escape_slash = False  # an app whose slash command was set up before escaping was turned on
    emulator.add_channel(GPU_OPS, "gpu-ops")
    emulator.add_channel("G0BUILDS", "builds", is_private=True)
    emulator.add_channel("G0HIDDEN", "hidden", is_private=True, bot_member=False)
    for i in range(120):  # more than one page of conversations.list at a time
        emulator.add_channel(f"C0X{i:04d}", f"other-{i}")
    async with running_app(emulator, config(), state_dir) as app:
        public = await schedule(emulator, app.core, README_EXAMPLE)
        private = await schedule(emulator, app.core, 'schedule add "every 30m" rig #builds')
        hidden = await schedule(emulator, app.core, 'schedule add "every 30m" rig #hidden')
        missing = await schedule(emulator, app.core, 'schedule add "every 30m" rig #nowhere')
        runner = app.core.schedules.runner
        assert runner is not None and [s.channel for s in runner.list()] == [GPU_OPS, "G0BUILDS"]
    assert f"a status digest of all hosts in <#{GPU_OPS}>" in public
    assert "a status digest of rig in <#G0BUILDS>" in private
    for answer, name in ((hidden, "hidden"), (missing, "nowhere")):
        assert answer.startswith(f":no_entry: I see no channel #{name}") and "`/invite @rigops`" in answer


async def test_people_and_groups_arrive_as_slack_escapes_them(emulator: SlackEmulator) -> None:
    emulator.add_user("U0ANN", "ann")
    emulator.add_usergroup("S0GPUTEAM", ["U0ANN"], handle="gpu-team")
    emulator.add_channel(GPU_OPS, "gpu-ops")
    escaped = await emulator.send_slash("ask @ann and @gpu-team in #gpu-ops, see https://x.example/a?b&c @here")
    emulator.escape_slash = False
    plain = await emulator.send_slash("ask <@U0ANN|ann> and <!subteam^S0GPUTEAM|@gpu-team> in <#C0GPUOPS|gpu-ops>")
    assert emulator.envelopes[escaped].payload["text"] == (
        "ask <@U0ANN|ann> and <!subteam^S0GPUTEAM|@gpu-team> in <#C0GPUOPS|gpu-ops>, see "
        "<https://x.example/a?b&amp;c> <!here>")
    assert emulator.envelopes[plain].payload["text"] == "ask @ann and @gpu-team in #gpu-ops"
