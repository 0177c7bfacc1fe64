"""Real-shaped Slack payloads and a Block Kit renderer, for :mod:`slackemu.server`.

Everything here is pure: builders take plain values and return the JSON that Slack
would send over Socket Mode (envelopes, ``event_callback`` wrappers, ``message`` /
``app_mention`` events, slash-command and ``block_actions`` payloads), and
:func:`render_blocks` turns Block Kit into plain text for people and for asserts.

The shapes follow Slack's documented payloads and the fixtures in slack_sdk's own
Socket Mode tests (field names, string-typed slash-command fields, ``retry_attempt``
and ``retry_reason`` only on ``events_api`` envelopes).
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

JSON = dict[str, Any]

#: The legacy verification token Slack puts in payloads; bolt ignores it in Socket Mode.
VERIFICATION_TOKEN = "emulatorverificationtoken0"

# <@U123>, <@U123|name>, <#C123|ops>, <!here>, <!subteam^S1|@team>, <https://x|label>
_MARKUP_RE = re.compile(r"<([@#!]?)([^>|]+)(?:\|([^>]*))?>")
# what a person types that Slack turns into markup: #channel, @person, @group, @here, a link
_TYPED_RE = re.compile(r"(?<![\w/#@&])([#@])([\w-]+(?:\.[\w-]+)*)|\bhttps?://[^\s<>]+")
_SPECIALS = frozenset({"here", "channel", "everyone"})
_ENTITY_RE = re.compile(r"&(amp|lt|gt);")
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">"}
_SCHEME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")


def read_mrkdwn(text: str) -> str:
    """What a person reads of a mrkdwn text: people, channels, broadcasts and links as written (``<@U1>``), a bare
    ``<x>`` as Slack shows it (a link to x, its brackets gone), ``&amp;``, ``&lt;``, ``&gt;`` as the characters
    they stand for."""

    def bare(m: re.Match[str]) -> str:
        sigil, target, label = m.groups()
        return m.group(0) if sigil or _SCHEME_RE.match(target) else (label or target)

    return _ENTITY_RE.sub(lambda m: _ENTITIES[m.group(1)], _MARKUP_RE.sub(bare, text))


def unescaped(text: str) -> str | None:
    """Where a mrkdwn text holds an ``&``, ``<`` or ``>`` that is neither markup nor an escape, or None. Slack's
    formatting docs: a message "must" escape these three as ``&amp;``, ``&lt;``, ``&gt;``; unescaped, a ``<x>``
    becomes a link, ``<!channel>`` notifies everyone and a stray ``&`` may read as an entity."""
    rest = _ENTITY_RE.sub(" ", text)
    rest = _MARKUP_RE.sub(lambda m: " " if m.group(1) or _SCHEME_RE.match(m.group(2)) else m.group(0), rest)
    found = re.search(r"[&<>]", rest)
    return None if found is None else rest[max(0, found.start() - 40): found.end() + 40]


def mrkdwn_texts(text: str, blocks: Any) -> list[str]:
    """The texts of a message that Slack reads as mrkdwn: its ``text``, and its blocks' mrkdwn text objects."""
    out = [text] if text else []

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
                out.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(blocks)
    return out


def new_block_id() -> str:
    return secrets.token_urlsafe(4)[:5]


def new_trigger_id() -> str:
    return f"{secrets.randbelow(10**13):013d}.{secrets.randbelow(10**10):010d}.{secrets.token_hex(16)}"


def new_envelope_id() -> str:
    return str(uuid.uuid4())


def rich_text_elements(text: str) -> list[JSON]:
    """Split Slack markup into rich_text_section elements the way the Slack client does."""
    elements: list[JSON] = []
    pos = 0
    for m in _MARKUP_RE.finditer(text):
        if m.start() > pos:
            elements.append({"type": "text", "text": text[pos : m.start()]})
        sigil, target, label = m.groups()
        if sigil == "@":
            elements.append({"type": "user", "user_id": target})
        elif sigil == "#":
            elements.append({"type": "channel", "channel_id": target})
        elif sigil == "!" and target.startswith("subteam^"):
            elements.append({"type": "usergroup", "usergroup_id": target.split("^", 1)[1]})
        elif sigil == "!":
            elements.append({"type": "broadcast", "range": target})
        else:
            link: JSON = {"type": "link", "url": target}
            if label:
                link["text"] = label
            elements.append(link)
        pos = m.end()
    if pos < len(text):
        elements.append({"type": "text", "text": text[pos:]})
    return elements


def rich_text_blocks(text: str) -> list[JSON]:
    """The ``blocks`` Slack attaches to a message a person typed."""
    section = {"type": "rich_text_section", "elements": rich_text_elements(text)}
    return [{"type": "rich_text", "block_id": new_block_id(), "elements": [section]}]


