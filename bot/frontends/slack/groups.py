"""Slack user-group membership for the access policy, from usergroups.users.list, cached for a while."""

from __future__ import annotations

import logging
import time

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)
CACHE_SECONDS = 300.0


class SlackGroups:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}

    async def members(self, group: str) -> frozenset[str]:
        """The members of ``group``; empty (nobody is granted anything) when Slack will not say."""
        hit = self._cache.get(group)
        if hit is not None and time.monotonic() - hit[0] < CACHE_SECONDS:
            return hit[1]
        try:
            resp = await self.client.usergroups_users_list(usergroup=group)
            users = frozenset(str(u) for u in resp.get("users") or ())
        except SlackApiError as exc:
            log.warning("cannot read the members of user group %s: %s", group, exc.response.get("error"))
            users = frozenset()
        self._cache[group] = (time.monotonic(), users)
        return users
