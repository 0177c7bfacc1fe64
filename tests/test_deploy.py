"""The deployment files say what rigops does: the systemd unit (deploy/rigops.service), the container image
(Dockerfile, .dockerignore) and docs/deploy.md, checked against pyproject.toml, the code and the real CLI."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "deploy" / "rigops.service"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
DOC = ROOT / "docs" / "deploy.md"
SUBCOMMANDS = ("run", "console", "explain", "diagnose", "check")
# what ProtectHome=yes/tmpfs hides from the service
HIDDEN_BY_PROTECT_HOME = ("/home", "/root", "/run/user")


@functools.cache
def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@functools.cache
def script_name() -> str:
    """The console script that runs bot.app.cli:main."""
    scripts = pyproject()["project"]["scripts"]  # type: ignore[index]
    names = [name for name, target in scripts.items() if target == "bot.app.cli:main"]
    assert len(names) == 1, scripts
    return str(names[0])


def under(path: str, roots: list[str]) -> bool:
    p = PurePosixPath(path)
    return any(p == PurePosixPath(r) or PurePosixPath(r) in p.parents for r in roots)


# --- the systemd unit -------------------------------------------------------------------------------------------

def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit file as systemd reads it: sections of keys, each key with every value it was given, in order
    (an empty assignment resets the list); comments are lines starting with # or ;, a trailing \\ continues."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    logical = re.sub(r"\\\n", " ", text)
    for raw in logical.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"a setting before any section: {line!r}"
        assert "=" in line, f"not a Key=Value line: {line!r}"
        key, _, value = (part.strip() for part in line.partition("="))
        values = current.setdefault(key, [])
        if value:
            values.append(value)
        else:
            values.clear()
    return sections


@functools.cache
def unit() -> dict[str, dict[str, list[str]]]:
    return parse_unit(UNIT.read_text(encoding="utf-8"))


def service(key: str) -> list[str]:
    return unit()["Service"].get(key, [])


def one(key: str) -> str:
    values = service(key)
    assert len(values) == 1, f"{key}= given {len(values)} times: {values}"
    return values[0]


def unit_environment() -> dict[str, str]:
    env: dict[str, str] = {}
    for value in service("Environment"):
        for assignment in shlex.split(value):
            name, _, val = assignment.partition("=")
            env[name] = val
    return env


def writable_paths() -> list[str]:
    paths = [p.lstrip("-+") for value in service("ReadWritePaths") for p in value.split()]
    paths += [f"/var/lib/{d}" for value in service("StateDirectory") for d in value.split()]
    return paths


def test_the_unit_runs_the_console_script_with_run_as_a_dedicated_user() -> None:
    assert set(unit()) == {"Unit", "Service", "Install"}
    argv = shlex.split(one("ExecStart"))
    assert PurePosixPath(argv[0]).name == script_name() and PurePosixPath(argv[0]).is_absolute(), argv
    assert argv[1:] == ["run"], argv
    assert one("User") not in ("root", "0")
    assert one("Restart") == "on-failure"
    assert service("EnvironmentFile"), "the Slack tokens come from an EnvironmentFile"
    assert unit()["Install"]["WantedBy"] == ["multi-user.target"]


def test_the_unit_stops_rigops_the_way_it_shuts_down_cleanly() -> None:
    """rigops stops cleanly on SIGTERM, systemd's default (tests/core/test_takeover.py sees it exit 0)."""
    assert service("KillSignal") in ([], ["SIGTERM"])
    assert service("KillMode") in ([], ["control-group", "mixed"])