def slash_text(
    typed: str,
    *,
    escape: bool,
    channels: Mapping[str, str],
    users: Mapping[str, str],
    groups: Mapping[str, str],
) -> str:
    """The ``text`` Slack sends for what a person typed after a slash command.

    ``channels``, ``users`` and ``groups`` map ids to names (a group's @handle). Slack always escapes ``&``,
    ``<`` and ``>``. With "escape channels, users, and links" on (``escape``), what names a channel, a person
    or a group it knows, and links, arrive as markup: ``<#C1|ops>``, ``<@U1|ann>``, ``<!subteam^S1|@team>``,
    ``<!here>``, ``<https://x>``; with it off, as the plain text typed. Markup in ``typed`` stands for an entry
    picked from Slack's list while typing (``<#C1|ops>``): kept with escaping on, plain text with it off.
    """
    out: list[str] = []
    pos = 0
    for m in _MARKUP_RE.finditer(typed):
        out.append(_typed_text(typed[pos : m.start()], escape, channels, users, groups))
        out.append(m[0] if escape else _unescaped(m, channels, users, groups))
        pos = m.end()
    out.append(_typed_text(typed[pos:], escape, channels, users, groups))
    return "".join(out)


def _typed_text(
    text: str, escape: bool, channels: Mapping[str, str], users: Mapping[str, str], groups: Mapping[str, str]
) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if not escape:
        return text
    by_name = {name: cid for cid, name in channels.items()}
    people = {name: uid for uid, name in users.items()}
    handles = {handle: gid for gid, handle in groups.items()}

    def markup(m: re.Match[str]) -> str:
        sigil, name = m[1], m[2]
        if sigil is None:
            return f"<{m[0]}>"
        if sigil == "#" and name in by_name:
            return f"<#{by_name[name]}|{name}>"
        if sigil == "@" and name in _SPECIALS:
            return f"<!{name}>"
        if sigil == "@" and name in people:
            return f"<@{people[name]}|{name}>"
        if sigil == "@" and name in handles:
            return f"<!subteam^{handles[name]}|@{name}>"
        return m[0]

    return _TYPED_RE.sub(markup, text)


def _unescaped(
    m: re.Match[str], channels: Mapping[str, str], users: Mapping[str, str], groups: Mapping[str, str]
) -> str:
    sigil, target, label = m.groups()
    if sigil == "#":
        return "#" + (label or channels.get(target, target))
    if sigil == "@":
        return "@" + (label or users.get(target, target))
    if sigil == "!" and target.startswith("subteam^"):
        group = target.split("^", 1)[1]
        return "@" + (label or groups.get(group, group)).removeprefix("@")
    if sigil == "!":
        return "@" + target
    return target


def channel_type_of(channel: str) -> str:
    if channel.startswith("D"):
        return "im"
    if channel.startswith("G"):
        return "group"
    return "channel"


# --------------------------------------------------------------------------- events


