"""The Slack app manifest validates against Slack's schema and asks for what the listeners use."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[3]
# Slack's official manifest schemas (MIT, its licence beside them), kept with the tests so that every checkout
# validates the manifest.
SCHEMAS = sorted((ROOT / "tests" / "data" / "slack").glob("manifest.schema.*.json"))
MANIFEST = json.loads((ROOT / "manifests" / "rigops.json").read_text())


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda p: p.name)
def test_manifest_validates_against_slacks_schema(schema: Path) -> None:
    validator = jsonschema.Draft7Validator(json.loads(schema.read_text()),
                                           format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(MANIFEST)]
    assert errors == []


def test_both_of_slacks_schemas_are_here() -> None:
    assert [p.name for p in SCHEMAS] == ["manifest.schema.1.0.0.json", "manifest.schema.2.0.0.json"]


def test_manifest_asks_for_what_rigops_uses_and_no_more() -> None:
    settings = MANIFEST["settings"]
    assert settings["socket_mode_enabled"] and settings["interactivity"]["is_enabled"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {"app_home_opened", "app_mention",
                                                                   "message.channels", "message.groups"}
    assert MANIFEST["features"]["app_home"]["home_tab_enabled"]  # the dashboard, published on app_home_opened
    assert [c["command"] for c in MANIFEST["features"]["slash_commands"]] == ["/rigops"]
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    assert scopes == {"app_mentions:read", "channels:history", "groups:history", "chat:write", "commands",
                      "reactions:write", "files:write", "usergroups:read",
                      "channels:read", "groups:read",  # can_post (conversations.info), #name (conversations.list)
                      "im:write"}  # a DM where a slash command cannot get its thread


def test_slash_command_text_comes_escaped() -> None:
    """``#gpu-ops`` picked or typed arrives as ``<#C…|gpu-ops>``: a channel id, whatever it is called, and the
    same for people and user groups (a plain ``#name`` is still looked up, for apps set up before)."""
    [rigops] = MANIFEST["features"]["slash_commands"]
    assert rigops["should_escape"] is True
