"""A local, in-process Slack: the Web API over HTTP and Socket Mode over WebSocket.

:class:`SlackEmulator` runs an aiohttp server on 127.0.0.1 (a free port) that fakes
Slack only at the protocol edge, so the real slack_sdk ``AsyncWebClient`` and the real
slack-bolt ``AsyncApp`` + ``AsyncSocketModeHandler`` talk to it unchanged:

* ``POST|GET /api/<method>`` - the Web API (form, query or JSON bodies; the token in
  ``Authorization: Bearer`` or a ``token`` param). It keeps channel history, threads,
  edits, reactions, ephemeral messages, views and uploaded files. Unknown methods answer
  ``unknown_method``. Every call is recorded as an :class:`ApiCall`. It refuses what Slack
  refuses: posts in a channel the bot is not in (``add_channel(bot_member=False)``), Block
  Kit and sizes Slack rejects (:mod:`slackemu.limits`) and a reply's ts as ``thread_ts``,
  each of the latter listed in :attr:`SlackEmulator.refused`. Its scopes, and how slash
  command text is escaped, are what manifests/rigops.json says.
* ``/link/?ticket=...`` - the Socket Mode WebSocket handed out by
  ``apps.connections.open``: ``hello`` on connect, envelopes out, acks in, ping/pong,
  ``disconnect`` messages and abrupt drops. Envelopes sent while no client is connected
  wait and go out on the next connection; an ``events_api`` envelope that was delivered
  but not acked when its connection died is delivered again with ``retry_attempt`` + 1
  and ``retry_reason`` ``"timeout"`` (same envelope id, same event_id), as Slack retries.
  Like Slack, it holds up to :data:`MAX_CONNECTIONS` (10) connections at once and gives
  each envelope to ONE of them, never to all: round robin over the open ones (Slack
  promises no order; bolt-python#448: "each event to only 1 random connection"). With
  ``ack_timeout`` set (Slack's is :data:`SLACK_ACK_TIMEOUT`, 3 s), an ``events_api``
  envelope not acked in time is retried too, on a connection that has not had it if
  one is open; after :data:`MAX_RETRIES` retries it is given up (:attr:`abandoned`).
* ``/upload/<file_id>`` (files_upload_v2's step 2), ``/files/<id>/<name>`` (url_private)
  and ``/response/<id>`` (``response_url`` of slash commands and clicks).

Tests and the console drive it as a person would: :meth:`SlackEmulator.send_message`,
:meth:`~SlackEmulator.send_mention`, :meth:`~SlackEmulator.send_slash`,
:meth:`~SlackEmulator.click`; then look with :meth:`~SlackEmulator.messages`,
:meth:`~SlackEmulator.thread` and :meth:`~SlackEmulator.wait_for`, which wakes on every
API call, ack and connection change (no polling). Times (``at``) are ``time.monotonic()``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import logging
import mimetypes
import re
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import BodyPartReader, WSMsgType, web

from slackemu import http as H
from slackemu import payloads as P
from slackemu.limits import TALLY, message_refusal, view_refusal
from slackemu.payloads import JSON, render_blocks
from slackemu.tiers import RateTiers, Tier

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_RETRIES",
    "SLACK_ACK_TIMEOUT",
    "Ack",
    "ApiCall",
    "Edit",
    "Envelope",
    "Message",
    "SlackEmulator",
    "UploadedFile",
    "render_blocks",
    "text_of",
]

log = logging.getLogger(__name__)

_HOST = "127.0.0.1"
_MANIFEST = Path(__file__).resolve().parent.parent / "manifests" / "rigops.json"
_FIRST_TS = 1_700_000_000
_LIST_LIMIT = 1000  # conversations.list: the most one page holds

# Socket Mode, as Slack documents or its SDK maintainers state it:
# - an app holds at most 10 connections (slackapi/bolt-js#2225: "each Slack app ID is allowed a maximum of 10
#   concurrent websocket (socket-mode) connections"). apps.connections.open lists no error for this (its docs:
#   docs.slack.dev/reference/methods/apps.connections.open); Slack answers on the socket instead, with
#   {"type": "disconnect", "reason": "too_many_websockets"} (the frame logged in slackapi/bolt-js#2238), and so
#   does the emulator: the URL is handed out, the 11th socket gets that frame and is closed.
# - each envelope goes to one open connection, not to all (bolt-python#448, #1071: "delivers to any of the active
#   connections and does retries for Events API messages"); only events_api envelopes are retried. Slack does not
#   retry a slash command or a click: the person sees a timeout error instead.
# - an envelope must be acked within 3 seconds; a retry carries "retry_attempt": n and "retry_reason": "timeout"
#   (java-slack-sdk EventContext: '"retry_reason": "timeout", in Socket Mode'), and Slack retries an event 3 times
#   (the Events API's policy: "nearly immediately", after 1 minute, after 5 minutes). The emulator retries at once;
#   it does not wait the minutes, so that a test of a retry need not.
MAX_CONNECTIONS = 10
# A response_url takes up to 5 messages within 30 minutes (Slack's docs on handling slash commands and
# interactions); later ones are refused.
RESPONSE_URL_USES = 5
RESPONSE_URL_SECONDS = 30 * 60
SLACK_ACK_TIMEOUT = 3.0
MAX_RETRIES = 3


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class ApiCall:
    """One request the bot made. ``params`` excludes the token; ``response`` is the JSON answer."""

    method: str
    params: dict[str, Any]
    at: float
    status: int = 200
    response: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return bool(self.response and self.response.get("ok"))


@dataclass(frozen=True)
class Ack:
    envelope_id: str
    payload: dict[str, Any] | None
    at: float
    raw: dict[str, Any]


@dataclass
class Envelope:
    """A Socket Mode envelope the emulator sent (or will send) to the bot."""

    envelope_id: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    retry_attempt: int | None = None
    retry_reason: str | None = None
    queued_at: float = 0.0
    delivered_at: float | None = None
    deliveries: int = 0
    context: dict[str, Any] = field(default_factory=dict)
    connections: list[int] = field(default_factory=list)  # the connection (its number) of each delivery, in order

    def to_message(self) -> JSON:
        return P.envelope(
            self.type,
            self.payload,
            envelope_id=self.envelope_id,
            accepts_response_payload=self.accepts_response_payload,
            retry_attempt=self.retry_attempt,
            retry_reason=self.retry_reason,
        )


@dataclass(frozen=True)
class UploadedFile:
    id: str
    name: str
    title: str
    content: bytes
    mimetype: str
    alt_txt: str | None = None
    snippet_type: str | None = None

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


@dataclass(frozen=True)
class Edit:
    """A message's content before one ``chat.update``."""

    text: str
    blocks: list[dict[str, Any]]
    at: float


@dataclass(frozen=True)
class Message:
    """A snapshot of one message as it stands now (after any ``chat.update``)."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]]
    user: str | None
    bot_id: str | None
    reactions: frozenset[str]
    edits: tuple[Edit, ...]
    files: tuple[UploadedFile, ...]
    reply_broadcast: bool = False
    ephemeral_to: str | None = None

    @property
    def is_reply(self) -> bool:
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def rendered(self) -> str:
        return text_of(self)


def text_of(message: Message) -> str:
    """What a person would read: the blocks rendered (or the text), then any files."""
    body = render_blocks(message.blocks) if message.blocks else P.read_mrkdwn(message.text)
    lines = [body] if body else []
    lines += [f"[file: {f.title or f.name} ({f.name})]" for f in message.files]
    return "\n".join(lines)


@dataclass
class _Stored:
    channel: str
    ts: str
    thread_ts: str | None
    text: str
    blocks: list[dict[str, Any]]
    user: str | None
    bot_id: str | None
    reply_broadcast: bool = False
    ephemeral_to: str | None = None
    edited_ts: str | None = None
    reactions: dict[str, list[str]] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    files: list[UploadedFile] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def snapshot(self) -> Message:
        return Message(
            channel=self.channel,
            ts=self.ts,
            thread_ts=self.thread_ts,
            text=self.text,
            blocks=copy.deepcopy(self.blocks),
            user=self.user,
            bot_id=self.bot_id,
            reactions=frozenset(self.reactions),
            edits=tuple(self.edits),
            files=tuple(self.files),
            reply_broadcast=self.reply_broadcast,
            ephemeral_to=self.ephemeral_to,
        )


@dataclass
class _Conn:
    ws: web.WebSocketResponse
    request: web.Request
    number: int
    closed: bool = False
    draining: bool = False
    delivered: set[str] = field(default_factory=set)


class _ApiError(LookupError):
    """A Slack error code (``channel_not_found``...); a LookupError when raised by inspection methods."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass
