"""What the benchmarks share: a real sshd on loopback, a build user, fake compilers, timing helpers."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.sshd import SshServer, start_sshd  # noqa: E402
from tests.fakes.tools import build_fake_tools  # noqa: E402
from tests.fakes.users import ensure_build_user  # noqa: E402


def build_user() -> str:
    return ensure_build_user()


@contextmanager
def sshd() -> Iterator[SshServer]:
    server = start_sshd(Path(tempfile.mkdtemp(prefix="rigops-bench-sshd-")))
    try:
        yield server
    finally:
        server.stop()


def fake_bin() -> Path:
    path = Path(tempfile.mkdtemp(prefix="rigops-bench-bin-"))
    path.chmod(0o755)
    return build_fake_tools(path)


def ssh_argv(server: SshServer, user: str, command: str) -> list[str]:
    return ["ssh", "-q", "-i", str(server.client_key), "-o", f"UserKnownHostsFile={server.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", str(server.port),
            f"{user}@127.0.0.1", command]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def timed(fn: object) -> float:
    began = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - began


def machine() -> str:
    return f"{platform.node()} · {os.cpu_count()} cores · Python {platform.python_version()} · {platform.platform()}"


def median(values: list[float]) -> float:
    return statistics.median(values)
