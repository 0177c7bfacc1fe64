"""What Slack sends, read strictly into the core's terms: one parser per kind of payload, each refusing what Slack
could not have sent for rigops (a forged click, a garbled id, an event of another installation).

Every value in a payload is input: ids must look like Slack's ids, timestamps like Slack's ``ts``, texts are
strings cut to Slack's own size limits. A payload that does not parse gives None (and, for a press, the reason),
never an exception: a listener that raises after its ack makes bolt answer Slack with an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.core.requests import Said, SlashCommand
from bot.core.talk import Place, Pressed
from bot.frontends.slack.blocks import ACTION_PREFIX
from bot.text.message import CHOICE_KINDS, ChoiceKind

ID_RE = re.compile(r"[A-Z0-9][A-Z0-9_-]{1,39}", re.ASCII)  # U…, W…, C…, G…, D…, T…, E…, B…, A…
TS_RE = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}", re.ASCII)
URL_RE = re.compile(r"https?://[^\s<>\"]{1,2000}", re.ASCII)
TRIGGER_RE = re.compile(r"[0-9]{1,20}\.[0-9]{1,20}\.[0-9a-f]{8,64}", re.ASCII)  # 13201932580.1604.0f0ef0…
MAX_TEXT = 40_000  # characters Slack keeps of a message's text
MAX_COMMAND_TEXT = 4_000  # a slash command's text is far shorter in Slack's own client


@dataclass(frozen=True)
class Installation:
    """Who rigops is in Slack, as auth.test told bolt: its workspace (or Enterprise Grid org) and bot user."""

    team_id: str | None
    enterprise_id: str | None
    bot_user_id: str | None


def slack_id(value: object) -> str | None:
    return value if isinstance(value, str) and ID_RE.fullmatch(value) else None


def slack_ts(value: object) -> str | None:
    return value if isinstance(value, str) and TS_RE.fullmatch(value) else None


def text_of(value: object, *, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""


def is_ours(body: Mapping[str, Any], us: Installation) -> bool:
    """Whether an Events API payload was sent for this installation. ``authorizations`` names the installations
    an event is for; in a Slack Connect channel the payload's ``team_id`` may be the partner's while the
    authorization is ours, so the authorization decides, and the payload's team only when Slack sent none."""
    authorizations = body.get("authorizations")
    if isinstance(authorizations, list) and authorizations:
        return any(isinstance(a, Mapping) and _authorizes(a, us) for a in authorizations)
    return _same_org(body.get("team_id"), body.get("enterprise_id"), us)


def _authorizes(authorization: Mapping[str, Any], us: Installation) -> bool:
    user = authorization.get("user_id")
    if us.bot_user_id and user and user != us.bot_user_id:
        return False
    return _same_org(authorization.get("team_id"), authorization.get("enterprise_id"), us)


def _same_org(team: object, enterprise: object, us: Installation) -> bool:
    if us.team_id and team == us.team_id:
        return True
    return bool(us.enterprise_id and enterprise == us.enterprise_id)


def said(event: Mapping[str, Any], *, addressed: bool, bot_user: str | None = None) -> Said | None:
    """A person's message event, or None when its ids are not Slack's. The delivery key is the message itself
    (channel and ts), not the event's id: an edited mention arrives again as a new event for the same message,
    and so do a message's ``message`` and ``app_mention`` events. A mention of rigops (``bot_user``) that opens
    the text is dropped: it says who is spoken to, which ``addressed`` already holds (a mention of somebody else
    that opens it says the message is for them)."""
    user, channel, ts = slack_id(event.get("user")), slack_id(event.get("channel")), slack_ts(event.get("ts"))
    if user is None or channel is None or ts is None:
        return None
    text = text_of(event.get("text"))
    if bot_user and ID_RE.fullmatch(bot_user):
        text = re.sub(rf"^\s*<@{bot_user}(?:\|[^>]*)?>[\s,:]*", "", text)
    return Said(text=text, user=user, channel=channel, message_id=ts,
                thread_id=slack_ts(event.get("thread_ts")), addressed=addressed, delivery=f"{channel}:{ts}")


def command(payload: Mapping[str, Any]) -> SlashCommand | None:
    user, channel = slack_id(payload.get("user_id")), slack_id(payload.get("channel_id"))
    if user is None or channel is None:
        return None
    route = payload.get("response_url")
    text = text_of(payload.get("text"), limit=MAX_COMMAND_TEXT)
    private_route = route if isinstance(route, str) and URL_RE.fullmatch(route) else None
    trigger = payload.get("trigger_id")
    if isinstance(trigger, str) and TRIGGER_RE.fullmatch(trigger):
        key = f"trigger:{trigger}"
    else:  # no trigger id Slack could have sent: the command's own fields name it
        fields = json.dumps([user, channel, text, private_route, payload.get("command")], default=str)
        key = "fields:" + hashlib.sha256(fields.encode()).hexdigest()[:32]
    return SlashCommand(text=text, user=user, channel=channel, private_route=private_route, key=key)


@dataclass(frozen=True)
class Click:
    """A press as Slack sent it, before its value is read: where it was, who pressed, what was pressed."""

    user: str
    place: Place
    kind: ChoiceKind | None  # None: not one of rigops' buttons
    value: object
    message: str | None


def click(body: Mapping[str, Any]) -> Click | None:
    """A ``block_actions`` payload's first action, or None when it names no user or channel Slack could have sent."""
    user = slack_id(_dict(body.get("user")).get("id"))
    container = _dict(body.get("container"))
    channel = slack_id(_dict(body.get("channel")).get("id")) or slack_id(container.get("channel_id"))
    actions = body.get("actions")
    action = _dict(actions[0]) if isinstance(actions, list) and actions else {}
    if user is None or channel is None:
        return None
    message = _dict(body.get("message"))
    message_ts = slack_ts(container.get("message_ts"))
    # the pressed message's thread; a top-level message is the root of its own thread
    thread = slack_ts(message.get("thread_ts")) or slack_ts(container.get("thread_ts")) or message_ts
    action_id = action.get("action_id")
    kind = action_id.removeprefix(ACTION_PREFIX) if isinstance(action_id, str) and action_id.startswith(
        ACTION_PREFIX) else None
    return Click(user=user, place=Place(channel, thread), message=message_ts, value=action.get("value"),
                 kind=next((k for k in CHOICE_KINDS if k == kind), None))


def pressed(click: Click) -> Pressed | None:
    """The press for the core, or None when it is not a value rigops could have put on that button."""
    if click.kind is None:
        return None
    press = Pressed(kind=click.kind, value=click.value if isinstance(click.value, str) else "", user=click.user,
                    place=click.place, message=click.message)
    return press if press.parsed is not None else None


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