def message_event(
    *,
    text: str,
    user: str,
    channel: str,
    ts: str,
    team_id: str,
    channel_type: str,
    thread_ts: str | None = None,
    parent_user_id: str | None = None,
) -> JSON:
    event: JSON = {
        "client_msg_id": str(uuid.uuid4()),
        "type": "message",
        "text": text,
        "user": user,
        "ts": ts,
        "blocks": rich_text_blocks(text),
        "team": team_id,
        "channel": channel,
        "event_ts": ts,
        "channel_type": channel_type,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
        if parent_user_id is not None:
            event["parent_user_id"] = parent_user_id
    return event


def app_mention_event(
    *, text: str, user: str, channel: str, ts: str, team_id: str, thread_ts: str | None = None
) -> JSON:
    event: JSON = {
        "client_msg_id": str(uuid.uuid4()),
        "type": "app_mention",
        "text": text,
        "user": user,
        "ts": ts,
        "blocks": rich_text_blocks(text),
        "team": team_id,
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def message_changed_event(
    *,
    channel: str,
    channel_type: str,
    edited: Mapping[str, Any],
    previous: Mapping[str, Any],
    event_ts: str,
) -> JSON:
    """The ``message`` event with subtype ``message_changed`` that an edit sends (hidden; the message as it is now
    under ``message``, as it was under ``previous_message``)."""
    return {
        "type": "message",
        "subtype": "message_changed",
        "message": dict(edited),
        "previous_message": dict(previous),
        "channel": channel,
        "hidden": True,
        "ts": event_ts,
        "event_ts": event_ts,
        "channel_type": channel_type,
    }


def reaction_added_event(*, user: str, name: str, channel: str, ts: str, item_user: str | None, event_ts: str) -> JSON:
    event: JSON = {
        "type": "reaction_added",
        "user": user,
        "reaction": name,
        "item": {"type": "message", "channel": channel, "ts": ts},
        "event_ts": event_ts,
    }
    if item_user is not None:
        event["item_user"] = item_user
    return event


def app_rate_limited(*, team_id: str, api_app_id: str, minute: int) -> JSON:
    """Slack's notice that events were dropped: a top-level type, no inner event (docs: app_rate_limited)."""
    return {
        "token": VERIFICATION_TOKEN,
        "type": "app_rate_limited",
        "team_id": team_id,
        "minute_rate_limited": minute - minute % 60,
        "api_app_id": api_app_id,
    }


def event_callback(
    event: Mapping[str, Any],
    *,
    team_id: str,
    api_app_id: str,
    event_id: str,
    event_time: int,
    bot_user_id: str,
) -> JSON:
    """The Events API wrapper around one event (the ``payload`` of an events_api envelope)."""
    channel = event.get("channel") or event.get("item", {}).get("channel") or ""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "context_team_id": team_id,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": dict(event),
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team_id,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{event.get('type', 'event')}-{team_id}-{channel}",
    }


# --------------------------------------------------------------------------- interactivity


def slash_command_payload(
    *,
    command: str,
    text: str,
    team_id: str,
    team_domain: str,
    channel_id: str,
    channel_name: str,
    user_id: str,
    user_name: str,
    api_app_id: str,
    response_url: str,
    trigger_id: str,
) -> JSON:
    # Slack sends slash commands form-encoded, so every value is a string.
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team_id,
        "team_domain": team_domain,
        "channel_id": channel_id,
        "channel_name": channel_name,
        "user_id": user_id,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": api_app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def block_actions_payload(
    *,
    user_id: str,
    user_name: str,
    team_id: str,
    team_domain: str,
    api_app_id: str,
    channel_id: str,
    channel_name: str,
    message: Mapping[str, Any] | None,
    message_ts: str,
    thread_ts: str | None,
    is_ephemeral: bool,
    action: Mapping[str, Any],
    response_url: str,
    trigger_id: str,
) -> JSON:
    """A ``block_actions`` payload for one clicked element of a message."""
    container: JSON = {
        "type": "message",
        "message_ts": message_ts,
        "channel_id": channel_id,
        "is_ephemeral": is_ephemeral,
    }
    if thread_ts is not None:
        container["thread_ts"] = thread_ts
    payload: JSON = {
        "type": "block_actions",
        "user": {"id": user_id, "username": user_name, "name": user_name, "team_id": team_id},
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger_id,
        "team": {"id": team_id, "domain": team_domain},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel_id, "name": channel_name},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [dict(action)],
    }
    if message is not None:  # Slack leaves the message out for ephemeral messages
        payload["message"] = dict(message)
    return payload


def button_action(element: Mapping[str, Any], *, block_id: str, value: str | None, action_ts: str) -> JSON:
    action: JSON = {
        "action_id": element["action_id"],
        "block_id": block_id,
        "text": dict(element.get("text") or {"type": "plain_text", "text": ""}),
        "type": "button",
        "action_ts": action_ts,
    }
    chosen = value if value is not None else element.get("value")
    if chosen is not None:
        action["value"] = chosen
    if "style" in element:
        action["style"] = element["style"]
    return action


def find_element(blocks: Sequence[Mapping[str, Any]], action_id: str) -> tuple[str, Mapping[str, Any]] | None:
    """(block_id, element) of the interactive element with ``action_id``, or None."""
    for block in blocks:
        candidates: list[Mapping[str, Any]] = []
        if block.get("type") == "actions":
            candidates.extend(block.get("elements") or [])
        for key in ("accessory", "element"):
            if isinstance(block.get(key), Mapping):
                candidates.append(block[key])
        for element in candidates:
            if element.get("action_id") == action_id:
                return str(block.get("block_id", "")), element
    return None


