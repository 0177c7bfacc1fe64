"""Slack as it really is: an edited mention, forged clicks, another workspace's events, Slack Connect, events
nobody subscribed to, a command in backticks, and a slash command where rigops cannot tell whether it is in the
channel. Each runs through the real bolt stack in Socket Mode and in HTTP mode, where the emulator POSTs signed
requests and retries, as Slack does, whatever is not answered 2xx within 3 s."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from bot.config import Config
from bot.frontends.slack.app import RigopsApp
from bot.text import messages
from slackemu import SLACK_ACK_TIMEOUT, SlackEmulator
from tests.harness import HUMAN, OPS, make_config, running_app, running_http_app
from tests.scenario import RUN_ACTION, thread_text, wait_done, wait_for_plan

ELSEWHERE = "C0ELSE"  # a channel rigops is in that is not an ops channel: only mentions are read there
Running = Callable[[SlackEmulator, Config, Path], AbstractAsyncContextManager[RigopsApp]]


def config(tmp_path: Path) -> Config:
    return make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}}}})


@pytest.fixture(params=["socket", "http"])
def running(request: pytest.FixtureRequest) -> Running:
    return running_app if request.param == "socket" else running_http_app  # type: ignore[return-value]


@pytest.fixture
async def slack() -> AsyncIterator[SlackEmulator]:
    async with SlackEmulator(ack_timeout=SLACK_ACK_TIMEOUT) as emu:  # Slack's 3 s: a slow ack is retried
        emu.add_channel(ELSEWHERE, "random")
        yield emu
    assert not emu.unescaped, f"mrkdwn with &, < or > unescaped: {emu.unescaped}"


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def delivered_cleanly(emu: SlackEmulator) -> None:
    """Every envelope answered 2xx (HTTP) or acked (Socket Mode) at the first try: rigops caused no retry."""
    if emu.http is not None:
        assert [(d.type, d.status, d.reason) for d in emu.http.failures] == []
        assert emu.http.retries == [] and not emu.http.disabled
    else:
        assert [e.type for e in emu.envelopes.values() if emu.ack_for(e.envelope_id) is None] == []
        assert [e.envelope_id for e in emu.envelopes.values() if e.retry_attempt] == []
    assert emu.abandoned == []


async def settled(emu: SlackEmulator, app: RigopsApp, handed_over: int) -> None:
    """Wait until every envelope sent so far was answered, and the core has dealt with ``handed_over`` of them."""
    def answered() -> bool:
        if emu.http is not None:
            return {d.envelope_id for d in emu.http.deliveries} >= set(emu.envelopes)
        return all(emu.ack_for(eid) is not None for eid in emu.envelopes)

    await emu.wait_for(answered, timeout=20)
    await app.core.activity.wait_finished(handed_over)


async def test_an_edited_mention_is_answered_once(slack: SlackEmulator, running: Running, tmp_path: Path,
                                                  state_dir: Path) -> None:
    async with running(slack, config(tmp_path), state_dir) as app:
        event = await slack.send_mention("free -h", channel=ELSEWHERE)
        assert await wait_done(slack, ELSEWHERE, str(event["ts"])) == "white_check_mark"
        await slack.edit_message(ELSEWHERE, str(event["ts"]), f"<@{slack.bot_user_id}> free -h please")
        # the mention, its message event, the edit's message_changed and its second app_mention
        await settled(slack, app, 4)
        assert slack.envelopes and sum(e.payload["event"]["type"] == "app_mention"
                                       for e in slack.envelopes.values()) == 2
        assert len([m for m in slack.thread(ELSEWHERE, str(event["ts"])) if "Memory on rig" in m.text]) == 1
    delivered_cleanly(slack)


FORGED = [
    ("rigops_run", "99999999999999999999"),  # past SQLite's 64-bit integers
    ("rigops_run", "²"),  # a digit to str.isdigit(), not to int()
    ("rigops_run", "０"),
    ("rigops_cancel", "-1"),
    ("rigops_run", ""),
    ("rigops_run", None),
    ("rigops_run", 7),  # not a string at all
    ("rigops_retry", "1e5"),
    ("rigops_retry_half", "1:²"),
    ("rigops_oom_restart", "1:0"),
    ("rigops_oom_restart", "1:1025"),
    ("rigops_oom_restart", "1:-3"),
    ("rigops_pick", "1:../../etc/passwd"),
    ("rigops_pick", "1:`rm -rf /`"),
    ("rigops_show_log", "1:2:3"),
    ("rigops_oom_pause", "x" * 5000),
]


async def test_a_forged_button_value_gets_a_polite_refusal(slack: SlackEmulator, running: Running,
                                                           tmp_path: Path, state_dir: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with running(slack, config(tmp_path), state_dir) as app:
        for n, (action_id, value) in enumerate(FORGED, start=1):
            await slack.send_action(action_id, value, channel=OPS)
            await settled(slack, app, n)
        await slack.send_action("rigops_self_destruct", "1", channel=OPS)
        await slack.send_action("approve", "1", channel=OPS)
        await settled(slack, app, len(FORGED) + 2)
    told = [m.text for m in slack.ephemerals(OPS, user=HUMAN)]
    assert told.count(messages.FORGED_PRESS) == len(FORGED)
    assert told.count(messages.UNKNOWN_CHOICE) == 2
    assert slack.messages(OPS) == []  # nothing happened in the channel
    assert tracebacks(caplog) == []
    delivered_cleanly(slack)


async def test_a_real_run_button_still_runs(slack: SlackEmulator, running: Running, tmp_path: Path,
                                            state_dir: Path) -> None:
    async with running(slack, config(tmp_path), state_dir):
        event = await slack.send_message("kill the build on rig", channel=OPS)
        plan = await wait_for_plan(slack, OPS, str(event["ts"]))
        await slack.click(plan.ts, RUN_ACTION, channel=OPS)
        assert await wait_done(slack, OPS, str(event["ts"])) == "white_check_mark"
    delivered_cleanly(slack)


async def test_another_installations_event_is_ignored_and_slack_connect_is_answered(
        slack: SlackEmulator, running: Running, tmp_path: Path, state_dir: Path) -> None:
    async with running(slack, config(tmp_path), state_dir) as app:
        await slack.send_foreign_mention("free -h", channel=ELSEWHERE)
        connect = await slack.send_connect_mention("free -h", channel=ELSEWHERE)
        assert await wait_done(slack, ELSEWHERE, str(connect["ts"])) == "white_check_mark"
        await settled(slack, app, 1)
    replies = [m for m in slack.messages(ELSEWHERE) if m.user == slack.bot_user_id]
    assert [m.thread_ts for m in replies] == [connect["ts"]]  # one answer, to the partner; none to the stranger
    assert "Memory on rig" in replies[0].text
    assert [c for c in slack.calls_to("reactions.add") if c.params.get("timestamp") != connect["ts"]] == []
    delivered_cleanly(slack)


async def test_events_nobody_listens_to_get_a_2xx(slack: SlackEmulator, running: Running, tmp_path: Path,
                                                  state_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with running(slack, config(tmp_path), state_dir) as app:
        event = await slack.send_message("morning all", channel=OPS)
        await slack.send_reaction(OPS, str(event["ts"]), "coffee")
        await slack.send_app_rate_limited()
        await slack.send_event({"type": "team_join", "user": {"id": "U0NEW", "name": "new"},
                                "event_ts": "1700000500.000100"})
        await settled(slack, app, 1)
    assert [r.getMessage() for r in caplog.records if "rate-limited" in r.getMessage()]
    assert tracebacks(caplog) == []
    delivered_cleanly(slack)


async def test_a_command_in_backticks_in_a_mention_is_read(slack: SlackEmulator, running: Running,
                                                           tmp_path: Path, state_dir: Path) -> None:
    async with running(slack, config(tmp_path), state_dir):
        event = await slack.send_mention("`free -h`", channel=ELSEWHERE)
        assert await wait_done(slack, ELSEWHERE, str(event["ts"])) == "white_check_mark"
        assert "Memory on rig" in thread_text(slack, ELSEWHERE, str(event["ts"]))
    delivered_cleanly(slack)


async def test_a_slash_answer_refused_by_slack_reaches_the_person_privately(
        running: Running, tmp_path: Path, state_dir: Path) -> None:
    """Without channels:read, rigops cannot tell it was never invited: its post is refused (not_in_channel), and
    the answer goes to the person through the command's response_url instead of nowhere."""
    scopes = tuple(s for s in SlackEmulator().scopes if s not in ("channels:read", "groups:read"))
    async with SlackEmulator(scopes=scopes) as emu:
        emu.add_channel("C0NEVER", "general", bot_member=False)
        async with running(emu, config(tmp_path), state_dir) as app:
            await emu.send_slash("mem", channel="C0NEVER")
            await settled(emu, app, 1)
            private = "\n".join(m.text for m in emu.ephemerals("C0NEVER", user=HUMAN))
            assert "Memory on rig" in private and "only you see this" in private
            assert [c.response.get("error") for c in emu.calls_to("chat.postMessage") if c.response] == [
                "not_in_channel"]
            await emu.send_slash("status", channel="C0NEVER")  # the next one goes privately at once
            await settled(emu, app, 2)
            assert len(emu.calls_to("chat.postMessage")) == 1
            assert "only you see this" not in emu.ephemerals("C0NEVER", user=HUMAN)[-1].text
        delivered_cleanly(emu)


