"""Warm probe over SSH (memory + build processes through the running agent) against a fresh `ssh host free -h`.

Target (PRODUCT.md): ≤ 2 ms p50 warm, vs ~250 ms for a fresh ssh.
"""

from __future__ import annotations

import asyncio
import subprocess
import time

from bench.common import build_user, median, ms, percentile, ssh_argv, sshd
from tests.fakes.hosts import ssh_config
from tests.fakes.sshd import SshServer

WARM_PROBES = 1000
FRESH_SSH = 20


async def warm_probes(server: SshServer, user: str, n: int) -> list[float]:
    from bot.hosts import make_host

    host = make_host(ssh_config(server, user=user))
    try:
        await host.snapshot()  # connect, start the agent
        out = []
        for _ in range(n):
            began = time.perf_counter()
            await host.snapshot(top=5)
            out.append(time.perf_counter() - began)
        return out
    finally:
        await host.close()


def main() -> dict[str, float]:
    user = build_user()
    with sshd() as server:
        warm = asyncio.run(warm_probes(server, user, WARM_PROBES))
        fresh = []
        for _ in range(FRESH_SSH):
            began = time.perf_counter()
            subprocess.run(ssh_argv(server, user, "free -h"), check=True, capture_output=True)
            fresh.append(time.perf_counter() - began)
    p50, p95 = percentile(warm, 0.5), percentile(warm, 0.95)
    base = median(fresh)
    print(f"warm probe over SSH: p50 {ms(p50)}, p95 {ms(p95)} ({WARM_PROBES} probes)")
    print(f"fresh `ssh host free -h`: median {ms(base)} ({FRESH_SSH} runs)")
    print(f"ratio: the warm probe is {base / p50:.0f}x faster")
    return {"warm_p50": p50, "warm_p95": p95, "fresh_ssh": base}


if __name__ == "__main__":
    main()
