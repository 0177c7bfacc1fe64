"""Slack: the only package that imports slack_bolt. Listeners translate events into Plans and replies."""
