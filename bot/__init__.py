"""rigops: Slack chat-ops for teams that build and run software on GPU hosts."""

__version__ = "0.1.0"
