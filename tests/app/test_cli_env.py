"""``rigops run`` reads its tokens from .env in the working directory and beside the config file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(cwd / "state"),
                           "run"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the config's folder, the working directory, the config)."""
    etc, work = tmp_path / "etc", tmp_path / "work"
    etc.mkdir()
    work.mkdir()
    config = etc / "rigops.toml"
    config.write_text('[hosts.local]\naddress = "local"\n')
    return etc, work, config


def test_the_env_file_beside_the_config_is_read(tmp_path: Path) -> None:
    etc, work, config = folders(tmp_path)
    done = run(work, config)
    assert done.returncode != 0 and "SLACK_BOT_TOKEN is not set" in done.stderr, done.stderr
    (etc / ".env").write_text("SLACK_BOT_TOKEN=xoxb-beside-the-config\n")
    done = run(work, config)  # the bot token was found: now it is the app token that is missing
    assert done.returncode != 0 and "SLACK_APP_TOKEN is not set" in done.stderr, done.stderr
    assert "xoxb-beside-the-config" not in done.stderr + done.stdout  # never a secret in the output


def test_the_working_directory_s_env_file_comes_first(tmp_path: Path) -> None:
    etc, work, config = folders(tmp_path)
    (etc / ".env").write_text("SLACK_BOT_TOKEN=xoxb-a\n")
    (work / ".env").write_text("SLACK_BOT_TOKEN=\n")  # set, to nothing, here: the one beside the config is not used
    done = run(work, config)
    assert "SLACK_BOT_TOKEN is not set" in done.stderr, done.stderr
