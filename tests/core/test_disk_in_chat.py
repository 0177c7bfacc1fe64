"""The disk look through the whole bot against the Slack emulator, on this machine and over SSH (the test sshd on
127.0.0.1, so the numbers are this machine's): asked in chat or with ``/rigops disk``, answered in the thread with
the filesystems of the build's workdir, its logs and rigops' state; across hosts as a row per host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from bot.core.app import Core
from slackemu import SlackEmulator
from tests.fakes.hosts import SshTable
from tests.harness import OPS, make_config, running_bot
from tests.scenario import thread_text


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
def host_table(request: pytest.FixtureRequest, build_user: str) -> dict[str, Any]:
    """b200 as this machine, or as the test sshd logged into as the build user."""
    if request.param == "local":
        return {"address": "local"}
    table: SshTable = request.getfixturevalue("ssh_table")
    return table()


def config(table: dict[str, Any], workdir: Path, **hosts: dict[str, Any]) -> Config:
    build = {"workdir": str(workdir), "command": "true", "log_dir": str(workdir / "logs")}
    return make_config({"b200": {**table, "builds": {"sgl-kernel": build}}, **hosts}, confirm=False)


async def say(emu: SlackEmulator, core: Core, text: str) -> str:
    """Say ``text`` in the ops channel, wait until the bot has dealt with it; what it said in the thread."""
    before = core.activity.finished
    event = await emu.send_message(text, channel=OPS)
    await core.activity.wait_finished(before + 1)
    return thread_text(emu, OPS, str(event["ts"]))


def df_percent(path: Path) -> int:
    """df's Use% of the filesystem holding ``path``."""
    fs = os.statvfs(path)
    used, free = fs.f_blocks - fs.f_bfree, fs.f_bavail
    return -(-100 * used // (used + free))


async def test_df_in_chat_shows_the_build_s_filesystems(emulator: SlackEmulator, host_table: dict[str, Any],
                                                       open_tmp: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config(host_table, open_tmp), state_dir) as core:
        for asked in ("df -h on b200", "how much disk is left on b200?", "is the disk full on b200?"):
            said = await say(emulator, core, asked)
            assert "*Disk on b200*" in said, asked
            line = next(ln for ln in said.splitlines() if f"workdir of `sgl-kernel` `{open_tmp}`" in ln)
            assert "% used)" in line and "free of" in line
            assert abs(int(line.split("(")[1].split("%")[0]) - df_percent(open_tmp)) <= 1  # as df says, give or take
            assert f"build logs of `sgl-kernel` `{open_tmp / 'logs'}` (not made yet)" in said
            assert "rigops' state `~/.local/state/rigops`" in said
        audit = [e for e in core.store.audit_entries(50) if e["what"] == "action"]
        assert len(audit) == 3 and all('"action": "disk"' in e["detail"] for e in audit)


async def test_the_slash_command_answers_too(emulator: SlackEmulator, host_table: dict[str, Any], open_tmp: Path,
                                             state_dir: Path) -> None:
    async with running_bot(emulator, config(host_table, open_tmp), state_dir) as core:
        before = core.activity.finished
        await emulator.send_slash("disk b200 sgl-kernel", channel=OPS)
        await core.activity.wait_finished(before + 1)
        said = "\n".join(m.text for m in emulator.messages(OPS))
        assert "*Disk on b200*" in said and f"workdir of `sgl-kernel` `{open_tmp}`" in said


async def test_asked_of_no_host_it_answers_for_every_host_a_row_each(
        emulator: SlackEmulator, host_table: dict[str, Any], open_tmp: Path, state_dir: Path) -> None:
    cfg = config(host_table, open_tmp, h100={"address": "local"})
    async with running_bot(emulator, cfg, state_dir) as core:
        said = await say(emulator, core, "how much disk is left?")
    assert "*disk on all* — 2 of 2 hosts answered" in said
    rows = [ln for ln in said.splitlines() if ln.startswith(("b200 ", "h100 "))]
    assert len(rows) == 2 and all("% used, " in row and " free" in row for row in rows)