Send = Callable[[SlackEmulator], Awaitable[Any]]


async def _a_real_click(emu: SlackEmulator) -> None:
    event = await emu.send_message("kill the build on rig", channel=OPS)
    plan = await wait_for_plan(emu, OPS, str(event["ts"]))
    await emu.click(plan.ts, "rigops_cancel", channel=OPS)


# Every payload shape the emulator can send, with the handovers to the core each makes (for waiting on them).
CATALOGUE: list[tuple[str, Send, int]] = [
    ("message", lambda e: e.send_message("status", channel=OPS), 1),
    ("message in a thread", lambda e: e.send_message("free -h", channel=OPS, thread_ts="1700000000.000100"), 1),
    ("chatter", lambda e: e.send_message("lunch?", channel=OPS), 1),
    ("message elsewhere", lambda e: e.send_message("status", channel=ELSEWHERE), 1),
    ("mention", lambda e: e.send_mention("status", channel=ELSEWHERE), 2),
    ("mention in an ops channel", lambda e: e.send_mention("free -h", channel=OPS), 2),
    ("slash command", lambda e: e.send_slash("help"), 1),
    ("slash command nobody understands", lambda e: e.send_slash("¯\\_(ツ)_/¯ <@U0X> &amp;"), 1),
    ("empty slash command", lambda e: e.send_slash(""), 1),
    ("another command name", lambda e: e.send_slash("mem", command="/rigops-staging"), 1),
    ("a click", _a_real_click, 2),
    ("forged click", lambda e: e.send_action("rigops_run", "²", channel=OPS), 1),
    ("unknown action", lambda e: e.send_action("something_else", "1", channel=OPS), 1),
    ("edit", lambda e: _edit(e), 3),
    ("reaction", lambda e: e.send_reaction(OPS, "1700000000.000100"), 0),
    ("app_rate_limited", lambda e: e.send_app_rate_limited(), 0),
    ("another installation", lambda e: e.send_foreign_mention("kill the build"), 0),
    ("slack connect", lambda e: e.send_connect_mention("status", channel=ELSEWHERE), 1),
    ("app home", lambda e: e.send_event({"type": "app_home_opened", "user": HUMAN, "channel": "D0HUMAN",
                                         "tab": "home", "event_ts": "1700000600.000100"}), 0),
    ("a join", lambda e: e.send_event({"type": "message", "subtype": "channel_join", "user": "U0NEW",
                                       "channel": OPS, "ts": "1700000700.000100", "text": "joined"}), 1),
    ("a bot's message", lambda e: e.send_event({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER",
                                                "channel": OPS, "ts": "1700000800.000100", "text": "kill it"}), 1),
    ("a deletion", lambda e: e.send_event({"type": "message", "subtype": "message_deleted", "hidden": True,
                                           "channel": OPS, "ts": "1700000900.000100",
                                           "deleted_ts": "1700000000.000100"}), 1),
    ("member joined", lambda e: e.send_event({"type": "member_joined_channel", "user": "U0NEW", "channel": OPS,
                                              "event_ts": "1700001000.000100"}), 0),
    ("a modal submitted", lambda e: e.send_raw("interactive", {
        "type": "view_submission", "team": {"id": e.team_id}, "user": {"id": HUMAN}, "api_app_id": e.app_id,
        "view": {"id": "V0X", "type": "modal", "callback_id": "nothing_of_ours", "state": {"values": {}}}}), 0),
    ("a shortcut", lambda e: e.send_raw("interactive", {
        "type": "shortcut", "callback_id": "not_ours", "team": {"id": e.team_id}, "user": {"id": HUMAN},
        "trigger_id": "1.2", "action_ts": "1700001100.000100"}), 0),
    ("a message shortcut", lambda e: e.send_raw("interactive", {
        "type": "message_action", "callback_id": "not_ours", "team": {"id": e.team_id}, "user": {"id": HUMAN},
        "channel": {"id": OPS}, "message": {"ts": "1700000000.000100", "text": "x"}, "trigger_id": "1.3"}), 0),
    ("options", lambda e: e.send_raw("interactive", {
        "type": "block_suggestion", "action_id": "x", "block_id": "y", "value": "a", "team": {"id": e.team_id},
        "user": {"id": HUMAN}}), 0),
    ("an event with garbage ids", lambda e: e.send_event({"type": "app_mention", "user": "x y", "channel": "<>",
                                                          "ts": "soon", "text": "kill"}), 1),
    ("an event of no known type", lambda e: e.send_event({"type": "future_event_2031", "x": 1}), 0),
]


