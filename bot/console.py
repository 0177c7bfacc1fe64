"""``rigops console``: the same app and listeners as in Slack, driven from a terminal.

An in-process Slack emulator stands where Slack would be: each input line becomes a real Socket Mode
envelope (a channel message in one thread, or ``/rigops ...`` as a slash command), and whatever the bot
posts, edits or reacts comes back through the Web API and is printed here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TextIO

from bot.config import Config, SlackConfig
from bot.emulator import ApiCall, SlackEmulator, render_blocks
from bot.services import Services
from bot.slack.app import connect, create_app, disconnect, socket_mode_handler
from bot.slack.messages import CANCEL_ACTION, RUN_ACTION

CONSOLE_CHANNEL = "C0CONSOLE"
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
YES = frozenset({"y", "yes", "run", "go", "ok"})
NO = frozenset({"n", "no", "cancel", "stop"})
EMOJI = {":white_check_mark:": "✅", ":x:": "❌", ":hourglass_flowing_sand:": "⏳", ":white_small_square:": "▫️",
         ":heavy_minus_sign:": "➖", ":warning:": "⚠️", ":no_entry:": "⛔"}


def _plain(text: str) -> str:
    for code, glyph in EMOJI.items():
        text = text.replace(code, glyph)
    return text


class Printer:
    """Prints what the bot does in Slack; remembers messages that wait for a Run button."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown: dict[str, list[str]] = {}
        self.waiting: list[str] = []  # ts of messages with Run / Cancel buttons

    def on_call(self, call: ApiCall) -> None:
        p = call.params
        if call.method == "chat.postMessage":
            self._show(str((call.response or {}).get("ts", "")), p)
        elif call.method == "chat.update":
            self._show(str(p.get("ts", "")), p, edit=True)
        elif call.method == "reactions.add":
            print(f"  [{p.get('name')}]", file=self.out, flush=True)
        elif call.method == "files.completeUploadExternal":
            print(f"rigops: (attached a file: {call.params.get('files')})", file=self.out, flush=True)

    def _show(self, ts: str, params: dict[str, Any], *, edit: bool = False) -> None:
        blocks = params.get("blocks") or []
        text = render_blocks(blocks) if blocks else str(params.get("text", ""))
        lines = _plain(text).splitlines()
        old = self.shown.get(ts, [])
        new = [ln for ln in lines if ln not in old] if edit else lines
        self.shown[ts] = lines
        has_buttons = any(b.get("type") == "actions" for b in blocks if isinstance(b, dict))
        if has_buttons and ts not in self.waiting:
            self.waiting.append(ts)
        elif not has_buttons and ts in self.waiting:
            self.waiting.remove(ts)
        if new:
            prefix = "rigops (edit): " if edit else "rigops: "
            print(prefix + ("\n" + " " * len(prefix)).join(new), file=self.out, flush=True)


async def _lines(prompt: bool) -> AsyncIterator[str]:
    while True:
        line = await asyncio.to_thread(_read_line, prompt)
        if line is None:
            return
        if line.strip():
            yield line.strip()


def _read_line(prompt: bool) -> str | None:
    try:
        return input("you> ") if prompt else (sys.stdin.readline() or None)
    except EOFError:
        return None


async def run_console(config: Config, state_dir: Path, *, yes: bool, user: str, out: TextIO = sys.stdout) -> int:
    """Chat until end of input; returns the exit status."""
    for proxy in PROXY_VARS:  # slack_sdk sends even loopback traffic through these
        os.environ.pop(proxy, None)
    channels = (*config.slack.ops_channels, CONSOLE_CHANNEL)
    config = dataclasses.replace(config, slack=SlackConfig(ops_channels=channels))
    interactive = sys.stdin.isatty()
    async with SlackEmulator() as emu:
        services = Services.open(config, state_dir, console_admin=user)
        app = create_app(services, bot_token=emu.bot_token, api_url=emu.api_url)
        handler = socket_mode_handler(app, app_token=emu.app_token)
        printer = Printer(out)
        emu.on_call.append(printer.on_call)
        try:
            await connect(handler)
            await emu.wait_connected()
            await app.start()
            if interactive:
                print("rigops console — type a message as in the ops channel, or /rigops help. Ctrl-D quits.",
                      file=out, flush=True)
            session = _Session(emu, services, printer, user=user, yes=yes)
            async for line in _lines(interactive):
                await session.say(line)
            await emu.wait_for(lambda: all(emu.ack_for(e) for e in emu.envelopes), timeout=10)
        finally:
            await disconnect(handler)
            await app.close()
            await services.close()
    return 0


class _Session:
    def __init__(self, emu: SlackEmulator, services: Services, printer: Printer, *, user: str, yes: bool) -> None:
        self.emu, self.services, self.printer = emu, services, printer
        self.user, self.yes = user, yes
        self.sent = 0
        self.thread_ts: str | None = None

    async def say(self, line: str) -> None:
        word = line.lower().strip(" .!")
        if self.printer.waiting and (word in YES or word in NO):
            await self._press(RUN_ACTION if word in YES else CANCEL_ACTION)
        elif line.startswith("/rigops"):
            await self.emu.send_slash(line.removeprefix("/rigops").strip(), channel=CONSOLE_CHANNEL, user=self.user)
            await self._settle()
        else:
            event = await self.emu.send_message(line, channel=CONSOLE_CHANNEL, user=self.user,
                                                thread_ts=self.thread_ts)
            self.thread_ts = self.thread_ts or str(event["ts"])
            await self._settle()

    async def _settle(self) -> None:
        self.sent += 1
        await self.services.activity.wait_finished(self.sent)
        while self.yes and self.printer.waiting:
            await self._press(RUN_ACTION)
        if self.printer.waiting and not self.yes:
            print("rigops: (say yes to run it, no to cancel)", file=self.printer.out, flush=True)

    async def _press(self, action_id: str) -> None:
        ts = self.printer.waiting.pop()
        await self.emu.click(ts, action_id, channel=CONSOLE_CHANNEL, user=self.user)
        self.sent += 1
        await self.services.activity.wait_finished(self.sent)
