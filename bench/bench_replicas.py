"""Replicas on one PostgreSQL state (issue 17): events per second through 3 rigops against 1, and ack latency
under a burst of 1,000 events, each a `free -h` that needs a real answer; every answer counted (none lost, none
doubled).

Each phase: a fresh state on a real PostgreSQL server (started as the tests start it), a fresh Slack emulator,
N `rigops run` processes connected to it over Socket Mode (the emulator gives each envelope to one of their
connections, round robin, as Slack does), each warmed up with one request. Slack's rate tiers are lifted in the
rigops processes (their table is emptied before `rigops run` starts), as the emulator enforces none: with them,
each answer in one channel waits for `chat.postMessage`'s one a second and each ✓ for `reactions.add`'s 50 a
minute, and the figure would be Slack's tiers, not rigops. The policy's rate_limit is set out of the way too.
The emulator retries an event not acked within 3 s, as Slack does; the ack latency runs from an envelope's first
sending to its first ack, both as the emulator recorded them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.common import ms, percentile
from tests.store.pgserver import PostgresServer, postgres_bin, start_postgres

BURST = int(os.environ.get("RIGOPS_BENCH_BURST", "1000"))  # smaller for a trial run
REPLICAS = (1, 3)
ANSWER = "*Memory on b200*"  # the head of the `free -h` answer
CONNECT_TIMEOUT = 60.0
BURST_TIMEOUT = 900.0  # seconds for the whole burst to be answered; what is missing then counts as lost
DONE_TIMEOUT = 60.0  # seconds, after the last answer, for the last ✓
STOP_TIMEOUT = 20.0
# `rigops run` as `python -m bot` runs it, with Slack's rate tiers emptied first (see the module docstring)
RIGOPS_WITHOUT_TIERS = ("import runpy, sys; from bot.frontends.slack import tiers; tiers.SLACK_TIERS.clear(); "
                        "sys.argv[0] = 'rigops'; runpy.run_module('bot', run_name='__main__')")
NOTABLE = ("ERROR", "WARNING", "Traceback", "CRITICAL", "Exception")
CPU_GROUPS = ("rigops", "agents", "postgres", "bench", "other")


@dataclass(frozen=True)
class Phase:
    """What one phase measured."""

    replicas: int
    took: float  # seconds from the first send to the last first answer
    sent: float  # seconds the sending of the burst took
    acks: list[float]  # seconds from each envelope's first sending to its first ack
    acked_in: float  # seconds from the first send to the last ack
    posts: list[int]  # answers per request, in the order sent
    checks: int  # requests with their ✓
    redelivered: int  # envelopes delivered more than once (not acked in Slack's 3 s, or a connection closed)
    per_connection: list[int]  # envelopes each Socket Mode connection got
    cpu: dict[str, float]  # CPU seconds during the burst, by CPU_GROUPS
    events_in_state: int  # rows in the shared state's events table (each delivery is recorded once)
    stderr: list[str]  # the notable lines of the rigops processes' stderr, with how many times

    @property
    def rate(self) -> float:
        return len(self.posts) / self.took

    @property
    def lost(self) -> int:
        return self.posts.count(0)

    @property
    def doubled(self) -> int:
        return sum(1 for n in self.posts if n > 1)


class Answers:
    """Counts, per request message, the bot's answers and ✓ reactions that Slack took, as the calls come in."""

    def __init__(self, emu: Any) -> None:
        self.posts: Counter[str] = Counter()
        self.checks: Counter[str] = Counter()
        self.answered = 0  # requests with at least one answer
        self.checked = 0  # requests with at least one ✓
        self.last_at = 0.0  # when the latest first answer came (time.monotonic)
        emu.on_call.append(self.on_call)

    def on_call(self, call: Any) -> None:
        if not call.ok:  # refused (a 429 past a rate tier, say): nothing shown
            return
        if call.method == "chat.postMessage" and ANSWER in str(call.params.get("text")):
            root = str(call.params.get("thread_ts"))
            self.posts[root] += 1
            if self.posts[root] == 1:
                self.answered += 1
                self.last_at = call.at
        elif call.method == "reactions.add" and call.params.get("name") == "white_check_mark":
            root = str(call.params.get("timestamp"))
            self.checks[root] += 1
            self.checked += self.checks[root] == 1


