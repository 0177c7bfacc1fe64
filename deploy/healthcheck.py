"""The container's HEALTHCHECK: GET /healthz of the rigops running in this container; exit 0 when it answers 200.

It asks the address rigops itself serves on: ``--metrics ADDR:PORT`` on its command line, else the ``metrics`` key
of the config it was started with (``--config``, else ``$RIGOPS_CONFIG``, else ``./rigops.toml`` in its working
directory), read from ``/proc`` (same user, same container). A wildcard address (``0.0.0.0``, ``[::]``) is asked on
loopback. With no metrics listener configured there is no /healthz to ask: it says so and exits 0, so that the
image's health stays "healthy" rather than failing a rigops that was never asked to serve one.

Standard library only (it runs with the image's Python), no rigops import: a check must not load the bot.
"""

from __future__ import annotations

import os
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

WILDCARDS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}


def option(argv: Sequence[str], name: str) -> str | None:
    """The last value of ``name`` in ``argv`` (``--name VALUE`` or ``--name=VALUE``), as argparse keeps it."""
    found = None
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif word.startswith(name + "="):
            found = word.partition("=")[2]
    return found


def metrics_address(argv: Sequence[str], environ: Mapping[str, str], cwd: Path) -> str | None:
    """Where this rigops serves /metrics and /healthz, from its argv, environment and working directory."""
    address = option(argv, "--metrics")
    if address:
        return address
    config = Path(option(argv, "--config") or environ.get("RIGOPS_CONFIG") or "rigops.toml")
    try:
        data = tomllib.loads((cwd / config).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    value = data.get("metrics")
    return value if isinstance(value, str) and value else None


def health_url(address: str) -> str:
    host, _, port = address.rpartition(":")
    return f"http://{WILDCARDS.get(host, host)}:{port}/healthz"


def probe(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # a URL built here, http only
            return resp.status == 200, f"{resp.status} {resp.read(200).decode(errors='replace').strip()}"
    except urllib.error.HTTPError as exc:  # 503 and the reason
        return False, f"{exc.code} {exc.read(200).decode(errors='replace').strip()}"
    except OSError as exc:
        return False, f"{url}: {exc}"


def rigops_process(proc: Path = Path("/proc")) -> tuple[list[str], dict[str, str], Path] | None:
    """argv, environment and working directory of the rigops process in this container (tini's child)."""
    for entry in sorted(proc.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
            if not argv or "tini" in Path(argv[0]).name:
                continue
            if not any(Path(a).name == "rigops" or a == "bot" for a in argv[:3]):
                continue
            raw = (entry / "environ").read_bytes().split(b"\0")
            environ = dict(e.decode(errors="replace").partition("=")[::2] for e in raw if b"=" in e)
            return argv, environ, (entry / "cwd").resolve()
        except OSError:
            continue
    return None


def main() -> int:
    found = rigops_process()
    if found is None:
        print("no rigops process in this container")
        return 1
    address = metrics_address(*found)
    if address is None:
        print('no /healthz to ask: metrics is off (metrics = "0.0.0.0:9464" in the config, or run --metrics)')
        return 0
    ok, said = probe(health_url(address))
    print(said)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