def test_the_hardening_leaves_the_state_dir_writable_and_the_ssh_keys_readable() -> None:
    env = unit_environment()
    state, home = env["RIGOPS_STATE_DIR"], env["HOME"]
    for path in (state, home):
        assert PurePosixPath(path).is_absolute(), path
    assert one("NoNewPrivileges") == "yes"
    assert one("PrivateTmp") == "yes"
    assert one("ProtectSystem") == "strict"
    assert under(state, writable_paths()), f"{state} is read-only under ProtectSystem=strict: {writable_paths()}"
    assert not under(state, ["/tmp", "/var/tmp"]), "PrivateTmp would throw the state away at every restart"
    hidden = [p.lstrip("-") for key in ("InaccessiblePaths", "ReadOnlyPaths", "TemporaryFileSystem")
              for value in service(key) for p in value.split()]
    if service("ProtectHome") and service("ProtectHome")[-1] in ("yes", "true", "tmpfs"):
        hidden += list(HIDDEN_BY_PROTECT_HOME)
    for path in (state, f"{home}/.ssh"):  # ~/.ssh: the default key and known_hosts
        assert not under(path, hidden), f"{path} is hidden or read-only in the sandbox"
    assert one("WorkingDirectory") == home or under(one("WorkingDirectory"), writable_paths())
    families = one("RestrictAddressFamilies").split()
    assert {"AF_INET", "AF_INET6", "AF_UNIX"} <= set(families), "Slack, SSH, PostgreSQL and DNS need these"


def test_the_unit_names_the_venv_the_docs_install() -> None:
    venv = PurePosixPath(shlex.split(one("ExecStart"))[0]).parent.parent
    assert f"-m venv {venv}" in DOC.read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (Debian's systemd)")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    """verify wants the ExecStart binary to exist: point it at this venv's console script."""
    exe = Path(sys.executable).parent / script_name()
    if not exe.exists():
        pytest.skip(f"no {exe}: install rigops into this venv")
    text = UNIT.read_text(encoding="utf-8")
    start = one("ExecStart").split()[0]
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(f"ExecStart={start} ", f"ExecStart={exe} "), encoding="utf-8")
    proc = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=20,
                          cwd=tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and UNIT.name not in output, output


def test_the_unit_parser_sees_what_systemd_sees() -> None:
    parsed = parse_unit("[Service]\n# c\n; c\nEnvironment=A=1\nEnvironment=\nEnvironment=B=2 \\\n  C=3\n")
    assert parsed == {"Service": {"Environment": ["B=2    C=3"]}}


# --- the container image ------------------------------------------------------------------------------------------

def dockerfile_instructions(text: str) -> Iterator[tuple[str, str]]:
    """(INSTRUCTION, rest) as docker reads them: comment lines dropped first (a \\ ending one continues
    nothing), then continuation lines joined."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for line in re.sub(r"\\\n", " ", code).splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            yield word.upper(), rest.strip()


@functools.cache
def dockerfile() -> list[tuple[str, str]]:
    return list(dockerfile_instructions(DOCKERFILE.read_text(encoding="utf-8")))


def last(instruction: str) -> str:
    found = [rest for word, rest in dockerfile() if word == instruction]
    assert found, f"no {instruction} in the Dockerfile"
    return found[-1]


def exec_form(instruction: str) -> list[str]:
    try:
        value = json.loads(last(instruction))
    except json.JSONDecodeError:
        pytest.fail(f"{instruction} {last(instruction)}: not in exec form (a JSON list), so no signal reaches rigops")
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), f"{instruction} in exec form"
    return value


def docker_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in dockerfile():
        if word == "ENV":
            for assignment in shlex.split(rest):
                name, _, value = assignment.partition("=")
                env[name] = value
    return env


def test_the_image_runs_the_console_script_with_run_as_a_user_that_is_not_root() -> None:
    command = exec_form("ENTRYPOINT") + exec_form("CMD")
    at = command.index(script_name())
    assert command[at:] == [script_name(), "run"], command
    assert command[:at] in ([], ["/usr/bin/tini", "--"]), command
    user = last("USER").split(":")[0]
    assert user not in ("root", "0", ""), user
    assert [rest for word, rest in dockerfile() if word == "STOPSIGNAL"] in ([], ["SIGTERM"])  # what rigops stops on


