"""Config loading: the PRODUCT.md example, defaults, and errors that name file, key and problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import BuildConfig, load, parse, state_dir
from bot.util.errors import ConfigError

EXAMPLE = """
confirm = true

[slack]
ops_channels = ["C0123ABCD"]

[hosts.b200]
address = "b200.lab.example"
port = 22
user = "root"
key = "~/.ssh/id_ed25519"
known_hosts = "~/.ssh/known_hosts"

[hosts.b200.builds.sgl-kernel]
workdir = "/root/sglang/sgl-kernel"
command = "uv pip install -e . --no-build-isolation -v"
env = { CMAKE_POLICY_VERSION_MINIMUM = "3.5" }
jobs = 32
"""


def test_the_documented_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "rigops.toml"
    path.write_text(EXAMPLE)
    cfg = load(path)
    host = cfg.hosts["b200"]
    build = host.builds["sgl-kernel"]
    assert cfg.confirm and cfg.slack.ops_channels == ("C0123ABCD",)
    assert (host.address, host.port, host.user, host.is_local) == ("b200.lab.example", 22, "root", False)
    assert build.env == {"CMAKE_POLICY_VERSION_MINIMUM": "3.5"} and build.jobs == 32
    assert cfg.default_host == "b200" and host.default_build == "sgl-kernel"


def test_no_file_means_one_local_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load()
    assert list(cfg.hosts) == ["local"] and cfg.hosts["local"].is_local and not cfg.hosts["local"].builds


def test_config_path_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text(EXAMPLE)
    monkeypatch.setenv("RIGOPS_CONFIG", str(path))
    assert "b200" in load().hosts
    monkeypatch.setenv("RIGOPS_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match=r"missing\.toml: file not found"):
        load()


def test_state_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert state_dir(tmp_path) == tmp_path
    monkeypatch.setenv("RIGOPS_STATE_DIR", str(tmp_path / "env"))
    assert state_dir() == tmp_path / "env"
    monkeypatch.delenv("RIGOPS_STATE_DIR")
    assert state_dir() == Path("~/.local/state/rigops").expanduser()


def test_relative_workdir_of_a_local_build_is_next_to_the_config(tmp_path: Path) -> None:
    path = tmp_path / "rigops.toml"
    path.write_text('[hosts.here]\naddress = "local"\n[hosts.here.builds.demo]\nworkdir = "src"\ncommand = "make"\n')
    assert load(path).hosts["here"].builds["demo"].workdir == str(tmp_path / "src")


@pytest.mark.parametrize(("text", "message"), [
    ("confirm = 'yes'", "key 'confirm': expected bool"),
    ("[hosts.b200]\nport = 70000", "key 'hosts.b200.port': expected 1-65535"),
    ("[hosts.b200]\nadress = 'x'", "key 'hosts.b200.adress': unknown key"),
    ("[hosts.b200.builds.x]\ncommand = 'make'", "key 'hosts.b200.builds.x.workdir': required"),
    ("[hosts.b200.builds.x]\nworkdir = '/w'\ncommand = 'make'\njobs = 0", "expected 1-1024, got 0"),
    ("[hosts.b200.builds.x]\nworkdir = '/w'\ncommand = 'make'\nenv = { 'BAD NAME' = '1' }",
     "not a valid environment variable name"),
    ("[slack]\nops_channels = ['#ops']", "key 'slack.ops_channels[0]': expected a channel id like C0123ABCD"),
    ("[hosts.'b 200']\naddress = 'x'", "host names are letters"),
    ("confirm = true\nconfirm = false", "not valid TOML"),
    ("[policy]\noperators = ['bob smith']", "key 'policy.operators': 'bob smith' is not a user id"),
    ("[policy]\nadmins = 'U0ADMIN01'", "key 'policy.admins': expected a list"),
    ("[policy]\nauto_approve = ['root']", "key 'policy.auto_approve': expected a list of roles"),
    ("[policy]\nconfirm_timeout = 0", "key 'policy.confirm_timeout': expected a positive number"),
    ("[hosts.b200]\naddress = 'x'\n[policy.hosts.b300]\noperators = []", "key 'policy.hosts.b300': no such host"),
    ("[policy]\nviewers = []", "key 'policy.viewers': unknown key"),
])
def test_errors_name_the_file_the_key_and_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_a_build_keeps_its_work_unless_it_says_never() -> None:
    from bot.actions.rebuild import build_env

    def build(**extra: object) -> BuildConfig:
        raw = {"workdir": "/src", "command": "pip install . --no-build-isolation -v", **extra}
        return parse({"hosts": {"b200": {"address": "local", "builds": {"sgl": raw}}}}).hosts["b200"].builds["sgl"]

    assert build().resume == "auto"
    assert build_env(build(), 8)["SKBUILD_BUILD_DIR"] == "build/rigops-sgl/{wheel_tag}"
    assert "SKBUILD_BUILD_DIR" not in build_env(build(resume="never"), 8)
    own = build(command="pip install . -C build-dir=build/{wheel_tag} -v")  # the build names its own
    assert "SKBUILD_BUILD_DIR" not in build_env(own, 8)
    assert build_env(build(env={"SKBUILD_BUILD_DIR": "/scratch/b"}), 8)["SKBUILD_BUILD_DIR"] == "/scratch/b"
    with pytest.raises(ConfigError, match=r"key 'hosts\.b200\.builds\.sgl\.resume': expected one of auto, never"):
        build(resume="sometimes")
