"""Chat behaviour through the real bolt stack and the emulator: bad input, chatter, duplicates, threads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core.app import Core
from bot.language.commands import step_names
from slackemu import SlackEmulator
from tests.harness import OPS, make_config, running_bot
from tests.scenario import RUN_ACTION, has_buttons, thread_text, wait_done, wait_for_plan


def config_with_build(workdir: Path, *, confirm: bool = True, command: str = "true"):  # type: ignore[no-untyped-def]
    return make_config({"b200": {"address": "local", "builds": {"sgl-kernel": {
        "workdir": str(workdir), "command": command, "log_dir": str(workdir / "logs")}}},
        "h100": {"address": "local"}}, confirm=confirm)


def actions_run(core: Core) -> list[dict[str, object]]:
    """Audit entries of actions that ran (each is written before its action runs)."""
    return [e for e in core.store.audit_entries(500) if e["what"] == "action"]


async def say(emu: SlackEmulator, core: Core, text: str, **kw: object) -> dict[str, object]:
    """Send a message and wait until the bot has dealt with it (replied or stayed silent)."""
    before = core.activity.finished
    event = await emu.send_message(text, channel=kw.pop("channel", OPS), **kw)  # type: ignore[arg-type]
    await core.activity.wait_finished(before + 1)
    return event


@pytest.mark.parametrize(("text", "error"), [
    ("rebuild sgl-kernel on b200 -j0", "-j0: jobs must be between 1 and 1024"),
    ("retry sgl-kernel on b200 with -j-4", "jobs must be between 1 and 1024"),
    ("oom-ing on b200, try -j100000", "jobs must be between 1 and 1024"),
    ("how's memory on h200?", "unknown host 'h200'"),
])
async def test_refused_requests_get_a_clear_reply_and_run_nothing(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path, text: str, error: str) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        event = await say(emulator, core, text)
        replies = emulator.thread(OPS, str(event["ts"]))
        assert len(replies) == 1 and error in replies[0].text
        assert not has_buttons(replies[0])
        assert actions_run(core) == [] and core.store.runs() == []


HOSTILE = [
    "rebuild sgl-kernel on b200 -j2; rm -rf / ; touch {canary}",
    "rebuild sgl-kernel on b200 -j2 $(touch {canary})",
    "rebuild sgl-kernel on b200 -j2 `touch {canary}`",
    "rebuild sgl-kernel on b200 -j2 | sh -c 'touch {canary}'",
    "rebuild sgl-kernel on b200 -j'2; touch {canary}'",
    'rebuild "sgl-kernel; touch {canary}" on b200 -j2',
    "rebuild sgl-kernel on b200 -j2 && touch {canary} # MAX_JOBS=$(touch {canary})",
]


async def test_hostile_text_never_reaches_a_shell(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    canary = tmp_path / "pwned"
    config = config_with_build(tmp_path, confirm=False, command=f"echo built-with-$MAX_JOBS >> {tmp_path}/ran")
    async with running_bot(emulator, config, state_dir) as core:
        for text in HOSTILE:
            event = await say(emulator, core, text.format(canary=canary))
            thread = thread_text(emulator, OPS, str(event["ts"]))
            assert "canary" not in thread and "pwned" not in thread
        await say(emulator, core, "x" * 200_000 + " rebuild -j3 $(touch " + str(canary) + ")")
        event = await say(emulator, core, "how's memory on b200?")
        assert "Memory on b200" in thread_text(emulator, OPS, str(event["ts"]))
        runs = core.store.runs()
        audit = core.store.audit_entries(100)
    for run in runs:
        assert run.build == "sgl-kernel" and run.host == "b200" and run.jobs is not None and 1 <= run.jobs <= 1024
    for entry in audit:
        assert entry["host"] in (None, "b200", "h100") and entry["build"] in (None, "sgl-kernel")
    assert not canary.exists()
    ran = (tmp_path / "ran").read_text().split() if (tmp_path / "ran").exists() else []
    assert ran and set(ran) == {"built-with-2"}


async def test_chatter_is_ignored_and_a_mention_that_is_not_understood_gets_help(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        for text in ("lunch?", "I killed it at the talk yesterday", "the status meeting moved to 3"):
            event = await say(emulator, core, text)
            assert emulator.thread(OPS, str(event["ts"])) == []
        event = await say(emulator, core, "free -h on b200", channel="C0RANDOM")
        assert emulator.thread("C0RANDOM", str(event["ts"])) == []  # not an ops channel
        before = core.activity.finished
        mention = await emulator.send_mention("what's the weather like?", channel="C0RANDOM")
        await core.activity.wait_finished(before + 1)
        await emulator.wait_for(lambda: emulator.thread("C0RANDOM", str(mention["ts"])))
        assert "/rigops help" in emulator.thread("C0RANDOM", str(mention["ts"]))[0].text


async def test_a_request_put_as_a_supposition_to_rigops_is_offered_not_run(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    """Said to rigops, "maybe we could look at memory on b200" is neither run on a guess nor ignored: it is
    offered with Run and Cancel, and runs when Run is pressed. A negation gets the short help, never an offer."""
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        before = core.activity.finished
        mention = await emulator.send_mention("maybe we could check memory on b200", channel=OPS)
        root = str(mention["ts"])
        offer = await wait_for_plan(emulator, OPS, root)
        assert "*Did you mean this?*" in offer.text and "memory" in offer.text, offer.text
        assert actions_run(core) == []
        await emulator.click(offer.ts, RUN_ACTION, channel=OPS, user="U0HUMAN")
        await emulator.wait_for(lambda: "available" in thread_text(emulator, OPS, root), timeout=30)
        assert [json.loads(e["detail"])["step"]["action"] for e in actions_run(core)] == ["mem"]
        counted = core.services.metrics.registry.get_sample_value
        assert counted("rigops_requests_total", {"kind": "message", "action": "mem", "outcome": "asked"}) == 1
        await emulator.wait_for(lambda: counted(  # counted once the press's work is over
            "rigops_requests_total", {"kind": "press", "action": "run", "outcome": "done"}) == 1, timeout=20)

        await core.activity.wait_finished(before + 2)
        no = await emulator.send_mention("don't kill the sgl-kernel build on b200", channel=OPS)
        await emulator.wait_for(lambda: emulator.thread(OPS, str(no["ts"])), timeout=20)
        replies = emulator.thread(OPS, str(no["ts"]))
        assert "/rigops help" in replies[0].text and not any(has_buttons(m) for m in replies)
        await emulator.wait_for(lambda: counted(
            "rigops_requests_total", {"kind": "message", "action": "none", "outcome": "ignored"}) == 1, timeout=20)


async def test_a_mention_anywhere_is_answered_once(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        before = core.activity.finished
        mention = await emulator.send_mention("how's memory on b200?", channel=OPS)
        await core.activity.wait_finished(before + 2)  # Slack sends app_mention and message
        replies = emulator.thread(OPS, str(mention["ts"]))
        assert len(replies) == 1 and "Memory on b200" in replies[0].text


async def test_redelivered_events_run_once(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        event = await say(emulator, core, "kill the build on b200")
        first = list(emulator.envelopes.values())[-1].payload
        before = core.activity.finished
        for attempt in (1, 2):
            await emulator.send_event(dict(event), event_id=str(first["event_id"]), retry_attempt=attempt,
                                      retry_reason="timeout")
        await core.activity.wait_finished(before + 2)
        replies = emulator.thread(OPS, str(event["ts"]))
        assert len(replies) == 1 and has_buttons(replies[0])
        assert emulator.reactions(OPS, str(event["ts"])) == {"eyes"}
        assert actions_run(core) == []
        assert [e["what"] for e in core.store.audit_entries()] == ["request"]


async def test_edits_bot_posts_and_joins_are_ignored(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        before = core.activity.finished
        await emulator.send_event({"type": "message", "subtype": "message_changed", "channel": OPS,
                                   "ts": "1800000001.000100", "message": {"text": "kill the build on b200",
                                                                           "user": "U0HUMAN"}})
        await emulator.send_event({"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "channel": OPS,
                                   "text": "kill the build on b200", "ts": "1800000002.000100"})
        await emulator.send_event({"type": "message", "channel": OPS, "user": "U0OTHER", "bot_id": "B0OTHER",
                                   "text": "free -h on b200", "ts": "1800000003.000100"})
        await core.activity.wait_finished(before + 3)
        assert [c.method for c in emulator.calls if c.method.startswith(("chat.", "reactions."))] == []


async def test_a_thread_remembers_its_host_and_build(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        first = await say(emulator, core, "how's memory on b200?")
        root = str(first["ts"])
        await say(emulator, core, "try -j12", thread_ts=root)
        plan_msgs = [m for m in emulator.thread(OPS, root) if has_buttons(m)]
        assert len(plan_msgs) == 1
        assert "*b200* · `sgl-kernel`" in plan_msgs[0].text and "-j12" in plan_msgs[0].text
        pending = core.store.plan(1)
        assert pending is not None and pending.plan.host == "b200" and pending.plan.build == "sgl-kernel"
        assert {s.action for s in pending.plan.steps} <= set(step_names())


async def test_slash_commands_answer_in_the_channel(emulator: SlackEmulator, tmp_path: Path,
                                                    state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        before = core.activity.finished
        envelope = await emulator.send_slash("mem b200")
        ack = await emulator.wait_ack(envelope)
        assert ack["envelope_id"] == envelope
        await core.activity.wait_finished(before + 1)
        posted = emulator.messages(OPS)
        assert any("Memory on b200" in m.text for m in posted)
        await emulator.send_slash("hosts")
        await core.activity.wait_finished(before + 2)
        assert any("*b200* (this machine)" in m.text for m in emulator.messages(OPS))


async def test_cancel_takes_the_buttons_away(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    from tests.scenario import CANCEL_ACTION

    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        event = await say(emulator, core, "kill the build on b200")
        plan = next(m for m in emulator.thread(OPS, str(event["ts"])) if has_buttons(m))
        before = core.activity.finished
        await emulator.click(plan.ts, CANCEL_ACTION, channel=OPS)
        await core.activity.wait_finished(before + 1)
        after = emulator.message(OPS, plan.ts)
        assert "Cancelled by <@U0HUMAN>" in after.text and not has_buttons(after)
        assert actions_run(core) == []


async def test_a_double_press_runs_the_plan_once(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    from tests.scenario import RUN_ACTION

    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        event = await say(emulator, core, "kill the build on b200")
        plan = next(m for m in emulator.thread(OPS, str(event["ts"])) if has_buttons(m))
        before = core.activity.finished
        await emulator.click(plan.ts, RUN_ACTION, channel=OPS)
        await emulator.click(plan.ts, RUN_ACTION, channel=OPS, user="U0SECOND")
        await core.activity.wait_finished(before + 2)
        kills = [e for e in actions_run(core) if '"action": "kill"' in e["detail"]]
        assert len(kills) == 1
        assert "This request was already running" in thread_text(emulator, OPS, str(event["ts"]))


async def test_a_step_that_fails_marks_the_request(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path, confirm=False), state_dir) as core:
        event = await say(emulator, core, "tail the log on b200")
        assert await wait_done(emulator, OPS, str(event["ts"])) == "x"
        assert "no build log yet" in thread_text(emulator, OPS, str(event["ts"]))


async def test_slack_rate_limits_are_retried(emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    emulator.fail_next("chat.postMessage", status=429, retry_after=1)
    async with running_bot(emulator, config_with_build(tmp_path, confirm=False), state_dir) as core:
        event = await say(emulator, core, "how's memory on b200?")
        assert "Memory on b200" in thread_text(emulator, OPS, str(event["ts"]))
        statuses = [c.status for c in emulator.calls if c.method == "chat.postMessage"]
        assert statuses[:2] == [429, 200]


async def test_an_answer_slack_would_not_take_is_not_marked_done(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    emulator.fail_next("chat.postMessage", status=200, error="fatal_error")  # refused, not to be retried
    async with running_bot(emulator, config_with_build(tmp_path, confirm=False), state_dir) as core:
        event = await say(emulator, core, "how's memory on b200?")
        await emulator.wait_for(lambda: emulator.message(OPS, str(event["ts"])).reactions, timeout=10)
        assert "Memory on b200" not in thread_text(emulator, OPS, str(event["ts"]))
        assert set(emulator.message(OPS, str(event["ts"])).reactions) == {"warning"}  # done, but not told: no ✓
        event = await say(emulator, core, "how's memory on b200?")  # the next one goes through
        await emulator.wait_for(lambda: "white_check_mark" in emulator.message(OPS, str(event["ts"])).reactions,
                                timeout=10)


async def test_rebuild_stops_the_running_build_first_and_warns_above_the_core_count(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    import os

    from tests.fakes.tools import kill_session, read_stat_fields

    jobs = (os.cpu_count() or 1) + 6
    config = config_with_build(tmp_path, confirm=False, command="echo started; exec sleep 600")
    async with running_bot(emulator, config, state_dir) as core:
        await say(emulator, core, "rebuild sgl-kernel on b200 -j1")
        first = core.store.runs(live=True)[0]
        event = await say(emulator, core, f"retry sgl-kernel on b200 with {jobs} jobs")
        text = thread_text(emulator, OPS, str(event["ts"]))
        runs = core.store.runs()
    try:
        assert [r.state for r in runs] == ["running", "stopped"]
        assert runs[1].id == first.id and runs[0].jobs == jobs
        assert "first stopped" in text and "1 × sleep" in text  # the shell exec'd into sleep
        assert f"-j{jobs} is more than the {os.cpu_count()} cores of b200" in text
    finally:
        fields = read_stat_fields(runs[0].pid)
        if fields is not None:
            kill_session(int(fields[3]))


async def test_halve_the_jobs_halves_the_thread_s_last_build(emulator: SlackEmulator, tmp_path: Path,
                                                             state_dir: Path) -> None:
    config = make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "echo built with {jobs}", "jobs": 3,
        "log_dir": str(tmp_path / "logs")}}}}, confirm=False)
    async with running_bot(emulator, config, state_dir) as core:
        first = await emulator.send_message("rebuild -j8", channel=OPS)
        root = str(first["ts"])
        await wait_done(emulator, OPS, root)
        await emulator.send_message("halve the jobs", channel=OPS, thread_ts=root)
        await emulator.wait_for(lambda: len(core.store.runs()) == 2, timeout=30)
        await emulator.wait_for(lambda: "started `app` at -j4" in thread_text(emulator, OPS, root), timeout=30)
        assert "half the -j8 of this thread's last build" in thread_text(emulator, OPS, root)
        assert [r.jobs for r in core.store.runs()] == [4, 8]


async def test_a_kill_or_rebuild_the_learned_reading_doubts_or_reads_alone_is_offered_to_rigops_left_alone_else(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, config_with_build(tmp_path), state_dir) as core:
        # the rules read a rebuild, the learned reading a remark, in a message to nobody: nothing is said or run
        event = await say(emulator, core, "it's not picking up my patch when I build sgl-kernel. trigger it by hand "
                                          "for now")
        assert emulator.thread(OPS, str(event["ts"])) == []
        assert actions_run(core) == [] and core.store.runs() == []
        # no rule reads it, the learned reading reads a rebuild: offered with the count it says, never run
        mention = await emulator.send_mention("sgl-kernel bit the dust on b200, back in the oven at 12 please",
                                              channel=OPS)
        offer = await wait_for_plan(emulator, OPS, str(mention["ts"]))
        assert "*Did you mean this?*" in offer.text and "-j12" in offer.text and has_buttons(offer), offer.text
        assert actions_run(core) == [] and core.store.runs() == []
