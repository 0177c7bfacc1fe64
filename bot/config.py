"""The TOML config, read into frozen dataclasses.

Path: ``--config``, else ``$RIGOPS_CONFIG``, else ``./rigops.toml``; no file at all means one local host
named ``local`` and no builds. Every error names the file, the key and the problem. The state is SQLite in the
state dir unless ``state = "postgresql://…"`` (or ``$RIGOPS_STATE_URL``, which wins) names a shared database.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from bot.policy_config import ID_RE, PolicyConfig, parse_policy
from bot.util.errors import ConfigError

DEFAULT_CONFIG_NAME = "rigops.toml"
DEFAULT_STATE_DIR = "~/.local/state/rigops"
LOCAL_ADDRESS = "local"
DEFAULT_PORT = 22
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_COMMAND_TIMEOUT = 30.0
DEFAULT_KILL_GRACE = 3.0
DEFAULT_MEMORY_RESERVE = 0.10
DEFAULT_MEMORY_ALERT_PCT = 5.0
PressureAction = Literal["alert", "pause", "restart"]
Resume = Literal["auto", "never"]
RESUMES: tuple[str, ...] = ("auto", "never")
Cache = Literal["none", "ccache", "sccache"]
NAMES_BUILD_DIR = re.compile(r"build[-_]dir", re.IGNORECASE)  # -C build-dir=…, --config-settings=build-dir=…
CACHES: tuple[str, ...] = ("none", "ccache", "sccache")
PRESSURE_ACTIONS: tuple[PressureAction, ...] = ("alert", "pause", "restart")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TIMEZONE = "UTC"
ALL_HOSTS = "all"
STATE_URL_ENV = "RIGOPS_STATE_URL"
STATE_URL_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


@dataclass(frozen=True)
class BuildConfig:
    name: str
    workdir: str
    command: str
    env: Mapping[str, str] = field(default_factory=dict)
    jobs: int | None = None
    log_dir: str | None = None  # default: <state dir on the host>/logs
    resume: Resume = "auto"  # a restart keeps the finished work where the build tool allows it
    cache: Cache = "none"  # a compiler cache put in front of CMake's compilers ("ccache", "sccache")

    @property
    def names_build_dir(self) -> bool:
        """The build says where scikit-build-core builds it (``-C build-dir=…`` in its command, or
        ``SKBUILD_BUILD_DIR`` in its env): that directory is the build's own, and rigops leaves it alone."""
        return "SKBUILD_BUILD_DIR" in self.env or bool(NAMES_BUILD_DIR.search(self.command))

    @property
    def kept_dir(self) -> str | None:
        """The directory rigops keeps the build's work in between runs (relative to its workdir, one
        subdirectory per wheel tag below it), or None: ``resume = "never"``, or the build names its own."""
        if self.resume != "auto" or self.names_build_dir:
            return None
        return f"build/rigops-{self.name}"


@dataclass(frozen=True)
class HostConfig:
    name: str
    address: str = LOCAL_ADDRESS
    port: int = DEFAULT_PORT
    user: str | None = None
    key: str | None = None
    known_hosts: str | None = None
    python: str = "python3"
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    kill_grace: float = DEFAULT_KILL_GRACE
    builds: Mapping[str, BuildConfig] = field(default_factory=dict)
    memory_reserve: float = DEFAULT_MEMORY_RESERVE  # share of memory the -j advisor keeps free
    memory_alert_pct: float = DEFAULT_MEMORY_ALERT_PCT  # a pressure alert when less than this % is available
    on_memory_pressure: PressureAction = "alert"  # alert only, or pause the heaviest compilers, or restart lower

    @property
    def is_local(self) -> bool:
        return self.address == LOCAL_ADDRESS

    @property
    def default_build(self) -> str | None:
        return next(iter(self.builds)) if len(self.builds) == 1 else None