def test_the_image_keeps_its_state_in_a_volume_and_installs_from_the_checkout() -> None:
    env = docker_env()
    assert set(json.loads(last("VOLUME"))) >= {env["RIGOPS_STATE_DIR"]}
    assert env["RIGOPS_CONFIG"].startswith("/")
    runs = " ".join(rest for word, rest in dockerfile() if word == "RUN")
    assert "openssh-client" in runs and re.search(r"\bpip install \.(\s|$)", runs), runs
    base = dockerfile()[0]
    assert base[0] == "ARG", "the base image is a build argument"
    version = re.search(r"python:(\d+)\.(\d+)", base[1])
    requires = re.search(r">=(\d+)\.(\d+)", str(pyproject()["project"]["requires-python"]))  # type: ignore[index]
    assert version and requires
    assert (int(version[1]), int(version[2])) >= (int(requires[1]), int(requires[2]))


def test_what_the_image_copies_exists_and_is_not_ignored() -> None:
    ignored = [line.strip() for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    for must in (".git", ".venv", ".env", "**/__pycache__", ".pytest_cache"):
        assert must in ignored, f"{must} belongs in .dockerignore"
    copied = [src for word, rest in dockerfile() if word == "COPY" for src in rest.split()[:-1]
              if not src.startswith("--")]
    assert {"pyproject.toml", "bot"} <= set(copied)
    readme = pyproject()["project"]["readme"]  # type: ignore[index]
    assert readme in copied, "setuptools reads the readme while it builds"
    for src in copied:
        assert (ROOT / src).exists(), src
        assert src not in ignored and src.split("/")[0] not in ignored, f"{src} is copied but ignored"


# --- docs/deploy.md ---------------------------------------------------------------------------------------------

def doc_commands(text: str) -> list[list[str]]:
    """The command lines the doc shows: fenced sh blocks (continuations joined) and inline `code` spans."""
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        lines += [line for line in re.sub(r"\\\n", " ", block).splitlines() if not line.lstrip().startswith("#")]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    lines += re.findall(r"`([^`\n]+)`", prose)
    commands = []
    for line in lines:
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        commands.append(words)
    return commands


def rigops_invocations(text: str) -> list[tuple[str | None, list[str]]]:
    """(subcommand or None, flags) of each rigops command line the doc shows, also inside `sh -c '…'` and after
    the image name of a `docker run`; lone flags in inline code count as flags of rigops with no subcommand."""
    found: list[tuple[str | None, list[str]]] = []

    def scan(words: list[str]) -> None:
        for word in words:
            if " " in word:  # sh -c '…'
                scan(shlex.split(word.replace(";", " ; ")))
        if not words:
            return
        if words[0].startswith("-"):  # `--bind 0.0.0.0`
            found.append((None, [w for w in words if w.startswith("-")]))
            return
        if words[:2] == ["docker", "run"]:
            if "rigops" not in words:
                return
            words = words[len(words) - 1 - words[::-1].index("rigops"):]  # the image, then its arguments
        # `rigops …`, or an installed script anywhere on the line: `exec /opt/rigops/bin/rigops …`
        starts = [i for i, w in enumerate(words)
                  if (i == 0 and w == script_name()) or w.endswith(f"/bin/{script_name()}")]
        if not starts:
            return
        args: list[str] = []
        for w in words[starts[0] + 1:]:
            if w in (";", "&&", "||", "|"):
                break
            args.append(w)
        words_only = [a for a in args if not a.startswith("-")]
        # the subcommand; else the first word, which is not one (a flag's value when no subcommand follows)
        sub = next((a for a in words_only if a in SUBCOMMANDS), words_only[0] if words_only else None)
        found.append((sub, [a for a in args if a.startswith("-")]))

    for words in doc_commands(text):
        scan(words)
    return found


HELP_FLAGS: dict[str | None, frozenset[str]] = {}


def help_flags(*subs: str | None) -> frozenset[str]:
    """The flags in the real CLI's --help (top level for None), for each of ``subs`` together; the ones not
    asked for yet run side by side."""
    procs = {sub: subprocess.Popen([sys.executable, "-m", "bot", *([sub] if sub else []), "--help"], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for sub in dict.fromkeys(subs) if sub not in HELP_FLAGS}
    for sub, proc in procs.items():
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        HELP_FLAGS[sub] = frozenset(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", out))
    return frozenset().union(*(HELP_FLAGS[sub] for sub in subs))


def unknown_flags(text: str) -> list[str]:
    shown = rigops_invocations(text)
    bad = [f"rigops {sub}: no such subcommand" for sub, _ in shown if sub is not None and sub not in SUBCOMMANDS]
    shown = [(sub, flags) for sub, flags in shown if sub is None or sub in SUBCOMMANDS]
    known = help_flags(None, *(sub for sub, _ in shown if sub))  # usually all that is needed
    for sub, flags in shown:
        for flag in flags:
            name = flag.split("=")[0]
            if sub is not None and name in help_flags(sub):
                continue
            if sub is None and (name in known or name in help_flags(None, *SUBCOMMANDS)):  # a flag of any of them
                continue
            bad.append(f"{sub or 'rigops'} {flag}")
    return bad


def test_every_rigops_flag_the_doc_shows_is_in_its_help() -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = rigops_invocations(text)
    subs = {sub for sub, _ in shown}
    assert {"run", "check"} <= subs, shown  # the doc's commands were found at all
    assert {"--config", "--state-dir", "--http", "--bind"} <= {f for _, flags in shown for f in flags}, shown
    assert unknown_flags(text) == []


def test_a_flag_rigops_does_not_have_is_caught() -> None:
    text = ("```sh\n/opt/rigops/bin/rigops --config x \\\n  run --htp 3000\n"
            "docker run -d --name rigops -v a:b rigops check --yes\n```\nor `--bnd 0.0.0.0`, `rigops chek`\n")
    assert unknown_flags(text) == ["rigops chek: no such subcommand", "run --htp", "check --yes", "rigops --bnd"]


def test_every_variable_the_deployment_files_name_is_one_rigops_reads() -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "bot").rglob("*.py"))
    build_args = {rest.split("=")[0] for word, rest in dockerfile() if word == "ARG"}
    for path in (UNIT, DOCKERFILE, DOC):
        named = set(re.findall(r"\b((?:RIGOPS|SLACK)_[A-Z_]+)\b", path.read_text(encoding="utf-8")))
        for name in named - build_args:
            assert f'"{name}"' in code, f"{path.name} names ${name}, which rigops does not read"


# --- the image's health check (deploy/healthcheck.py) and the podman scripts -----------------------------------

HEALTHCHECK_PY = ROOT / "deploy" / "healthcheck.py"


@functools.cache
def healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rigops_healthcheck", HEALTHCHECK_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_image_checks_its_health_with_the_script_it_copies() -> None:
    """HEALTHCHECK in exec form runs deploy/healthcheck.py where the Dockerfile copies it, with the venv's Python
    (podman keeps HEALTHCHECK only in the docker format, which build-image.sh asks for)."""
    words = last("HEALTHCHECK").split()
    assert "CMD" in words, words
    command = json.loads(" ".join(words[words.index("CMD") + 1:]))
    copies = {rest.split()[-1]: rest.split()[:-1] for word, rest in dockerfile() if word == "COPY"}
    assert copies.get(command[-1]) == ["deploy/healthcheck.py"], (command, copies)
    assert command[0].startswith("/opt/rigops/bin/"), command
    assert "--format docker" in (ROOT / "deploy" / "build-image.sh").read_text(encoding="utf-8")


def test_the_health_check_finds_the_address_rigops_serves_on(tmp_path: Path) -> None:
    find = healthcheck().metrics_address
    assert find(["python", "/opt/rigops/bin/rigops", "run", "--metrics", "0.0.0.0:9464"], {}, tmp_path) == \
        "0.0.0.0:9464"
    assert find(["rigops", "run", "--metrics=127.0.0.1:1"], {}, tmp_path) == "127.0.0.1:1"
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "r.toml").write_text('metrics = "[::]:9464"\n[hosts.a]\naddress = "local"\n')
    assert find(["rigops", "--config", "etc/r.toml", "run"], {}, tmp_path) == "[::]:9464"  # relative to its cwd
    assert find(["rigops", "run"], {"RIGOPS_CONFIG": str(tmp_path / "etc" / "r.toml")}, Path("/")) == "[::]:9464"
    assert find(["rigops", "run"], {}, tmp_path) is None  # no ./rigops.toml
    (tmp_path / "rigops.toml").write_text('confirm = false\n')
    assert find(["rigops", "run"], {}, tmp_path) is None  # metrics off
    (tmp_path / "rigops.toml").write_text('metrics = \n')
    assert find(["rigops", "run"], {}, tmp_path) is None  # not TOML: rigops would not start either
    url = healthcheck().health_url
    assert url("0.0.0.0:9464") == "http://127.0.0.1:9464/healthz"
    assert url("[::]:9464") == "http://[::1]:9464/healthz"
    assert url("10.1.2.3:80") == "http://10.1.2.3:80/healthz"


