"""``rigops check``: reach every configured host and say, one line each, whether it works."""

from __future__ import annotations

import asyncio
import time

from bot.config import Config, HostConfig
from bot.errors import HostError
from bot.hosts import make_host


async def check_host(config: HostConfig) -> tuple[bool, str]:
    host = make_host(config)
    began = time.perf_counter()
    try:
        info = await host.info()
        snap = await host.snapshot(top=0)
    except HostError as exc:
        return False, f"FAIL {config.name}: {exc.reason}"
    finally:
        await host.close()
    took = time.perf_counter() - began
    if config.is_local:
        via = "this machine"
    else:
        via = f"ssh {config.user + '@' if config.user else ''}{config.address}:{config.port}, host key verified"
    builds = ", ".join(config.builds) or "no builds"
    return True, (f"ok   {config.name}: {via}; agent up (python {info.python}, {info.cores} cores, "
                  f"{snap.memory.available >> 30} GiB available) in {took * 1000:.0f} ms; builds: {builds}")


async def check_hosts(config: Config) -> int:
    """Print one line per host; 0 when every host answered, 1 otherwise."""
    results = await asyncio.gather(*(check_host(h) for h in config.hosts.values()))
    for _, line in results:
        print(line)
    return 0 if all(ok for ok, _ in results) else 1
