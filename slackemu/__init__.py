"""A local Slack for tests and benchmarks: the Web API over HTTP and Socket Mode over WebSocket, refusing what
Slack refuses. Not shipped with rigops: the bot never needs it (the console talks to the core directly)."""

from slackemu.server import (
    MAX_CONNECTIONS,
    MAX_RETRIES,
    SLACK_ACK_TIMEOUT,
    Ack,
    ApiCall,
    Edit,
    Envelope,
    Message,
    SlackEmulator,
    UploadedFile,
    render_blocks,
    text_of,
)
from slackemu.tiers import SLACK_TIERS, Tier

__all__ = ["MAX_CONNECTIONS", "MAX_RETRIES", "SLACK_ACK_TIMEOUT", "SLACK_TIERS",
           "Ack", "ApiCall", "Edit", "Envelope", "Message", "SlackEmulator", "Tier", "UploadedFile",
           "render_blocks", "text_of"]