def test_the_health_check_finds_rigops_among_the_containers_processes(tmp_path: Path) -> None:
    def process(pid: int, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        d = tmp_path / str(pid)
        d.mkdir()
        (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        (d / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0")
        (d / "cwd").symlink_to(cwd)

    (tmp_path / "self").mkdir()
    process(1, ["/usr/bin/tini", "--", "rigops", "run"], {}, tmp_path)
    process(7, ["/opt/rigops/bin/python3", "-c", "agent"], {}, tmp_path)
    process(9, ["/opt/rigops/bin/python", "/opt/rigops/bin/rigops", "run"], {"RIGOPS_CONFIG": "/etc/r.toml"},
            tmp_path / "self")
    found = healthcheck().rigops_process(tmp_path)
    assert found == (["/opt/rigops/bin/python", "/opt/rigops/bin/rigops", "run"], {"RIGOPS_CONFIG": "/etc/r.toml"},
                     (tmp_path / "self").resolve())


def test_the_health_check_passes_on_200_only() -> None:
    statuses = iter([200, 503])

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = next(statuses)
            body = b"ok\n" if status == 200 else b"not connected to Slack\n"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = healthcheck().health_url(f"0.0.0.0:{server.server_address[1]}")
        try:
            assert healthcheck().probe(url) == (True, "200 ok")
            assert healthcheck().probe(url) == (False, "503 not connected to Slack")
        finally:
            server.shutdown()
    ok, said = healthcheck().probe(url, timeout=2)  # nothing listening any more
    assert not ok and url in said


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_podman_scripts_parse() -> None:
    for script in ("build-image.sh", "run-image.sh", "podman.sh"):
        proc = subprocess.run(["bash", "-n", str(ROOT / "deploy" / script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(os.environ.get("TEST_IMAGE") != "1" or shutil.which("podman") is None or os.geteuid() != 0,
                    reason="builds and runs the image for real (minutes): TEST_IMAGE=1, as root, with podman")
@pytest.mark.timeout(900)
def test_the_image_builds_and_runs_against_the_emulator() -> None:
    """deploy/build-image.sh, then deploy/run-image.sh with this venv's Python (see docs/deploy.md)."""
    build = subprocess.run([str(ROOT / "deploy" / "build-image.sh")], capture_output=True, text=True, timeout=800)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    run = subprocess.run([str(ROOT / "deploy" / "run-image.sh")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHON": sys.executable})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert json.loads(run.stdout.splitlines()[-1])["ok"] is True