class CpuMeter:
    """CPU seconds used between two readings, by group: the rigops processes, their agents (children), the
    PostgreSQL server, this process (the emulator and the sender), and everything else on the machine."""

    def __init__(self, replicas: list[subprocess.Popen[bytes]], postgres: PostgresServer) -> None:
        self.replicas = [p.pid for p in replicas]
        self.postmaster = int((postgres.root / "data" / "postmaster.pid").read_text().split()[0])
        self.start = self.read()

    def read(self) -> dict[str, dict[int, float]]:
        groups: dict[str, dict[int, float]] = {g: {} for g in CPU_GROUPS}
        for pid in self.replicas:
            proc = psutil.Process(pid)
            groups["rigops"][pid] = used(proc)
            for child in proc.children(recursive=True):
                groups["agents"][child.pid] = used(child)
        server = psutil.Process(self.postmaster)
        for proc in (server, *server.children(recursive=True)):
            groups["postgres"][proc.pid] = used(proc)
        me = psutil.Process()
        groups["bench"][me.pid] = used(me)
        machine = psutil.cpu_times()
        groups["other"][0] = machine.user + machine.system + machine.nice + machine.irq + machine.softirq
        return groups

    def used(self) -> dict[str, float]:
        """Seconds per group since the meter was made ("other": the machine's busy time less the groups')."""
        end = self.read()
        spent = {g: sum(t - self.start[g].get(pid, 0.0) for pid, t in end[g].items()) for g in CPU_GROUPS}
        # what is left of the machine's busy time; clock ticks (10 ms) can make it a hair below nothing
        spent["other"] = max(0.0, spent["other"] - sum(spent[g] for g in CPU_GROUPS if g != "other"))
        return spent


