"""The ``rigops`` command: wiring only — load config, build services, start the chosen front end."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import resource
import sys
from collections.abc import Sequence
from pathlib import Path

from bot import config as config_mod
from bot.builds import logs
from bot.util.errors import RigopsError

log = logging.getLogger("rigops")
TOKEN_VARS = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    form = args.log_format or os.environ.get("RIGOPS_LOG_FORMAT") or "text"
    if form not in logs.FORMATS:
        print(f"rigops: log format {form!r}: expected one of {', '.join(logs.FORMATS)}", file=sys.stderr)
        return 2
    logs.setup(logging.DEBUG if args.verbose else logging.WARNING if args.cmd in (
        "explain", "diagnose", "console") else logging.INFO, form)
    try:
        result: int = args.func(args)
        return result
    except RigopsError as exc:
        print(f"rigops: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rigops", description="Slack chat-ops for builds on GPU hosts.")
    _common_options(p, default=None)
    common = argparse.ArgumentParser(add_help=False)  # the same options after the subcommand, as people type them
    _common_options(common, default=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="cmd", required=True)

    run = sub.add_parser("run", parents=[common], help="connect to Slack (Socket Mode, or HTTP with --http PORT)")
    run.add_argument("--http", type=int, metavar="PORT", help="serve Slack's HTTP requests on this port instead")
    run.add_argument("--bind", default="127.0.0.1", help="address for --http (default 127.0.0.1, behind a proxy)")
    run.add_argument("--metrics", metavar="ADDR:PORT",
                     help="serve Prometheus /metrics and /healthz there (default: the config's metrics, else off)")
    run.set_defaults(func=_run)

    con = sub.add_parser("console", parents=[common],
                         help="chat with rigops in this terminal, against this machine")
    con.add_argument("--yes", action="store_true", help="answer every confirmation with yes")
    con.add_argument("--user", default="U0CONSOLE", help="act as this Slack user id (default U0CONSOLE)")
    con.set_defaults(func=_console)

    exp = sub.add_parser("explain", parents=[common],
                         help="what rigops would do with a chat message, without doing it")
    exp.add_argument("--json", action="store_true", help="print one JSON object")
    exp.add_argument("--mention", action="store_true", help="treat the text as addressed to rigops")
    exp.add_argument("text", nargs="+")
    exp.set_defaults(func=_explain)

    dia = sub.add_parser("diagnose", parents=[common], help="the first real error in a build log and its known fix")
    dia.add_argument("--json", action="store_true", help="print one JSON object")
    dia.add_argument("--rules", help="extra rules file (TOML) whose rules come first")
    dia.add_argument("logfile")
    dia.set_defaults(func=_diagnose)

    chk = sub.add_parser("check", parents=[common], help="validate the config and reach every host")
    chk.set_defaults(func=_check)
    return p


def _common_options(p: argparse.ArgumentParser, *, default: object) -> None:
    p.add_argument("--config", default=default, help="config file (default: $RIGOPS_CONFIG, else ./rigops.toml)")
    p.add_argument("--state-dir", default=default,
                   help="state directory (default: $RIGOPS_STATE_DIR, else ~/.local/state/rigops)")
    p.add_argument("-v", "--verbose", action="store_true", default=False if default is None else default,
                   help="debug logging")
    p.add_argument("--log-format", choices=("text", "json"), default=default,
                   help="log lines for a person (text, the default) or one JSON object a line (json); "
                        "also $RIGOPS_LOG_FORMAT")


def load_dotenv(path: Path = Path(".env")) -> None:
    """Read KEY=VALUE lines from .env into the environment, without overriding what is already set."""
    if not path.is_file():
        return
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        os.environ.setdefault(key.strip(), value.strip().strip("'\""))


def _run(args: argparse.Namespace) -> int:
    from bot.frontends.slack.run import run_bot

    load_dotenv()
    from bot.frontends.slack.ids import check_ids

    cfg = config_mod.load(args.config)
    check_ids(cfg)  # before the tokens: a wrong id is the config's error, whatever the environment
    if cfg.path is not None:  # and the .env beside the config (a service's working directory is rarely its home)
        load_dotenv(cfg.path.parent / ".env")
    bot_token = os.environ.get("SLACK_BOT_TOKEN", "")
    if not bot_token:
        raise RigopsError("SLACK_BOT_TOKEN is not set (put it in .env, here or beside the config; see .env.example)")
    if args.http is None and not os.environ.get("SLACK_APP_TOKEN"):
        raise RigopsError("SLACK_APP_TOKEN is not set: Socket Mode needs an app-level token (connections:write)")
    if args.http is not None and not os.environ.get("SLACK_SIGNING_SECRET"):
        raise RigopsError("SLACK_SIGNING_SECRET is not set: HTTP mode verifies every request with it")
    if args.metrics and not config_mod.METRICS_ADDRESS_RE.fullmatch(args.metrics):
        raise RigopsError(f"--metrics: expected ADDRESS:PORT like 127.0.0.1:9464, got {args.metrics!r}")
    _raise_open_files()
    try:
        asyncio.run(run_bot(cfg, config_mod.state_dir(args.state_dir), bot_token=bot_token,
                            app_token=os.environ.get("SLACK_APP_TOKEN"), http_port=args.http,
                            signing_secret=os.environ.get("SLACK_SIGNING_SECRET"), http_bind=args.bind,
                            api_url=os.environ.get("SLACK_API_URL"), metrics=args.metrics or cfg.metrics))
    except asyncio.CancelledError:  # SIGTERM: asked to stop, and stopped cleanly
        logging.getLogger(__name__).info("stopped")
    return 0


def _raise_open_files() -> None:
    """Each connected host holds a file descriptor or more: take the hard limit on open files, not the soft one
    (1024 under systemd), so a fleet of a thousand hosts does not run out."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and hard != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _console(args: argparse.Namespace) -> int:
    from bot.frontends.console import run_console

    cfg = config_mod.load(args.config)
    return asyncio.run(run_console(cfg, config_mod.state_dir(args.state_dir), yes=args.yes, user=args.user))


