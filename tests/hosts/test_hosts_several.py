"""Three builds spawned on one host, through the typed Host API on this machine and over SSH: stopping one
(by its tree, the others' roots spared) leaves the others running, and a stop by name spares their trees.

Over SSH the builds run as a user of these tests alone (tests.fakes.users.SEVERAL_USER), so the stop by name
here reaches nobody else's processes; on this machine the stops go by tree only.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.hosts import Host, make_host
from bot.hosts.agent.protocol import BUILD_TOOL_NAMES
from bot.hosts.models import Spawned
from tests.fakes.hosts import local_config, ssh_config
from tests.fakes.sshd import SshServer
from tests.fakes.tools import kill_session, session_members
from tests.fakes.users import several_builds_user
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def user() -> str:
    return several_builds_user()


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
async def host(request: pytest.FixtureRequest, user: str) -> AsyncIterator[Host]:
    """This machine (builds run as ourselves), or the test sshd as the several-builds user."""
    config = local_config() if request.param == "local" else ssh_config(request.getfixturevalue("sshd"), user=user)
    h = make_host(config)
    yield h
    await h.close()


@pytest.fixture
def workdir(tmp_path: Path, user: str) -> Iterator[Path]:
    """A directory the build user can write in."""
    import pwd
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="rigops-several-"))
    path.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(path, pwd.getpwnam(user).pw_uid, pwd.getpwnam(user).pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def tree(spawned: Spawned) -> list[int]:
    """The build's processes: its supervisor's session, less the supervisor."""
    return [p for p in session_members(spawned.supervisor_pid or 0) if p != spawned.supervisor_pid]


async def spawn(host: Host, workdir: Path, fake_bin: Path, name: str, compilers: int) -> Spawned:
    command = f"exec {fake_bin}/ninja 1" + "".join(f" -- {fake_bin}/cc1plus 2" for _ in range(compilers))
    spawned = await host.spawn(workdir=str(workdir), command=command, env={}, log_path=str(workdir / f"{name}.log"),
                               exit_file=str(workdir / f"{name}.exit"))
    wait_until(lambda: len(tree(spawned)) == 1 + compilers, what=f"{name}'s ninja and compilers")
    return spawned


async def test_each_of_three_builds_stops_alone(host: Host, workdir: Path, fake_bin: Path) -> None:
    builds: dict[str, Spawned] = {}
    try:
        for name, n in (("one", 1), ("two", 2), ("three", 3)):
            builds[name] = await spawn(host, workdir, fake_bin, name, n)
        before = {name: tree(s) for name, s in builds.items()}
        one, two, three = builds.values()
        result = await host.kill(roots=[one.proc_id], user=None, spare=[two.proc_id, three.proc_id], grace=2,
                                 settle=0)
        assert result.tree and {t.pid for t in result.targets} == set(before["one"])
        assert result.spare_alive == (two.proc_id, three.proc_id)
        wait_until(lambda: tree(one) == [], what="one to be gone")
        assert tree(two) == before["two"] and tree(three) == before["three"]

        result = await host.kill(roots=[three.proc_id], user=None, spare=[two.proc_id], grace=2, settle=0)
        assert {t.pid for t in result.targets} == set(before["three"]) and result.spare_alive == (two.proc_id,)
        assert tree(two) == before["two"]
    finally:
        for spawned in builds.values():
            kill_session(spawned.supervisor_pid or 0)


@pytest.mark.ssh
async def test_a_stop_by_name_over_ssh_spares_the_trees_of_two_builds(
        sshd: SshServer, user: str, workdir: Path, fake_bin: Path) -> None:
    host = make_host(ssh_config(sshd, user=user))
    builds: list[Spawned] = []
    try:
        for name, n in (("one", 1), ("two", 2), ("three", 1)):
            builds.append(await spawn(host, workdir, fake_bin, name, n))
        one, two, three = builds
        before = {s.pid: set(tree(s)) for s in builds}
        # "one" as a build whose tree rigops does not know: no root is given, so the stop goes by name
        result = await host.kill(roots=[], user=user, fallback_names=BUILD_TOOL_NAMES,
                                 spare=[two.proc_id, three.proc_id], grace=2, settle=0)
        assert (result.tree, result.by_name) == (False, True)
        assert {t.pid for t in result.targets} == before[one.pid]
        assert {p.root for p in result.spared} == {two.proc_id, three.proc_id}
        assert {p.pid for p in result.spared} == before[two.pid] | before[three.pid]
        assert set(tree(two)) == before[two.pid] and set(tree(three)) == before[three.pid]
    finally:
        for spawned in builds:
            kill_session(spawned.supervisor_pid or 0)
        await host.close()
