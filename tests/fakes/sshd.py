"""A real OpenSSH sshd on 127.0.0.1 with generated host and client keys, for tests.

Nothing is mocked: asyncssh talks to this server exactly as it would to a GPU host.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.waiting import wait_until

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
START_TIMEOUT = 15.0


def sshd_binary() -> str | None:
    for path in (shutil.which("sshd"), *SSHD_CANDIDATES):
        if path and os.access(path, os.X_OK):
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path, comment: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip() if path.suffix else Path(f"{path}.pub").read_text().strip()


def wait_for_port(port: int, *, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    def greets() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                return s.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    wait_until(greets, timeout=timeout, what=f"sshd to listen on port {port}")


@dataclass
class SshServer:
    """One running sshd and what a client needs to reach it."""

    root: Path
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    host_public_key: str
    proc: subprocess.Popen[bytes]

    def host_table(self, **overrides: Any) -> dict[str, Any]:
        """A [hosts.X] table for bot.config.parse."""
        table: dict[str, Any] = {
            "address": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "key": str(self.client_key),
            "known_hosts": str(self.known_hosts),
            "connect_timeout": 5,
            "command_timeout": 20,
        }
        table.update(overrides)
        return table

    def restart(self, *, drop_sessions: bool) -> None:
        """Stop this sshd and start it again on the same port, with the same keys. ``drop_sessions``: the
        connections it serves die with it (a host that reboots, a cut network); else they live on, as with
        ``systemctl restart ssh``."""
        sessions = _sshd_children(self.proc.pid) if drop_sessions else []
        self.stop()
        for child in sessions:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        binary = sshd_binary()
        assert binary is not None
        with open(self.root / "sshd.log", "ab") as log:
            self.proc = subprocess.Popen([binary, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        wait_for_port(self.port, timeout=START_TIMEOUT, proc=self.proc)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _sshd_children(pid: int) -> list[psutil.Process]:
    """Each connection's sshd process (not what it runs); one that ends while it is looked at is gone already."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            if child.name().startswith("sshd"):
                found.append(child)
    return found


def start_sshd(root: Path, *, extra_env: dict[str, str] | None = None) -> SshServer:
    binary = sshd_binary()
    if binary is None:
        raise RuntimeError("sshd not found: `make test` installs openssh-server")
    root.mkdir(parents=True, exist_ok=True)
    # sshd reads authorized_keys as the user logging in, who may be a dedicated build user
    for folder in (root, *root.parents):
        if folder == Path(tempfile.gettempdir()) or folder == folder.parent:
            break
        folder.chmod(folder.stat().st_mode | 0o755)
    host_key, client_key = root / "host_ed25519", root / "client_ed25519"
    host_pub = keygen(host_key, "rigops-test-host")
    client_pub = keygen(client_key, "rigops-test-client")
    (root / "authorized_keys").write_text(client_pub + "\n")
    (root / "authorized_keys").chmod(0o644)
    port = free_port()
    known_hosts = root / "known_hosts"
    known_hosts.write_text(f"[127.0.0.1]:{port} {' '.join(host_pub.split()[:2])}\n")
    env_lines = "".join(f"SetEnv {k}={v}\n" for k, v in (extra_env or {}).items())
    config = root / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {root}/sshd.pid\n"
        f"AuthorizedKeysFile {root}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        "LogLevel ERROR\nMaxSessions 200\nMaxStartups 200:30:400\nClientAliveInterval 0\nUseDNS no\n"
        f"PermitUserEnvironment no\n{env_lines}"
    )
    Path("/run/sshd").mkdir(exist_ok=True) if os.geteuid() == 0 else None
    with open(root / "sshd.log", "wb") as log:
        proc = subprocess.Popen([binary, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for_port(port, timeout=START_TIMEOUT, proc=proc)
    except (RuntimeError, TimeoutError) as exc:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{exc}; sshd said: {(root / 'sshd.log').read_text()[-2000:]}") from None
    return SshServer(
        root=root,
        port=port,
        user=getpass.getuser(),
        client_key=client_key,
        known_hosts=known_hosts,
        host_public_key=host_pub,
        proc=proc,
    )
