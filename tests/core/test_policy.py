"""Trust: roles from the [policy], who may press Run, expiring confirmations, auto-approval, the audit log,
one destructive action per build at a time, the rate limit, and a failing state — through the real bot."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.core.app import Core
from slackemu import SlackEmulator
from tests.fakes.tools import start_tool, stop
from tests.harness import OPS, make_config, running_bot
from tests.scenario import RUN_ACTION, has_buttons, thread_text
from tests.waiting import wait_until

VIEWER, OPERATOR, HOST_OP, ADMIN, GROUPIE = "U0VIEWER", "U0OPERATOR", "U0HOSTOP", "U0ADMIN", "U0GROUPIE"
CHANNEL_OP = "U0CHANOP"


def hosts(tmp_path: Path, **b200: Any) -> dict[str, Any]:
    build = {"workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}
    return {"b200": {"address": "local", "builds": {"sgl-kernel": build}, **b200},
            "h100": {"address": "local", "builds": {"sgl-kernel": build}}}


def policy(**extra: Any) -> dict[str, Any]:
    return {"operators": [OPERATOR, "S0GPUTEAM"], "admins": [ADMIN],
            "hosts": {"b200": {"operators": [HOST_OP]}}, "channels": {OPS: {"operators": [CHANNEL_OP]}}, **extra}


async def say(emu: SlackEmulator, core: Core, text: str, *, user: str, thread_ts: str | None = None) -> str:
    before = core.activity.finished
    event = await emu.send_message(text, channel=OPS, user=user, thread_ts=thread_ts)
    await core.activity.wait_finished(before + 1)
    return str(event["ts"])


async def press(emu: SlackEmulator, core: Core, ts: str, *, user: str, action: str = RUN_ACTION) -> None:
    before = core.activity.finished
    await emu.click(ts, action, channel=OPS, user=user)
    await core.activity.wait_finished(before + 1)


def plan_message(emu: SlackEmulator, root: str) -> str:
    return next(m.ts for m in emu.thread(OPS, root) if has_buttons(m))


def actions(core: Core) -> list[dict[str, Any]]:
    return [e for e in core.store.audit_entries(500) if e["what"] == "action"]


async def test_without_a_policy_slack_users_are_viewers(emulator: SlackEmulator, tmp_path: Path,
                                                        state_dir: Path) -> None:
    config = dataclasses.replace(make_config(hosts(tmp_path)), policy=None)
    async with running_bot(emulator, config, state_dir) as core:
        root = await say(emulator, core, "kill the build on b200", user=OPERATOR)
        assert "there is no [policy] in rigops' config" in thread_text(emulator, OPS, root)
        mem = await say(emulator, core, "free -h on b200", user=VIEWER)
        assert "Memory on b200" in thread_text(emulator, OPS, mem)
        ran = actions(core)
        assert len(ran) == 1 and '"action": "mem"' in ran[0]["detail"]


@pytest.mark.parametrize(("user", "host", "allowed"), [
    (VIEWER, "b200", False), (OPERATOR, "b200", True), (HOST_OP, "b200", True), (HOST_OP, "h100", False),
    (ADMIN, "h100", True), (GROUPIE, "h100", True), (CHANNEL_OP, "h100", True),
])
async def test_roles_decide_who_may_kill_where(emulator: SlackEmulator, tmp_path: Path, state_dir: Path,
                                               user: str, host: str, allowed: bool) -> None:
    emulator.add_usergroup("S0GPUTEAM", [GROUPIE])
    async with running_bot(emulator, make_config(hosts(tmp_path), policy=policy()), state_dir) as core:
        root = await say(emulator, core, f"kill the build on {host}", user=user)
        replies = emulator.thread(OPS, root)
        assert len(replies) == 1
        assert has_buttons(replies[0]) is allowed
        if not allowed:
            assert f"you are not an operator on {host}" in replies[0].text
            assert [e["what"] for e in core.store.audit_entries()] == ["denied", "request"]


async def test_only_the_requester_or_an_operator_may_press_run(emulator: SlackEmulator, tmp_path: Path,
                                                               state_dir: Path) -> None:
    async with running_bot(emulator, make_config(hosts(tmp_path), policy=policy()), state_dir) as core:
        root = await say(emulator, core, "kill the build on b200", user=HOST_OP)
        plan_ts = plan_message(emulator, root)
        await press(emulator, core, plan_ts, user=VIEWER)
        assert actions(core) == [] and has_buttons(emulator.message(OPS, plan_ts))
        note = emulator.ephemerals(OPS, user=VIEWER)
        assert note and "Only the requester or an operator of b200" in note[-1].text
        await press(emulator, core, plan_ts, user=OPERATOR)
        assert len(actions(core)) == 1 and actions(core)[0]["user"] == HOST_OP
        approved = [e for e in core.store.audit_entries() if e["what"] == "approved"]
        assert approved[0]["user"] == OPERATOR


async def test_a_confirmation_expires(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    config = make_config(hosts(tmp_path), policy=policy(confirm_timeout=600))
    async with running_bot(emulator, config, state_dir) as core:
        root = await say(emulator, core, "kill the build on b200", user=OPERATOR)
        plan_ts = plan_message(emulator, root)
        with sqlite3.connect(state_dir / "rigops.sqlite3") as db:  # the button was posted 11 minutes ago
            db.execute("UPDATE plans SET created_at = created_at - 660")
        await press(emulator, core, plan_ts, user=OPERATOR)
        message = emulator.message(OPS, plan_ts)
        assert "expired" in message.text and not has_buttons(message)
        assert actions(core) == []
        assert core.store.plan(1) is not None and core.store.plan(1).state == "expired"  # type: ignore[union-attr]


async def test_auto_approval_skips_the_button_for_that_role(emulator: SlackEmulator, tmp_path: Path,
                                                            state_dir: Path) -> None:
    config = make_config(hosts(tmp_path), policy=policy(hosts={"b200": {"operators": [HOST_OP],
                                                                        "auto_approve": ["operator"]}}))
    async with running_bot(emulator, config, state_dir) as core:
        root = await say(emulator, core, "kill the build on b200", user=HOST_OP)
        assert not any(has_buttons(m) for m in emulator.thread(OPS, root))
        assert len(actions(core)) == 1
        other = await say(emulator, core, "kill the build on h100", user=OPERATOR)
        assert any(has_buttons(m) for m in emulator.thread(OPS, other))


async def test_audit_log_is_for_admins(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, make_config(hosts(tmp_path), policy=policy(audit_channel="C0AUDIT")),
                           state_dir) as core:
        root = await say(emulator, core, "kill the build on b200", user=OPERATOR)
        await press(emulator, core, plan_message(emulator, root), user=OPERATOR)
        before = core.activity.finished
        await emulator.send_slash("audit 5", user=VIEWER)
        await core.activity.wait_finished(before + 1)
        assert "Only rigops admins" in emulator.ephemerals(OPS, user=VIEWER)[-1].text
        await emulator.send_slash("audit 5", user=ADMIN)
        await core.activity.wait_finished(before + 2)
        log = emulator.messages(OPS)[-1].text
        assert "*Audit log*" in log and "*action*" in log and "*approved*" in log and f"<@{OPERATOR}>" in log
        mirrored = [m.text for m in emulator.messages("C0AUDIT")]
        assert any(t.startswith("`action` by <@U0OPERATOR> on b200/sgl-kernel") for t in mirrored)


@pytest.mark.parametrize("second_user", [HOST_OP, OPERATOR])
async def test_one_destructive_action_per_build_at_a_time(emulator: SlackEmulator, tmp_path: Path,
                                                          state_dir: Path, fake_bin: Path, second_user: str) -> None:
    """Another person's stop while one runs is told who is at it; the same person's next one waits its turn."""
    stubborn = start_tool(fake_bin, "ninja", "-T", "4")  # ignores SIGTERM: the kill waits out its grace
    config = make_config(hosts(tmp_path, kill_grace=3), policy=policy())
    try:
        async with running_bot(emulator, config, state_dir) as core:
            first = await say(emulator, core, "kill the build on b200", user=OPERATOR)
            first_plan = plan_message(emulator, first)
            await emulator.click(first_plan, RUN_ACTION, channel=OPS, user=OPERATOR)
            await emulator.wait_for(lambda: ":hourglass_flowing_sand: stop" in emulator.message(OPS, first_plan).text)
            second = await say(emulator, core, "kill the build on b200", user=second_user)
            await press(emulator, core, plan_message(emulator, second), user=second_user)
            if second_user != OPERATOR:
                assert f"Already in progress, started by <@{OPERATOR}>" in thread_text(emulator, OPS, second)
                await core.activity.wait_finished(core.activity.finished + 1)
                assert len(actions(core)) == 1
                return
            await emulator.wait_for(lambda: ":white_check_mark: stop" in thread_text(emulator, OPS, second),
                                    timeout=30)  # it ran once the first was done
            assert "Already in progress" not in thread_text(emulator, OPS, second)
            assert ":white_check_mark: stop" in thread_text(emulator, OPS, first)
            assert len(actions(core)) == 2
    finally:
        stop(stubborn)


async def test_the_rate_limit_says_so_once(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, make_config(hosts(tmp_path), policy=policy(rate_limit=3)), state_dir) as core:
        roots = [await say(emulator, core, "free -h on b200", user=VIEWER) for _ in range(5)]
        texts = [thread_text(emulator, OPS, r) for r in roots]
        assert all("Memory on b200" in t for t in texts[:3])
        assert "Slow down" in texts[3] and texts[4] == ""


async def test_a_locked_state_is_reported_and_nothing_runs(emulator: SlackEmulator, tmp_path: Path,
                                                           state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.store.BUSY_TIMEOUT", 0.2)
    async with running_bot(emulator, make_config(hosts(tmp_path), policy=policy(), confirm=False),
                           state_dir) as core:
        blocker = sqlite3.connect(state_dir / "rigops.sqlite3", isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            root = await say(emulator, core, "kill the build on b200", user=OPERATOR)
            assert "cannot use its state right now" in thread_text(emulator, OPS, root)
            assert "nothing was run" in thread_text(emulator, OPS, root)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert actions(core) == []
        again = await say(emulator, core, "kill the build on b200", user=OPERATOR)
        wait_until(lambda: len(actions(core)) == 1, what="the kill once the state is back")
        assert "stop" in thread_text(emulator, OPS, again)


def test_rigops_sharing_a_state_hold_a_person_to_their_part_of_the_rate_limit() -> None:
    from bot.config import parse
    from bot.core.policy import Policy

    policy = Policy(parse({"hosts": {"b200": {"address": "local"}}, "policy": {"rate_limit": 10}}))
    assert [policy.over_rate_limit("U1", now=0.0) for _ in range(11)] == [False] * 10 + [True]
    policy.set_share(3)  # Slack spreads the person's requests over three rigops: each allows a third
    assert [policy.over_rate_limit("U2", now=0.0) for _ in range(5)] == [False] * 4 + [True]
