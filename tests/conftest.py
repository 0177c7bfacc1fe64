"""Shared fixtures: a clean environment, a real sshd and the hosts that reach it, the Slack emulator."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.sshd import SshServer, start_sshd  # noqa: E402

if TYPE_CHECKING:
    from bot.hosts import Host
    from tests.fakes.hosts import SshTable
    from tests.store.pgserver import PostgresServer

SCRUBBED = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
            "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "RIGOPS_CONFIG", "RIGOPS_STATE_DIR",
            "RIGOPS_STATE_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may see real Slack tokens or a proxy that would send loopback traffic elsewhere."""
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL server on 127.0.0.1 (Debian's binaries), for the state shared by several rigops; skips
    where PostgreSQL is not installed (`make test` installs it)."""
    from tests.store.pgserver import postgres_bin, start_postgres

    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("needs PostgreSQL's server binaries (initdb, pg_ctl: Debian's postgresql package, which "
                    "`make test` installs)")
    server = start_postgres(bin_dir)
    yield server
    server.stop()


@pytest.fixture
def ssh_table(sshd: SshServer, build_user: str) -> SshTable:
    """The test sshd as a [hosts.X] table, logging in as the build user; keywords override its entries."""

    def table(**overrides: Any) -> dict[str, Any]:
        return sshd.host_table(**{"user": build_user, **overrides})

    return table


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
async def host(request: pytest.FixtureRequest, build_user: str) -> AsyncIterator[Host]:
    """Every Host implementation in turn, for contract tests: this machine, and SSH to the test sshd (as
    APScheduler runs its job-store tests over every store). Builds on it run as the build user."""
    from bot.hosts import make_host
    from tests.fakes.hosts import host_config

    server = request.getfixturevalue("sshd") if request.param == "ssh" else None
    h = make_host(host_config(request.param, user=build_user, server=server))
    yield h
    await h.close()


@pytest.fixture
async def local_host() -> AsyncIterator[Host]:
    """This machine as a host, as ourselves: for what only this machine shows (its cgroups, its processes)."""
    import pwd

    from bot.hosts import make_host
    from tests.fakes.hosts import local_config

    h = make_host(local_config(pwd.getpwuid(os.getuid()).pw_name))
    yield h
    await h.close()


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
async def emulator() -> AsyncIterator[Any]:
    from slackemu import SlackEmulator

    async with SlackEmulator() as emu:
        yield emu
    assert not emu.unescaped, f"rigops sent mrkdwn with &, < or > unescaped (Slack shows it otherwise): {emu.unescaped}"


@pytest.fixture(scope="session")
def build_user() -> str:
    """The user builds run as in SSH tests: a dedicated one when we are root, so kills touch nothing else."""
    from tests.fakes.users import ensure_build_user

    return ensure_build_user()


@pytest.fixture
def open_tmp(tmp_path: Path, build_user: str) -> Iterator[Path]:
    """A temp dir the build user can read and write (pytest's own are private to us)."""
    import pwd
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rigops-test-"))
    os.chmod(path, 0o777)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(build_user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def fake_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Fake compilers and build drivers (real processes holding real memory), readable by any user."""
    import tempfile

    from tests.fakes.tools import build_fake_tools

    path = Path(tempfile.mkdtemp(prefix="rigops-fakebin-"))
    os.chmod(path, 0o755)
    return build_fake_tools(path)


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A temp dir any user can use (pytest's are private to us)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rigops-public-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def cgroups() -> Iterator[Any]:
    """Child memory cgroups with limits (tests.fakes.cgroups.Cgroups); skips where cgroup v1 memory is absent."""
    from tests.fakes.cgroups import Cgroups, own_memory_cgroup

    parent = own_memory_cgroup()
    if parent is None:
        pytest.skip("no cgroup v1 memory controller on this machine")
    probe = parent / f"rigops-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        pytest.skip(f"the memory cgroup {parent} is not writable here: {exc}")
    c = Cgroups(parent)
    yield c
    c.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """How many messages and views the Slack emulator checked as Slack would, and what it refused."""
    from slackemu.limits import TALLY

    if TALLY["checked"]:
        refused = {k: v for k, v in sorted(TALLY.items()) if k not in ("checked", "with blocks", "unescaped")}
        terminalreporter.write_line(f"Slack emulator: {TALLY['checked']} messages and views checked "
                                    f"({TALLY['with blocks']} with Block Kit), refused: {refused or 'none'}, "
                                    f"texts with &, < or > unescaped: {TALLY['unescaped']}")