@dataclass(frozen=True)
class SlackConfig:
    ops_channels: tuple[str, ...] = ()
    # what a message in a channel means when it names no host: ``[slack.channels.C0123ABCD] hosts = ["b200"]``
    channel_hosts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ScheduleConfig:
    """A ``[[schedules]]`` entry: post a status digest of ``hosts`` (None: every host) to ``channel``."""

    cron: str  # a crontab line, or "every 30m", "hourly", "daily at 09:00", "weekdays at 09:00"
    channel: str
    hosts: tuple[str, ...] | None = None
    timezone: str = DEFAULT_TIMEZONE
    only_changes: bool = False  # skip a post when nothing changed since the last one


@dataclass(frozen=True)
class Config:
    path: Path | None = None
    confirm: bool = True
    slack: SlackConfig = SlackConfig()
    hosts: Mapping[str, HostConfig] = field(default_factory=dict)
    policy: PolicyConfig | None = None  # None: no [policy] table (everyone is a viewer in Slack)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # [groups] a100 = ["n1", "n2"]
    schedules: tuple[ScheduleConfig, ...] = ()
    state: str | None = field(default=None, repr=False)  # a PostgreSQL URL (may hold a password); None: SQLite
    metrics: str | None = None  # "ADDRESS:PORT" where /metrics and /healthz are served; None: not served

    @property
    def default_host(self) -> str | None:
        return next(iter(self.hosts)) if len(self.hosts) == 1 else None

    def members(self, name: str) -> tuple[str, ...]:
        """The hosts a name stands for: a group's members, every host for "all", else the host itself."""
        if name == ALL_HOSTS:
            return tuple(self.hosts)
        return self.groups.get(name, (name,))

    def is_group(self, name: str | None) -> bool:
        return name == ALL_HOSTS or name in self.groups

    def host(self, name: str) -> HostConfig:
        try:
            return self.hosts[name]
        except KeyError:
            raise ConfigError(f"unknown host {name!r} (known: {', '.join(self.hosts)})") from None


def local_only() -> Config:
    """The config used when there is no file: this machine, no builds."""
    return Config(hosts={"local": HostConfig(name="local")})


def config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit)
    if env := os.environ.get("RIGOPS_CONFIG"):
        return Path(env)
    return Path(DEFAULT_CONFIG_NAME)


def state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    raw = explicit or os.environ.get("RIGOPS_STATE_DIR") or DEFAULT_STATE_DIR
    return Path(raw).expanduser()


def load(explicit: str | os.PathLike[str] | None = None) -> Config:
    """Load the config; a missing default file means local only, a missing named file is an error.
    ``$RIGOPS_STATE_URL`` replaces the file's ``state``.

    Raises ConfigError.
    """
    config = _load_file(explicit)
    if url := os.environ.get(STATE_URL_ENV):
        config = replace(config, state=_state_url(url, _Reader(f"${STATE_URL_ENV}"), key=None))
    return config


def _load_file(explicit: str | os.PathLike[str] | None) -> Config:
    path = config_path(explicit)
    named = bool(explicit or os.environ.get("RIGOPS_CONFIG"))
    if not path.exists():
        if named:
            raise ConfigError("file not found", path=str(path))
        return local_only()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from exc
    return parse(data, path=path)


METRICS_ADDRESS_RE = re.compile(r"(?:[0-9.]{7,15}|\[[0-9a-f:]{2,39}\]|localhost):[0-9]{1,5}")