class _Failure:
    status: int
    retry_after: int
    error: str | None
    count: int


def _event_time(stamp: Any) -> int:
    """An event's event_time: its ts in whole seconds, or now for an event whose ts is not one."""
    try:
        return int(float(stamp))
    except (TypeError, ValueError):
        return int(time.time())


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true", "yes")


def _json_field(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("[", "{"):
        return json.loads(value)
    return value


def _manifest() -> dict[str, Any]:
    """rigops' app manifest, for the scopes Slack grants and how slash command text is escaped."""
    try:
        manifest = json.loads(_MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _manifest_scopes(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(manifest.get("oauth_config", {}).get("scopes", {}).get("bot", ()))


def _manifest_escaping(manifest: Mapping[str, Any]) -> dict[str, bool]:
    commands = manifest.get("features", {}).get("slash_commands", ())
    return {str(c["command"]): bool(c.get("should_escape", False)) for c in commands if "command" in c}


# --------------------------------------------------------------------------- emulator


class SlackEmulator:
    """A fake Slack workspace with one bot installed. See the module docstring."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-emulator",
        app_token: str = "xapp-emulator",
        bot_user_id: str = "UBOTRIGOPS",
        bot_id: str = "BBOTRIGOPS",
        team_id: str = "T0EMULATOR",
        app_id: str = "A0EMULATOR",
        bot_name: str = "rigops",
        team_domain: str = "rigops-emulator",
        scopes: tuple[str, ...] | None = None,
        escape_slash: bool | None = None,
        tiers: Mapping[str, Tier] | None = None,
        ack_timeout: float | None = None,
    ) -> None:
        """``scopes`` (what ``x-oauth-scopes`` reports) and ``escape_slash`` (Slack's "escape channels, users,
        and links" of a slash command) default to what manifests/rigops.json says. ``tiers`` (e.g.
        :data:`slackemu.tiers.SLACK_TIERS`) makes it answer calls past a method's rate tier with 429; without,
        every call is served, so that a test about something else does not depend on how fast it runs.
        ``ack_timeout`` (e.g. :data:`SLACK_ACK_TIMEOUT`) retries an event not acked within that many seconds, as
        Slack does; without, an event is retried only when its connection closes before acking it, so that a test
        on a loaded machine does not see a retry it did not ask for."""
        manifest = _manifest()
        self.scopes = scopes if scopes is not None else _manifest_scopes(manifest)
        self.escape_slash = escape_slash  # None: per command, as the manifest says (off for others)
        self._escaping = _manifest_escaping(manifest)
        self.bot_token = bot_token
        self.app_token = app_token
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.team_id = team_id
        self.app_id = app_id
        self.bot_name = bot_name
        self.team_domain = team_domain

        self.calls: list[ApiCall] = []
        self.on_call: list[Callable[[ApiCall], None]] = []
        self.envelopes: dict[str, Envelope] = {}
        self.acks: list[Ack] = []
        self.usergroups: dict[str, set[str]] = {}
        self.usergroup_handles: dict[str, str] = {}  # group id -> its @handle, e.g. "gpu-team"
        self.client_messages: list[dict[str, Any]] = []  # non-ack frames the client sent
        self.views: list[dict[str, Any]] = []  # modals opened with views.open
        self.home_views: dict[str, dict[str, Any]] = {}  # user id -> published App Home
        self.files: dict[str, UploadedFile] = {}
        self.refused: list[str] = []  # the error of every message or view refused for its content or thread
        # every mrkdwn text sent with an &, < or > unescaped (Slack takes it, and shows something else)
        self.unescaped: list[str] = []
        self.redeliver_unacked = True
        self.ack_timeout = ack_timeout
        self.connections_opened = 0
        self.refused_connections = 0  # sockets turned away with too_many_websockets
        self.abandoned: list[str] = []  # envelope ids Slack would give up on: MAX_RETRIES retries, never acked
        self.pings = 0
        self.rate_tiers = RateTiers(tiers) if tiers is not None else None
        self.http: H.HttpTarget | None = None  # set by deliver_over_http: envelopes go to a Request URL
        self._http_session: aiohttp.ClientSession | None = None
        self._http_tasks: set[asyncio.Task[None]] = set()

        self._channels: dict[str, dict[str, Any]] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._history: dict[str, list[_Stored]] = {}
        self._ephemeral: list[_Stored] = []
        self._pending_uploads: dict[str, dict[str, Any]] = {}
        self._uploaded: dict[str, bytes] = {}
        self._responses: dict[str, dict[str, Any]] = {}
        self._triggers: set[str] = set()
        self._tickets: set[str] = set()
        self._failures: dict[str, deque[_Failure]] = {}
        self._acked: dict[str, dict[str, Any]] = {}
        self._pending: deque[Envelope] = deque()
        self._conns: list[_Conn] = []
        self._turns = itertools.count()  # round robin over the open connections
        self._ack_timers: dict[str, asyncio.TimerHandle] = {}
        self._timeouts: set[asyncio.Task[None]] = set()
        self._ts_counter = itertools.count(1)
        self._ids = itertools.count(1)
        self._cond = asyncio.Condition()
        self._deliver_lock = asyncio.Lock()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._started_at = time.monotonic()

        self.add_channel("C0OPS", "ops")
        self.add_user("U0HUMAN", "human")
        self.add_user(bot_user_id, bot_name, is_bot=True)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._http_api)
        app.router.add_get("/link/", self._http_link)
        app.router.add_get("/link", self._http_link)
        app.router.add_post("/upload/{file_id}", self._http_upload)
        app.router.add_get("/files/{file_id}/{name}", self._http_file)
        app.router.add_post("/response/{rid}", self._http_response_url)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, _HOST, 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])
        self._started_at = time.monotonic()

    async def stop(self) -> None:
        for timer in self._ack_timers.values():
            timer.cancel()
        self._ack_timers.clear()
        for task in list(self._timeouts) + list(self._http_tasks):
            task.cancel()
        if self._http_session is not None:
            await self._http_session.close()
            self._http_session = None
        for conn in list(self._conns):
            conn.closed = True
            await conn.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SlackEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("SlackEmulator is not started; call `await emulator.start()` first")
        return self._port

    @property
    def url(self) -> str:
        return f"http://{_HOST}:{self.port}/"

    @property
    def api_url(self) -> str:
        """What slack_sdk's ``AsyncWebClient(base_url=...)`` takes."""
        return f"{self.url}api/"

    # ------------------------------------------------------------------ workspace set-up

    def add_channel(self, channel_id: str, name: str, *, is_private: bool = False, bot_member: bool = True) -> None:
        """A channel; ``bot_member=False``: rigops was never invited, so Slack refuses its posts there."""
        is_im = channel_id.startswith("D")
        self._channels[channel_id] = {
            "id": channel_id,
            "name": name,
            "is_channel": not is_im and not is_private,
            "is_group": is_private,
            "is_im": is_im,
            "is_mpim": False,
            "is_private": is_private or is_im,
            "is_archived": False,
            "is_general": False,
            "is_member": bot_member,
            "created": _FIRST_TS,
            "creator": "U0HUMAN",
            "name_normalized": name,
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            "context_team_id": self.team_id,
        }
        self._history.setdefault(channel_id, [])

    def invite(self, channel: str) -> None:
        """``/invite @rigops`` in a channel."""
        self._channels[self._channel(channel)]["is_member"] = True

    def remove_bot(self, channel: str) -> None:
        """rigops is removed from (or was never in) a channel."""
        self._channels[self._channel(channel)]["is_member"] = False

    def _member(self, channel: str) -> str:
        """The channel, when the bot may post there; Slack's error otherwise (a private channel or a DM it is not
        in does not exist for it)."""
        info = self._channels[channel]
        if not info["is_member"]:
            raise _ApiError("channel_not_found" if info["is_private"] else "not_in_channel")
        return channel

    def add_usergroup(self, group_id: str, members: list[str], *, handle: str | None = None) -> None:
        """A user group (S…) and its members, as usergroups.users.list returns them; people mention it as
        ``@handle``."""
        self.usergroups[group_id] = set(members)
        if handle is not None:
            self.usergroup_handles[group_id] = handle

    def add_user(
        self,
        user_id: str,
        name: str,
        *,
        real_name: str | None = None,
        email: str | None = None,
        is_admin: bool = False,
        is_bot: bool = False,
        tz: str = "UTC",
    ) -> None:
        real = real_name or name
        profile: dict[str, Any] = {"real_name": real, "display_name": name, "team": self.team_id}
        if email:
            profile["email"] = email
        if is_bot:
            profile.update(bot_id=self.bot_id, api_app_id=self.app_id)
        self._users[user_id] = {
            "id": user_id,
            "team_id": self.team_id,
            "name": name,
            "deleted": False,
            "real_name": real,
            "tz": tz,
            "tz_label": tz,
            "tz_offset": 0,
            "profile": profile,
            "is_admin": is_admin,
            "is_owner": False,
            "is_bot": is_bot,
            "is_app_user": False,
            "updated": _FIRST_TS,
        }

    def _user_name(self, user_id: str) -> str:
        if user_id not in self._users:
            self.add_user(user_id, user_id.lower())
        return str(self._users[user_id]["name"])

    def _channel(self, channel: str, *, create: bool = True) -> str:
        """Resolve a channel id / #name / user id (DM) to a known channel id."""
        if channel in self._channels:
            return channel
        if channel.startswith("#"):
            for cid, info in self._channels.items():
                if info["name"] == channel[1:]:
                    return cid
            raise _ApiError("channel_not_found")
        if channel[:1] in ("U", "W") and channel in self._users:
            dm = "D" + channel[1:]
            if dm not in self._channels:
                self.add_channel(dm, channel)
            return dm
        if create and re.fullmatch(r"[CGD][A-Z0-9]{2,}", channel):
            self.add_channel(channel, channel.lower(), is_private=channel.startswith("G"))
            return channel
        raise _ApiError("channel_not_found")

    # ------------------------------------------------------------------ inspection

    def messages(self, channel: str, *, include_ephemeral: bool = False) -> list[Message]:
        """Every message in the channel, top-level and replies, in post order."""
        cid = self._channel(channel)
        stored = list(self._history.get(cid, []))
        if include_ephemeral:
            stored += [m for m in self._ephemeral if m.channel == cid]
            stored.sort(key=lambda m: float(m.ts))
        return [m.snapshot() for m in stored]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The replies of one thread in order, without the parent."""
        return [m for m in self.messages(channel) if m.thread_ts == thread_ts and m.ts != thread_ts]

    def ephemerals(self, channel: str | None = None, *, user: str | None = None) -> list[Message]:
        return [
            m.snapshot()
            for m in self._ephemeral
            if (channel is None or m.channel == channel) and (user is None or m.ephemeral_to == user)
        ]

    def message(self, channel: str, ts: str) -> Message:
        return self._find(self._channel(channel), ts).snapshot()

    def reactions(self, channel: str, ts: str) -> set[str]:
        return set(self._find(self._channel(channel), ts).reactions)

    def reaction_users(self, channel: str, ts: str, name: str) -> list[str]:
        return list(self._find(self._channel(channel), ts).reactions.get(name, []))

    def calls_to(self, method: str) -> list[ApiCall]:
        return [c for c in self.calls if c.method == method]

    def ack_for(self, envelope_id: str) -> Ack | None:
        return next((a for a in self.acks if a.envelope_id == envelope_id), None)

    @property
    def connected(self) -> bool:
        return self._live_conn() is not None

    @property
    def connection_count(self) -> int:
        return sum(1 for c in self._conns if not c.closed)

    @property
    def open_connections(self) -> list[int]:
        """The numbers of the connections envelopes go to now (``hello``'s ``debug_info.host`` ends with it)."""
        return [c.number for c in self._live_conns()]

    def delivered_on(self, connection: int) -> list[str]:
        """The envelope ids delivered on connection number ``connection``, retries included, oldest first."""
        return [e.envelope_id for e in self.envelopes.values() for n in e.connections if n == connection]

    async def wait_for(self, predicate: Callable[[], object], timeout: float = 10.0) -> Any:
        """Wait until ``predicate()`` is truthy and return its value.

        It is re-checked after every recorded API call, ack, posted message and
        connection change. Raises TimeoutError listing what happened recently.
        """
        try:
            async with asyncio.timeout(timeout), self._cond:
                return await self._cond.wait_for(predicate)
        except TimeoutError:
            raise TimeoutError(f"wait_for timed out after {timeout}s\n{self.describe_recent()}") from None

    async def wait_connected(self, timeout: float = 10.0) -> None:
        await self.wait_for(lambda: self.connected, timeout)

    async def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> dict[str, Any]:
        """The ack frame the bot sent for this envelope: ``{"envelope_id", "payload"?}``."""
        result: dict[str, Any] = await self.wait_for(lambda: self._acked.get(envelope_id), timeout)
        return result

    def describe_recent(self, n: int = 15) -> str:
        lines = [f"connected: {self.connected} (connections opened so far: {self.connections_opened})"]
        lines.append(f"last {min(n, len(self.calls))} of {len(self.calls)} API calls:")
        for c in self.calls[-n:]:
            error = "" if c.ok or c.response is None else f" -> {c.response.get('error')}"
            lines.append(f"  {c.method} {json.dumps(c.params, default=str)[:200]} [{c.status}]{error}")
        if last := next((c for c in reversed(self.calls) if c.method in ("chat.update", "chat.postMessage")), None):
            lines.append(f"the last message text in full: {str(last.params.get('text', ''))[:1500]!r}")
        lines.append(
            f"envelopes: {len(self.envelopes)}, acked: {len(self._acked)}, queued: {len(self._pending)}"
        )
        for env in list(self.envelopes.values())[-5:]:
            state = "acked" if env.envelope_id in self._acked else f"delivered x{env.deliveries}"
            lines.append(f"  {env.type} {env.envelope_id} {state} on connections {env.connections}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ failure injection

    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int = 1,
        count: int = 1,
        error: str | None = None,
    ) -> None:
        """Make the next ``count`` calls of ``method`` fail.

        With ``error`` they answer HTTP 200 ``{"ok": false, "error": error}``; otherwise
        HTTP ``status`` (429 adds ``Retry-After: retry_after`` and ``error: ratelimited``).
        """
        self._failures.setdefault(method, deque()).append(_Failure(status, retry_after, error, count))

    def _take_failure(self, method: str) -> _Failure | None:
        queue = self._failures.get(method)
        if not queue:
            return None
        failure = queue[0]
        failure.count -= 1
        if failure.count <= 0:
            queue.popleft()
        return failure

    # ------------------------------------------------------------------ helpers

    async def _notify(self) -> None:
        async with self._cond:
            self._cond.notify_all()

    def _next_ts(self) -> str:
        micros = next(self._ts_counter) * 100
        return f"{_FIRST_TS + micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08d}{secrets.token_hex(2).upper()}"

    def _find(self, channel: str, ts: str, *, ephemeral: bool = True) -> _Stored:
        for m in self._history.get(channel, []):
            if m.ts == ts:
                return m
        if ephemeral:
            for m in self._ephemeral:
                if m.channel == channel and m.ts == ts:
                    return m
        raise _ApiError("message_not_found")

    def _thread_root(self, channel: str, thread_ts: str | None) -> str | None:
        if not thread_ts:
            return None
        parent = self._message_or_none(channel, str(thread_ts))
        return str(thread_ts) if parent is None else parent.thread_ts or parent.ts

    def _message_or_none(self, channel: str, ts: str) -> _Stored | None:
        """The channel's message at ``ts`` (not an ephemeral one), or None when there is none."""
        try:
            return self._find(channel, ts, ephemeral=False)
        except _ApiError:
            return None

    def _thread_parent(self, channel: str, thread_ts: Any) -> str | None:
        """The thread a bot's post goes in. Slack threads only under top-level messages, and its docs say never
        to pass a reply's ts as ``thread_ts`` (what it then does is undocumented and goes wrong, e.g. once the
        reply is deleted): the emulator refuses it (``invalid_thread_ts``) so that such a bug shows."""
        if not thread_ts:
            return None
        parent = self._message_or_none(channel, str(thread_ts))
        if parent is None:
            return str(thread_ts)
        if parent.thread_ts is not None and parent.thread_ts != parent.ts:
            self._refuse("invalid_thread_ts")
        return parent.ts

    def _check_text(self, text: str, blocks: Any) -> None:
        """Slack posts a text with an unescaped ``<``, ``>`` or ``&`` but shows something else: noted."""
        for part in P.mrkdwn_texts(text, blocks):
            if (where := P.unescaped(part)) is not None:
                self.unescaped.append(where)
                TALLY["unescaped"] += 1

    def _refuse(self, error: str | None) -> None:
        if error is not None:
            self.refused.append(error)
            TALLY[error] += 1
            raise _ApiError(error)

    def _api_message(self, m: _Stored) -> JSON:
        """The message as the Web API and interaction payloads show it."""
        out: JSON = {"type": "message", "text": m.text, "user": m.user, "ts": m.ts, "team": self.team_id}
        if m.bot_id:
            out.update(bot_id=m.bot_id, app_id=self.app_id)
            out["bot_profile"] = {
                "id": m.bot_id,
                "app_id": self.app_id,
                "name": self.bot_name,
                "deleted": False,
            }
        if m.blocks:
            out["blocks"] = copy.deepcopy(m.blocks)
        if m.thread_ts:
            out["thread_ts"] = m.thread_ts
            if m.thread_ts != m.ts:
                root = next((r for r in self._history.get(m.channel, []) if r.ts == m.thread_ts), None)
                out["parent_user_id"] = root.user if root else None
        if m.edited_ts:
            out["edited"] = {"user": m.user, "ts": m.edited_ts}
        if m.files:
            out["files"] = [self._file_object(f) for f in m.files]
            out["upload"] = True
        if m.reactions:
            out["reactions"] = [{"name": k, "users": v, "count": len(v)} for k, v in m.reactions.items()]
        out.update(m.extra)
        return out

    def file_url(self, file_id: str) -> str:
        """The ``url_private`` of an uploaded file (GET it with the bot token)."""
        return f"{self.url}files/{file_id}/{self.files[file_id].name}"

    def _file_object(self, f: UploadedFile) -> JSON:
        url = self.file_url(f.id)
        return {
            "id": f.id,
            "created": _FIRST_TS,
            "timestamp": _FIRST_TS,
            "name": f.name,
            "title": f.title,
            "mimetype": f.mimetype,
            "filetype": f.name.rsplit(".", 1)[-1] if "." in f.name else "text",
            "user": self.bot_user_id,
            "size": len(f.content),
            "mode": "hosted",
            "is_external": False,
            "is_public": True,
            "url_private": url,
            "url_private_download": url,
            "alt_txt": f.alt_txt,
        }

    def _store(self, m: _Stored) -> _Stored:
        if m.ephemeral_to is not None:
            self._ephemeral.append(m)
        else:
            self._history.setdefault(m.channel, []).append(m)
        return m

    def _bot_message(self, channel: str, params: Mapping[str, Any], **extra: Any) -> _Stored:
        text = str(params.get("text") or "")
        blocks = _json_field(params.get("blocks")) or []
        if not text and not blocks and not params.get("attachments") and not extra.get("files"):
            raise _ApiError("no_text")
        self._refuse(message_refusal(text, blocks))
        self._check_text(text, blocks)
        message = _Stored(
            channel=channel,
            ts=self._next_ts(),
            thread_ts=self._thread_parent(channel, params.get("thread_ts")),
            text=text,
            blocks=list(blocks),
            user=self.bot_user_id,
            bot_id=self.bot_id,
            reply_broadcast=_truthy(params.get("reply_broadcast")),
            ephemeral_to=extra.get("ephemeral_to"),
            files=list(extra.get("files") or []),
        )
        if params.get("metadata"):
            message.extra["metadata"] = _json_field(params["metadata"])
        if params.get("attachments"):
            message.extra["attachments"] = _json_field(params["attachments"])
        return self._store(message)

    # ------------------------------------------------------------------ HTTP: Web API

    async def _read_params(self, request: web.Request) -> tuple[dict[str, Any], str | None]:
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    params.update(body)
            else:
                form = await request.post()
                params.update({k: v for k, v in form.items() if isinstance(v, str)})
        token = params.pop("token", None)
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth[len("Bearer ") :]
        return params, (str(token) if token else None)

    async def _http_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params, token = await self._read_params(request)
        status, body, headers = 200, {"ok": False, "error": "unknown_method"}, {}
        failure = self._take_failure(method)
        if failure is not None and failure.error is not None:
            body = {"ok": False, "error": failure.error}
        elif failure is not None:
            status = failure.status
            body = {"ok": False, "error": "ratelimited" if status == 429 else f"http_{status}"}
            if status == 429:
                headers["Retry-After"] = str(failure.retry_after)
        elif (wait := self._over_tier(method, params)) is not None:
            status, body = 429, {"ok": False, "error": "ratelimited"}
            headers["Retry-After"] = str(wait)
        else:
            body = self._call(method, params, token)
            headers["x-oauth-scopes"] = ",".join(self.scopes)
        await self._record(ApiCall(method, params, time.monotonic(), status, body))
        return web.json_response(body, status=status, headers=headers)

    def _over_tier(self, method: str, params: Mapping[str, Any]) -> int | None:
        """Seconds to wait when the call is past its method's rate tier (and tiers are enforced), else None."""
        if self.rate_tiers is None:
            return None
        channel = params.get("channel")
        return self.rate_tiers.admit(method, str(channel) if channel else None, time.monotonic())

    async def _record(self, call: ApiCall) -> None:
        self.calls.append(call)
        for callback in list(self.on_call):
            try:
                callback(call)
            except Exception:
                log.exception("SlackEmulator on_call callback failed for %s", call.method)
        await self._notify()

    def _call(self, method: str, params: dict[str, Any], token: str | None) -> JSON:
        handler = self._handlers().get(method)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        wanted = self.app_token if method == "apps.connections.open" else self.bot_token
        if not token:
            return {"ok": False, "error": "not_authed"}
        if token != wanted:
            wrong_type = token in (self.bot_token, self.app_token)
            return {"ok": False, "error": "not_allowed_token_type" if wrong_type else "invalid_auth"}
        try:
            return {"ok": True, **handler(params)}
        except _ApiError as e:
            return {"ok": False, "error": e.error}

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], JSON]]:
        return {
            "auth.test": self._auth_test,
            "apps.connections.open": self._connections_open,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.delete": self._delete,
            "reactions.add": self._reactions_add,
            "reactions.remove": self._reactions_remove,
            "conversations.info": self._conversations_info,
            "conversations.open": self._conversations_open,
            "conversations.list": self._conversations_list,
            "users.info": self._users_info,
            "usergroups.users.list": self._usergroup_users,
            "views.publish": self._views_publish,
            "views.open": self._views_open,
            "files.getUploadURLExternal": self._get_upload_url,
            "files.completeUploadExternal": self._complete_upload,
        }

    def _auth_test(self, params: dict[str, Any]) -> JSON:
        return {
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team_domain,
            "user": self.bot_name,
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _connections_open(self, params: dict[str, Any]) -> JSON:
        ticket = secrets.token_hex(16)
        self._tickets.add(ticket)
        return {"url": f"ws://{_HOST}:{self.port}/link/?ticket={ticket}&app_id={self.app_id}"}

    def _post_message(self, params: dict[str, Any]) -> JSON:
        channel = self._member(self._channel(str(params.get("channel", ""))))
        message = self._bot_message(channel, params)
        return {"channel": channel, "ts": message.ts, "message": self._api_message(message)}

    def _update(self, params: dict[str, Any]) -> JSON:
        channel = self._member(self._channel(str(params.get("channel", "")), create=False))
        message = self._find(channel, str(params.get("ts", "")), ephemeral=False)
        if message.user != self.bot_user_id:
            raise _ApiError("cant_update_message")
        if "text" not in params and "blocks" not in params and "attachments" not in params:
            raise _ApiError("no_text")
        self._refuse(message_refusal(str(params.get("text") or ""), _json_field(params.get("blocks"))))
        self._check_text(str(params.get("text") or ""), _json_field(params.get("blocks")))
        message.edits.append(Edit(message.text, copy.deepcopy(message.blocks), time.monotonic()))
        if "text" in params:
            message.text = str(params["text"] or "")
        if "blocks" in params:  # omitted blocks are kept; [] clears them, as in Slack
            message.blocks = list(_json_field(params["blocks"]) or [])
        if params.get("attachments"):
            message.extra["attachments"] = _json_field(params["attachments"])
        message.edited_ts = self._next_ts()
        return {
            "channel": channel,
            "ts": message.ts,
            "text": message.text,
            "message": self._api_message(message),
        }

    def _post_ephemeral(self, params: dict[str, Any]) -> JSON:
        channel = self._member(self._channel(str(params.get("channel", ""))))
        user = str(params.get("user") or "")
        if user not in self._users:
            raise _ApiError("user_not_found")
        message = self._bot_message(channel, params, ephemeral_to=user)
        return {"message_ts": message.ts}

    def _delete(self, params: dict[str, Any]) -> JSON:
        channel = self._channel(str(params.get("channel", "")), create=False)
        message = self._find(channel, str(params.get("ts", "")), ephemeral=False)
        if message.user != self.bot_user_id:
            raise _ApiError("cant_delete_message")
        self._history[channel].remove(message)
        return {"channel": channel, "ts": message.ts}

    def _reaction_target(self, params: dict[str, Any]) -> tuple[_Stored, str]:
        name = str(params.get("name") or "").strip(":")
        if not name:
            raise _ApiError("invalid_name")
        channel = self._member(self._channel(str(params.get("channel", "")), create=False))
        return self._find(channel, str(params.get("timestamp", "")), ephemeral=False), name

    def _reactions_add(self, params: dict[str, Any]) -> JSON:
        message, name = self._reaction_target(params)
        users = message.reactions.setdefault(name, [])
        if self.bot_user_id in users:
            raise _ApiError("already_reacted")
        users.append(self.bot_user_id)
        return {}

    def _reactions_remove(self, params: dict[str, Any]) -> JSON:
        message, name = self._reaction_target(params)
        users = message.reactions.get(name, [])
        if self.bot_user_id not in users:
            raise _ApiError("no_reaction")
        users.remove(self.bot_user_id)
        if not users:
            del message.reactions[name]
        return {}

    def _conversations_info(self, params: dict[str, Any]) -> JSON:
        info = self._channels[self._channel(str(params.get("channel", "")), create=False)]
        needed = "im:read" if info["is_im"] else "groups:read" if info["is_private"] else "channels:read"
        if needed not in self.scopes:
            raise _ApiError("missing_scope")  # an admin took the scope away, or the manifest never asked
        if info["is_private"] and not info["is_member"]:
            raise _ApiError("channel_not_found")  # a private channel rigops is not in does not exist for it
        return {"channel": dict(info)}

    def _conversations_open(self, params: dict[str, Any]) -> JSON:
        users = [u for u in str(params.get("users") or "").split(",") if u]
        if len(users) != 1 or users[0] not in self._users:
            raise _ApiError("user_not_found")
        channel = self._channel(users[0])
        return {"channel": {"id": channel}}

    def _conversations_list(self, params: dict[str, Any]) -> JSON:
        """The channels the bot can see, a page at a time: every public one (``is_member`` says whether it is
        in), private ones only where it is a member."""
        types = set(str(params.get("types") or "public_channel").split(","))
        skip_archived = _truthy(params.get("exclude_archived"))
        seen = [
            dict(info)
            for info in self._channels.values()
            if (info["is_channel"] and "public_channel" in types)
            or (info["is_group"] and info["is_member"] and "private_channel" in types)
            or (info["is_im"] and "im" in types)
        ]
        seen = [c for c in seen if not (skip_archived and c["is_archived"])]
        start = int(params["cursor"]) if str(params.get("cursor") or "").isdigit() else 0
        limit = max(1, min(int(params.get("limit") or 100), _LIST_LIMIT))
        page = seen[start : start + limit]
        more = start + limit < len(seen)
        return {"channels": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _usergroup_users(self, params: dict[str, Any]) -> JSON:
        group = self.usergroups.get(str(params.get("usergroup", "")))
        if group is None:
            raise _ApiError("no_such_subteam")
        return {"users": sorted(group)}

    def _users_info(self, params: dict[str, Any]) -> JSON:
        user = self._users.get(str(params.get("user", "")))
        if user is None:
            raise _ApiError("user_not_found")
        return {"user": copy.deepcopy(user)}

    def _view_object(self, view: Any, kind: str) -> JSON:
        view = _json_field(view)
        if not isinstance(view, dict):
            raise _ApiError("invalid_arguments")
        self._refuse(view_refusal(view))
        return {
            "id": self._new_id("V"),
            "team_id": self.team_id,
            "app_id": self.app_id,
            "bot_id": self.bot_id,
            "hash": secrets.token_hex(8),
            "state": {"values": {}},
            **view,
            "type": view.get("type", kind),
        }

    def _views_publish(self, params: dict[str, Any]) -> JSON:
        user = str(params.get("user_id") or "")
        if user not in self._users:
            raise _ApiError("user_not_found")
        view = self._view_object(params.get("view"), "home")
        self.home_views[user] = view
        return {"view": view}

    def _views_open(self, params: dict[str, Any]) -> JSON:
        trigger = str(params.get("trigger_id") or "")
        if trigger not in self._triggers:
            raise _ApiError("invalid_trigger_id")
        view = self._view_object(params.get("view"), "modal")
        self.views.append(view)
        return {"view": view}

    def _get_upload_url(self, params: dict[str, Any]) -> JSON:
        filename = str(params.get("filename") or "")
        if not filename or not str(params.get("length") or "").isdigit():
            raise _ApiError("invalid_arguments")
        file_id = self._new_id("F")
        self._pending_uploads[file_id] = dict(params)
        return {"upload_url": f"{self.url}upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, params: dict[str, Any]) -> JSON:
        entries = _json_field(params.get("files"))
        if not isinstance(entries, list) or not entries:
            raise _ApiError("invalid_arguments")
        done: list[UploadedFile] = []
        for entry in entries:
            file_id = str(entry.get("id"))
            meta = self._pending_uploads.get(file_id)
            if meta is None or file_id not in self._uploaded:
                raise _ApiError("file_not_found")
            name = str(meta["filename"])
            uploaded = UploadedFile(
                id=file_id,
                name=name,
                title=str(entry.get("title") or name),
                content=self._uploaded.pop(file_id),
                mimetype=mimetypes.guess_type(name)[0] or "text/plain",
                alt_txt=meta.get("alt_txt"),
                snippet_type=meta.get("snippet_type"),
            )
            del self._pending_uploads[file_id]
            self.files[file_id] = uploaded
            done.append(uploaded)
        targets = [params["channel_id"]] if params.get("channel_id") else []
        targets += [c for c in str(params.get("channels") or "").split(",") if c]
        share = {"text": params.get("initial_comment") or "", "thread_ts": params.get("thread_ts")}
        for target in targets:
            self._bot_message(self._member(self._channel(str(target))), share, files=done)
        return {"files": [{"id": f.id, "title": f.title} for f in done]}

    # ------------------------------------------------------------------ HTTP: other endpoints

    async def _http_upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if request.content_type.startswith("multipart/"):
            data = b""
            reader = await request.multipart()
            async for part in reader:
                if not isinstance(part, BodyPartReader):  # pragma: no cover - nested multipart
                    continue
                data = bytes(await part.read())
                break
        else:
            data = await request.read()
        ok = file_id in self._pending_uploads
        if ok:
            self._uploaded[file_id] = data
        params = {"file_id": file_id, "length": len(data)}
        await self._record(ApiCall("(upload)", params, time.monotonic(), 200 if ok else 404, None))
        if not ok:
            return web.Response(status=404, text="file_not_found")
        return web.Response(text=f"OK - {len(data)}", content_type="text/plain")

    async def _http_file(self, request: web.Request) -> web.Response:
        f = self.files.get(request.match_info["file_id"])
        if request.headers.get("Authorization", "") != f"Bearer {self.bot_token}":
            return web.Response(status=403, text="forbidden")
        if f is None:
            return web.Response(status=404, text="not found")
        return web.Response(body=f.content, content_type=f.mimetype)

    async def _http_response_url(self, request: web.Request) -> web.Response:
        context = self._responses.get(request.match_info["rid"])
        body: dict[str, Any] = {}
        if request.can_read_body:
            raw = await request.json()
            body = raw if isinstance(raw, dict) else {}
        status, text = 200, "ok"
        if context is None:
            status, text = 404, "no_service"
        elif time.monotonic() - float(context.setdefault("issued", time.monotonic())) > RESPONSE_URL_SECONDS:
            status, text = 404, "expired_url"
        elif int(context.get("used", 0)) >= RESPONSE_URL_USES:
            status, text = 404, "used_url"
        else:
            context["used"] = int(context.get("used", 0)) + 1
            try:
                self._respond(context, body)
            except _ApiError as e:
                status, text = 400, e.error
        await self._record(ApiCall("response_url", body, time.monotonic(), status, {"ok": status == 200}))
        return web.Response(status=status, text=text)

    def _respond(self, context: Mapping[str, Any], body: Mapping[str, Any]) -> None:
        """Apply a response_url / slash-command ack message the way Slack shows it."""
        channel, message_ts = str(context["channel"]), context.get("message_ts")
        if message_ts and _truthy(body.get("delete_original")):
            message = self._find(channel, str(message_ts))
            (self._ephemeral if message.ephemeral_to else self._history[channel]).remove(message)
            return
        if message_ts and _truthy(body.get("replace_original")):
            message = self._find(channel, str(message_ts))
            self._refuse(message_refusal(str(body.get("text") or ""), _json_field(body.get("blocks"))))
            self._check_text(str(body.get("text") or ""), _json_field(body.get("blocks")))
            message.edits.append(Edit(message.text, copy.deepcopy(message.blocks), time.monotonic()))
            message.text = str(body.get("text") or "")
            message.blocks = list(_json_field(body.get("blocks")) or [])
            return
        ephemeral_to = None if body.get("response_type") == "in_channel" else str(context["user"])
        params = {**body, "thread_ts": body.get("thread_ts") or context.get("thread_ts")}
        self._bot_message(channel, params, ephemeral_to=ephemeral_to)

    def _new_response_url(self, **context: Any) -> str:
        rid = secrets.token_hex(8)
        self._responses[rid] = {**context, "issued": time.monotonic()}
        return f"{self.url}response/{rid}"

    # ------------------------------------------------------------------ Socket Mode server

    def _live_conn(self) -> _Conn | None:
        live = self._live_conns()
        return live[-1] if live else None

    def _live_conns(self) -> list[_Conn]:
        """The connections an envelope may go to: open, and not told to go (``disconnect``)."""
        return [c for c in self._conns if not c.closed and not c.draining and not c.ws.closed]

    def _choose_conn(self, env: Envelope) -> _Conn | None:
        """One open connection for this envelope, in turn; a retry goes to one that has not had it, if any."""
        live = self._live_conns()
        fresh = [c for c in live if c.number not in env.connections]
        candidates = fresh or live
        if not candidates:
            return None
        return candidates[next(self._turns) % len(candidates)]

    async def _http_link(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:  # tickets stay valid: slack_sdk may retry the same URL
            return web.Response(status=401, text="invalid ticket; call apps.connections.open")
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        if self.connection_count >= MAX_CONNECTIONS:
            return await self._refuse_connection(ws)
        self.connections_opened += 1
        conn = _Conn(ws=ws, request=request, number=self.connections_opened)
        self._conns.append(conn)
        hello = P.hello(
            num_connections=self.connection_count,
            app_id=self.app_id,
            host=f"emulator-link-{conn.number}",
            connection_time_ms=18_060,
        )
        try:
            await ws.send_str(json.dumps(hello))
            await self._flush()
            await self._notify()
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    await self._on_client_frame(str(msg.data))
                elif msg.type == WSMsgType.PING:
                    self.pings += 1
                    await ws.pong(msg.data)
                    await self._notify()
                elif msg.type == WSMsgType.ERROR:
                    break
        except (ConnectionError, RuntimeError) as e:
            log.debug("socket mode connection %d ended: %s", conn.number, e)
        finally:
            await self._connection_closed(conn)
        return ws

    async def _refuse_connection(self, ws: web.WebSocketResponse) -> web.WebSocketResponse:
        """Slack's answer to an 11th socket: a ``too_many_websockets`` disconnect, then the socket closes."""
        self.refused_connections += 1
        try:
            await ws.send_str(json.dumps(P.disconnect(reason="too_many_websockets", host="emulator-link-refused")))
            await ws.close()
        except (ConnectionError, RuntimeError) as e:
            log.debug("refused socket mode connection ended: %s", e)
        await self._notify()
        return ws

    async def _connection_closed(self, conn: _Conn) -> None:
        conn.closed = True
        if conn in self._conns:
            self._conns.remove(conn)
        if self.redeliver_unacked:
            lost = [self.envelopes[eid] for eid in conn.delivered if self._outstanding_on(self.envelopes[eid], conn)]
            for env in sorted(lost, key=lambda e: e.queued_at, reverse=True):
                self._retry(env)
        await self._flush()
        await self._notify()

    def _outstanding_on(self, env: Envelope, conn: _Conn) -> bool:
        """Delivered last on ``conn``, not acked, and an event (the only envelopes Slack retries)."""
        return (
            env.envelope_id not in self._acked
            and env.type == "events_api"
            and bool(env.connections)
            and env.connections[-1] == conn.number
            and env not in self._pending
        )

    def _retry(self, env: Envelope) -> None:
        """Queue ``env`` again first, as Slack's next retry; or give it up after MAX_RETRIES."""
        timer = self._ack_timers.pop(env.envelope_id, None)
        if timer is not None:
            timer.cancel()
        if (env.retry_attempt or 0) >= MAX_RETRIES:
            if env.envelope_id not in self.abandoned:
                self.abandoned.append(env.envelope_id)
            return
        env.retry_attempt = (env.retry_attempt or 0) + 1
        env.retry_reason = "timeout"
        self._pending.appendleft(env)

    def _start_ack_timer(self, env: Envelope, conn: _Conn) -> None:
        if self.ack_timeout is None or env.type != "events_api" or env.envelope_id in self._acked:
            return
        loop = asyncio.get_running_loop()
        self._ack_timers[env.envelope_id] = loop.call_later(self.ack_timeout, self._ack_timed_out, env, conn)

    def _ack_timed_out(self, env: Envelope, conn: _Conn) -> None:
        self._ack_timers.pop(env.envelope_id, None)
        if not self._outstanding_on(env, conn):
            return
        conn.delivered.discard(env.envelope_id)
        self._retry(env)
        task = asyncio.ensure_future(self._flush_and_notify())
        self._timeouts.add(task)
        task.add_done_callback(self._timeouts.discard)

    async def _flush_and_notify(self) -> None:
        await self._flush()
        await self._notify()

    async def _on_client_frame(self, data: str) -> None:
        try:
            frame = json.loads(data)
        except ValueError:
            frame = {"unparsed": data}
        if isinstance(frame, dict) and isinstance(frame.get("envelope_id"), str):
            eid = frame["envelope_id"]
            payload = frame.get("payload")
            self.acks.append(
                Ack(eid, payload if isinstance(payload, dict) else None, time.monotonic(), frame)
            )
            self._acked.setdefault(eid, frame)
            timer = self._ack_timers.pop(eid, None)
            if timer is not None:
                timer.cancel()
            env = self.envelopes.get(eid)
            if env is not None and env.type == "slash_commands" and isinstance(payload, dict) and payload:
                try:
                    self._respond(env.context, payload)
                except _ApiError:
                    log.warning("could not show the slash command ack payload %r", payload)
        else:
            self.client_messages.append(frame if isinstance(frame, dict) else {"frame": frame})
        await self._notify()

    async def _flush(self) -> None:
        async with self._deliver_lock:
            while self._pending:
                env = self._pending[0]
                if env.envelope_id in self._acked:
                    self._pending.popleft()
                    continue
                conn = self._choose_conn(env)
                if conn is None:
                    return
                # recorded before the send: a close noticed meanwhile must see this envelope to retry it
                self._pending.popleft()
                env.deliveries += 1
                env.delivered_at = time.monotonic()
                env.connections.append(conn.number)
                conn.delivered.add(env.envelope_id)
                try:
                    await conn.ws.send_str(json.dumps(env.to_message()))
                except (ConnectionError, RuntimeError):
                    conn.closed = True
                    conn.delivered.discard(env.envelope_id)
                    if env not in self._pending:  # never sent, and its connection's close did not queue it again
                        env.deliveries -= 1
                        env.connections.pop()
                        self._pending.appendleft(env)
                    continue
                self._start_ack_timer(env, conn)

    async def _dispatch(self, env: Envelope) -> str:
        env.queued_at = time.monotonic()
        self.envelopes[env.envelope_id] = env
        if self.http is not None:
            task = asyncio.ensure_future(self._deliver_http(env, self.http))
            self._http_tasks.add(task)
            task.add_done_callback(self._http_tasks.discard)
            return env.envelope_id
        self._pending.append(env)
        await self._flush()
        await self._notify()
        return env.envelope_id

    # ------------------------------------------------------------------ the Events API over HTTP

    def deliver_over_http(self, url: str, signing_secret: str, *, timeout: float = H.HTTP_TIMEOUT) -> H.HttpTarget:
        """From now on POST every envelope's payload to ``url``, an app's Request URL, signed as Slack signs it,
        and judge the answers as Slack does (see :mod:`slackemu.http`); returns what records the deliveries."""
        self.http = H.HttpTarget(url, signing_secret, timeout)
        return self.http

    async def _deliver_http(self, env: Envelope, target: H.HttpTarget) -> None:
        if self._http_session is None:
            self._http_session = aiohttp.ClientSession()
        attempt, reason = env.retry_attempt or 0, env.retry_reason or None
        while True:
            if env.type == "events_api" and target.disabled:
                target.dropped.append(env.envelope_id)
                await self._notify()
                return
            env.deliveries += 1
            env.delivered_at = time.monotonic()
            delivery, retry, answer = await H.post(self._http_session, target, envelope_id=env.envelope_id,
                                                   kind=env.type, payload=env.payload, attempt=attempt,
                                                   retry_reason=reason)
            target.deliveries.append(delivery)
            if delivery.ok:
                self._http_acked(env, answer)
            elif env.type == "events_api" and not target.disabled and target.too_many_failures(time.monotonic()):
                target.disabled = True
                log.warning("too many failed deliveries: event subscriptions are turned off")
                await self._notify()
                await self.send_app_rate_limited(over_http=True)
            await self._notify()
            if not retry:
                if not delivery.ok and env.envelope_id not in self.abandoned:
                    self.abandoned.append(env.envelope_id)
                    await self._notify()
                return
            attempt, reason = attempt + 1, delivery.reason
            env.retry_attempt, env.retry_reason = attempt, reason

    def _http_acked(self, env: Envelope, answer: Any) -> None:
        frame = {"envelope_id": env.envelope_id, **({"payload": answer} if isinstance(answer, dict) else {})}
        self.acks.append(Ack(env.envelope_id, answer if isinstance(answer, dict) else None, time.monotonic(), frame))
        self._acked.setdefault(env.envelope_id, frame)
        if env.type == "slash_commands" and isinstance(answer, dict) and answer:
            try:
                self._respond(env.context, answer)
            except _ApiError:
                log.warning("could not show the slash command's answer %r", answer)

    async def drop_connections(self, *, graceful: bool = False) -> None:
        """Cut every Socket Mode connection so the client has to reconnect.

        Abrupt by default (TCP reset, no close frame): slack_sdk notices within its
        ``ping_interval``. ``graceful=True`` sends a close frame instead (immediate reconnect).
        """
        for conn in list(self._conns):
            conn.closed = True
            if graceful:
                await conn.ws.close()
            elif conn.request.transport is not None:
                conn.request.transport.abort()
        await self._notify()

    async def send_disconnect(self, reason: str = "refresh_requested") -> None:
        """Slack's ``{"type": "disconnect"}``: the client opens a new connection and drops this one.

        Envelopes sent meanwhile wait for the new connection.
        """
        for conn in list(self._conns):
            if conn.closed:
                continue
            conn.draining = True
            try:
                await conn.ws.send_str(
                    json.dumps(P.disconnect(reason=reason, host=f"emulator-link-{conn.number}"))
                )
            except (ConnectionError, RuntimeError):
                conn.closed = True
        await self._notify()

    # ------------------------------------------------------------------ acting as people

    async def send_event(
        self,
        event: Mapping[str, Any],
        *,
        event_id: str | None = None,
        retry_attempt: int = 0,
        retry_reason: str = "",
        team_id: str | None = None,
        authorizations: list[dict[str, Any]] | None = None,
        shared: bool = False,
    ) -> str:
        """Deliver one Events API event; returns the envelope id.

        Pass the same ``event_id`` with ``retry_attempt`` > 0 to imitate a Slack retry. ``team_id`` is the
        payload's team (in a Slack Connect channel, ``shared``, it can be the partner's), ``authorizations`` the
        installations the event is for (by default this bot's).
        """
        stamp = event.get("event_ts") or event.get("ts")
        payload = P.event_callback(
            event,
            team_id=self.team_id,
            api_app_id=self.app_id,
            event_id=event_id or self._new_id("Ev"),
            event_time=_event_time(stamp),
            bot_user_id=self.bot_user_id,
        )
        if team_id is not None:
            payload["team_id"] = payload["context_team_id"] = team_id
        if authorizations is not None:
            payload["authorizations"] = authorizations
        if shared:
            payload["is_ext_shared_channel"] = True
        env = Envelope(
            P.new_envelope_id(),
            "events_api",
            payload,
            accepts_response_payload=False,
            retry_attempt=retry_attempt,
            retry_reason=retry_reason,
        )
        return await self._dispatch(env)

    def _human_message(self, text: str, channel: str, user: str, thread_ts: str | None) -> _Stored:
        self._user_name(user)
        cid = self._channel(channel)
        message = _Stored(
            channel=cid,
            ts=self._next_ts(),
            thread_ts=self._thread_root(cid, thread_ts),
            text=text,
            blocks=P.rich_text_blocks(text),
            user=user,
            bot_id=None,
        )
        return self._store(message)

    async def send_message(
        self,
        text: str,
        *,
        channel: str = "C0OPS",
        user: str = "U0HUMAN",
        thread_ts: str | None = None,
        channel_type: str | None = None,
    ) -> dict[str, Any]:
        """A person posts ``text``: stored in history, delivered as a ``message`` event (returned)."""
        message = self._human_message(text, channel, user, thread_ts)
        event = self._message_event(message, channel_type)
        await self.send_event(event)
        return event

    def _message_event(self, message: _Stored, channel_type: str | None) -> JSON:
        parent = None
        if message.thread_ts:
            parent = next((m.user for m in self._history[message.channel] if m.ts == message.thread_ts), None)
        return P.message_event(
            text=message.text,
            user=str(message.user),
            channel=message.channel,
            ts=message.ts,
            team_id=self.team_id,
            channel_type=channel_type or P.channel_type_of(message.channel),
            thread_ts=message.thread_ts,
            parent_user_id=parent,
        )

    async def send_mention(
        self, text: str, *, channel: str = "C0OPS", user: str = "U0HUMAN", thread_ts: str | None = None
    ) -> dict[str, Any]:
        """A person mentions the bot: one stored message, an ``app_mention`` AND a ``message`` event.

        ``<@BOTUSERID>`` is put in front of ``text`` if it is not there. Returns the app_mention event.
        """
        mention = f"<@{self.bot_user_id}>"
        if mention not in text:
            text = f"{mention} {text}"
        message = self._human_message(text, channel, user, thread_ts)
        event = P.app_mention_event(
            text=text,
            user=user,
            channel=message.channel,
            ts=message.ts,
            team_id=self.team_id,
            thread_ts=message.thread_ts,
        )
        event["blocks"] = message.blocks
        await self.send_event(event)
        msg_event = self._message_event(message, None)
        msg_event.update(blocks=message.blocks, client_msg_id=event["client_msg_id"])
        await self.send_event(msg_event)
        return event

    async def edit_message(self, channel: str, ts: str, text: str) -> JSON:
        """A person edits their message: Slack sends a hidden ``message_changed`` event and, when the text
        mentions the bot, ``app_mention`` again (same ``ts``, an ``edited`` field, a new event id). Returns the
        message_changed event."""
        cid = self._channel(channel, create=False)
        message = self._find(cid, ts, ephemeral=False)
        previous = self._api_message(message)
        message.edits.append(Edit(message.text, copy.deepcopy(message.blocks), time.monotonic()))
        message.text, message.blocks = text, P.rich_text_blocks(text)
        message.edited_ts = edit_ts = self._next_ts()
        edited = {**self._api_message(message), "edited": {"user": message.user, "ts": edit_ts}}
        changed = P.message_changed_event(channel=cid, channel_type=P.channel_type_of(cid), edited=edited,
                                          previous=previous, event_ts=edit_ts)
        await self.send_event(changed)
        if f"<@{self.bot_user_id}>" in text:
            mention = P.app_mention_event(text=text, user=str(message.user), channel=cid, ts=message.ts,
                                          team_id=self.team_id, thread_ts=message.thread_ts)
            mention.update(edited={"user": message.user, "ts": edit_ts}, event_ts=edit_ts)
            await self.send_event(mention)
        return changed

    async def send_foreign_mention(self, text: str, *, team_id: str = "T0ELSEWHERE", channel: str = "C0OPS",
                                   user: str = "U0STRANGER") -> str:
        """An ``app_mention`` of another installation (another workspace's copy of an app), as a misrouted or
        replayed delivery would bring it: its team and authorization are not this bot's."""
        event = P.app_mention_event(text=f"<@{self.bot_user_id}> {text}", user=user, channel=channel,
                                    ts=self._next_ts(), team_id=team_id)
        other = {"enterprise_id": None, "team_id": team_id, "user_id": "U0OTHERBOT", "is_bot": True,
                 "is_enterprise_install": False}
        return await self.send_event(event, team_id=team_id, authorizations=[other])

    async def send_connect_mention(self, text: str, *, partner_team: str = "T0PARTNER", channel: str = "C0OPS",
                                   user: str = "U0PARTNER") -> JSON:
        """A person of a partner workspace mentions the bot in a Slack Connect channel: the payload's team is the
        partner's, the authorization is this bot's. Returns the event."""
        if user not in self._users:
            self.add_user(user, user.lower())
        message = self._human_message(f"<@{self.bot_user_id}> {text}", channel, user, None)
        event = P.app_mention_event(text=message.text, user=user, channel=message.channel, ts=message.ts,
                                    team_id=partner_team)
        event.update(user_team=partner_team, source_team=partner_team)
        await self.send_event(event, team_id=partner_team, shared=True)
        return event

    async def send_reaction(self, channel: str, ts: str, name: str = "thumbsup", *, user: str = "U0HUMAN") -> str:
        """A person reacts to a message: ``reaction_added``, an event rigops has no listener for."""
        cid = self._channel(channel, create=False)
        target = self._message_or_none(cid, ts)
        event = P.reaction_added_event(user=user, name=name, channel=cid, ts=ts, event_ts=self._next_ts(),
                                       item_user=target.user if target is not None else None)
        return await self.send_event(event)

    async def send_app_rate_limited(self, *, over_http: bool = False) -> str:
        """Slack's ``app_rate_limited`` notice: a top-level payload with no inner event."""
        payload = P.app_rate_limited(team_id=self.team_id, api_app_id=self.app_id, minute=int(time.time()))
        env = Envelope(P.new_envelope_id(), "events_api", payload, accepts_response_payload=False)
        if over_http and self.http is not None:  # sent even while events are off: it says they are
            self.envelopes[env.envelope_id] = env
            assert self._http_session is not None
            delivery, _, _ = await H.post(self._http_session, self.http, envelope_id=env.envelope_id,
                                          kind="events_api", payload=payload, attempt=0, retry_reason=None)
            self.http.deliveries.append(delivery)
            return env.envelope_id
        return await self._dispatch(env)

    async def send_raw(self, kind: str, payload: Mapping[str, Any]) -> str:
        """Any payload as an envelope of ``kind`` (``events_api``, ``interactive``, ``slash_commands``): the shapes
        Slack sends that the emulator has no person's action for (a modal's submission, a shortcut, a URL
        check). Returns the envelope id."""
        env = Envelope(P.new_envelope_id(), kind, dict(payload), accepts_response_payload=kind != "events_api")
        env.context = {"channel": "C0OPS", "user": "U0HUMAN"}
        return await self._dispatch(env)

    async def send_action(
        self,
        action_id: str,
        value: Any,
        *,
        channel: str = "C0OPS",
        user: str = "U0HUMAN",
        message_ts: str | None = None,
        block_id: str = "forged",
        payload_changes: Mapping[str, Any] | None = None,
    ) -> str:
        """A ``block_actions`` payload for an element that need not exist: what a client under someone else's
        control can send (any action id, any value). ``payload_changes`` replaces top-level fields."""
        cid = self._channel(channel)
        ts = message_ts or self._next_ts()
        stored = self._message_or_none(cid, ts)
        action = {"action_id": action_id, "block_id": block_id, "type": "button", "action_ts": self._next_ts(),
                  "text": {"type": "plain_text", "text": "Run"}, "value": value}
        payload = P.block_actions_payload(
            user_id=user, user_name=self._user_name(user), team_id=self.team_id, team_domain=self.team_domain,
            api_app_id=self.app_id, channel_id=cid, channel_name=str(self._channels[cid]["name"]),
            message=self._api_message(stored) if stored is not None else None, message_ts=ts,
            thread_ts=stored.thread_ts if stored is not None else None, is_ephemeral=False, action=action,
            response_url=self._new_response_url(channel=cid, user=user, message_ts=ts), trigger_id=P.new_trigger_id(),
        )
        payload.update(payload_changes or {})
        env = Envelope(P.new_envelope_id(), "interactive", payload, accepts_response_payload=False)
        env.context = {"channel": cid, "user": user, "message_ts": ts}
        return await self._dispatch(env)

    async def send_slash(
        self, text: str, *, command: str = "/rigops", channel: str = "C0OPS", user: str = "U0HUMAN"
    ) -> str:
        """A person runs ``/command text`` (as typed: see :func:`slackemu.payloads.slash_text` for what Slack
        sends); returns the envelope id (await ``wait_ack`` on it)."""
        cid = self._channel(channel)
        trigger = P.new_trigger_id()
        self._triggers.add(trigger)
        escape = self.escape_slash if self.escape_slash is not None else self._escaping.get(command, False)
        payload = P.slash_command_payload(
            command=command,
            text=P.slash_text(
                text,
                escape=escape,
                channels={cid: str(info["name"]) for cid, info in self._channels.items() if not info["is_im"]},
                users={uid: str(info["name"]) for uid, info in self._users.items()},
                groups=self.usergroup_handles,
            ),
            team_id=self.team_id,
            team_domain=self.team_domain,
            channel_id=cid,
            channel_name=str(self._channels[cid]["name"]),
            user_id=user,
            user_name=self._user_name(user),
            api_app_id=self.app_id,
            response_url=self._new_response_url(channel=cid, user=user),
            trigger_id=trigger,
        )
        env = Envelope(P.new_envelope_id(), "slash_commands", payload, accepts_response_payload=True)
        env.context = {"channel": cid, "user": user}
        return await self._dispatch(env)

    async def click(
        self,
        message_ts: str,
        action_id: str,
        *,
        channel: str = "C0OPS",
        user: str = "U0HUMAN",
        value: str | None = None,
    ) -> str:
        """A person clicks the button ``action_id`` on a message as it is now; returns the envelope id."""
        cid = self._channel(channel)
        try:
            message = self._find(cid, message_ts)
        except _ApiError:
            have = [m.ts for m in self._history.get(cid, [])]
            raise LookupError(f"click: no message ts={message_ts} in {cid}; messages there: {have}") from None
        found = P.find_element(message.blocks, action_id)
        if found is None:
            raise LookupError(
                f"click: message {message_ts} in {cid} has no element with action_id={action_id!r}; "
                f"it has {P.action_ids(message.blocks)}; text: {text_of(message.snapshot())!r}"
            )
        block_id, element = found
        if element.get("type") != "button":
            raise LookupError(f"click: {action_id!r} is a {element.get('type')}, not a button")
        trigger = P.new_trigger_id()
        self._triggers.add(trigger)
        is_ephemeral = message.ephemeral_to is not None
        payload = P.block_actions_payload(
            user_id=user,
            user_name=self._user_name(user),
            team_id=self.team_id,
            team_domain=self.team_domain,
            api_app_id=self.app_id,
            channel_id=cid,
            channel_name=str(self._channels[cid]["name"]),
            message=None if is_ephemeral else self._api_message(message),
            message_ts=message.ts,
            thread_ts=message.thread_ts,
            is_ephemeral=is_ephemeral,
            action=P.button_action(element, block_id=block_id, value=value, action_ts=self._next_ts()),
            response_url=self._new_response_url(
                channel=cid, user=user, message_ts=message.ts, thread_ts=message.thread_ts
            ),
            trigger_id=trigger,
        )
        env = Envelope(P.new_envelope_id(), "interactive", payload, accepts_response_payload=False)
        env.context = {"channel": cid, "user": user, "message_ts": message.ts}
        return await self._dispatch(env)
