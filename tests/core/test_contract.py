"""The core's contract, run on both front ends (tests/fronts.py): Slack through bolt and the emulator, and the
in-memory front end. Requests refused or ignored, hostile text, offers, Run and Cancel, who may press, forged
presses, a build run to its end."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import Config
from tests.fronts import FRONTS, Front, running_front
from tests.harness import HUMAN, make_config

OUTSIDER = "U0OUTSIDER"  # in no role of the policy


def config_with_build(workdir: Path, *, confirm: bool = True, command: str = "true") -> Config:
    return make_config({"b200": {"address": "local", "builds": {"sgl-kernel": {
        "workdir": str(workdir), "command": command, "log_dir": str(workdir / "logs")}}},
        "h100": {"address": "local"}}, confirm=confirm)


@pytest.fixture(params=FRONTS)
def front_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
async def front(front_kind: str, tmp_path: Path, state_dir: Path) -> AsyncIterator[Front]:
    async with running_front(front_kind, config_with_build(tmp_path), state_dir) as f:
        yield f


def actions_run(front: Front) -> list[str]:
    return [json.loads(e["detail"])["step"]["action"] for e in front.core.store.audit_entries(500)
            if e["what"] == "action"]


@pytest.mark.parametrize(("text", "error"), [
    ("rebuild sgl-kernel on b200 -j0", "-j0: jobs must be between 1 and 1024"),
    ("oom-ing on b200, try -j100000", "jobs must be between 1 and 1024"),
    ("how's memory on h200?", "unknown host 'h200'"),
    ("restart the foo build on b200, 16 jobs", "no build 'foo'"),
])
async def test_a_refused_request_gets_one_clear_reply_and_runs_nothing(front: Front, text: str, error: str) -> None:
    request = await front.say(text)
    replies = front.replies(request)
    assert len(replies) == 1 and error in replies[0], replies
    assert actions_run(front) == [] and front.core.store.runs() == []


async def test_chatter_is_ignored_and_a_mention_not_understood_gets_help(front: Front) -> None:
    for text in ("lunch?", "I killed it at the talk yesterday", "last week sgl-kernel blew up at -j32, -j8 fixed it"):
        assert front.replies(await front.say(text)) == []
    asked = await front.say("what's the weather like?", addressed=True)
    assert "/rigops help" in (await front.wait_text(asked, "/rigops help"))
    assert actions_run(front) == []


@pytest.mark.parametrize("front_kind", FRONTS)
async def test_hostile_text_never_reaches_a_shell(front_kind: str, tmp_path: Path, state_dir: Path) -> None:
    canary = tmp_path / "pwned"
    config = config_with_build(tmp_path, confirm=False, command=f"echo built-with-$MAX_JOBS >> {tmp_path}/ran")
    async with running_front(front_kind, config, state_dir) as front:
        requests = []
        for text in ("rebuild sgl-kernel on b200 -j2; rm -rf / ; touch {canary}",
                     "rebuild sgl-kernel on b200 -j2 $(touch {canary})",
                     'rebuild "sgl-kernel; touch {canary}" on b200 -j2'):
            request = await front.say(text.format(canary=canary))
            requests.append(request)
            assert not any("pwned" in r for r in front.replies(request))
        for request in requests:
            if front.replies(request):
                await front.wait_done(request)
        runs = front.core.store.runs()
    assert runs and all(r.build == "sgl-kernel" and r.jobs == 2 for r in runs)
    assert not canary.exists()
    assert set((tmp_path / "ran").read_text().split()) == {"built-with-2"}


async def test_a_supposition_said_to_rigops_is_offered_and_runs_on_run(front: Front) -> None:
    asked = await front.say("maybe we could check memory on b200", addressed=True)
    offer = await front.wait_choice(asked, "run")
    assert "Did you mean this?" in "\n".join(front.replies(asked))
    assert actions_run(front) == []
    await front.press(offer, "run")
    await front.wait_text(asked, "available")
    assert actions_run(front) == ["mem"]


async def test_run_starts_the_build_and_its_thread_follows_it_to_the_end(front: Front) -> None:
    request = await front.say("rebuild sgl-kernel on b200 -j3")
    plan = await front.wait_choice(request, "run")
    assert front.core.store.runs() == []
    await front.press(plan, "run")
    assert await front.wait_done(request) == "white_check_mark"
    [run] = front.core.store.runs()
    assert (run.host, run.build, run.jobs) == ("b200", "sgl-kernel", 3)
    end = await front.wait_text(request, "succeeded in")
    assert "`sgl-kernel` on *b200* succeeded in" in end and f"(-j3). <@{HUMAN}>" in end
    [run] = front.core.store.runs()
    assert (run.state, run.exit_status, run.started_by) == ("succeeded", 0, HUMAN)


async def test_cancel_runs_nothing(front: Front) -> None:
    request = await front.say("kill the build on b200")
    plan = await front.wait_choice(request, "cancel")
    await front.press(plan, "cancel")
    await front.wait_text(request, f"Cancelled by <@{HUMAN}>")
    assert actions_run(front) == []


async def test_only_those_the_policy_names_may_press_run(front: Front) -> None:
    request = await front.say("rebuild sgl-kernel on b200 -j3")
    plan = await front.wait_choice(request, "run")
    await front.press(plan, "run", user=OUTSIDER)
    await front.press(plan, "run")
    assert await front.wait_done(request) == "white_check_mark"
    assert [(r.jobs, r.started_by) for r in front.core.store.runs()] == [(3, HUMAN)]


@pytest.mark.parametrize("forged", ["999999", "1:rm -rf /", "", "x" * 500])
async def test_a_forged_press_runs_nothing(front: Front, forged: str) -> None:
    request = await front.say("rebuild sgl-kernel on b200 -j3")
    plan = await front.wait_choice(request, "run")
    await front.press(plan, "run", value=forged)
    await front.press(plan, "run")
    assert await front.wait_done(request) == "white_check_mark"
    assert [(r.jobs, r.started_by) for r in front.core.store.runs()] == [(3, HUMAN)]
    assert actions_run(front) == ["rebuild"]
