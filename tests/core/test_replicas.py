"""Two rigops on one PostgreSQL state, both connected to Slack (the emulator gives each envelope to one of
their Socket Mode connections, as Slack does): every message is answered once, and a Run pressed twice, the
presses landing on different rigops, runs once. The database decides: a delivered event is a row under a primary
key, a claimed plan a conditional UPDATE.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slackemu import SlackEmulator, text_of
from tests.harness import HUMAN, OPS, make_config, running_app
from tests.scenario import RUN_ACTION, has_buttons, thread_text
from tests.store.pgserver import PostgresServer
from tests.waiting import eventually

pytestmark = pytest.mark.postgres
MESSAGES = 20


async def test_two_rigops_on_one_database_act_on_each_request_once(
        emulator: SlackEmulator, tmp_path: Path, postgres: PostgresServer) -> None:
    config = make_config({"b200": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": "true", "log_dir": str(tmp_path / "logs")}}}},
        state=postgres.fresh_state())
    async with (running_app(emulator, config, tmp_path / "one") as one,
                running_app(emulator, config, tmp_path / "two") as two):
        await emulator.wait_for(lambda: len(emulator.open_connections) == 2, timeout=10)
        # each heard from the other's heartbeat: Slack's limits are the app's, so each takes half of them
        await eventually(lambda: one.reply.budget.share == 2 == two.reply.budget.share, timeout=10,
                         what="both rigops to share the rate budget")
        assert one.core.heartbeat.rigops == 2 == two.core.heartbeat.rigops
        roots = [str((await emulator.send_message("free -h on b200", channel=OPS))["ts"]) for _ in range(MESSAGES)]
        await eventually(lambda: all("Memory on b200" in thread_text(emulator, OPS, r) for r in roots),
                         timeout=60, what="every message answered")
        assert [thread_text(emulator, OPS, r).count("*Memory on b200*") for r in roots] == [1] * MESSAGES
        await eventually(lambda: one.core.activity.finished + two.core.activity.finished == MESSAGES, timeout=20,
                         what="both rigops to be done")
        assert min(one.core.activity.finished, two.core.activity.finished) > 0  # both took some

        root = str((await emulator.send_message("kill the build on b200", channel=OPS, user=HUMAN))["ts"])
        plan = await emulator.wait_for(lambda: next((m.ts for m in emulator.thread(OPS, root) if has_buttons(m)),
                                                    None), timeout=20)
        for _ in range(2):  # pressed twice
            await emulator.click(plan, RUN_ACTION, channel=OPS, user=HUMAN)
        presses = [e for e in emulator.envelopes.values() if e.type == "interactive"]
        assert len(presses) == 2 and presses[0].connections[0] != presses[1].connections[0]  # one to each rigops
        await eventually(lambda: ":white_check_mark: stop" in thread_text(emulator, OPS, root), timeout=30,
                         what="the stop to be done")
        def stops(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [e for e in entries if e["what"] == "action" and '"kill"' in str(e["detail"])]

        assert len(stops(one.core.store.audit_entries(500))) == 1  # one state: both rigops see the same audit
        assert stops(two.core.store.audit_entries(500)) == stops(one.core.store.audit_entries(500))
        texts = [text_of(m) for m in emulator.thread(OPS, root)]
        assert sum(":white_check_mark: stop" in t for t in texts) == 1, texts
