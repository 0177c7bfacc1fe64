"""Never ask what rigops can know; when it must ask, one click (or one word in the thread) answers."""

from __future__ import annotations

from pathlib import Path

from bot.config import Config
from bot.core.app import Core
from slackemu import SlackEmulator
from tests.fakes.tools import kill_session
from tests.harness import OPS, make_config, record_run, running_bot
from tests.scenario import has_buttons, thread_text

PICK_ACTION = "rigops_pick"


def two_hosts(tmp_path: Path, **extra: object) -> Config:
    build = {"workdir": str(tmp_path), "command": "sleep 30", "log_dir": str(tmp_path / "logs")}
    # as "lp", whose builds nobody runs: no host has build processes, so only what rigops started counts
    return make_config({"alpha": {"address": "local", "user": "lp", "builds": {"app": build}},
                        "beta": {"address": "local", "user": "lp", "builds": {"app": build, "vllm": build}}},
                       **extra)


async def say(emu: SlackEmulator, core: Core, text: str, *, thread_ts: str | None = None,
              channel: str = OPS) -> str:
    before = core.activity.finished
    event = await emu.send_message(text, channel=channel, thread_ts=thread_ts)
    await core.activity.wait_finished(before + 1)
    return thread_ts or str(event["ts"])


async def test_the_seed_goes_to_the_one_host_with_a_build_running_and_says_so(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, two_hosts(tmp_path), state_dir) as core:
        record_run(core.store, "beta", "vllm", jobs=32)  # rigops started vllm on beta
        root = await say(emulator, core, "oom-ing pretty bad, try -j20")
        plan = next(m for m in emulator.thread(OPS, root) if has_buttons(m))
        assert "*beta* · `vllm`" in plan.text and "a guess: beta — the only host with a build running" in plan.text
        assert "which host" not in thread_text(emulator, OPS, root)


async def test_a_channel_mapped_to_a_host_needs_no_host_name(emulator: SlackEmulator, tmp_path: Path,
                                                               state_dir: Path) -> None:
    config = two_hosts(tmp_path, slack={"ops_channels": [OPS], "channels": {OPS: {"hosts": ["alpha"]}}})
    async with running_bot(emulator, config, state_dir) as core:
        root = await say(emulator, core, "kill the build")
        plan = next(m for m in emulator.thread(OPS, root) if has_buttons(m))
        assert "*alpha* · `app`" in plan.text and "alpha — this channel's host" in plan.text


async def test_a_look_with_no_host_answers_for_all_hosts(emulator: SlackEmulator, tmp_path: Path,
                                                         state_dir: Path) -> None:
    async with running_bot(emulator, two_hosts(tmp_path), state_dir) as core:
        root = await say(emulator, core, "how's memory looking?")
        text = thread_text(emulator, OPS, root)
        assert "mem on all" in text and "alpha" in text and "beta" in text and "which host" not in text


async def test_when_still_ambiguous_a_button_per_host_carries_the_plan_on(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    async with running_bot(emulator, two_hosts(tmp_path), state_dir) as core:
        root = await say(emulator, core, "oom-ing pretty bad, try -j20")
        question = next(m for m in emulator.thread(OPS, root) if has_buttons(m))
        assert "Which host" in question.text
        before = core.activity.finished
        await emulator.click(question.ts, PICK_ACTION, channel=OPS, value=None)  # the first button: alpha
        await core.activity.wait_finished(before + 1)
        assert "Which host: *alpha*" in emulator.message(OPS, question.ts).text
        plan = [m for m in emulator.thread(OPS, root) if has_buttons(m)][-1]
        assert "*alpha* · `app`" in plan.text and "-j20" in plan.text  # Run / Cancel as always


async def test_a_reply_naming_a_host_answers_the_question(emulator: SlackEmulator, tmp_path: Path,
                                                          state_dir: Path) -> None:
    async with running_bot(emulator, two_hosts(tmp_path), state_dir) as core:
        root = await say(emulator, core, "rebuild it with 8 jobs")
        await say(emulator, core, "on beta", thread_ts=root)
        text = thread_text(emulator, OPS, root)
        assert "Which host: *beta*" in text
        # beta has two builds: the next question is which one, answered by its name
        question = [m for m in emulator.thread(OPS, root) if has_buttons(m)][-1]
        assert "Which build" in question.text and "beta · vllm" in str(question.blocks)
        await say(emulator, core, "the vllm one", thread_ts=root)
        plan = [m for m in emulator.thread(OPS, root) if has_buttons(m)][-1]
        assert "*beta* · `vllm`" in plan.text and "start `vllm` at -j8" in plan.text


async def test_build_processes_seen_on_one_host_decide_it(emulator: SlackEmulator, tmp_path: Path, state_dir: Path,
                                                          fake_bin: Path, build_user: str) -> None:
    from tests.fakes.tools import session_members, start_fake_build, stop
    from tests.waiting import wait_until

    build = {"workdir": str(tmp_path), "command": "true"}
    config = make_config({"alpha": {"address": "local", "user": build_user, "builds": {"app": build}},
                          "beta": {"address": "local", "user": "lp", "builds": {"app": build}}})
    proc = start_fake_build(fake_bin, compilers=2, mb=8, user=build_user)
    try:
        wait_until(lambda: len(session_members(proc.pid)) >= 4, what="the hand-started build")
        async with running_bot(emulator, config, state_dir) as core:
            root = await say(emulator, core, "oom-ing pretty bad, try -j20")
            plan = next(m for m in emulator.thread(OPS, root) if has_buttons(m))
            assert "*alpha*" in plan.text and "alpha — the only host with build processes running" in plan.text
    finally:
        stop(proc)
        kill_session(proc.pid)
