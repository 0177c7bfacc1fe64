"""The status digest of 200 hosts (200 real sshd on loopback, each with a stand-in nvidia-smi of 8 B200s), fired by
the scheduler and posted through the real bot stack to the Slack emulator: time to probe every host and to post,
against one host's digest and a sequential ssh loop over the same hosts, in one run.

RIGOPS_BENCH_HOSTS runs it over fewer hosts (while developing).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.bench_fleet import STARTERS, fleet, host_name
from bench.common import build_user, median, ms, ssh_argv
from tests.fakes.nvidia_smi import APP_FIELDS, GPU_FIELDS, install_nvidia_smi
from tests.fakes.sshd import SshServer
from tests.waiting import eventually

HOSTS = int(os.environ.get("RIGOPS_BENCH_HOSTS", "200"))
ROUNDS = 3
GPUS = "b200"  # the canned nvidia-smi output every host gives: 8 GPUs
DIGEST = "C0DIGEST"
RUN_TIMEOUT = 600.0
# what a cron script would ask each host for the same picture: memory, load and the two nvidia-smi queries
PROBE = (f"cat /proc/meminfo /proc/loadavg; nvidia-smi --query-gpu={GPU_FIELDS} --format=csv,noheader,nounits; "
         f"nvidia-smi --query-compute-apps={APP_FIELDS} --format=csv,noheader,nounits")


@contextmanager
def probes_timed() -> Iterator[list[tuple[float, float, Any]]]:
    """(began, ended, digest) of every digest's probe of its hosts, from the ``collect`` the scheduled post calls;
    the bot runs as it is, only watched."""
    import bot.core.schedules as schedules

    real = schedules.collect
    seen: list[tuple[float, float, Any]] = []

    async def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        digest = await real(*args, **kwargs)
        seen.append((began, time.perf_counter(), digest))
        return digest

    schedules.collect = timed  # type: ignore[assignment]
    try:
        yield seen
    finally:
        schedules.collect = real  # type: ignore[assignment]


async def bot_digests(servers: list[SshServer], user: str) -> dict[str, Any]:
    from slackemu import SlackEmulator
    from tests.harness import ADMIN, OPS, make_config, running_app

    hosts = {host_name(i): s.host_table(user=user) for i, s in enumerate(servers)}
    config = make_config(hosts, confirm=False)
    with probes_timed() as probes:
        async with SlackEmulator() as emu:
            emu.add_channel(DIGEST, "digest")
            async with running_app(emu, config, Path(tempfile.mkdtemp())) as app:
                runner = app.core.schedules.runner
                assert runner is not None

                async def add(where: str) -> str:
                    before = app.core.activity.finished
                    await emu.send_slash(f'schedule add "every 12h" {where} <#{DIGEST}|digest>', channel=OPS,
                                         user=ADMIN)
                    await app.core.activity.wait_finished(before + 1)
                    return next(s.id for s in runner.list() if s.hosts == (None if where == "all" else (where,)))

                async def fire(schedule_id: str) -> dict[str, Any]:
                    runs, seen, posts = runner.runs, len(probes), len(emu.messages(DIGEST))
                    fired, cpu = time.perf_counter(), time.process_time()
                    runner.scheduler.modify_job(schedule_id, next_run_time=datetime.now(UTC))
                    await eventually(lambda: runner.runs > runs, timeout=RUN_TIMEOUT, interval=0.005,
                                     what=f"schedule {schedule_id} to post")
                    done, cpu = time.perf_counter(), time.process_time() - cpu
                    began, probed, digest = probes[seen]
                    new = emu.messages(DIGEST)[posts:]
                    return {"probe": probed - began, "post": done - probed, "total": done - fired, "cpu": cpu,
                            "answered": sum(1 for h in digest.hosts if h.problem is None), "hosts": len(digest.hosts),
                            "problems": Counter(h.problem for h in digest.hosts if h.problem is not None),
                            "posts": len(new), "files": sum(len(m.files) for m in new)}

                every, one = await add("all"), await add(host_name(0))
                cold = await fire(every)  # connects every host and starts its agent
                warm = [await fire(every) for _ in range(ROUNDS)]
                single = [await fire(one) for _ in range(ROUNDS)]
                refused = len(emu.refused)
    return {"cold": cold, "warm": warm, "single": single, "refused": refused}


def sequential(servers: list[SshServer], user: str) -> float:
    began = time.perf_counter()
    for s in servers:
        subprocess.run(ssh_argv(s, user, PROBE), check=True, capture_output=True)
    return time.perf_counter() - began


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return median([float(r[key]) for r in runs])


def main() -> dict[str, float]:
    user = build_user()
    gpu_bin = Path(tempfile.mkdtemp(prefix="rigops-bench-gpu-"))
    gpu_bin.chmod(0o755)
    path = f"{install_nvidia_smi(gpu_bin / 'bin', GPUS)}:/usr/local/bin:/usr/bin:/bin"
    began = time.perf_counter()
    with fleet(HOSTS, prefix="rigops-bench-digest-", env={"PATH": path}) as servers:
        started = time.perf_counter() - began
        bot = asyncio.run(bot_digests(servers, user))
        seq = sequential(servers, user)
    cold, warm, single = bot["cold"], bot["warm"], bot["single"]
    probe, post, total = _median(warm, "probe"), _median(warm, "post"), _median(warm, "total")
    one_probe, one_total = _median(single, "probe"), _median(single, "total")
    print(f"{HOSTS} sshd on loopback (8 stand-in B200s each), started {STARTERS} at a time in {started:.1f} s; "
          f"the digest fired by the scheduler, posted through slack-bolt's Web API client to the emulator")
    print(f"cold digest of {HOSTS} hosts: probe {ms(cold['probe'])} ({cold['answered']} of {cold['hosts']} "
          f"answered), post {ms(cold['post'])}, fire to posted {ms(cold['total'])}; the bot's own CPU "
          f"{ms(cold['cpu'])}")
    if cold["problems"]:
        print("  the others: " + "; ".join(f"{n} × {problem!r}" for problem, n in cold["problems"].most_common(3)))
    print(f"warm digest of {HOSTS} hosts: probe {ms(probe)} ({warm[-1]['answered']} of {warm[-1]['hosts']} answered), "
          f"post {ms(post)} (messages: {warm[-1]['posts']}, files: {warm[-1]['files']}), fire to posted {ms(total)} "
          f"(median of {ROUNDS}); the bot's own CPU {ms(_median(warm, 'cpu'))} (with the emulator, one process): "
          f"the rest of the wall time is waiting on the {HOSTS} agents (and their nvidia-smi), which share "
          f"this machine's {os.cpu_count()} cores")
    print(f"one host's digest (baseline): probe {ms(one_probe)}, fire to posted {ms(one_total)} (median of {ROUNDS}); "
          f"Slack refused {bot['refused']} calls")
    print(f"a sequential ssh loop over the {HOSTS} hosts (meminfo, loadavg, both nvidia-smi queries): {ms(seq)} "
          f"({ms(seq / HOSTS)} a host)")
    print(f"ratio: the warm digest of {HOSTS} hosts is {seq / total:.0f}x faster than the loop and takes "
          f"{total / one_total:.1f}x one host's digest; probing all {HOSTS} costs {probe / one_probe:.1f}x probing one")
    return {"cold_probe": cold["probe"], "cold_total": cold["total"], "probe": probe, "post": post, "total": total,
            "single_probe": one_probe, "single_total": one_total, "sequential": seq}


if __name__ == "__main__":
    main()