def used(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


def write_config(folder: Path, state: str) -> Path:
    """The replicas' config: the shared state, one local host, no confirmations, the policy's rate_limit out of
    the way (it counts per process: see the report)."""
    config = folder / "rigops.toml"
    config.write_text(f'confirm = false\nstate = "{state}"\n[slack]\nops_channels = ["C0OPS"]\n'
                      '[policy]\nrate_limit = 1000000\n[hosts.b200]\naddress = "local"\n')
    return config


def start_replica(emu: Any, folder: Path, config: Path, index: int) -> subprocess.Popen[bytes]:
    """One `rigops run` in its own process and state dir, on the shared state; stderr to replica-N.stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("RIGOPS_STATE_URL", "RIGOPS_CONFIG", "RIGOPS_STATE_DIR")}
    env.update(SLACK_BOT_TOKEN=emu.bot_token, SLACK_APP_TOKEN=emu.app_token, SLACK_API_URL=emu.api_url)
    with (folder / f"replica-{index}.stderr").open("wb") as err:
        return subprocess.Popen([sys.executable, "-c", RIGOPS_WITHOUT_TIERS, "--config", str(config),
                                 "--state-dir", str(folder / f"state-{index}"), "run"],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def connected(emu: Any, procs: list[subprocess.Popen[bytes]], folder: Path) -> None:
    """Until every replica holds a Socket Mode connection. Raises RuntimeError when one exits first."""
    waiting = asyncio.ensure_future(emu.wait_for(lambda: len(emu.open_connections) == len(procs),
                                                 timeout=CONNECT_TIMEOUT))
    exits = [asyncio.ensure_future(asyncio.to_thread(p.wait)) for p in procs]
    done, _ = await asyncio.wait({waiting, *exits}, return_when=asyncio.FIRST_COMPLETED)
    if waiting not in done:
        waiting.cancel()
        dead = next(p for p in procs if p.poll() is not None)
        raise RuntimeError(f"rigops (pid {dead.pid}) exited with {dead.returncode} before connecting; its stderr "
                           f"is in {folder}")
    waiting.result()


async def phase(postgres: PostgresServer, replicas: int) -> Phase:
    from slackemu import SLACK_ACK_TIMEOUT, SlackEmulator

    folder = Path(tempfile.mkdtemp(prefix=f"rigops-bench-replicas-{replicas}-"))
    state = postgres.fresh_state()
    async with SlackEmulator(ack_timeout=SLACK_ACK_TIMEOUT) as emu:  # retries an event not acked in 3 s, as Slack
        answers = Answers(emu)
        config = write_config(folder, state)
        procs = [start_replica(emu, folder, config, i) for i in range(replicas)]
        try:
            await connected(emu, procs, folder)
            await warm_up(emu, answers, replicas)
            meter = CpuMeter(procs, postgres)
            sent = await burst(emu, answers)
            cpu = meter.used()
            with contextlib.suppress(TimeoutError):  # a ✓ missing then is told as such
                await emu.wait_for(lambda: answers.checked == replicas + BURST, timeout=DONE_TIMEOUT)
        finally:
            stop(procs)  # before counting: an answer doubled late is counted too
        return tally(emu, answers, sent, replicas=replicas, cpu=cpu, events=events_recorded(postgres, state),
                     stderr=notable_lines(sorted(folder.glob("replica-*.stderr"))))


async def warm_up(emu: Any, answers: Answers, replicas: int) -> None:
    """One request to each replica (round robin), answered and ✓, so the burst meets them warm."""
    from tests.harness import OPS

    for _ in range(replicas):
        await emu.send_message("free -h", channel=OPS)
    await emu.wait_for(lambda: answers.checked == replicas, timeout=CONNECT_TIMEOUT)


@dataclass(frozen=True)
class Sent:
    """The burst as sent: its messages, the first envelope's index, and the times (time.monotonic)."""

    roots: list[str]
    first: int
    began: float
    sent: float  # seconds the sending took
    took: float  # seconds from the first send to the last first answer


async def burst(emu: Any, answers: Answers) -> Sent:
    """Send BURST requests as fast as the emulator sends, and wait until each is answered (or the time is up:
    what is missing then counts as lost)."""
    from tests.harness import OPS

    expected = answers.answered + BURST
    first = len(emu.envelopes)
    roots = []
    began = time.monotonic()
    for _ in range(BURST):
        roots.append(str((await emu.send_message("free -h", channel=OPS))["ts"]))
        await asyncio.sleep(0)  # the emulator reads the acks that came meanwhile, as Slack would
    sent = time.monotonic() - began
    with contextlib.suppress(TimeoutError):
        await emu.wait_for(lambda: answers.answered == expected, timeout=BURST_TIMEOUT)
    return Sent(roots=roots, first=first, began=began, sent=sent, took=(answers.last_at or time.monotonic()) - began)


def tally(emu: Any, answers: Answers, sent: Sent, *, replicas: int, cpu: dict[str, float], events: int,
          stderr: list[str]) -> Phase:
    envelopes = list(emu.envelopes.values())[sent.first:]
    # queued_at: when the emulator first sent it (connections are open); delivered_at is a retry's, if any
    acks = [(ack.at, e.queued_at) for e in envelopes if (ack := emu.ack_for(e.envelope_id)) is not None]
    return Phase(replicas=replicas, took=sent.took, sent=sent.sent, acks=[at - queued for at, queued in acks],
                 acked_in=max(at for at, _ in acks) - sent.began, posts=[answers.posts[r] for r in sent.roots],
                 checks=sum(1 for r in sent.roots if answers.checks[r]),
                 redelivered=sum(1 for e in envelopes if e.deliveries > 1),
                 per_connection=sorted(Counter(e.connections[0] for e in envelopes if e.connections).values(),
                                       reverse=True),
                 cpu=cpu, events_in_state=events, stderr=stderr)


def events_recorded(postgres: PostgresServer, state: str) -> int:
    """Rows in the shared state's events table: one per Slack event id, whichever replica saw it first."""
    count: Any = postgres.sql(state, "SELECT count(*) FROM events")[0][0]
    return int(count)


def notable_lines(files: list[Path]) -> list[str]:
    """Errors and warnings the rigops processes wrote, each with how many times (timestamps stripped)."""
    seen: Counter[str] = Counter()
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            if any(word in line for word in NOTABLE):
                seen[line.split(" ", 2)[-1] if line[:2] == "20" else line] += 1
    return [f"{n}x {line}" for line, n in seen.most_common()]


def report(phases: list[Phase]) -> None:
    for p in phases:
        print(f"{p.replicas} replica{'s' if p.replicas > 1 else ' '}: {len(p.posts)} events (sent in "
              f"{ms(p.sent)}) answered in {p.took:.2f} s = {p.rate:.0f} events/s; ack p50 "
              f"{ms(percentile(p.acks, 0.5))}, p99 {ms(percentile(p.acks, 0.99))}, max {ms(max(p.acks))}; "
              f"{len(p.acks)} acked in {ms(p.acked_in)}")
        print(f"  answered once {p.posts.count(1)}, lost {p.lost}, doubled {p.doubled}, with their ✓ {p.checks}; "
              f"envelopes per connection {p.per_connection}, redelivered {p.redelivered}; "
              f"events in the state {p.events_in_state}")
        busy = sum(p.cpu.values())
        print(f"  CPU during the burst: {busy / p.took:.2f} of {os.cpu_count()} cores busy — " + ", ".join(
            f"{g} {p.cpu[g] / p.took:.2f}" for g in CPU_GROUPS))
        for line in p.stderr[:8]:
            print(f"  stderr: {line[:160]}")
    one, many = phases[0], phases[-1]
    print(f"ratio {many.replicas} replicas / {one.replicas}: {many.rate / one.rate:.2f}x the events/s, "
          f"ack p99 {percentile(many.acks, 0.99) / percentile(one.acks, 0.99):.2f}x; the machine "
          f"{sum(one.cpu.values()) / one.took:.2f} -> {sum(many.cpu.values()) / many.took:.2f} of its "
          f"{os.cpu_count()} cores busy")


def main() -> list[Phase]:
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise SystemExit("bench_replicas needs PostgreSQL's server binaries (Debian's postgresql package)")
    postgres = start_postgres(bin_dir)
    try:
        phases = [asyncio.run(phase(postgres, n)) for n in REPLICAS]
    finally:
        postgres.stop()
    report(phases)
    return phases


if __name__ == "__main__":
    main()
