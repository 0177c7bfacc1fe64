"""The emulator's Events API over HTTP: what Slack POSTs to an app's Request URL, and how it judges the answers.

Slack signs each request (``X-Slack-Signature``: ``v0=`` HMAC-SHA256 of ``v0:<timestamp>:<body>`` with the signing
secret; ``X-Slack-Request-Timestamp``) and sends events as JSON, slash commands as a form, and interactions as a
form with one ``payload`` field holding JSON. An answer must be a 2xx within 3 seconds. Otherwise (Slack's Events
API docs, "Failure conditions"): an *event* is retried up to 3 times, with ``X-Slack-Retry-Num`` (1, 2, 3) and
``X-Slack-Retry-Reason`` (``http_timeout``, ``http_error``, ``connection_failed``), unless a non-2xx answer carried
``X-Slack-No-Retry: 1``; Slack waits about a minute and five minutes before the later ones, the emulator does not.
A slash command or an interaction is never retried: the person sees an error instead. When fewer than 5% of an
app's event deliveries in 60 minutes got a 2xx, Slack turns its event subscriptions off and sends
``app_rate_limited`` (the docs of that event); the emulator does the same once :data:`DISABLE_AFTER` deliveries
are counted (Slack does not say how many it needs; one failure must not be enough).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp

from slackemu.payloads import JSON

HTTP_TIMEOUT = 3.0  # seconds Slack waits for an answer
HTTP_RETRIES = 3
WINDOW = 3600.0  # seconds over which the failure rate is judged
HEALTHY_SHARE = 0.05  # fewer successful deliveries than this share turn the events off
DISABLE_AFTER = 20  # event deliveries counted before the rate can turn events off


@dataclass(frozen=True)
class HttpDelivery:
    """One POST to the Request URL: which envelope, which attempt (0 first), and how it was answered."""

    envelope_id: str
    type: str
    attempt: int
    status: int | None  # None: no answer (a timeout, or the connection failed)
    reason: str | None  # why it failed, as Slack's X-Slack-Retry-Reason names it; None on a 2xx
    body: str
    at: float

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class HttpTarget:
    """Where and how events are POSTed, and what came of each POST."""

    url: str
    signing_secret: str
    timeout: float = HTTP_TIMEOUT
    deliveries: list[HttpDelivery] = field(default_factory=list)
    disabled: bool = False  # Slack turned this app's event subscriptions off
    dropped: list[str] = field(default_factory=list)  # envelopes not sent because events were off

    @property
    def failures(self) -> list[HttpDelivery]:
        return [d for d in self.deliveries if not d.ok]

    @property
    def retries(self) -> list[HttpDelivery]:
        return [d for d in self.deliveries if d.attempt > 0]

    def too_many_failures(self, now: float) -> bool:
        recent = [d for d in self.deliveries if d.type == "events_api" and now - d.at <= WINDOW]
        if len(recent) < DISABLE_AFTER:
            return False
        return sum(d.ok for d in recent) < HEALTHY_SHARE * len(recent)


def signature(secret: str, timestamp: str, body: str) -> str:
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def encode(kind: str, payload: JSON) -> tuple[str, str]:
    """The body and content type Slack uses for an envelope's payload."""
    if kind == "events_api":
        return json.dumps(payload), "application/json"
    if kind == "interactive":
        return urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded"
    return urlencode({k: "" if v is None else str(v) for k, v in payload.items()}), "application/x-www-form-urlencoded"


async def post(session: aiohttp.ClientSession, target: HttpTarget, *, envelope_id: str, kind: str, payload: JSON,
               attempt: int, retry_reason: str | None) -> tuple[HttpDelivery, bool, Any]:
    """One signed POST; the delivery, whether Slack would retry it, and the answer's JSON body (or None)."""
    body, content_type = encode(kind, payload)
    stamp = str(int(time.time()))
    headers = {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp,
               "X-Slack-Signature": signature(target.signing_secret, stamp, body)}
    if attempt:
        headers["X-Slack-Retry-Num"] = str(attempt)
        headers["X-Slack-Retry-Reason"] = retry_reason or "http_error"
    status: int | None = None
    reason: str | None = None
    text, no_retry = "", False
    try:
        async with session.post(target.url, data=body.encode(), headers=headers,
                                timeout=aiohttp.ClientTimeout(total=target.timeout)) as resp:
            status, text = resp.status, await resp.text()
            no_retry = resp.headers.get("X-Slack-No-Retry") == "1"
    except TimeoutError:
        reason = "http_timeout"
    except aiohttp.ClientError:
        reason = "connection_failed"
    delivery = HttpDelivery(envelope_id, kind, attempt, status, reason, text, time.monotonic())
    if status is not None and not delivery.ok:
        delivery = HttpDelivery(envelope_id, kind, attempt, status, "http_error", text, delivery.at)
    answer: Any = None
    if delivery.ok and text.strip():
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {"text": text}  # a slash command may be answered with plain text
    retry = not delivery.ok and kind == "events_api" and not no_retry and attempt < HTTP_RETRIES
    return delivery, retry, answer

