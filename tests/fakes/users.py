"""The dedicated build user that SSH tests and benchmarks log in as, so their kills touch nothing else."""

from __future__ import annotations

import getpass
import os
import pwd
import subprocess
from typing import Any

import pytest

IS_ROOT = os.geteuid() == 0
# For a regular user the build user is the developer: their tools by name include the make running this suite.
needs_own_build_user = pytest.mark.skipif(
    not IS_ROOT, reason="needs root: stops or counts the build user's tools by name, which for a regular user are "
                        "your own (the make running this suite among them); CI runs it as root")

BUILD_USER = "rigops-build"
SAMPLE_USER = "rigops-sample"
SEVERAL_USER = "rigops-several"  # runs the tests of several builds on one host, whose kills go by name too


def ensure_build_user(name: str = BUILD_USER) -> str:
    """Create the user when we are root (else use ourselves); sshd without PAM refuses a locked account, so its
    password is "*" (no password, not locked)."""
    if os.geteuid() != 0:
        return getpass.getuser()
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    subprocess.run(["usermod", "-p", "*", name], check=True)
    return name


def own_user(name: str) -> str | None:
    """A user of some tests alone (created when we are root), so that other tests' kills by name (of root's,
    nobody's or the build user's tools) never stop their processes; None (ourselves) when we are not root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(name)
    except KeyError:  # another test process may be adding it too: look again rather than trust the exit code
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=False,
                       capture_output=True)
        pwd.getpwnam(name)
    return name


def fake_user() -> str | None:
    """The user fake compilers run as (see :func:`own_user`)."""
    return own_user(SAMPLE_USER)


def switch_to(user: str | None) -> dict[str, Any]:
    """subprocess's arguments that run a child as ``user`` (none for ourselves: a regular user may not switch,
    not even to itself)."""
    if user is None or is_me(user):
        return {}
    return {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}


def popen_as(user: str | None, argv: list[str]) -> subprocess.Popen[bytes]:
    """``argv`` in a new session, as ``user`` (None: ourselves)."""
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, cwd="/", **switch_to(user))


def several_builds_user() -> str:
    """The user of the several-builds tests (created when we are root, else ourselves): its build tools are
    only theirs, so a stop by name in them reaches no other test's processes, and no other test's theirs."""
    return ensure_build_user(SEVERAL_USER)


def is_me(user: str) -> bool:
    """Whether ``user`` is who runs the tests (no switch of user, which a regular user may not make)."""
    return pwd.getpwuid(os.geteuid()).pw_name == user
