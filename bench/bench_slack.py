"""Slack side: ack latency under a burst of 200 events through Socket Mode (Slack allows 3 s), and the bot's
memory idle and after 1,000 requests. Targets (PRODUCT.md): ack p99 < 100 ms; idle RSS < 120 MB.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.common import ms, percentile

BURST = 200
REQUESTS = 1000
SLACK_LIMIT = 3.0


def start_bot(emu: object, folder: Path) -> subprocess.Popen[bytes]:
    """`rigops run` in its own process, as in production, against the emulator."""
    config = folder / "rigops.toml"
    config.write_text('confirm = false\n[slack]\nops_channels = ["C0OPS"]\n[policy]\nrate_limit = 1000000\n'
                      '[hosts.b200]\naddress = "local"\n')
    env = {**os.environ, "SLACK_BOT_TOKEN": emu.bot_token, "SLACK_APP_TOKEN": emu.app_token,  # type: ignore[attr-defined]
           "SLACK_API_URL": emu.api_url}  # type: ignore[attr-defined]
    return subprocess.Popen([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(folder / "state"),
                             "run"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


class Done:
    """Counts requests the bot finished (its ✓ reaction), without rescanning the channel each time."""

    def __init__(self, emu: object) -> None:
        self.count = 0
        emu.on_call.append(self.on_call)  # type: ignore[attr-defined]

    def on_call(self, call: object) -> None:
        if call.method == "reactions.add" and call.params.get("name") == "white_check_mark":  # type: ignore[attr-defined]
            self.count += 1


async def run() -> dict[str, float]:
    from slackemu import SlackEmulator

    folder = Path(tempfile.mkdtemp(prefix="rigops-bench-slack-"))
    async with SlackEmulator() as emu:
        bot = start_bot(emu, folder)
        try:
            return await measure(emu, bot.pid)
        finally:
            bot.terminate()
            bot.wait(20)


async def measure(emu: object, pid: int) -> dict[str, float]:
    from tests.harness import OPS

    done = Done(emu)
    await emu.wait_connected(timeout=30)  # type: ignore[attr-defined]
    await emu.send_message("free -h", channel=OPS)  # type: ignore[attr-defined]
    await emu.wait_for(lambda: done.count == 1, timeout=30)  # type: ignore[attr-defined]
    idle = psutil.Process(pid).memory_info().rss
    # a burst: half chatter the bot ignores, half requests it answers (each a memory probe and a post)
    envelopes = []
    for i in range(BURST):
        text = "free -h" if i % 2 else f"lunch at {i}?"
        await emu.send_message(text, channel=OPS)  # type: ignore[attr-defined]
        envelopes.append(list(emu.envelopes)[-1])  # type: ignore[attr-defined]
    await emu.wait_for(lambda: all(emu.ack_for(e) for e in envelopes), timeout=120)  # type: ignore[attr-defined]
    lat = []
    for eid in envelopes:
        env, ack = emu.envelopes[eid], emu.ack_for(eid)  # type: ignore[attr-defined]
        assert ack is not None and env.delivered_at is not None
        lat.append(ack.at - env.delivered_at)
    await emu.wait_for(lambda: done.count == 1 + BURST // 2, timeout=120)  # type: ignore[attr-defined]
    began = time.perf_counter()
    for i in range(REQUESTS - BURST):
        await emu.send_message("free -h" if i % 2 else "chatter", channel=OPS)  # type: ignore[attr-defined]
    await emu.wait_for(lambda: done.count == 1 + REQUESTS // 2, timeout=300)  # type: ignore[attr-defined]
    took = time.perf_counter() - began
    after = psutil.Process(pid).memory_info().rss
    return {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99), "max": max(lat), "idle_rss": idle,
            "after_rss": after, "rate": (REQUESTS - BURST) / took}


def main() -> dict[str, float]:
    r = asyncio.run(run())
    print(f"ack latency under a burst of {BURST} events: p50 {ms(r['p50'])}, p99 {ms(r['p99'])}, max {ms(r['max'])}")
    print(f"ratio: p99 is {SLACK_LIMIT / r['p99']:.0f}x inside Slack's 3 s limit")
    print(f"bot RSS idle: {r['idle_rss'] / 2**20:.0f} MiB; after {REQUESTS} requests: "
          f"{r['after_rss'] / 2**20:.0f} MiB; {r['rate']:.0f} requests/s end to end")
    return r


if __name__ == "__main__":
    main()