def _explain(args: argparse.Namespace) -> int:
    from bot.language import intents

    cfg = config_mod.load(args.config)
    plan, ignored = intents.read(" ".join(args.text), config=cfg, addressed=args.mention)
    if args.json:
        print(json.dumps(plan.to_json()))
    else:
        from bot.language.intents_acts import WHY
        from bot.text.render import describe_step

        if plan.error:
            print(f"refused: {plan.error}")
        elif not plan.steps:
            print("nothing: " + ("no request or question about now in it" if ignored else "ordinary chatter"))
        else:
            print(f"host {plan.host}, build {plan.build or '-'}:")
            for step in plan.steps:
                print(f"  - {describe_step(step, plan)}")
        for clause, act in ignored:
            how = "read" if act == "learned" else "not acted on"
            print(f"  {how}: {intents.shown_clause(clause)!r}: {WHY.get(act, act)}")
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    from bot.builds.diagnose import diagnose_file, load_rules

    path = Path(args.logfile)
    if not path.is_file():
        raise RigopsError(f"{path}: no such file")
    result = diagnose_file(path, rules=load_rules(Path(args.rules) if args.rules else None))
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(f"{result.category}: {result.line or '(no error line)'}\nfix: {result.fix}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from bot.app.checks import run_checks
    from bot.frontends.slack.ids import check_ids

    cfg = config_mod.load(args.config)
    check_ids(cfg)  # the config is the Slack app's: its channels and people are Slack's ids
    where = cfg.path or "no config file (local only)"
    print(f"config {where}: ok, {len(cfg.hosts)} host(s)")
    return asyncio.run(run_checks(cfg, state_dir=config_mod.state_dir(args.state_dir)))
