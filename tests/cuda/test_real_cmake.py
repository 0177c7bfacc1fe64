"""CMake 4's policy minimum, produced for real: a tiny scikit-build-core project whose CMakeLists.txt still says
``cmake_minimum_required(VERSION 3.4)``, installed as the seed was (``pip install . --no-build-isolation -v``)
into a venv holding scikit-build-core and CMake 4 from PyPI, is refused at configure; bot.builds.diagnose names the
line and a fix, and the fix, applied as it says, makes the same build succeed.
tests/data/logs/real-cmake4-skbuild-policy.log keeps one such log in the diagnosis corpus.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.builds.diagnose import diagnose
from tests.cuda.test_real_nvcc import ENV, only_line, run
from tests.fakes.venvs import venv_with

PYPROJECT = """[build-system]
requires = ["scikit-build-core"]
build-backend = "scikit_build_core.build"

[project]
name = "sgl-kernel"
version = "0.0.1"
"""
CMAKELISTS = """cmake_minimum_required(VERSION 3.4)
project(sgl_kernel LANGUAGES CXX)
add_library(common_ops MODULE csrc/common_ops.cpp)
install(TARGETS common_ops DESTINATION sgl_kernel)
"""
POLICY_REMOVED = re.compile(r"^ +Compatibility with CMake < (?P<version>[\d.]+) has been removed from CMake\.$")


@pytest.fixture(scope="module")
def cmake4_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python with scikit-build-core and CMake >= 4 from PyPI (this venv's pip installs them,
    which takes a few seconds from pip's cache); skips when the index cannot be reached."""
    python = venv_with(tmp_path_factory.mktemp("cmake4"), "scikit-build-core", "cmake>=4")
    version = subprocess.run([str(python.parent / "cmake"), "--version"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    assert re.match(r"cmake version [4-9]\.", version), version
    return python


def pip_install(python: Path, project: Path, env: dict[str, str] | None = None) -> str:
    """``pip install . --no-build-isolation -v`` of ``project`` into ``python``'s venv: the seed's command (pip
    runs in that venv's python; --no-index: the project has no dependencies, and its build must not fetch any)."""
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", ".", "--no-build-isolation", "-v"]
    return run(command, project, {**ENV, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", **(env or {})})


def test_cmake4_refuses_an_old_minimum_and_the_fix_builds_it(cmake4_python: Path, tmp_path: Path) -> None:
    project = tmp_path / "sgl-kernel"
    for name, text in {"pyproject.toml": PYPROJECT, "CMakeLists.txt": CMAKELISTS,
                       "csrc/common_ops.cpp": "int common_ops() { return 0; }\n"}.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)

    log = pip_install(cmake4_python, project)
    assert re.search(r"\*\*\* scikit-build-core \S+ using CMake [4-9]\.", log), log
    assert "CMake Error at CMakeLists.txt:1 (cmake_minimum_required):" in log, log
    line = only_line(log, "has been removed from CMake")
    version = POLICY_REMOVED.match(line)
    assert version is not None, line
    got = diagnose(log)
    assert (got.category, got.line) == ("cmake_version", line)
    setting = f"CMAKE_POLICY_VERSION_MINIMUM={version['version']}"
    assert setting in got.fix and "cmake_minimum_required" in got.fix, got.fix

    # The fix as it says: the setting in the build's environment (rigops.toml's env), the same command again.
    fixed = pip_install(cmake4_python, project, dict([setting.split("=")]))
    assert "Successfully installed sgl-kernel" in fixed, fixed
    assert diagnose(fixed).category == "unknown"
