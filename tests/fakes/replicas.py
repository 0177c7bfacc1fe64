"""Real rigops processes (``python -m bot run``) against the Slack emulator, on one state, as several replicas of
a deployment run: each with a state dir and a log of its own; and the config file they read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from slackemu import SlackEmulator


@contextmanager
def rigops_processes(emu: SlackEmulator, config: Path, folder: Path,
                     count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` rigops processes on the config's state, stopped at the end as systemd stops them (SIGTERM);
    their logs are ``folder/rigops-<i>.log``."""
    env = {**os.environ, "SLACK_BOT_TOKEN": emu.bot_token, "SLACK_APP_TOKEN": emu.app_token,
           "SLACK_API_URL": emu.api_url}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(count):
            with open(folder / f"rigops-{i}.log", "wb") as err:
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(folder / f"state-{i}"),
                     "-v", "run"], env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT))
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def query(url: str, sql: str) -> list[tuple[object, ...]]:
    """The rows of one statement on the replicas' PostgreSQL state, read as a person would, from outside rigops."""
    with psycopg.connect(url) as db:
        return db.execute(sql).fetchall()


def process_of(url: str, owner: object, procs: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """The process of the replica with this id."""
    (pid,), = query(url, f"SELECT pid FROM replicas WHERE id = '{owner}'")
    return next(p for p in procs if p.pid == pid)


def write_toml(path: Path, config: dict[str, Any]) -> Path:
    """A config file for ``rigops --config``, from the same dict ``tests.harness.make_config`` takes."""
    lines: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))  # a JSON string is a TOML basic string

    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)

    def table(prefix: str, data: dict[str, Any]) -> None:
        nested = {k: v for k, v in data.items() if isinstance(v, dict)}
        arrays = {k: v for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)}
        lines.extend(f"{key(k)} = {value(v)}" for k, v in data.items() if k not in nested and k not in arrays)
        for k, v in nested.items():
            lines.append(f"[{prefix}{key(k)}]")
            table(f"{prefix}{key(k)}.", v)
        for k, entries in arrays.items():
            for entry in entries:
                lines.append(f"[[{prefix}{key(k)}]]")
                table(f"{prefix}{key(k)}.", entry)

    table("", config)
    path.write_text("\n".join(lines) + "\n")
    return path