async def _edit(emu: SlackEmulator) -> None:
    event = await emu.send_message("status", channel=OPS)
    await emu.edit_message(OPS, str(event["ts"]), f"<@{emu.bot_user_id}> free -h")


async def test_every_payload_shape_is_answered_2xx_and_logs_no_traceback(
        slack: SlackEmulator, running: Running, tmp_path: Path, state_dir: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    slack.add_channel("C0DUMMY", "dummy")
    async with running(slack, config(tmp_path), state_dir) as app:
        handed = 0
        for _name, send, handovers in CATALOGUE:
            await send(slack)
            handed += handovers
            await settled(slack, app, handed)
    assert len(slack.envelopes) >= len(CATALOGUE)
    assert tracebacks(caplog) == []
    delivered_cleanly(slack)


LOG_LINES = ["x.cu:1:10: fatal error: <cuda_runtime.h>: No such file or directory",
             "make: *** [all] Error 1 && <!channel> & <https://example.invalid|click me> a -> b"]


async def test_a_log_with_angle_brackets_and_ampersands_reads_as_it_is(slack: SlackEmulator, running: Running,
                                                                       tmp_path: Path) -> None:
    """A build's own text (a log's `#include <x.h>`, `&&`, a `<!channel>` or a link in its output) is escaped for
    Slack: a person reads it as the build wrote it, nobody is notified, nothing becomes a link."""
    script = tmp_path / "build.sh"
    script.write_text("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in LOG_LINES) + "exit 2\n")
    script.chmod(0o755)
    conf = make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": str(script), "log_dir": str(tmp_path / "logs")}}}}, confirm=False)
    async with running(slack, conf, tmp_path / "state") as app:
        event = await slack.send_message("rebuild app on rig -j2", channel=OPS, user=HUMAN)
        await wait_done(slack, OPS, str(event["ts"]))
        await slack.wait_for(lambda: app.core.store.runs() and app.core.store.runs()[0].ended_at, timeout=30)
        before = app.core.activity.finished
        look = await slack.send_message("last 5 lines of the app log on rig", channel=OPS, user=HUMAN)
        await app.core.activity.wait_finished(before + 1)
        shown = await slack.wait_for(lambda: "<cuda_runtime.h>" in (t := thread_text(slack, OPS, str(look["ts"])))
                                     and t, timeout=20)
    for line in LOG_LINES:
        assert line in shown, shown
    raw = "\n".join(m.text for m in slack.thread(OPS, str(look["ts"])))
    assert "<!channel>" not in raw and "&lt;!channel&gt;" in raw and "&amp;&amp;" in raw
