"""Status across 32 hosts (32 real sshd on loopback): wall time of "status all" against one host's status and
against a sequential `ssh host ...` loop over the 32 — close to the slowest single host, not the sum."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

from bench.common import build_user, median, ms, ssh_argv
from tests.fakes.sshd import start_sshd

HOSTS = 32
ROUNDS = 3


async def bot_rounds(servers: list, user: str) -> tuple[float, float, float]:  # type: ignore[type-arg]
    from slackemu import SlackEmulator
    from tests.harness import OPS, make_config, running_bot

    hosts = {f"n{i:02d}": s.host_table(user=user) for i, s in enumerate(servers)}
    config = make_config(hosts, confirm=False, policy={"rate_limit": 100000})
    async with SlackEmulator() as emu, running_bot(emu, config, Path(tempfile.mkdtemp())) as core:
        async def ask(text: str) -> float:
            began = time.perf_counter()
            event = await emu.send_message(text, channel=OPS)
            await emu.wait_for(lambda: "hosts answered" in "".join(
                m.text for m in emu.thread(OPS, str(event["ts"]))) or "Builds on" in "".join(
                m.text for m in emu.thread(OPS, str(event["ts"]))), timeout=120)
            return time.perf_counter() - began

        cold = await ask("status all")  # connects 32 hosts and starts 32 agents
        warm = median([await ask("status all") for _ in range(ROUNDS)])
        single = median([await ask("status on n00") for _ in range(ROUNDS)])
        del core
    return cold, warm, single


def sequential(servers: list, user: str) -> float:  # type: ignore[type-arg]
    began = time.perf_counter()
    for s in servers:
        subprocess.run(ssh_argv(s, user, "free -h; ps -eo comm,rss | grep -E '^(ninja|cc1plus|nvcc) ' || true"),
                       check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> dict[str, float]:
    user = build_user()
    root = Path(tempfile.mkdtemp(prefix="rigops-bench-fleet-"))
    servers = [start_sshd(root / f"n{i:02d}") for i in range(HOSTS)]
    try:
        cold, warm, single = asyncio.run(bot_rounds(servers, user))
        seq = sequential(servers, user)
    finally:
        for s in servers:
            s.stop()
    print(f"\"status all\" over {HOSTS} hosts: cold {ms(cold)}, warm {ms(warm)} (median of {ROUNDS}); "
          f"one host: {ms(single)}")
    print(f"a sequential ssh loop over the {HOSTS} hosts: {ms(seq)}")
    print(f"ratio: warm fan-out is {seq / warm:.0f}x faster than the loop and {warm / single:.1f}x one host")
    return {"cold": cold, "warm": warm, "single": single, "sequential": seq}


if __name__ == "__main__":
    main()
