"""`rigops console`: the real CLI, reading a pipe, running the same listeners as Slack against this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.tools import kill_session, read_stat_fields, session_members, start_fake_build, stop
from tests.fakes.users import needs_own_build_user
from tests.waiting import wait_until


def console(args: list[str], stdin: str, *, config: Path, state: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    return subprocess.run([sys.executable, "-m", "bot", "--config", str(config), "--state-dir", str(state),
                           "console", *args], input=stdin, capture_output=True, text=True, timeout=120, env=env)


def write_config(path: Path, *, user: str, workdir: Path, command: str) -> Path:
    path.write_text(f"""
[hosts.local]
address = "local"
user = "{user}"

[hosts.local.builds.demo]
workdir = "{workdir}"
command = "{command}"
jobs = 3
""")
    return path


@needs_own_build_user
def test_piped_console_runs_the_seed_with_yes(tmp_path: Path, open_tmp: Path, fake_bin: Path, build_user: str) -> None:
    config = write_config(tmp_path / "rigops.toml", user=build_user, workdir=open_tmp,
                          command=f"echo jobs=$MAX_JOBS; exec {fake_bin}/ninja 2 -- {fake_bin}/cc1plus 8")
    build = start_fake_build(fake_bin, compilers=3, mb=16, user=build_user)
    wait_until(lambda: len(session_members(build.pid)) >= 5, what="the hand-started build")
    try:
        out = console(["--yes"], "free -h\noom-ing pretty bad, try -j2\nlunch anyone?\nstatus\n",
                      config=config, state=tmp_path / "state")
    finally:
        stop(build)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("total        used        free") == 2  # free -h, then after the kill
    assert "stopped 4 processes" in text and "cc1plus" in text
    assert "started `demo` at -j2" in text
    assert "lunch" not in text
    assert "Builds on local" in text and "`demo` -j2 — running" in text
    assert set(session_members(build.pid)) <= {build.pid}
    pid = int(text.split("started `demo` at -j2 (pid ")[1].split(")")[0])
    fields = read_stat_fields(pid)
    if fields is not None:
        kill_session(int(fields[3]))


def test_console_without_yes_waits_for_an_answer(tmp_path: Path, open_tmp: Path, build_user: str) -> None:
    config = write_config(tmp_path / "rigops.toml", user=build_user, workdir=open_tmp, command="true")
    out = console([], "rebuild -j4\nno\n/rigops help\n", config=config, state=tmp_path / "state")
    assert out.returncode == 0, out.stderr
    assert "[Run] [Cancel]" in out.stdout
    assert "Cancelled by @U0CONSOLE" in out.stdout
    assert "started" not in out.stdout
    assert "`rebuild [-jN] [--clean]`" in out.stdout  # the help text


def test_console_refuses_bad_numbers_clearly(tmp_path: Path, open_tmp: Path, build_user: str) -> None:
    config = write_config(tmp_path / "rigops.toml", user=build_user, workdir=open_tmp, command="true")
    out = console(["--yes"], "retry with -j0\nrebuild -j100000\n", config=config, state=tmp_path / "state")
    assert out.returncode == 0, out.stderr
    assert "-j0: jobs must be between 1 and 1024" in out.stdout
    assert "jobs must be between 1 and 1024" in out.stdout.split("-j0")[-1]
    assert "started" not in out.stdout


def test_console_asks_which_host_and_a_typed_name_answers(tmp_path: Path, open_tmp: Path) -> None:
    config = tmp_path / "rigops.toml"
    config.write_text(f"""
[hosts.alpha]
address = "local"
user = "lp"  # nobody's builds run as lp: no host has one, so rigops must ask
[hosts.alpha.builds.app]
workdir = "{open_tmp}"
command = "true"

[hosts.beta]
address = "local"
user = "lp"
[hosts.beta.builds.app]
workdir = "{open_tmp}"
command = "true"
""")
    out = console([], "oom-ing pretty bad, try -j20\nbeta\nno\n", config=config, state=tmp_path / "state")
    assert out.returncode == 0, out.stderr
    assert "Which host is this about?" in out.stdout and "[alpha] [beta]" in out.stdout
    assert "(type one of them to answer)" in out.stdout
    assert "Which host: beta" in out.stdout and "beta · `app`" in out.stdout  # plain text: no mrkdwn stars
    assert "Cancelled by @U0CONSOLE" in out.stdout and "started" not in out.stdout and "<@" not in out.stdout


def test_console_takes_options_after_the_subcommand_and_saves_attachments(tmp_path: Path, open_tmp: Path,
                                                                           build_user: str) -> None:
    config = write_config(tmp_path / "rigops.toml", user=build_user, workdir=open_tmp,
                          command="yes 0123456789abcdef | head -n 2000")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    out = subprocess.run([sys.executable, "-m", "bot", "console", "--yes", "--config", str(config), "--state-dir",
                          str(tmp_path / "state")], input="rebuild -j1\nfree -h\n/rigops log 400\n",
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    saved = tmp_path / "state" / "files"
    files = list(saved.glob("demo-run*.log"))
    assert len(files) == 1 and f"saved to {files[0]}" in out.stdout, out.stdout
    assert files[0].read_text().count("0123456789abcdef") == 400