def parse(data: Mapping[str, Any], *, path: Path | None = None) -> Config:
    """Build a Config from parsed TOML. Raises ConfigError."""
    r = _Reader(str(path) if path else "<config>", path.parent if path else None)
    known = {"confirm", "slack", "hosts", "groups", "schedules", "policy", "state", "metrics"}
    r.no_unknown(data, known, "")
    confirm = r.get(data, "confirm", bool, True)
    slack_raw = r.table(data, "slack")
    r.no_unknown(slack_raw, {"ops_channels", "channels"}, "slack")
    channels = tuple(r.get(slack_raw, "ops_channels", list, [], prefix="slack"))
    for i, ch in enumerate(channels):
        if not isinstance(ch, str) or not ID_RE.match(ch):
            r.fail(f"slack.ops_channels[{i}]", f"expected a channel id like C0123ABCD, got {ch!r}")
    hosts_raw = r.table(data, "hosts")
    hosts = {name: _host(r, name, raw) for name, raw in hosts_raw.items()}
    if not hosts:
        hosts = dict(local_only().hosts)
    groups = _groups(r, r.table(data, "groups"), hosts)
    channel_hosts = _channel_hosts(r, r.table(slack_raw, "channels"), hosts, groups)
    policy = parse_policy(r.table(data, "policy"), hosts=set(hosts), fail=r.fail) if "policy" in data else None
    schedules = tuple(_schedule(r, f"schedules[{i}]", raw, hosts, groups) for i, raw in
                      enumerate(r.get(data, "schedules", list, [])))
    state = _state_url(r.get(data, "state", str, None), r, key="state") if "state" in data else None
    metrics = r.get(data, "metrics", str, None)
    if metrics is not None and not METRICS_ADDRESS_RE.fullmatch(metrics):
        r.fail("metrics", f"expected ADDRESS:PORT like 127.0.0.1:9464, got {metrics!r}")
        metrics = None
    return Config(path=path, confirm=confirm, slack=SlackConfig(ops_channels=channels, channel_hosts=channel_hosts),
                  hosts=hosts,
                  policy=policy, schedules=schedules, groups=groups, state=state, metrics=metrics)


def _state_url(url: str, r: _Reader, *, key: str | None) -> str:
    """A shared state's URL, ``postgresql://user:password@host:port/db``. Errors name its scheme only: the rest
    may hold a password."""
    scheme = url.split("://", 1)[0] if "://" in url else None
    if scheme not in STATE_URL_SCHEMES:
        message = (f"expected a PostgreSQL URL like postgresql://user@host:5432/rigops, got "
                   f"{repr(scheme) + ' URL' if scheme else 'no URL'}")
        if key is None:
            raise ConfigError(message, path=r.path)
        r.fail(key, message)
    return url