def action_ids(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    ids: list[str] = []
    for block in blocks:
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        elements += [block[k] for k in ("accessory", "element") if isinstance(block.get(k), Mapping)]
        ids += [str(e["action_id"]) for e in elements if isinstance(e, Mapping) and "action_id" in e]
    return ids


# --------------------------------------------------------------------------- socket mode


def envelope(
    kind: str,
    payload: Mapping[str, Any],
    *,
    envelope_id: str,
    accepts_response_payload: bool,
    retry_attempt: int | None = None,
    retry_reason: str | None = None,
) -> JSON:
    message: JSON = {
        "envelope_id": envelope_id,
        "payload": dict(payload),
        "type": kind,
        "accepts_response_payload": accepts_response_payload,
    }
    if kind == "events_api":
        message["retry_attempt"] = retry_attempt or 0
        message["retry_reason"] = retry_reason or ""
    return message


def hello(*, num_connections: int, app_id: str, host: str, connection_time_ms: int) -> JSON:
    return {
        "type": "hello",
        "num_connections": num_connections,
        "debug_info": {
            "host": host,
            "build_number": 1,
            "approximate_connection_time": connection_time_ms,
        },
        "connection_info": {"app_id": app_id},
    }


def disconnect(*, reason: str, host: str) -> JSON:
    return {"type": "disconnect", "reason": reason, "debug_info": {"host": host}}


# --------------------------------------------------------------------------- rendering


def _text_obj(obj: Any) -> str:
    if isinstance(obj, Mapping):
        text = str(obj.get("text", ""))
        return read_mrkdwn(text) if obj.get("type") == "mrkdwn" else text
    return "" if obj is None else str(obj)


def _element_label(element: Mapping[str, Any]) -> str:
    kind = element.get("type")
    if kind == "button":
        return f"[{_text_obj(element.get('text'))}]"
    if kind == "overflow":
        return "[...]"
    if kind in ("image",):
        return f"[image: {element.get('alt_text', '')}]"
    placeholder = _text_obj(element.get("placeholder")) or str(kind)
    initial = element.get("initial_option")
    if isinstance(initial, Mapping):
        placeholder = _text_obj(initial.get("text"))
    return f"[{placeholder} v]"


def _rich_inline(elements: Iterable[Mapping[str, Any]]) -> str:
    out: list[str] = []
    for el in elements:
        kind = el.get("type")
        if kind == "text":
            out.append(str(el.get("text", "")))
        elif kind == "user":
            out.append(f"<@{el.get('user_id')}>")
        elif kind == "channel":
            out.append(f"<#{el.get('channel_id')}>")
        elif kind == "usergroup":
            out.append(f"<!subteam^{el.get('usergroup_id')}>")
        elif kind == "broadcast":
            out.append(f"@{el.get('range')}")
        elif kind == "link":
            out.append(str(el.get("text") or el.get("url", "")))
        elif kind == "emoji":
            out.append(f":{el.get('name')}:")
    return "".join(out)


def _rich_text(elements: Iterable[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for el in elements:
        kind = el.get("type")
        inner = el.get("elements") or []
        if kind == "rich_text_section":
            lines.append(_rich_inline(inner))
        elif kind == "rich_text_list":
            bullet = "1." if el.get("style") == "ordered" else "•"
            lines += [f"{bullet} {line}" for item in inner for line in _rich_text([item])]
        elif kind == "rich_text_preformatted":
            lines.append("```\n" + _rich_inline(inner) + "\n```")
        elif kind == "rich_text_quote":
            lines += ["> " + line for line in _rich_inline(inner).splitlines() or [""]]
    return lines


def _render_block(block: Mapping[str, Any]) -> list[str]:
    kind = block.get("type")
    if kind == "header":
        return [_text_obj(block.get("text"))]
    if kind == "divider":
        return ["---"]
    if kind == "section":
        lines: list[str] = []
        text = _text_obj(block.get("text"))
        accessory = block.get("accessory")
        if isinstance(accessory, Mapping) and accessory.get("type") != "image":
            text = f"{text} {_element_label(accessory)}".strip()
        if text:
            lines.append(text)
        lines += [_text_obj(f) for f in block.get("fields") or []]
        return lines
    if kind == "context":
        parts = [_text_obj(e) for e in block.get("elements") or [] if e.get("type") != "image"]
        return [" ".join(p for p in parts if p)]
    if kind == "actions":
        return [" ".join(_element_label(e) for e in block.get("elements") or [])]
    if kind == "rich_text":
        return _rich_text(block.get("elements") or [])
    if kind == "image":
        return [f"[image: {block.get('alt_text', '')}]"]
    if kind == "input":
        element = block.get("element") or {}
        return [f"{_text_obj(block.get('label'))}: {_element_label(element)}"]
    if kind in ("mrkdwn", "plain_text"):  # a bare text object passed as a block
        return [_text_obj(block)]
    return [f"[{kind} block]"]


def render_blocks(blocks: Sequence[Mapping[str, Any]] | None) -> str:
    """Block Kit as readable plain text; buttons come out as ``[Run] [Cancel]``."""
    lines: list[str] = []
    for block in blocks or []:
        lines += _render_block(block)
    return "\n".join(lines)
