"""Fresh venvs holding build backends and tools from PyPI, for tests of real ``pip install .`` builds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def venv_with(where: Path, *packages: str) -> Path:
    """A fresh venv in ``where`` with ``packages`` from PyPI (this venv's pip installs them, a few seconds from
    pip's cache); its python. Skips the test, with pip's last line, when they cannot be installed here."""
    venv = where / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
               "--timeout", "15", "--retries", "1", *packages]
    done = subprocess.run(install, capture_output=True, text=True, timeout=240, check=False)
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"needs {', '.join(packages)} from PyPI, which pip could not install here: {said}")
    return python
