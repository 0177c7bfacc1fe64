"""The dedicated build user that SSH tests and benchmarks log in as, so their kills touch nothing else."""

from __future__ import annotations

import getpass
import os
import pwd
import subprocess

BUILD_USER = "rigops-build"


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
