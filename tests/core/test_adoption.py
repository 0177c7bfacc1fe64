"""Who follows a run, through the real bot: a rigops that finds its run taken over by another (it was cut off
from the database longer than the timeout) lets the run go, guard and all; a build's end is told once, by
whoever follows it when it ends; a rigops restarted on its state dir is the same replica and follows its
builds again at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bot.config import Config
from bot.store.replicas import Replicas
from slackemu import SlackEmulator
from tests.harness import OPS, make_config, running_app
from tests.scenario import thread_text
from tests.waiting import eventually


def config(workdir: Path, gate: Path) -> Config:
    return make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(workdir), "command": f"echo started; while [ ! -f {gate} ]; do sleep 0.05; done; echo done",
        "jobs": 2, "log_dir": str(workdir / "logs")}}}}, confirm=False)


async def test_a_rigops_whose_run_was_taken_over_lets_it_go(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    async with running_app(emulator, config(tmp_path, gate), state_dir) as app:
        core = app.core
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        await eventually(lambda: core.follower.following and core.guards.get(core.follower.following[0]),
                         timeout=30, what="the build followed and guarded")
        run_id = core.follower.following[0]
        other = Replicas(core.store._db, "elsewhere-1")  # another rigops on the same state
        other.beat(leader=False, following=0)
        later = time.time() + core.follower.replica_timeout + 1
        other.beat(leader=False, following=0, now=later)
        assert other.claim(run_id, timeout=core.follower.replica_timeout, now=later)  # ours looked dead to it
        # letting go is three steps (the follower, the guard, the progress), each awaited: wait for all three
        await eventually(lambda: not core.follower.following and core.guards.get(run_id) is None
                         and run_id not in core.follower.progress, timeout=10, what="this rigops to let the run go")
        edits = len(emulator.calls_to("chat.update"))
        gate.touch()  # the build ends; the rigops that let it go tells nothing (the other one would)
        exit_file = Path(core.store.run(run_id).exit_file)  # type: ignore[union-attr]
        await eventually(exit_file.exists, timeout=30, what="the build to end")
        await asyncio.sleep(1.0)  # five of this rigops' polls
    assert "succeeded in" not in thread_text(emulator, OPS, root)
    assert len(emulator.calls_to("chat.update")) <= edits + 1  # at most an edit already on its way


async def test_a_rigops_restarted_on_its_state_dir_follows_its_build_again_at_once(
        emulator: SlackEmulator, tmp_path: Path, state_dir: Path) -> None:
    gate = tmp_path / "go"
    async with running_app(emulator, config(tmp_path, gate), state_dir) as app:
        root = str((await emulator.send_message("rebuild -j2", channel=OPS))["ts"])
        await eventually(lambda: "started `app`" in thread_text(emulator, OPS, root), timeout=30,
                         what="the build to start")
        await eventually(lambda: app.core.store.runs()[0].card_id is not None, timeout=30, what="the card")
        me = app.core.store.replicas.me
    async with running_app(emulator, config(tmp_path, gate), state_dir) as app:
        assert app.core.store.replicas.me == me  # the same replica (killed, it would find its runs its own)
        assert len(app.core.follower.following) == 1
        (run,) = app.core.store.runs()
        assert run.owner == me and run.card_id is not None
        gate.touch()
        await eventually(lambda: "succeeded in" in thread_text(emulator, OPS, root), timeout=30,
                         what="the result")
    texts = [m.text for m in emulator.thread(OPS, root)]
    assert sum("succeeded in" in t and "`app` on *b200* —" not in t for t in texts) == 1, texts
    assert sum("`app` on *b200* —" in t for t in texts) == 1, texts  # the same card, edited after the restart
