"""Status across 128 hosts (128 real sshd on loopback): wall time of "status all", warm, against one host's status
and against a sequential `ssh host ...` loop over the same hosts — close to the slowest single host, not the sum.

RIGOPS_BENCH_HOSTS runs it over fewer hosts (while developing).
"""

from __future__ import annotations

import asyncio
import os
import re
import resource
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from bench.common import build_user, median, ms, ssh_argv
from tests.fakes.sshd import SshServer, start_sshd

HOSTS = int(os.environ.get("RIGOPS_BENCH_HOSTS", "128"))
ROUNDS = 3
STARTERS = 8  # sshd started at once: key generation is most of it, and two cores do not go faster with more
START_TRIES = 3  # free_port() can hand two parallel starts the same port; the loser starts again
ANSWERED_RE = re.compile(r"(\d+) of (\d+) hosts answered")


def raise_nofile() -> int:
    """Lift the soft limit on open files to the hard one (a bot reaching hundreds of hosts holds a socket for each,
    and the emulator's besides); returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def _start(root: Path, env: dict[str, str] | None = None) -> SshServer:
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, START_TRIES + 1):
        try:
            return start_sshd(Path(tempfile.mkdtemp(dir=root)), extra_env=env)
        except RuntimeError:
            if attempt == START_TRIES:
                raise
    raise AssertionError("unreachable")


@contextmanager
def fleet(count: int, *, prefix: str, env: dict[str, str] | None = None) -> Iterator[list[SshServer]]:
    """``count`` sshd on loopback, one per host, started a few at a time (sshd processes, not connections, in
    parallel); ``env``: set in every session (sshd's SetEnv). All stopped at the end."""
    raise_nofile()
    root = Path(tempfile.mkdtemp(prefix=prefix))
    with ThreadPoolExecutor(STARTERS) as pool:
        futures = [pool.submit(_start, root / f"n{i:03d}", env) for i in range(count)]
    servers = [f.result() for f in futures if f.exception() is None]
    try:
        for f in futures:
            f.result()  # the first failure, if any, after the others were started (and get stopped below)
        for i, s in enumerate(servers):
            if s.proc.poll() is not None:  # lost its port to a parallel start, yet saw that one greet
                servers[i] = _start(s.root.parent, env)  # a fresh dir beside it
        yield servers
    finally:
        for s in servers:
            s.proc.terminate()
        for s in servers:
            s.stop()


def host_name(i: int) -> str:
    return f"n{i:03d}"


async def bot_rounds(servers: list[SshServer], user: str) -> dict[str, float | str]:
    from slackemu import SlackEmulator
    from tests.harness import OPS, make_config, running_bot

    hosts = {host_name(i): s.host_table(user=user) for i, s in enumerate(servers)}
    config = make_config(hosts, confirm=False, policy={"rate_limit": 100000})
    answers: list[str] = []
    cpu: list[float] = []
    async with SlackEmulator() as emu, running_bot(emu, config, Path(tempfile.mkdtemp())) as core:
        async def ask(text: str) -> float:
            began, cpu_began = time.perf_counter(), time.process_time()
            event = await emu.send_message(text, channel=OPS)

            def answer() -> str | None:
                thread = emu.thread(OPS, str(event["ts"]))
                return next((m.text for m in thread if ANSWERED_RE.search(m.text) or "Builds on" in m.text), None)

            answers.append(await emu.wait_for(answer, timeout=300))
            cpu.append(time.process_time() - cpu_began)
            return time.perf_counter() - began

        cold = await ask("status all")  # connects every host and starts its agent
        cold_answered = _answered(answers[-1])
        warm = median([await ask("status all") for _ in range(ROUNDS)])
        warm_cpu = median(cpu[-ROUNDS:])
        warm_answered = _answered(answers[-1])
        cut = "(cut)" in answers[-1]
        shown = len(re.findall(r"^n\d{3} ", answers[-1], re.MULTILINE))
        single = median([await ask(f"status on {host_name(0)}") for _ in range(ROUNDS)])
        del core
    return {"cold": cold, "warm": warm, "single": single, "warm_cpu": warm_cpu, "cold_answered": cold_answered,
            "warm_answered": warm_answered, "shown": float(shown), "cut": float(cut)}


def _answered(text: str) -> str:
    m = ANSWERED_RE.search(text)
    return f"{m[1]} of {m[2]}" if m else "?"


def sequential(servers: list[SshServer], user: str) -> float:
    began = time.perf_counter()
    for s in servers:
        subprocess.run(ssh_argv(s, user, "free -h; ps -eo comm,rss | grep -E '^(ninja|cc1plus|nvcc) ' || true"),
                       check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> dict[str, float]:
    user = build_user()
    began = time.perf_counter()
    with fleet(HOSTS, prefix="rigops-bench-fleet-") as servers:
        started = time.perf_counter() - began
        bot = asyncio.run(bot_rounds(servers, user))
        seq = sequential(servers, user)
    cold, warm, single = float(bot["cold"]), float(bot["warm"]), float(bot["single"])
    print(f"{HOSTS} sshd on loopback, started {STARTERS} at a time in {started:.1f} s; open files allowed: "
          f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]}")
    print(f"\"status all\" over {HOSTS} hosts: cold {ms(cold)} ({bot['cold_answered']} answered), warm {ms(warm)} "
          f"(median of {ROUNDS}, {bot['warm_answered']} answered); one host: {ms(single)}")
    print(f"the bot's own CPU (with the emulator, one process) in a warm \"status all\": {ms(float(bot['warm_cpu']))}; "
          f"the rest of the wall time is waiting on the {HOSTS} agents, which share this machine's "
          f"{os.cpu_count()} cores")
    print(f"the answer shows {bot['shown']:.0f} of {HOSTS} host rows" + (", the rest cut" if bot["cut"] else ""))
    print(f"a sequential ssh loop over the {HOSTS} hosts: {ms(seq)} ({ms(seq / HOSTS)} a host)")
    print(f"ratio: warm fan-out is {seq / warm:.0f}x faster than the loop and {warm / single:.1f}x one host")
    return {"cold": cold, "warm": warm, "single": single, "sequential": seq}


if __name__ == "__main__":
    main()
