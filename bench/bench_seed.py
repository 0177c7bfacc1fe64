"""The seed: "oom-ing pretty bad, try -j20" with 40 live compiler processes, from the message to the memory
table in the thread (through Socket Mode, SSH and the agent), against the seed's one-liner over ssh
(`ps aux | grep ... | xargs kill -9; sleep 2; free -h`), which alone sleeps 2 s.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import build_user, fake_bin, median, ms, ssh_argv, sshd
from tests.fakes.tools import kill_session, session_members, start_fake_build, stop
from tests.waiting import wait_until

COMPILERS = 40
MB_EACH = 24
ROUNDS = 3
SEED_ONE_LINER = ('ps aux | grep -E "cmake|ninja|cc1plus|nvcc" | grep -v grep | awk "{print \\$2}" | '
                  "xargs kill -9; sleep 2; free -h")


def start_build(bin_dir: Path, user: str) -> subprocess.Popen[bytes]:
    build = start_fake_build(bin_dir, compilers=COMPILERS, mb=MB_EACH, user=user)
    wait_until(lambda: len(session_members(build.pid)) >= COMPILERS + 2, timeout=30, what="the fake build to start",
               interval=0.01)
    return build


async def one_round(server: object, user: str, bin_dir: Path, workdir: Path) -> float:
    from slackemu import SlackEmulator
    from tests.harness import OPS, make_config, running_bot

    table = server.host_table(user=user, builds={"sgl-kernel": {  # type: ignore[attr-defined]
        "workdir": str(workdir), "command": "true", "log_dir": str(workdir / "logs")}})
    config = make_config({"b200": table}, confirm=False)
    async with SlackEmulator() as emu, running_bot(emu, config, Path(tempfile.mkdtemp())) as core:
        await core.hosts["b200"].snapshot()  # a bot that has been up: the agent is warm
        build = start_build(bin_dir, user)
        try:
            began = time.perf_counter()
            event = await emu.send_message("oom-ing pretty bad, try -j20", channel=OPS)
            await emu.wait_for(lambda: any("buff/cache" in m.text for m in emu.thread(OPS, str(event["ts"]))),
                               timeout=60)
            took = time.perf_counter() - began
            assert session_members(build.pid) in ([], [build.pid])
            await core.activity.wait_finished(1)
        finally:
            stop(build)
            for run in core.store.runs():
                kill_session(run.pid) if session_members(run.pid) else None
    return took


def one_liner_round(server: object, user: str, bin_dir: Path) -> float:
    build = start_build(bin_dir, user)
    try:
        began = time.perf_counter()
        out = subprocess.run(ssh_argv(server, user, SEED_ONE_LINER), capture_output=True, text=True)  # type: ignore[arg-type]
        took = time.perf_counter() - began
        assert "Mem:" in out.stdout, out
        return took
    finally:
        stop(build)


def main() -> dict[str, float]:
    user = build_user()
    bin_dir = fake_bin()
    workdir = Path(tempfile.mkdtemp(prefix="rigops-bench-wd-"))
    workdir.chmod(0o777)
    with sshd() as server:
        ours = [asyncio.run(one_round(server, user, bin_dir, workdir)) for _ in range(ROUNDS)]
        theirs = [one_liner_round(server, user, bin_dir) for _ in range(ROUNDS)]
    a, b = median(ours), median(theirs)
    print(f"seed with {COMPILERS} compilers ({MB_EACH} MiB each): message → memory table {ms(a)} (median of {ROUNDS})")
    print(f"the seed's one-liner over ssh: {ms(b)} (median of {ROUNDS})")
    print(f"ratio: rigops is {b / a:.1f}x faster, and it waited for memory instead of sleeping")
    return {"seed_rigops": a, "seed_one_liner": b}


if __name__ == "__main__":
    main()