def _channel_hosts(r: _Reader, raw: Mapping[str, Any], hosts: Mapping[str, HostConfig],
                   groups: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``[slack.channels.<id>] hosts = [...]``: hosts (or groups, standing for their members) per channel."""
    out: dict[str, tuple[str, ...]] = {}
    for channel, table in raw.items():
        key = f"slack.channels.{channel}"
        if not ID_RE.match(channel):
            r.fail(key, f"expected a channel id like C0123ABCD, got {channel!r}")
        if not isinstance(table, dict):
            r.fail(key, "expected a table")
        r.no_unknown(table, {"hosts"}, key)
        names = r.get(table, "hosts", list, [], prefix=key)
        members: list[str] = []
        for name in names:
            if name not in hosts and name not in groups and name != ALL_HOSTS:
                r.fail(f"{key}.hosts", f"unknown host or group {name!r} (hosts: {', '.join(hosts)})")
            members += [name] if name in hosts else list(groups.get(name, tuple(hosts)))
        out[channel] = tuple(dict.fromkeys(members))
    return out


def _host(r: _Reader, name: str, raw: Any) -> HostConfig:
    key = f"hosts.{name}"
    if not isinstance(raw, dict):
        r.fail(key, "expected a table")
    if not NAME_RE.match(name) or name == ALL_HOSTS:
        r.fail(key, f"host names are letters, digits, '.', '_' and '-', and not {ALL_HOSTS!r}")
    r.no_unknown(raw, {"address", "port", "user", "key", "known_hosts", "python", "connect_timeout",
                       "command_timeout", "kill_grace", "builds", "memory_reserve", "memory_alert_pct",
                       "on_memory_pressure"}, key)
    address = r.get(raw, "address", str, LOCAL_ADDRESS, prefix=key)
    port = r.get(raw, "port", int, DEFAULT_PORT, prefix=key)
    if not 0 < port < 65536:
        r.fail(f"{key}.port", f"expected 1-65535, got {port}")
    timeouts = {k: float(r.get(raw, k, (int, float), d, prefix=key)) for k, d in (
        ("connect_timeout", DEFAULT_CONNECT_TIMEOUT), ("command_timeout", DEFAULT_COMMAND_TIMEOUT),
        ("kill_grace", DEFAULT_KILL_GRACE))}
    for k, v in timeouts.items():
        if v <= 0:
            r.fail(f"{key}.{k}", "must be positive")
    reserve = float(r.get(raw, "memory_reserve", (int, float), DEFAULT_MEMORY_RESERVE, prefix=key))
    if not 0 <= reserve < 1:
        r.fail(f"{key}.memory_reserve", f"expected a share of memory from 0 to 0.99, got {reserve}")
    alert_pct = float(r.get(raw, "memory_alert_pct", (int, float), DEFAULT_MEMORY_ALERT_PCT, prefix=key))
    if not 0 < alert_pct < 50:
        r.fail(f"{key}.memory_alert_pct", f"expected a percentage above 0 and below 50, got {alert_pct}")
    on_pressure = r.get(raw, "on_memory_pressure", str, "alert", prefix=key)
    if on_pressure not in PRESSURE_ACTIONS:
        r.fail(f"{key}.on_memory_pressure", f"expected one of {', '.join(PRESSURE_ACTIONS)}, got {on_pressure!r}")
    builds_raw = r.table(raw, "builds", prefix=key)
    builds = {b: _build(r, f"{key}.builds.{b}", b, braw) for b, braw in builds_raw.items()}
    if address == LOCAL_ADDRESS and r.base is not None:
        builds = {b: _resolve_local(bc, r.base) for b, bc in builds.items()}
    return HostConfig(
        name=name, address=address, port=port,
        user=r.get(raw, "user", str, None, prefix=key),
        key=r.get(raw, "key", str, None, prefix=key),
        known_hosts=r.get(raw, "known_hosts", str, None, prefix=key),
        python=r.get(raw, "python", str, "python3", prefix=key),
        builds=builds, memory_reserve=reserve, memory_alert_pct=alert_pct,
        on_memory_pressure=cast(PressureAction, on_pressure), **timeouts,
    )


def _build(r: _Reader, key: str, name: str, raw: Any) -> BuildConfig:
    if not isinstance(raw, dict):
        r.fail(key, "expected a table")
    if not NAME_RE.match(name):
        r.fail(key, "build names are letters, digits, '.', '_' and '-'")
    r.no_unknown(raw, {"workdir", "command", "env", "jobs", "log_dir", "resume", "cache"}, key)
    workdir = r.get(raw, "workdir", str, None, prefix=key)
    command = r.get(raw, "command", str, None, prefix=key)
    if not workdir:
        r.fail(f"{key}.workdir", "required")
    if not command:
        r.fail(f"{key}.command", "required")
    env = r.get(raw, "env", dict, {}, prefix=key)
    for k, v in env.items():
        if not ENV_NAME_RE.match(k):
            r.fail(f"{key}.env.{k}", "not a valid environment variable name")
        if not isinstance(v, str | int | float | bool):
            r.fail(f"{key}.env.{k}", "expected a string")
    jobs = r.get(raw, "jobs", int, None, prefix=key)
    if jobs is not None and not 1 <= jobs <= 1024:
        r.fail(f"{key}.jobs", f"expected 1-1024, got {jobs}")
    resume = r.get(raw, "resume", str, "auto", prefix=key)
    if resume not in RESUMES:
        r.fail(f"{key}.resume", f"expected one of {', '.join(RESUMES)}, got {resume!r}")
    cache = r.get(raw, "cache", str, "none", prefix=key)
    if cache not in CACHES:
        r.fail(f"{key}.cache", f"expected one of {', '.join(CACHES)}, got {cache!r}")
    return BuildConfig(
        name=name, workdir=workdir, command=command,
        env={k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in env.items()},
        jobs=jobs, log_dir=r.get(raw, "log_dir", str, None, prefix=key), resume=cast(Resume, resume),
        cache=cast(Cache, cache),
    )


def _groups(r: _Reader, raw: Mapping[str, Any], hosts: Mapping[str, HostConfig]) -> dict[str, tuple[str, ...]]:
    groups = {}
    for name, members in raw.items():
        key = f"groups.{name}"
        if not NAME_RE.match(name) or name == ALL_HOSTS:
            r.fail(key, f"group names are letters, digits, '.', '_' and '-', and not {ALL_HOSTS!r}")
        if name in hosts:
            r.fail(key, f"{name!r} is already a host name")
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            r.fail(key, "expected a non-empty list of host names")
        for member in members:
            if member not in hosts:
                r.fail(key, f"unknown host {member!r} (known: {', '.join(hosts)})")
        groups[name] = tuple(dict.fromkeys(members))
    return groups


def _schedule(r: _Reader, key: str, raw: Any, hosts: Mapping[str, HostConfig],
              groups: Mapping[str, tuple[str, ...]]) -> ScheduleConfig:
    from bot.language.schedule_text import parse_when, zone  # the words /rigops schedule add accepts; loaded when used
    from bot.util.errors import PlanError

    if not isinstance(raw, dict):
        r.fail(key, "expected a table ([[schedules]])")
    r.no_unknown(raw, {"cron", "channel", "hosts", "timezone", "only_changes"}, key)
    cron = r.get(raw, "cron", str, None, prefix=key)
    channel = r.get(raw, "channel", str, None, prefix=key)
    if not cron:
        r.fail(f"{key}.cron", "required")
    if not channel or not ID_RE.match(channel):
        r.fail(f"{key}.channel", f"expected a channel id like C0123ABCD, got {channel!r}")
    names = raw.get("hosts", ALL_HOSTS)
    names = [names] if isinstance(names, str) and names != ALL_HOSTS else names
    if names != ALL_HOSTS and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        r.fail(f"{key}.hosts", f'expected a host name, a list of host names or "all", got {names!r}')
    if isinstance(names, list):  # a group stands for its members
        for name in names:
            if name not in hosts and name not in groups:
                r.fail(f"{key}.hosts", f"unknown host or group {name!r} (known: {', '.join([*hosts, *groups])})")
        names = list(dict.fromkeys(h for name in names for h in groups.get(name, (name,))))
    timezone = r.get(raw, "timezone", str, DEFAULT_TIMEZONE, prefix=key)
    for where, check in (("timezone", lambda: zone(timezone)), ("cron", lambda: parse_when(cron, timezone=timezone))):
        try:
            check()
        except PlanError as exc:
            r.fail(f"{key}.{where}", str(exc))
    return ScheduleConfig(cron=cron, channel=channel, hosts=tuple(names) if isinstance(names, list) else None,
                          timezone=timezone, only_changes=r.get(raw, "only_changes", bool, False, prefix=key))


def _resolve_local(build: BuildConfig, base: Path) -> BuildConfig:
    """On this machine a relative workdir or log_dir means: next to the config file."""
    def resolve(p: str) -> str:
        return p if p.startswith(("/", "~")) else str((base / p).resolve())

    log_dir = resolve(build.log_dir) if build.log_dir else None
    return replace(build, workdir=resolve(build.workdir), log_dir=log_dir)


class _Reader:
    def __init__(self, path: str, base: Path | None = None) -> None:
        self.path = path
        self.base = base

    def fail(self, key: str, message: str) -> Any:
        raise ConfigError(message, path=self.path, key=key)

    def get(self, raw: Mapping[str, Any], name: str, kind: Any, default: Any, *, prefix: str = "") -> Any:
        if name not in raw:
            return default
        value = raw[name]
        bad_bool = isinstance(value, bool) and kind in (int, (int, float))
        if not isinstance(value, kind) or bad_bool:
            want = kind.__name__ if isinstance(kind, type) else "a number"
            self.fail(f"{prefix}.{name}" if prefix else name, f"expected {want}, got {value!r}")
        return value

    def table(self, raw: Mapping[str, Any], name: str, *, prefix: str = "") -> dict[str, Any]:
        value = self.get(raw, name, dict, {}, prefix=prefix)
        return dict(value)

    def no_unknown(self, raw: Mapping[str, Any], known: set[str], prefix: str) -> None:
        for k in raw:
            if k not in known:
                where = f"{prefix}.{k}" if prefix else k
                self.fail(where, f"unknown key (expected one of: {', '.join(sorted(known))})")
