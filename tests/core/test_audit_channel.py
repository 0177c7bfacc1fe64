"""One audit path: whatever part of rigops acts — a request and its Run, a spawn, a denial, the OOM guard's pause
and resume, a schedule change, a takeover of another rigops' build — writes the audit log one way, and the audit
channel sees each of them."""

from __future__ import annotations

import re
import time
from pathlib import Path

from bot.core.audit import MIRRORED, NOT_MIRRORED
from bot.store.replicas import Replicas
from slackemu import SlackEmulator
from tests.harness import ADMIN, HUMAN, OPERATORS, OPS, make_config, running_app
from tests.scenario import RUN_ACTION, wait_for_plan
from tests.waiting import eventually

AUDIT = "C0AUDIT"
ROOT = Path(__file__).resolve().parents[2]
KIND_RE = re.compile(r"""(?:\.audit\(|audit\.(?:record|write)\([^,]+,\s*[^,]+,\s*)\s*"([^"]+)\"""")


def mirrored_kinds(emu: SlackEmulator) -> set[str]:
    return {m.group(1) for msg in emu.messages(AUDIT) if (m := re.match(r"`([^`]+)` by ", msg.text))}


def test_every_kind_rigops_audits_is_either_mirrored_or_said_not_to_be() -> None:
    """A new kind of audit entry is decided on: mirrored to the channel, or kept to the log only."""
    written = {kind for path in (ROOT / "bot").rglob("*.py") for kind in KIND_RE.findall(path.read_text())}
    assert {"action", "spawn", "pause", "resume", "schedule add", "takeover", "request"} <= written
    assert written <= MIRRORED | NOT_MIRRORED, written - MIRRORED - NOT_MIRRORED
    assert not MIRRORED & NOT_MIRRORED


async def test_the_audit_channel_sees_everything_that_acts(emulator: SlackEmulator, tmp_path: Path,
                                                           state_dir: Path, fake_bin: Path) -> None:
    emulator.add_channel(AUDIT, "audit")
    gate = tmp_path / "go"
    compilers = f"{fake_bin}/ninja 1 -- {fake_bin}/cc1plus 16 -- {fake_bin}/cc1plus 8"
    config = make_config({"rig": {"address": "local", "builds": {"app": {
        "workdir": str(tmp_path), "command": f"{compilers} &\nwhile [ ! -e {gate} ]; do sleep 0.1; done; kill $!",
        "log_dir": str(tmp_path / "logs")}}}},
        policy={"operators": OPERATORS, "admins": [ADMIN], "audit_channel": AUDIT})
    async with running_app(emulator, config, state_dir) as app:
        core = app.core
        event = await emulator.send_message("rebuild -j2 on rig", channel=OPS)
        plan = await wait_for_plan(emulator, OPS, str(event["ts"]))
        await emulator.click(plan.ts, RUN_ACTION, channel=OPS)
        await eventually(lambda: core.follower.following, timeout=30, what="the build followed")
        run_id = core.follower.following[0]
        guard = await eventually(lambda: (g := core.guards.get(run_id)) and g.last and g.last.top_compilers and g,
                                 timeout=30, what="the guard to see the compilers")
        assert await core.guards.pause(guard, user=HUMAN) >= 1  # what the [Pause] button does
        await core.guards.resume(guard, user=HUMAN)

        before = core.activity.finished
        await emulator.send_message("kill the build on rig", channel=OPS, user="U0VIEWER")  # not an operator
        await core.activity.wait_finished(before + 1)
        await emulator.send_slash('schedule add "every 30m" all', user=ADMIN)
        await core.activity.wait_finished(before + 2)
        await emulator.send_slash("schedule remove 1", user=ADMIN)
        await core.activity.wait_finished(before + 3)

        # another rigops takes the build over, then dies: this one takes it back, and says so
        other = Replicas(core.store._db, "elsewhere-1")
        later = time.time() + core.follower.replica_timeout + 1
        other.beat(leader=False, following=1, now=later)
        assert other.claim(run_id, timeout=core.follower.replica_timeout, now=later)
        await eventually(lambda: not core.follower.following, timeout=10, what="this rigops to let it go")
        other.beat(leader=False, following=1, now=time.time() - 10 * core.follower.replica_timeout)
        await eventually(lambda: core.follower.following, timeout=30, what="this rigops to take it back")
        await emulator.wait_for(lambda: any("followed by rigops" in m.text
                                            for m in emulator.thread(OPS, str(event["ts"]))), timeout=10)

        gate.touch()
        await core.audit.flush()
        kinds = mirrored_kinds(emulator)
        assert {"approved", "action", "spawn", "denied", "pause", "resume", "schedule add", "schedule remove",
                "takeover"} <= kinds
        assert kinds <= MIRRORED and "request" not in kinds
        takeover = next(m.text for m in emulator.messages(AUDIT) if m.text.startswith("`takeover`"))
        assert "rigops itself" in takeover and "elsewhere-1" in takeover
        assert any(m.text.startswith(f"`spawn` by <@{HUMAN}>") for m in emulator.messages(AUDIT))
