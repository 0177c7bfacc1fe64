"""Run the built image against the Slack emulator (slackemu/) on 127.0.0.1 and check it; deploy/run-image.sh calls
this with the podman flags this machine needs. What it checks, in order, with the time each took from `podman run`:

- the container's rigops connects to the emulator's Socket Mode (the Web API and the WebSocket: 127.0.0.1 only);
- its /healthz answers 200 (metrics on 127.0.0.1, from the config mounted at /etc/rigops/rigops.toml), and the
  image's HEALTHCHECK says healthy (`podman healthcheck run`: podman runs it by itself only under systemd);
- a person's "free -h" in the ops channel is answered in the thread (the container itself is the configured host,
  ``address = "local"``), then /metrics parses with prometheus_client's parser, with
  ``rigops_requests_total{kind="message",action="mem",outcome="done"}`` 1 and ``rigops_host_up{host="box"}`` 1;
- `podman stop` (SIGTERM through tini) ends it cleanly: exit status 0; every log line is JSON and no token is in
  the log.

The container shares the host's network namespace (``--network=host``) so that 127.0.0.1 is the same loopback on
both sides; nothing is published and nothing points past loopback: the emulator's URLs are checked before the
container starts. Prints the figures, then one JSON object; exits non-zero when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slackemu import SlackEmulator  # noqa: E402 (the checkout's emulator, importable once ROOT is on the path)

LOOPBACK = "127.0.0.1"
CHANNEL = "C0OPS"  # the emulator's ops channel
HOST = "box"


class CheckFailed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def loopback_only(url: str) -> None:
    if urlsplit(url).hostname != LOOPBACK:
        raise CheckFailed(f"{url} is not on {LOOPBACK}: refusing to point the container at it")


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r:
        return r.status, await r.text()


class Check:
    def __init__(self, podman: list[str], limits: list[str], image: str, timeout: float) -> None:
        self.podman, self.limits, self.image, self.timeout = podman, limits, image, timeout
        self.name = f"rigops-check-{int(time.time())}"
        self.volume = f"{self.name}-state"
        self.t0 = 0.0
        self.figures: dict[str, Any] = {"image": image}

    async def pod(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """podman, without blocking the loop: the emulator serves the container from this same loop (a blocked
        loop would leave rigops' WebSocket close unanswered, and its stop waiting for it)."""
        proc = await asyncio.create_subprocess_exec(*self.podman, *args, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        done = subprocess.CompletedProcess(args, proc.returncode or 0, out.decode(errors="replace"),
                                           err.decode(errors="replace"))
        if check and done.returncode != 0:
            raise CheckFailed(f"podman {' '.join(args[:2])}: {done.stderr.strip() or done.stdout.strip()}")
        return done

    def mark(self, what: str) -> float:
        took = round(time.monotonic() - self.t0, 2)
        self.figures[what] = took
        print(f"  {took:6.2f} s  {what.removesuffix('_s').replace('_', ' ')}", flush=True)
        return took

    async def inspect(self, field: str, *, check: bool = False) -> str:
        return (await self.pod("inspect", "--format", f"{{{{{field}}}}}", self.name, check=check)).stdout.strip()

    async def log_tail(self) -> str:
        proc = await self.pod("logs", "--tail", "40", self.name, check=False)
        return (proc.stdout + proc.stderr)[-4000:]

    async def until(self, what: str, probe: Any, timeout: float | None = None) -> Any:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            found = await probe()
            if found:
                return found
            state = await self.inspect(".State.Status")
            if state not in ("created", "running", "configured", "initialized"):
                tail = await self.log_tail()
                raise CheckFailed(f"the container is {state or 'gone'} while waiting for {what}:\n{tail}")
            await asyncio.sleep(0.1)
        raise CheckFailed(f"no {what} within {timeout or self.timeout:.0f} s:\n{await self.log_tail()}")

    async def run(self, emu: SlackEmulator, folder: Path) -> None:
        for url in (emu.api_url, emu.url):
            loopback_only(url)
        mport = free_port()
        metrics = f"http://{LOOPBACK}:{mport}"
        config = folder / "rigops.toml"
        config.write_text(f'metrics = "{LOOPBACK}:{mport}"\nconfirm = false\n\n[slack]\nops_channels = ["{CHANNEL}"]\n'
                          f'\n[hosts.{HOST}]\naddress = "local"\n', encoding="utf-8")
        config.chmod(0o644)
        env = folder / "rigops.env"
        env.write_text(f"SLACK_BOT_TOKEN={emu.bot_token}\nSLACK_APP_TOKEN={emu.app_token}\n"
                       f"SLACK_API_URL={emu.api_url}\n", encoding="utf-8")
        await self.pod("rm", "--force", "--ignore", self.name, check=False)
        await self.pod("volume", "rm", "--force", self.volume, check=False)
        command = ["run", "--detach", "--name", self.name, "--network=host", *self.limits, "--env-file", str(env),
                   "--volume", f"{config}:/etc/rigops/rigops.toml:ro", "--volume", f"{self.volume}:/var/lib/rigops",
                   self.image, "--log-format", "json", "run"]
        print(f"$ {shlex.join([*self.podman, *command])}", flush=True)
        self.t0 = time.monotonic()
        await self.pod(*command)
        self.mark("podman_run_returned_s")

        async def connected() -> bool:
            return emu.connected

        await self.until("Socket Mode connection to the emulator", connected)
        self.mark("connected_to_slack_s")

        async def healthz() -> bool:
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                return (await get(f"{metrics}/healthz")) == (200, "ok\n")
            return False

        await self.until("200 from /healthz", healthz)
        self.mark("healthz_200_s")

        async def healthy() -> bool:
            return (await self.pod("healthcheck", "run", self.name, check=False)).returncode == 0

        await self.until("healthy from the image's HEALTHCHECK", healthy)
        self.mark("healthcheck_healthy_s")
        status = await self.inspect(".State.Health.Status")
        self.figures["health_status"] = status
        if status != "healthy":
            raise CheckFailed(f"podman says the container is {status!r} after a passing health check")

        event = await emu.send_message("free -h", channel=CHANNEL)

        async def answered() -> bool:
            return any("available" in m.text for m in emu.thread(CHANNEL, str(event["ts"])))

        await self.until("answer to 'free -h' in its thread", answered, timeout=60)
        self.mark("free_h_answered_s")

        async def counted() -> dict[tuple[str, frozenset[tuple[str, str]]], float] | None:
            with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
                status, text = await get(f"{metrics}/metrics")
                found = {(s.name, frozenset(s.labels.items())): s.value
                         for family in text_string_to_metric_families(text) for s in family.samples}
                key = ("rigops_requests_total",
                       frozenset({"kind": "message", "action": "mem", "outcome": "done"}.items()))
                return found if status == 200 and found.get(key) == 1 else None
            return None

        found = await self.until("rigops_requests_total{action=mem,outcome=done} 1 in /metrics", counted, timeout=30)
        host_up = found.get(("rigops_host_up", frozenset({"host": HOST}.items())))
        self.figures["metrics_samples"] = len(found)
        self.figures["rigops_host_up"] = host_up
        if host_up != 1:
            raise CheckFailed(f"rigops_host_up{{host={HOST!r}}} is {host_up}, not 1")
        print(f"  /metrics: {len(found)} samples parsed, the request counted, rigops_host_up{{host=\"{HOST}\"}} 1")

        await emu.stop()  # Slack goes away: the health check must say so
        gone = time.monotonic()

        async def unhealthy() -> bool:
            return (await self.pod("healthcheck", "run", self.name, check=False)).returncode != 0

        await self.until("a failing HEALTHCHECK with Slack gone", unhealthy, timeout=60)
        self.figures["check_fails_after_slack_gone_s"] = round(time.monotonic() - gone, 2)
        runs = json.loads(await self.inspect("json .State.Health.Log") or "[]")
        said = str(runs[-1].get("Output", "")).strip() if runs else ""
        self.figures["healthcheck_said"] = said[-200:]
        if "503" not in said:
            raise CheckFailed(f"the failing health check said {said!r}, not /healthz's 503")
        print(f"  Slack gone: the health check fails after {self.figures['check_fails_after_slack_gone_s']:.2f} s "
              f"({said[-80:]!r}; podman marks it unhealthy after 3 failures in a row)")

        start = time.monotonic()
        await self.pod("stop", "--time", "30", self.name)
        self.figures["stop_s"] = round(time.monotonic() - start, 2)
        code = await self.inspect(".State.ExitCode", check=True)
        self.figures["exit_code"] = int(code)
        print(f"  podman stop: {self.figures['stop_s']:.2f} s, exit status {code}")
        if code != "0":
            raise CheckFailed(f"rigops exited {code} on SIGTERM, not 0:\n{await self.log_tail()}")
        logs = await self.pod("logs", self.name)
        text = logs.stdout + logs.stderr
        lines = [line for line in text.splitlines() if line.strip()]
        bad = [line for line in lines if not _json_object(line)]
        if bad:
            raise CheckFailed(f"{len(bad)} log lines are not JSON, e.g. {bad[0]!r}")
        for token in (emu.bot_token, emu.app_token):
            if token in text:
                raise CheckFailed("a token is in the container's log")
        self.figures["log_lines"] = len(lines)
        print(f"  log: {len(lines)} lines, each a JSON object, no token in them")

    async def clean(self, keep: bool) -> None:
        if keep:
            print(f"kept: container {self.name}, volume {self.volume}")
            return
        await self.pod("rm", "--force", "--ignore", self.name, check=False)
        await self.pod("volume", "rm", "--force", self.volume, check=False)


def _json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--image", default="localhost/rigops:latest")
    p.add_argument("--podman", default="podman", help="podman and its global flags, one shell word list")
    p.add_argument("--limits", default="", help="flags for `podman run` (e.g. --ulimit ...), one shell word list")
    p.add_argument("--timeout", type=float, default=120, help="seconds to wait for each step")
    p.add_argument("--keep", action="store_true", help="leave the container and its volume behind")
    args = p.parse_args(argv)
    check = Check(shlex.split(args.podman), shlex.split(args.limits), args.image, args.timeout)
    size = (await check.pod("image", "inspect", "--format", "{{.Size}}", args.image)).stdout.strip()
    check.figures["image_size_mb"] = round(int(size) / 1e6)
    print(f"{args.image}: {check.figures['image_size_mb']} MB")
    folder = Path(tempfile.mkdtemp(prefix="rigops-image-check-"))
    ok = False
    try:
        async with SlackEmulator() as emu:
            print(f"Slack emulator on {emu.url}")
            await check.run(emu, folder)
        ok = True
    except CheckFailed as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
    finally:
        await check.clean(args.keep)
        shutil.rmtree(folder, ignore_errors=True)
    check.figures["ok"] = ok
    print(json.dumps(check.figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
