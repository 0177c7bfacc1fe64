"""`rigops check`: a line per host, then one about rigops itself (psutil's view of the process and the state disk)."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bot.app.checks import StateDisk, check_outages

MIB, GIB = 1 << 20, 1 << 30
UNITS = {"MiB": MIB, "GiB": GIB}
RIGOPS_LINE = re.compile(
    r"(?P<level>ok  |WARN) rigops: pid (?P<pid>\d+), python (?P<python>\S+), RSS (?P<rss>[\d.]+ [MG]iB), "
    r"CPU (?P<cpu>[\d.]+) s, (?P<threads>\d+) threads?, (?P<files>\d+) open files?, (?P<fds>\d+) fds?; "
    r"state dir (?P<dir>.+): (?P<free>[\d.]+ [MG]iB) free of (?P<total>[\d.]+ [MG]iB) \((?P<pct>[\d.]+)%\)"
    r"(?P<warning>, nearly full: rigops' SQLite state fails when the disk is full)?")


def size(text: str) -> float:
    number, unit = text.split()
    return float(number) * UNITS[unit]


def test_check_ends_with_a_line_about_rigops_itself(tmp_path: Path, state_dir: Path) -> None:
    config = tmp_path / "rigops.toml"
    config.write_text('[hosts.local]\naddress = "local"\n')
    out = subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(state_dir),
                          "check"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"config {config}: ok, 1 host(s)"
    assert lines[1].startswith("ok   local: this machine; agent up")
    assert lines[2] == "ok   replicas: no rigops running on this state"
    assert lines[3] == "ok   state outages: none in the last 24 h"
    found = RIGOPS_LINE.fullmatch(lines[4])
    assert found, lines[4]
    assert len(lines) == 5

    assert int(found["pid"]) not in (0, os.getpid())
    assert found["python"] == platform.python_version()
    assert 5 * MIB < size(found["rss"]) < 2 * GIB
    assert 0 < float(found["cpu"]) < 60
    assert int(found["threads"]) >= 1
    assert 3 <= int(found["fds"]) < 1000  # stdin, stdout and stderr at least
    assert int(found["files"]) <= int(found["fds"])
    assert found["dir"] == str(state_dir)
    assert not state_dir.exists()  # check reads; it creates nothing

    disk = psutil.disk_usage(str(tmp_path))
    total, free = size(found["total"]), size(found["free"])
    assert abs(total - disk.total) <= max(0.05 * GIB, 0.01 * disk.total)
    assert abs(free - disk.free) <= max(0.05 * GIB, 0.01 * disk.total)  # rounded, and others write meanwhile
    assert abs(float(found["pct"]) - 100 * disk.free / disk.total) <= 1.0
    nearly_full = StateDisk(free=disk.free, total=disk.total).nearly_full
    assert (found["level"], bool(found["warning"])) == (("WARN", True) if nearly_full else ("ok  ", False))


@pytest.mark.parametrize(("free", "total", "nearly_full"), [
    (50 * MIB, 4 * GIB, True),  # under 100 MiB
    (5 * GIB, 1000 * GIB, True),  # under 1%
    (101 * MIB, 8 * GIB, False),
    (11 * GIB, 1000 * GIB, False),
    (0, 0, True),
])
def test_the_state_disk_is_nearly_full_under_100_mib_or_1_percent(free: int, total: int, nearly_full: bool) -> None:
    assert StateDisk(free=free, total=total).nearly_full is nearly_full


def test_check_names_the_times_the_state_did_not_answer(state_dir: Path) -> None:
    """Outages as the rigops that saw them wrote them (its heartbeat, once the state answered again): check says
    how many in the last day, the longest, the last; older ones are not counted."""
    from bot.store import Store

    now = time.time()
    store = Store.open(state_dir)
    try:
        store.replicas.record_outage(now - 90000, 400.0, "older than a day")
        store.replicas.record_outage(now - 3600, 31.4, "state database error: connection refused")
        store.replicas.record_outage(now - 600, 2.2, "database is locked")
        me = store.replicas.me
    finally:
        store.close()
    line = check_outages(state_dir, None, now=now)
    assert line.startswith("WARN state outages: 2 times in the last 24 h the state did not answer; the longest 31 s "
                           "from "), line
    assert f"(seen by {me}: state database error: connection refused); the last from " in line and line.endswith(
        ", 2 s"), line
    assert check_outages(state_dir, None, now=now + 2 * 86400) == "ok   state outages: none in the last 24 h"
